// Golden tests: tests/diagnostics/*.policy against their .expected diagnostics, and
// tests/ast/*.policy against their typed AST dumps (.ast). Each case names the error it is about
// in its first comment; the expected file pins message, line and column.
#include "tests/unit/compiler/frontend_test_util.h"

namespace kiln::testing {
namespace {

TEST(FrontendGolden, DiagnosticsMatchExpected) {
  auto files = FilesIn("tests/diagnostics", ".policy");
  ASSERT_GE(files.size(), 10u);
  for (const auto& f : files) {
    SCOPED_TRACE(f.string());
    std::string rel = "tests/diagnostics/" + f.filename().string();
    std::string out = Diagnose(ReadFile(f), rel);
    // Every diagnostics case must produce at least one error: a case that passes is a bug.
    EXPECT_NE(out.find(": error: "), std::string::npos) << rel << " produced no error";
    auto expected = f;
    expected.replace_extension(".expected");
    ExpectGolden(expected, out);
  }
}

TEST(FrontendGolden, TypedAstDumpsMatchExpected) {
  auto files = FilesIn("tests/ast", ".policy");
  ASSERT_GE(files.size(), 1u);
  for (const auto& f : files) {
    SCOPED_TRACE(f.string());
    SourceFile source{"tests/ast/" + f.filename().string(), ReadFile(f)};
    FrontendResult r = RunFrontend(source);
    ASSERT_TRUE(r.ok()) << FormatDiagnostics(r.diagnostics, source);
    auto expected = f;
    expected.replace_extension(".ast");
    ExpectGolden(expected, DumpAst(*r.policy, /*typed=*/true));
  }
}

}  // namespace
}  // namespace kiln::testing
