// The compile cache shipped with the binary (PolicyCompiler::SetShippedCacheDir, written by
// `kiln warm-cache` at build time): a policy whose object is there loads it instead of running O2
// and the code generator, and answers as the compiled one does; anything else — a changed source,
// a damaged file, an object of another key — is a miss that compiles as usual, and the shipped
// directory is never written. The key covers the source text as well as the module, so even a
// comment-only change is a miss.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "compiler/builtin_policies.h"
#include "compiler/host/compiled_policy.h"
#include "compiler/jit/object_cache.h"
#include "tests/unit/jit_test_util.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

// Σ_{i<60, 3|i} i × weight = 570 × 2.5 = 1425: a wrong object gives a wrong number.
const char* const kPolicy =
    "policy shipped;\n"
    "arg weight: float = 2.5 from \"shipped.weight\";\n"
    "on node_order(task: Task, node: Node) -> float {\n"
    "  var s = 0.0;\n"
    "  for i in range(0, 60) { if i % 3 == 0 { s += float(i) * weight; } }\n"
    "  return s;\n"
    "}\n";

double NodeOrder(testing::LoadedPolicy& l) {
  Task task;
  Node node;
  double score = -1;
  EXPECT_EQ(l.Fn<ExtensionPoint::NodeOrder>()(&l.ctx, &task, &node, &score), 0);
  return score;
}

std::vector<fs::path> Objects(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".kobj") out.push_back(e.path());
  return out;
}

std::string Slurp(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class ShippedCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> n{0};
    std::string base = "kiln-shipped-" + std::to_string(::getpid()) + "-" + std::to_string(n++);
    shipped_ = fs::path(::testing::TempDir()) / (base + "-shipped");
    writable_ = fs::path(::testing::TempDir()) / (base + "-writable");
    fs::remove_all(shipped_);
    fs::remove_all(writable_);
    auto compiler = PolicyCompiler::Global();
    ASSERT_TRUE(compiler.ok());
    compiler_ = *compiler;
  }
  void TearDown() override {
    compiler_->SetShippedCacheDir(PolicyCompiler::DefaultShippedCacheDir());
    compiler_->SetCompileCacheDir("");
    std::error_code ec;
    fs::remove_all(shipped_, ec);
    fs::remove_all(writable_, ec);
  }

  // Builds the shipped directory from `sources` as the build does, then opens it.
  void Ship(const std::vector<SourceFile>& sources) {
    auto written = compiler_->WriteCacheDir(shipped_.string(), sources);
    ASSERT_TRUE(written.ok()) << written.error().Format();
    EXPECT_EQ(*written, sources.size());
    compiler_->SetShippedCacheDir(shipped_.string());
  }

  fs::path shipped_, writable_;
  PolicyCompiler* compiler_ = nullptr;
};

TEST_F(ShippedCacheTest, ShippedObjectAnswersLikeTheCompiledOne) {
  auto compiled = testing::LoadPolicy(kPolicy, "test/shipped_eager_");
  ASSERT_TRUE(compiled);
  Ship({SourceFile{"policies/shipped.policy", kPolicy}});
  ASSERT_EQ(Objects(shipped_).size(), 1u);

  auto loaded = testing::LoadPolicy(kPolicy, "test/shipped_loaded_");
  ASSERT_TRUE(loaded);
  ObjectCacheStats s = compiler_->ShippedCacheStats();
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 0u);
  EXPECT_EQ(NodeOrder(*compiled), 1425.0);
  EXPECT_EQ(NodeOrder(*loaded), 1425.0);
}

TEST_F(ShippedCacheTest, EveryBuiltinHits) {
  std::vector<SourceFile> builtins;
  for (const BuiltinPolicy& b : BuiltinPolicies())
    builtins.push_back(SourceFile{std::string(b.path), std::string(b.text)});
  Ship(builtins);
  EXPECT_EQ(Objects(shipped_).size(), builtins.size());
  std::vector<SourceFile> fresh;
  for (const SourceFile& s : builtins)
    fresh.push_back(SourceFile{"test/shipped_builtins/" + std::to_string(::getpid()) + "/" + s.path,
                               s.text});
  for (auto& r : compiler_->CompileAll(fresh)) {
    ASSERT_TRUE(r.ok()) << r.error().Format();
    EXPECT_FALSE((*r)->handlers.empty()) << (*r)->name;
  }
  ObjectCacheStats s = compiler_->ShippedCacheStats();
  EXPECT_EQ(s.hits, builtins.size());
  EXPECT_EQ(s.misses, 0u);
}

