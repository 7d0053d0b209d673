#pragma once
// An owning pointer to a C library's object (libarchive's archives, OpenSSL's keys and contexts)
// that releases it with the library's own free function: CHandle<EVP_PKEY, EVP_PKEY_free>.

#include <memory>

namespace kiln::packs {

template <auto Free>
struct CFree {
  template <typename T>
  void operator()(T* p) const {
    Free(p);
  }
};

template <typename T, auto Free>
using CHandle = std::unique_ptr<T, CFree<Free>>;

}  // namespace kiln::packs
