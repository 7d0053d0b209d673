#pragma once
// Parses the standard library's signature strings ("(Resource, Missing) -> bool") into Types.
//
// A signature may use the type variable `T` (a generic row: append is "(list<T>, T) ->
// list<T>"). It has no type of its own: the checker binds it at each call from the arguments
// (BindTypeVariable) and parses the signature with that binding.

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
// Parses "(A, B) -> R" with `T` standing for `type_variable`; params empty and result nullptr
// when malformed, or when it uses `T` and `type_variable` is null.
Signature ParseSignature(std::string_view text, TypeContext& types,
                         const Type* type_variable = nullptr);
// Whether the signature uses the type variable `T`.
bool IsGeneric(std::string_view text);
// Per parameter: it is the type variable itself (`T`, not `list<T>`). Natives take such a
// parameter as a pointer to the value and its size in bytes (stdlib/library.h).
std::vector<bool> TypeVariableParams(std::string_view text);
// The binding of `T` under which parameter `param` of the signature is exactly `actual`
// (`list<T>` and `list<int>` give `int`); null when there is none.
const Type* BindTypeVariable(std::string_view text, size_t param, const Type* actual,
                             TypeContext& types);

}  // namespace kiln::sema