TEST_F(ShippedCacheTest, HitLeavesTheWritableCacheAloneAndAMissFillsIt) {
  Ship({SourceFile{"policies/shipped.policy", kPolicy}});
  compiler_->SetCompileCacheDir(writable_.string());
  ASSERT_TRUE(testing::LoadPolicy(kPolicy, "test/shipped_both_"));
  EXPECT_EQ(compiler_->ShippedCacheStats().hits, 1u);
  ObjectCacheStats w = compiler_->CompileCacheStats();
  EXPECT_EQ(w.hits + w.misses + w.stores, 0u) << "a shipped hit is not asked of, nor copied to, "
                                                 "the writable cache";
  EXPECT_TRUE(Objects(writable_).empty());

  // Another policy: both miss, it compiles, and the writable cache (only) keeps its object.
  std::string other = std::string(kPolicy) + "// another policy text\n";
  auto l = testing::LoadPolicy(other, "test/shipped_both_");
  ASSERT_TRUE(l);
  EXPECT_EQ(NodeOrder(*l), 1425.0);
  EXPECT_EQ(compiler_->ShippedCacheStats().misses, 1u);
  EXPECT_EQ(compiler_->CompileCacheStats().stores, 1u);
  EXPECT_EQ(Objects(writable_).size(), 1u);
  EXPECT_EQ(Objects(shipped_).size(), 1u);
}

TEST_F(ShippedCacheTest, CommentOnlyChangeMissesAndCompiles) {
  // The module would be identical; the source digest in the key is not.
  Ship({SourceFile{"policies/shipped.policy", kPolicy}});
  auto l = testing::LoadPolicy(std::string("// edited\n") + kPolicy, "test/shipped_comment_");
  ASSERT_TRUE(l);
  EXPECT_EQ(NodeOrder(*l), 1425.0);
  ObjectCacheStats s = compiler_->ShippedCacheStats();
  EXPECT_EQ(s.hits, 0u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.rejected, 0u);
}

