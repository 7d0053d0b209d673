// docs/language.md stays true: every ```policy block compiles cleanly, and the extension-point
// table is exactly the one generated from kExtensionPoints.
#include "compiler/sema/doc_tables.h"
#include "compiler/sema/handler_types.h"
#include "tests/unit/compiler/frontend_test_util.h"

namespace kiln::testing {
namespace {

struct Block {
  int line;
  std::string text;
};

std::vector<Block> PolicyBlocks(const std::string& doc) {
  std::vector<Block> out;
  std::istringstream in(doc);
  std::string line;
  int n = 0;
  bool inside = false;
  Block current;
  while (std::getline(in, line)) {
    ++n;
    if (!inside && line == "```policy") {
      inside = true;
      current = {n + 1, ""};
    } else if (inside && line == "```") {
      inside = false;
      out.push_back(current);
    } else if (inside) {
      current.text += line + "\n";
    }
  }
  return out;
}

TEST(FrontendDocs, EveryPolicyBlockInTheLanguageReferenceCompiles) {
  std::string doc = ReadFile(SourceDir() / "docs/language.md");
  auto blocks = PolicyBlocks(doc);
  ASSERT_GE(blocks.size(), 3u);
  for (const auto& b : blocks) {
    SourceFile source{fmt::format("docs/language.md (block at line {})", b.line), b.text};
    auto r = RunFrontend(source);
    EXPECT_TRUE(r.ok()) << FormatDiagnostics(r.diagnostics, source);
  }
}

// The text between `<!-- BEGIN name ... -->` and `<!-- END name -->` must equal `generated`.
// KILN_UPDATE_GOLDEN=1 rewrites the section instead.
void ExpectGeneratedSection(const std::string& name, const std::string& generated) {
  auto path = SourceDir() / "docs/language.md";
  std::string doc = ReadFile(path);
  size_t b = doc.find("<!-- BEGIN " + name);
  ASSERT_NE(b, std::string::npos) << "no BEGIN " << name << " marker";
  b = doc.find("-->\n", b);
  ASSERT_NE(b, std::string::npos);
  b += 4;
  size_t e = doc.find("<!-- END " + name + " -->", b);
  ASSERT_NE(e, std::string::npos) << "no END " << name << " marker";
  if (const char* u = std::getenv("KILN_UPDATE_GOLDEN"); u && std::string(u) == "1") {
    doc.replace(b, e - b, generated);
    std::ofstream(path, std::ios::binary) << doc;
    return;
  }
  EXPECT_EQ(doc.substr(b, e - b), generated)
      << "docs/language.md section " << name << " is out of date; expected:\n" << generated;
}

TEST(FrontendDocs, ExtensionPointTableMatchesTheRuntimeTable) {
  ExpectGeneratedSection("EXTENSION POINTS", sema::ExtensionPointTableMarkdown());
}

TEST(FrontendDocs, ViewFieldTableMatchesTheAbi) {
  ExpectGeneratedSection("VIEW FIELDS", sema::ViewFieldTableMarkdown());
}

TEST(FrontendDocs, StdlibTableMatchesTheLibrary) {
  ExpectGeneratedSection("STDLIB", sema::StdlibTableMarkdown());
}

}  // namespace
}  // namespace kiln::testing
