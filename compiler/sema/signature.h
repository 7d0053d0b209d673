#pragma once
// Parses the standard library's signature strings ("(Resource, Missing) -> bool") into Types.

#include <string_view>
#include <vector>

#include "compiler/types.h"

namespace kiln::sema {

struct Signature {
  std::vector<const Type*> params;
  const Type* result = nullptr;  // Void when there is no `->`
};

// Parses a type in source syntax ("map<string, float>?"); nullptr when malformed.
const Type* ParseTypeString(std::string_view text, TypeContext& types);
// Parses "(A, B) -> R"; params empty and result nullptr when malformed.
Signature ParseSignature(std::string_view text, TypeContext& types);

}  // namespace kiln::sema
