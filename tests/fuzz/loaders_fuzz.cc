// libFuzzer target for the loaders of what users hand Kiln: the scenario loader
// (simulator/scenario.h), the scheduler.conf loader (runtime/conf.h), a pack's manifest
// (packs/manifest.h) and a whole .kpack archive (packs/pack.h: libarchive plus the path and size
// checks). The first byte picks the loader so one target and one corpus cover them all. Any
// input must come back as a value or an Error with a message; a crash, a sanitizer report or an
// exception escaping is a bug.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "packs/manifest.h"
#include "packs/pack.h"
#include "runtime/conf.h"
#include "simulator/scenario.h"

// KILN_FUZZ_ENTRY renames the entry point when the replay binary links every target.
#ifndef KILN_FUZZ_ENTRY
#define KILN_FUZZ_ENTRY LLVMFuzzerTestOneInput
#endif
extern "C" int KILN_FUZZ_ENTRY(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  // Corpus files keep their text readable: a leading 's', 'c', 'm' or 'k' selects the loader,
  // anything else alternates between scenario and conf on the byte's low bit.
  if (data[0] == 'm') {
    auto manifest = kiln::packs::ParseManifest(text, "kiln-pack.yaml");
    if (!manifest.ok() && manifest.error().message.empty()) __builtin_trap();
    return 0;
  }
  if (data[0] == 'k') {
    auto pack = kiln::packs::ReadPackBytes(text, "fuzz.kpack");
    if (!pack.ok() && pack.error().message.empty()) __builtin_trap();
    return 0;
  }
  bool scenario = data[0] == 's' || (data[0] != 'c' && (data[0] & 1));
  if (scenario) {
    auto spec = kiln::ParseScenario(text, "fuzz.yaml");
    if (!spec.ok() && spec.error().message.empty()) __builtin_trap();
  } else {
    auto conf = kiln::ParseSchedulerConf(text, "scheduler.conf");
    if (!conf.ok() && conf.error().message.empty()) __builtin_trap();
  }
  return 0;
}

