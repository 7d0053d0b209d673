#pragma once
// The LIST and watch path of `kiln serve`: LIST pages, watch lines, pods and nodes read from JSON
// text with simdjson's on-demand parser, straight into decode.h's structs, with no DOM per page or
// per object. A LIST of 100k pods is read in a fraction of the time the nlohmann DOM takes
// (docs/performance.md, "Decoding the initial LIST").
//
// decode.h stays the reference. The fast decoders read the shapes a large cluster is made of
// (metadata, containers' requests and limits, images, tolerations, node selectors, taints,
// conditions); an object with anything else (affinity, init containers, overhead, pod-level
// resources, host ports, spread constraints, Kiln's usage annotation, a number where a quantity
// string is usual, a duplicate key, a field of the wrong type, text that is not JSON) goes whole
// to the reference decoder. So both give the same struct and the same Error for every object;
// tests/unit/kubernetes/decode_fast_test.cc checks it on a corpus. One leniency remains: a
// malformed atom (`tru`) inside a field neither decoder reads is not seen by simdjson, which
// checks only the structure (brackets, strings, UTF-8) of what it skips.
//
// Text given here must be padded: kJsonPadding readable bytes follow its end, as simdjson reads
// ahead. A view into a padded buffer qualifies (an item of a padded LIST page), or PaddedJson.
//
// simdjson's header is heavy: only decode_fast.cc includes it.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "kubernetes/decode.h"
#include "runtime/status.h"

namespace kiln::kube {

inline constexpr size_t kJsonPadding = 64;

// JSON text copied into a buffer with its padding.
class PaddedJson {
 public:
  explicit PaddedJson(std::string_view text) : buf_(text), size_(text.size()) {
    buf_.append(kJsonPadding, '\0');
  }
  std::string_view view() const { return {buf_.data(), size_}; }

 private:
  std::string buf_;
  size_t size_;
};

// Pads `s` in place (appends kJsonPadding NULs) and returns a view of its text without them.
std::string_view PadInPlace(std::string& s);

// ---- LIST pages and watch lines ----

// A LIST page's metadata.
struct ListPageMeta {
  std::string continue_token;     // metadata.continue ("" on the last page)
  std::string resource_version;   // metadata.resourceVersion
};

// Calls on_item with the text of each element of the page's `items` (views into the page), in
// order, and fills *meta. An Error says what is wrong with the page ("not a JSON object", or the
// JSON error and the item it broke off at), or is on_item's own, which ends the page there.
Status ForEachListItem(std::string_view padded_page,
                       const std::function<Status(std::string_view item)>& on_item,
                       ListPageMeta* meta);

// One watch line, {"type": "ADDED", "object": {...}}.
enum class WatchLine {
  Event,       // *type and *object (a view into the line) are set
  NotJson,     // not a JSON object
  Incomplete,  // no string `type` or no `object`
};
WatchLine SplitWatchEvent(std::string_view padded_line, std::string* type, std::string_view* object);

// ---- objects ----

Result<DecodedPod> DecodePodJson(std::string_view padded);
Result<NodeSpec> DecodeNodeJson(std::string_view padded, ObjectMeta* meta = nullptr);
// The metadata as DecodeMeta reads it (empty fields when the text is not an object).
ObjectMeta DecodeMetaJson(std::string_view padded);

// The reference path over text: nlohmann::json::parse, then decode.h's decoder. The fast
// decoders fall back to it; text that is not JSON is an Error naming the kind and nlohmann's
// parse error (byte position and what).
Result<DecodedPod> DecodePodReference(std::string_view text);
Result<NodeSpec> DecodeNodeReference(std::string_view text, ObjectMeta* meta = nullptr);

// How many objects the fast decoders have handed to the reference path (all threads).
int64_t FastDecodeFallbacks();

}  // namespace kiln::kube
