#pragma once
// clang-16 with libstdc++ 12 fails to instantiate pair<string, ConfValue> (ConfValue::Map) unless
// ConfValue itself was instantiated first in the translation unit: a file that walks ConfValue's
// maps includes this before it does.

#include "runtime/conf.h"

namespace kiln::detail {

[[maybe_unused]] inline void InstantiateConfValue() { ConfValue v; }

}  // namespace kiln::detail
