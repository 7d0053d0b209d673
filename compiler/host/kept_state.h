#pragma once
// State a policy keeps from one session to the next (`state evicted_at: time across sessions;`,
// docs/language.md "State kept across sessions"), held per scheduler.conf entry.
//
// An entry is the plugin a conf tier names with its arguments, compiled from one policy text:
// its key is the plugin name, the policy's source hash and the arguments as written. `kiln
// serve` keeps one store for all the configurations it loads; each load asks it for its
// entries' blocks; an entry that a reload leaves as it
// was finds the block the previous configuration used (it is alive while that configuration is),
// and an entry whose policy text or arguments changed gets a fresh, zeroed one. A block lives as
// long as some loaded configuration holds its entry, so the store keeps nothing for entries
// that are gone. Without a store (a simulation, `kiln test`) every conf load starts afresh.
//
// Only scalars are kept (the checker's rule), each in an 8-byte slot: a block is 8 bytes per
// such state plus one word, a fixed size known when the policy compiles, never allocated during
// a session and outside the state memory budget's arena (docs/safety.md).

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/conf.h"

namespace kiln {

struct KeptBlock {
  explicit KeptBlock(size_t slots) : words(slots, 0) {}
  std::vector<uint64_t> words;  // words[0]: the initialisers have run (set by state_init)
  void* data() { return words.data(); }
};

class KeptStateStore {
 public:
  // The block of `entry` (compiled from source hash `version`) with `slots` 8-byte slots.
  std::shared_ptr<KeptBlock> Block(const PluginOption& entry, uint64_t version, size_t slots);

  // The key Block files `entry` under: equal exactly when the name, the policy text and the
  // arguments as written are.
  static std::string Key(const PluginOption& entry, uint64_t version);

 private:
  std::mutex mu_;
  std::map<std::string, std::weak_ptr<KeptBlock>> blocks_;
};

}  // namespace kiln
