// The libyaml-backed document (runtime/yaml_doc.h): each YAML feature the scenarios use, the
// positions errors point at, and a differential check against yaml-cpp (the parser it replaced
// in the scenario loader) over every YAML file in tests/ and examples/.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "runtime/yaml_doc.h"
#include "runtime/yaml_util.h"
#include "tests/unit/source_dir.h"

namespace kiln::yaml {
namespace {

Document MustParse(std::string_view text) {
  auto doc = Document::Parse(text, "t.yaml");
  EXPECT_TRUE(doc.ok()) << (doc.ok() ? "" : doc.error().Format());
  if (!doc.ok()) return Document();
  return std::move(*doc);
}

Error MustFail(std::string_view text) {
  auto doc = Document::Parse(text, "t.yaml");
  EXPECT_FALSE(doc.ok()) << text;
  return doc.ok() ? Error{} : doc.error();
}

TEST(YamlDocTest, BlockAndFlowCollections) {
  Document d = MustParse(
      "a: 1\n"
      "b:\n"
      "  - x\n"
      "  - {k: v, n: [1, 2]}\n"
      "c: [p, q]\n");
  Node r = d.root();
  ASSERT_TRUE(r.IsMap());
  EXPECT_EQ(r.size(), 3u);
  EXPECT_EQ(r["a"].Scalar(), "1");
  ASSERT_TRUE(r["b"].IsSequence());
  EXPECT_EQ(r["b"].size(), 2u);
  EXPECT_EQ(r["b"][0].Scalar(), "x");
  EXPECT_EQ(r["b"][1]["k"].Scalar(), "v");
  EXPECT_EQ(r["b"][1]["n"][1].Scalar(), "2");
  EXPECT_EQ(r["c"][1].Scalar(), "q");
  EXPECT_FALSE(r["missing"].IsDefined());
  EXPECT_FALSE(r["b"][2].IsDefined());
  EXPECT_FALSE(r["a"]["x"].IsDefined());  // not a map: undefined, no exception
  // Iteration: maps give key/value in document order, sequences their items.
  std::string keys;
  for (const auto& kv : r) keys += std::string(kv.first.Scalar());
  EXPECT_EQ(keys, "abc");
  std::string items;
  for (const auto& item : r["c"]) items += std::string(item.Scalar());
  EXPECT_EQ(items, "pq");
  // Iterating a scalar or a null yields nothing.
  int n = 0;
  for (const auto& item : r["a"]) n += item.IsDefined();
  EXPECT_EQ(n, 0);
}

TEST(YamlDocTest, QuotedPlainAndBlockScalars) {
  Document d = MustParse(
      "plain: 5\n"
      "single: '5'\n"
      "double: \"5\\tx\"\n"
      "lit: |\n"
      "  one\n"
      "  two\n"
      "fold: >\n"
      "  one\n"
      "  two\n"
      "tagged: !!str 7\n");
  Node r = d.root();
  EXPECT_FALSE(r["plain"].IsQuoted());
  EXPECT_TRUE(r["single"].IsQuoted());
  EXPECT_EQ(r["single"].Scalar(), "5");
  EXPECT_TRUE(r["double"].IsQuoted());
  EXPECT_EQ(r["double"].Scalar(), "5\tx");
  // Block scalars count as quoted (yaml-cpp tags them "!"), so `|` text is never a number.
  EXPECT_TRUE(r["lit"].IsQuoted());
  EXPECT_EQ(r["lit"].Scalar(), "one\ntwo\n");
  EXPECT_EQ(r["fold"].Scalar(), "one two\n");
  // An explicit tag replaces the non-specific one: not "quoted", as with yaml-cpp.
  EXPECT_FALSE(r["tagged"].IsQuoted());
  EXPECT_EQ(r["tagged"].Scalar(), "7");
  // The Reader's type checks follow the quoting.
  Reader reader("t.yaml");
  EXPECT_TRUE(reader.Int(r["plain"], "`plain`").ok());
  auto quoted = reader.Int(r["single"], "`single`");
  ASSERT_FALSE(quoted.ok());
  EXPECT_EQ(quoted.error().Format(), "t.yaml:2:9: error: `single` must be an integer, got `5`");
}

TEST(YamlDocTest, NullsAndEmptyValues) {
  Document d = MustParse(
      "a:\n"
      "b: ~\n"
      "c: null\n"
      "d: NULL\n"
      "e: ''\n"
      "f: nulls\n"
      "g: [~, null, x]\n");
  Node r = d.root();
  for (const char* k : {"a", "b", "c", "d"}) {
    EXPECT_TRUE(r[k].IsDefined()) << k;
    EXPECT_TRUE(r[k].IsNull()) << k;
  }
  EXPECT_TRUE(r["e"].IsScalar());
  EXPECT_EQ(r["e"].Scalar(), "");
  EXPECT_EQ(r["f"].Scalar(), "nulls");
  EXPECT_TRUE(r["g"][0].IsNull());
  EXPECT_EQ(r["g"][2].Scalar(), "x");
  // yaml-cpp places a missing value at the token after it: `a:` is reported at `b`.
  EXPECT_EQ(Where(r["a"], "t.yaml").line, 2);
  EXPECT_EQ(Where(r["a"], "t.yaml").column, 1);
  EXPECT_TRUE(MustParse("").root().IsNull());
  EXPECT_TRUE(MustParse("# only a comment\n").root().IsNull());
}

TEST(YamlDocTest, CommentsAnchorsAliasesAndDocuments) {
  Document d = MustParse(
      "# heading\n"
      "base: &res {cpu: '1'}  # trailing\n"
      "copy: *res\n"
      "name: &n x\n"
      "again: *n\n"
      "...\n");
  Node r = d.root();
  EXPECT_EQ(r.size(), 4u);  // a second document is an error: ASecondDocumentIsAnError
  EXPECT_TRUE(r["copy"].is(r["base"]));
  EXPECT_EQ(r["copy"]["cpu"].Scalar(), "1");
  EXPECT_EQ(r["again"].Scalar(), "x");
  Error e = MustFail("a: *nowhere\n");
  EXPECT_EQ(e.Format(), "t.yaml:1:4: error: invalid YAML: the referenced anchor is not defined");
}

TEST(YamlDocTest, DuplicateKeysAreKeptAndReported) {
  Document d = MustParse("q:\n  weight: 1\n  name: a\n  weight: 2\n");
  Node q = d.root()["q"];
  EXPECT_EQ(q.size(), 3u);
  EXPECT_EQ(q["weight"].Scalar(), "1");  // the first, as yaml-cpp's lookup
  Reader reader("t.yaml");
  Status s = reader.ExpectMap(q, "queue", {"weight", "name"});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().Format(), "t.yaml:4:3: error: duplicate key `weight` in queue (first at line 2)");
  Document ud = MustParse("q: {name: a, wieght: 1}\n");
  Status unknown = reader.ExpectMap(ud.root()["q"], "queue", {"weight", "name"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().Format(),
            "t.yaml:1:14: error: unknown key `wieght` in queue; did you mean `weight`?");
  // A map with many keys takes the hashed path; the first duplicate is still the one reported.
  std::string big = "m:\n";
  for (int i = 0; i < 100; ++i) big += "  k" + std::to_string(i) + ": v\n";
  big += "  k7: again\n";
  Document bd = MustParse(big);
  Status dup = reader.ExpectAnyMap(bd.root()["m"], "labels");
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.error().Format(), "t.yaml:102:3: error: duplicate key `k7` in labels (first at line 9)");
  // A key that is not a scalar.
  Document cd = MustParse("m: {[a]: 1}\n");
  Status complex = reader.ExpectAnyMap(cd.root()["m"], "labels");
  ASSERT_FALSE(complex.ok());
  EXPECT_EQ(complex.error().message, "labels has a key that is not a plain name");
}

TEST(YamlDocTest, MarksAreOneBasedInWhere) {
  Document d = MustParse("cluster:\n  nodes:\n  - name: n1\n    labels: {zone: \"a\"}\n");
  Node node = d.root()["cluster"]["nodes"][0];
  SourceLocation at = Where(node["labels"]["zone"], "t.yaml");
  EXPECT_EQ(at.line, 4);
  EXPECT_EQ(at.column, 20);
  EXPECT_EQ(Where(node["name"], "t.yaml").column, 11);
  EXPECT_EQ(Where(Node(), "t.yaml").line, 0);
  // A block scalar's mark is its indicator (the scenario loader finds `conf: |` by it).
  std::string text = "conf: |\n  actions: x\n";
  Document c = MustParse(text);
  Mark m = c.root()["conf"].GetMark();
  ASSERT_GE(m.pos, 0);
  EXPECT_EQ(text[m.pos], '|');
}

TEST(YamlDocTest, SyntaxErrorsCarryPositions) {
  Error flow = MustFail("name: x\ncluster:\n  nodes: [{name: n1, allocatable: {cpu: \"2\"}\n  pods: []\n");
  EXPECT_EQ(flow.where.file, "t.yaml");
  EXPECT_EQ(flow.where.line, 4);
  EXPECT_EQ(flow.where.column, 3);
  EXPECT_EQ(flow.message.rfind("invalid YAML: ", 0), 0u) << flow.message;
  EXPECT_NE(flow.message.find("line 3, column 11"), std::string::npos) << flow.message;
  // A tab where indentation is expected.
  Error tab = MustFail("a:\n\tb: 1\n");
  EXPECT_EQ(tab.where.line, 2);
  EXPECT_EQ(tab.where.column, 1);
  EXPECT_NE(tab.message.find("cannot start any token"), std::string::npos) << tab.message;
  Error indent = MustFail("a: 1\n b: 2\n");
  EXPECT_EQ(indent.where.line, 2);
  Error bad_utf8 = MustFail("a: 1\nb: \xff\n");
  EXPECT_EQ(bad_utf8.where.line, 2);
  EXPECT_EQ(bad_utf8.where.column, 4);
  Error unclosed = MustFail("a: \"open\n");
  EXPECT_GT(unclosed.where.line, 0);
}

// ---- differential: the new document against yaml-cpp ----

// Compares `n` (new) with `o` (yaml-cpp) and returns the first difference as text, "" when equal.
std::string Diff(const Node& n, const YAML::Node& o, const std::string& path) {
  auto mark = [](int line, int col) { return std::to_string(line) + ":" + std::to_string(col); };
  Mark nm = n.GetMark();
  YAML::Mark om = o.Mark();
  if (nm.line != om.line || nm.column != om.column)
    return path + ": mark " + mark(nm.line, nm.column) + " vs yaml-cpp " + mark(om.line, om.column);
  switch (o.Type()) {
    case YAML::NodeType::Null:
      return n.IsNull() ? "" : path + ": yaml-cpp has null";
    case YAML::NodeType::Scalar:
      if (!n.IsScalar()) return path + ": yaml-cpp has a scalar";
      if (n.Scalar() != o.Scalar()) return path + ": `" + std::string(n.Scalar()) + "` vs `" + o.Scalar() + "`";
      if (n.IsQuoted() != IsQuoted(o)) return path + ": quoted flag differs";
      return "";
    case YAML::NodeType::Sequence: {
      if (!n.IsSequence() || n.size() != o.size()) return path + ": yaml-cpp has a list of " + std::to_string(o.size());
      for (size_t i = 0; i < o.size(); ++i) {
        std::string d = Diff(n[i], o[i], path + "[" + std::to_string(i) + "]");
        if (!d.empty()) return d;
      }
      return "";
    }
    case YAML::NodeType::Map: {
      if (!n.IsMap() || n.size() != o.size()) return path + ": yaml-cpp has a map of " + std::to_string(o.size());
      auto it = n.begin();
      for (const auto& kv : o) {
        std::string k = kv.first.IsScalar() ? kv.first.Scalar() : "?";
        std::string d = Diff(it->first, kv.first, path + "." + k + "(key)");
        if (d.empty()) d = Diff(it->second, kv.second, path + "." + k);
        if (!d.empty()) return d;
        ++it;
      }
      return "";
    }
    default:
      return path + ": yaml-cpp node is undefined";
  }
}

std::string ReadAll(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(YamlDocTest, SameDocumentsAsYamlCppForTrickySnippets) {
  const char* snippets[] = {
      "a:\nb: ~\n",
      "c:\n  - \n  -\nd: 1\n",
      "d: {e: , f: ''}\n",
      "d: [a, {e: }]\n",
      "k: |-\n  x\n\n  y\n\n",
      "l: >\n  folded\n  text\n\n  para\n",
      "m: |2\n    indented\n",
      "- &x {a: 1}\n- *x\n- &y [1, 2]\n- *y\n- &s 'q'\n- *s\n",
      "'quoted key': 1\n\"dq\": 2\n? explicit\n: 3\n",
      "t: !!str 5\nu: !custom x\nv: ! 7\n",
      "# c\nlist:   # c\n- a # c\n-   b\n# c\n",
      "multi: \"line\n  two\"\nplain: one\n  two\n",
      "nested: {a: [1, {b: c}], d: {}}\ne: []\n",
      "--- \nroot\n...\n",
      "n: null\nN: Null\nNN: NULL\nt: ~\nnot: nil\n",
      "s: 'it''s'\nd: \"tab\\there\"\nu: \"\\u00e9\"\n",
      "a:\n  b:\n    c:\n      - d: 1\n        e: 2\n",
      "url: http://x:80/y\nq: a#b\n",
  };
  for (const char* text : snippets) {
    YAML::Node old = YAML::Load(text);
    auto doc = Document::Parse(text, "t.yaml");
    ASSERT_TRUE(doc.ok()) << text << doc.error().Format();
    EXPECT_EQ(Diff(doc->root(), old, "$"), "") << text;
  }
}

// yaml-cpp's Load reads the first document of a stream and ignores the rest; a Document holds
// exactly one, and a second is an error at its `---` (issue 28: extra documents in a scenario
// were silently dropped).
TEST(YamlDocTest, ASecondDocumentIsAnError) {
  EXPECT_EQ(YAML::Load("x: 1\n---\ny: 2\n")["x"].as<int>(), 1);
  Error e = MustFail("x: 1\n---\ny: 2\n");
  EXPECT_EQ(e.where.line, 2);
  EXPECT_EQ(e.where.column, 1);
  EXPECT_NE(e.message.find("a second YAML document starts here"), std::string::npos);
  MustFail("x: 1\n...\n---\n");
  MustParse("--- \nroot\n...\n# only a comment after the end marker\n");
}

// Where libyaml follows the YAML spec and yaml-cpp does not, the document follows libyaml. No
// scenario in the repository depends on these.
TEST(YamlDocTest, KnownDifferencesFromYamlCpp) {
  // Keep chomping (`>+`, `|+`) keeps trailing blank lines (yaml-cpp drops them).
  EXPECT_EQ(MustParse("l: >+\n  folded\n  text\n\nm: 1\n").root()["l"].Scalar(), "folded text\n\n");
  // Both reject a plain value containing ": ".
  EXPECT_THROW(YAML::Load("k: v: w\n"), YAML::Exception);
  MustFail("k: v: w\n");
}

TEST(YamlDocTest, SameDocumentsAsYamlCppForEveryRepositoryYaml) {
  namespace fs = std::filesystem;
  int compared = 0, rejected = 0;
  for (const char* dir : {"tests", "examples"}) {
    for (const auto& entry : fs::recursive_directory_iterator(KilnSourceDir() / dir)) {
      std::string ext = entry.path().extension().string();
      if (!entry.is_regular_file() || (ext != ".yaml" && ext != ".yml")) continue;
      std::string text = ReadAll(entry.path());
      std::string name = entry.path().string();
      YAML::Node old;
      bool old_ok = true;
      try {
        old = YAML::Load(text);
      } catch (const YAML::Exception&) {
        old_ok = false;
      }
      auto doc = Document::Parse(text, name);
      EXPECT_EQ(doc.ok(), old_ok) << name << (doc.ok() ? "" : ": " + doc.error().Format());
      if (!doc.ok() || !old_ok) {
        ++rejected;
        continue;
      }
      ++compared;
      EXPECT_EQ(Diff(doc->root(), old, "$"), "") << name;
    }
  }
  EXPECT_GT(compared, 250);  // the suite's scenarios, examples and fixtures
  EXPECT_GE(rejected, 1);    // tests/cli/simulate/data/yaml-syntax.yaml at least
}

}  // namespace
}  // namespace kiln::yaml
