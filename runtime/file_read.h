#pragma once
// Reading a file an operator or a user named, without trusting what the name points at.
//
// A path can name a FIFO (renamed over scheduler.conf, the open blocks until a writer comes),
// a device (`tokenFile: /dev/zero` never ends), or a file far larger than anything meaningful.
// ReadBoundedFile opens without blocking (O_NONBLOCK), checks with fstat on the open descriptor
// that it is a regular file (no race between a check and the open), refuses one larger than
// `max_bytes`, and reads at most `max_bytes` + 1 bytes, so a file that grows while read is
// refused too. Symbolic links are followed (a mounted ConfigMap is a chain of them).

#include <cstddef>
#include <string>
#include <string_view>

#include "runtime/status.h"

namespace kiln {

// Limits of the files kiln reads (docs/safety.md, "HTTP endpoints and inputs").
inline constexpr size_t kMaxConfBytes = 4u << 20;          // scheduler.conf
inline constexpr size_t kMaxPolicyFileBytes = 4u << 20;    // one .policy file, a trust key
inline constexpr size_t kMaxPackBytes = 64u << 20;         // one .kpack
inline constexpr size_t kMaxKubeconfigBytes = 4u << 20;    // kubeconfig
inline constexpr size_t kMaxCredentialBytes = 1u << 20;    // tokenFile, certificates, keys
inline constexpr size_t kMaxScenarioBytes = 1024u << 20;   // a scenario or trace

// The whole file at `path`. `what` names it in errors ("scheduler.conf", "tokenFile"): "cannot
// read scheduler.conf /etc/x: not a regular file (a FIFO)", "... is 5.0 MiB, more than the
// 4.0 MiB allowed". The error's location is the path.
Result<std::string> ReadBoundedFile(const std::string& path, size_t max_bytes,
                                    std::string_view what = "file");

// "4.0 MiB", "512 KiB", "12 bytes".
std::string FormatBytes(size_t bytes);

}  // namespace kiln
