// libFuzzer target for what Kiln reads from a Kubernetes API server and a kubeconfig: the
// tolerant object decoders (kubernetes/decode.h) on arbitrary JSON, and the kubeconfig parser.
// The first byte picks the decoder ('k' = kubeconfig; otherwise the byte modulo 8 picks pod,
// node, PodGroup, Queue, PriorityClass, PDB, ResourceQuota or Namespace), the rest is the
// document. Any input must come back as a value or an Error with a message: a crash, a sanitizer
// report or an escaping exception is a bug (one bad object must never stop a reflector).
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "kubernetes/decode.h"
#include "kubernetes/kubeconfig.h"

#ifndef KILN_FUZZ_ENTRY
#define KILN_FUZZ_ENTRY LLVMFuzzerTestOneInput
#endif

namespace {

template <typename R>
void Expect(const R& r) {
  if (!r.ok() && r.error().message.empty()) __builtin_trap();
}

}  // namespace

extern "C" int KILN_FUZZ_ENTRY(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] == 'k') {
    Expect(kiln::kube::ParseKubeConfig(text, "kubeconfig"));
    return 0;
  }
  // The reflectors parse without exceptions and skip what is not JSON.
  nlohmann::json obj = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (obj.is_discarded()) return 0;
  using namespace kiln::kube;
  switch (data[0] % 8) {
    case 0: Expect(DecodePod(obj)); break;
    case 1: Expect(DecodeNode(obj)); break;
    case 2: Expect(DecodePodGroup(obj)); break;
    case 3: Expect(DecodeQueue(obj)); break;
    case 4: Expect(DecodePriorityClass(obj)); break;
    case 5: Expect(DecodePdb(obj)); break;
    case 6: Expect(DecodeResourceQuota(obj)); break;
    default: Expect(DecodeNamespace(obj)); break;
  }
  return 0;
}
