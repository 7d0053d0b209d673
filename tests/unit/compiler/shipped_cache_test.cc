// The compile cache shipped with the binary (PolicyCompiler::SetShippedCacheDir, written by
// `kiln warm-cache` at build time): a policy whose object is there loads it instead of running O2
// and the code generator, and answers as the compiled one does; anything else — a changed source,
// a damaged file, an object of another key — is a miss that compiles as usual, and the shipped
// directory is never written. The key covers the source text as well as the module, so even a
// comment-only change is a miss.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/builtin_policies.h"
#include "compiler/host/compiled_policy.h"
#include "compiler/jit/object_cache.h"
#include "tests/unit/compiler/compile_cache_test_util.h"
#include "tests/unit/jit_test_util.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

using testing::CacheFiles;
using testing::FlipPayloadByte;
const std::string kPolicy = testing::CachedPolicyText();
double NodeOrder(testing::LoadedPolicy& l) { return testing::CachedNodeOrder(l); }
std::vector<fs::path> Objects(const fs::path& dir) { return CacheFiles(dir); }

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
    fresh.push_back(
        SourceFile{"test/shipped_builtins/" + std::to_string(::getpid()) + "/" + s.path, s.text});
  for (auto& r : compiler_->CompileAll(fresh)) {
    ASSERT_TRUE(r.ok()) << r.error().Format();
    EXPECT_FALSE((*r)->Code()->points.empty()) << (*r)->name;
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
  std::string other = kPolicy + "// another policy text\n";
  ASSERT_TRUE(testing::LoadAndCheckCachedPolicy(other, "test/shipped_both_"));
  EXPECT_EQ(compiler_->ShippedCacheStats().misses, 1u);
  EXPECT_EQ(compiler_->CompileCacheStats().stores, 1u);
  EXPECT_EQ(Objects(writable_).size(), 1u);
  EXPECT_EQ(Objects(shipped_).size(), 1u);
}

TEST_F(ShippedCacheTest, CommentOnlyChangeMissesAndCompiles) {
  // The module would be identical; the source digest in the key is not.
  Ship({SourceFile{"policies/shipped.policy", kPolicy}});
  ASSERT_TRUE(testing::LoadAndCheckCachedPolicy("// edited\n" + kPolicy, "test/shipped_comment_"));
  ObjectCacheStats s = compiler_->ShippedCacheStats();
  EXPECT_EQ(s.hits, 0u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.rejected, 0u);
}

TEST_F(ShippedCacheTest, DamagedShippedObjectIsIgnoredAndNotRewritten) {
  Ship({SourceFile{"policies/shipped.policy", kPolicy}});
  auto files = Objects(shipped_);
  ASSERT_EQ(files.size(), 1u);
  FlipPayloadByte(files[0]);
  std::string damaged = Slurp(files[0]);

  ASSERT_TRUE(testing::LoadAndCheckCachedPolicy(kPolicy, "test/shipped_damaged_"));
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
  std::string other = kPolicy + "\n";
  // Learn the key of `other` by compiling it through a writable cache.
  compiler_->SetShippedCacheDir("");
  compiler_->SetCompileCacheDir(writable_.string());
  ASSERT_TRUE(testing::LoadPolicy(other, "test/shipped_rekey_"));
  auto other_files = Objects(writable_);
  ASSERT_EQ(other_files.size(), 1u);
  compiler_->SetCompileCacheDir("");
  fs::rename(files[0], shipped_ / other_files[0].filename());

  compiler_->SetShippedCacheDir(shipped_.string());
  ASSERT_TRUE(testing::LoadAndCheckCachedPolicy(other, "test/shipped_rekey_"));
  EXPECT_EQ(compiler_->ShippedCacheStats().rejected, 1u);
  EXPECT_EQ(compiler_->ShippedCacheStats().hits, 0u);
}

// Payloads the cache verifies (checksum, key) but whose description of the object does not fit
// the policy: each is a miss that compiles, never a unit with wrong handlers or argument offsets.
struct BadDescription {
  const char* name;
  void (*apply)(std::string& payload);  // payload = description + object
};
void PutWord(std::string& p, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
// kPolicy's description: length, 1 point, the point, args_size, args_align, 1 offset, offset.
void TwoArguments(std::string& p) { PutWord(p, 8 * 5, 2); }
void UnknownPoint(std::string& p) { PutWord(p, 8 * 2, 250); }
void LengthPastTheEnd(std::string& p) { PutWord(p, 0, p.size()); }
void NoObject(std::string& p) { p.resize(8 * 7); }

class ShippedDescriptionTest : public ShippedCacheTest,
                               public ::testing::WithParamInterface<BadDescription> {};

TEST_P(ShippedDescriptionTest, DescriptionThatDoesNotFitThePolicyIsAMiss) {
  Ship({SourceFile{"policies/shipped.policy", kPolicy}});
  auto files = Objects(shipped_);
  ASSERT_EQ(files.size(), 1u);
  ObjectCacheKey key;
  std::string hex = files[0].stem().string();
  ASSERT_EQ(hex.size(), 64u);
  for (size_t i = 0; i < 32; ++i)
    key.bytes[i] = static_cast<uint8_t>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  std::optional<std::string> payload;
  {
    ObjectCache reader(shipped_.string(), ObjectCache::Mode::kReadOnly);
    payload = reader.Lookup(key);
  }
  ASSERT_TRUE(payload);
  ASSERT_GT(payload->size(), 8u * 7);
  GetParam().apply(*payload);
  fs::remove(files[0]);
  ObjectCache(shipped_.string()).Store(key, *payload);  // a well-formed file around it
  compiler_->SetShippedCacheDir(shipped_.string());

  auto l = testing::LoadAndCheckCachedPolicy(kPolicy, "test/shipped_description_");
  ASSERT_TRUE(l);
  EXPECT_EQ(compiler_->ShippedCacheStats().hits, 1u) << "the file itself verified";
  EXPECT_EQ(l->policy->args.size(), 1u);
  EXPECT_EQ(l->code->points.size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(Descriptions, ShippedDescriptionTest,
                         ::testing::Values(BadDescription{"TwoArguments", TwoArguments},
                                           BadDescription{"UnknownPoint", UnknownPoint},
                                           BadDescription{"LengthPastTheEnd", LengthPastTheEnd},
                                           BadDescription{"NoObject", NoObject}),
                         [](const auto& info) { return std::string(info.param.name); });

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
  ObjectCacheKey a = MakeObjectCacheKey(Sha256Hex("policy a;"), t);
  ObjectCacheKey b = MakeObjectCacheKey(Sha256Hex("policy b;"), t);
  EXPECT_EQ(a, MakeObjectCacheKey(Sha256Hex("policy a;"), t));
  EXPECT_FALSE(a == b);
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
