#pragma once
// Markdown tables for docs/language.md generated from the single sources of truth (view fields
// from runtime/abi.h, the standard library tables); tests/unit/compiler/frontend_docs_test.cc
// checks the document contains exactly these.

#include <string>

namespace kiln::sema {

std::string ViewFieldTableMarkdown();
std::string StdlibTableMarkdown();

}  // namespace kiln::sema