TEST_F(ShippedCacheTest, DamagedShippedObjectIsIgnoredAndNotRewritten) {
  Ship({SourceFile{"policies/shipped.policy", kPolicy}});
  auto files = Objects(shipped_);
  ASSERT_EQ(files.size(), 1u);
  {
    std::fstream f(files[0], std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(-10, std::ios::end);
    char c;
    f.get(c);
    f.seekp(-10, std::ios::end);
    f.put(static_cast<char>(c ^ 0x5a));
  }
  std::string damaged = Slurp(files[0]);

  auto l = testing::LoadPolicy(kPolicy, "test/shipped_damaged_");
  ASSERT_TRUE(l);
  EXPECT_EQ(NodeOrder(*l), 1425.0);
  ObjectCacheStats s = compiler_->ShippedCacheStats();
  EXPECT_EQ(s.hits, 0u);
  EXPECT_EQ(s.rejected, 1u);
  EXPECT_EQ(s.stores, 0u);
  EXPECT_EQ(Slurp(files[0]), damaged) << "the shipped cache is read-only";
}

TEST_F(ShippedCacheTest, ObjectUnderAnotherKeyIsRejected) {
  // What a build for another CPU (or compiler) would look like here: a well-formed file, but
  // under a key this process never asks for; renaming it to the key asked for fails the header.
  Ship({SourceFile{"policies/shipped.policy", kPolicy}});
  auto files = Objects(shipped_);
  ASSERT_EQ(files.size(), 1u);
  std::string other = std::string(kPolicy) + "\n";
  // Learn the key of `other` by compiling it through a writable cache.
  compiler_->SetShippedCacheDir("");
  compiler_->SetCompileCacheDir(writable_.string());
  ASSERT_TRUE(testing::LoadPolicy(other, "test/shipped_rekey_"));
  auto other_files = Objects(writable_);
  ASSERT_EQ(other_files.size(), 1u);
  compiler_->SetCompileCacheDir("");
  fs::rename(files[0], shipped_ / other_files[0].filename());

  compiler_->SetShippedCacheDir(shipped_.string());
  auto l = testing::LoadPolicy(other, "test/shipped_rekey_");
  ASSERT_TRUE(l);
  EXPECT_EQ(NodeOrder(*l), 1425.0);
  EXPECT_EQ(compiler_->ShippedCacheStats().rejected, 1u);
  EXPECT_EQ(compiler_->ShippedCacheStats().hits, 0u);
}

TEST_F(ShippedCacheTest, ReadOnlyCacheNeitherCreatesNorWrites) {
  ObjectCache missing(shipped_.string(), ObjectCache::Mode::kReadOnly);
  EXPECT_FALSE(missing.enabled());
  EXPECT_FALSE(fs::exists(shipped_));

  fs::create_directories(shipped_);
  fs::permissions(shipped_, fs::perms::owner_all);
  ObjectCache cache(shipped_.string(), ObjectCache::Mode::kReadOnly);
  ASSERT_TRUE(cache.enabled());
  ObjectCacheKey key = MakeObjectCacheKey("bitcode", {"x86_64-unknown-linux-gnu", "cpu", ""});
  cache.Store(key, "object");
  EXPECT_TRUE(Objects(shipped_).empty());
  EXPECT_EQ(cache.Stats().stores, 0u);
  EXPECT_EQ(cache.Lookup(key), std::nullopt);

  // A directory others may write to could hold planted code: not used.
  fs::permissions(shipped_, fs::perms::owner_all | fs::perms::others_all);
  EXPECT_FALSE(ObjectCache(shipped_.string(), ObjectCache::Mode::kReadOnly).enabled());
}

TEST_F(ShippedCacheTest, KeyCoversTheSourceDigest) {
  ObjectCacheTarget t{"x86_64-unknown-linux-gnu", "znver3", "+avx2"};
  ObjectCacheKey none = MakeObjectCacheKey("bc", t);
  ObjectCacheKey a = MakeObjectCacheKey("bc", t, Sha256Hex("policy a;"));
  ObjectCacheKey b = MakeObjectCacheKey("bc", t, Sha256Hex("policy b;"));
  EXPECT_EQ(a, MakeObjectCacheKey("bc", t, Sha256Hex("policy a;")));
  EXPECT_FALSE(a == b);
  EXPECT_FALSE(a == none);
  EXPECT_EQ(CompilerFingerprint().size(), 64u);
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST_F(ShippedCacheTest, WritingADirectoryReplacesWhatWasThere) {
  fs::create_directories(shipped_);
  fs::permissions(shipped_, fs::perms::owner_all);
  std::string stale(64, 'a');
  std::ofstream(shipped_ / (stale + ".kobj")) << "an object of an older build";
  Ship({SourceFile{"policies/shipped.policy", kPolicy}});
  auto files = Objects(shipped_);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_NE(files[0].filename().string(), stale + ".kobj");
}

TEST_F(ShippedCacheTest, WritingReportsAPolicyThatDoesNotCompile) {
  auto written = compiler_->WriteCacheDir(
      shipped_.string(), {SourceFile{"policies/broken.policy", "policy broken;\nfn f( {\n"}});
  ASSERT_FALSE(written.ok());
  EXPECT_NE(written.error().message.find("policies/broken.policy"), std::string::npos)
      << written.error().message;
}

TEST_F(ShippedCacheTest, EnvironmentChoosesTheDirectory) {
  const char* saved = std::getenv("KILN_BUILTIN_CACHE");
  std::optional<std::string> restore = saved ? std::optional<std::string>(saved) : std::nullopt;
  ::setenv("KILN_BUILTIN_CACHE", "/opt/kiln/builtins", 1);
  EXPECT_EQ(PolicyCompiler::DefaultShippedCacheDir(), "/opt/kiln/builtins");
  ::setenv("KILN_BUILTIN_CACHE", "", 1);
  EXPECT_EQ(PolicyCompiler::DefaultShippedCacheDir(), "") << "empty turns it off";
  if (restore)
    ::setenv("KILN_BUILTIN_CACHE", restore->c_str(), 1);
  else
    ::unsetenv("KILN_BUILTIN_CACHE");
}

}  // namespace
}  // namespace kiln
