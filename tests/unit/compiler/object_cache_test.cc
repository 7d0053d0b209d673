// The on-disk compile cache (compiler/jit/object_cache.h): a policy compiled with a cache
// directory leaves its object there; a later compile of the same policy (under another path, so
// the in-memory cache of PolicyCompiler does not answer) loads it instead of running O2 and the
// code generator, and its handlers answer as the compiled ones did. A changed policy misses; a
// damaged file is rejected, recompiled and replaced; a cache that cannot be written never fails
// a compile.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

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
std::string PolicyText(const std::string& weight = "2.5") { return testing::CachedPolicyText(weight); }
double NodeOrder(testing::LoadedPolicy& l) { return testing::CachedNodeOrder(l); }

class ObjectCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> n{0};
    dir_ = fs::path(::testing::TempDir()) /
           ("kiln-object-cache-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
    fs::remove_all(dir_);
    auto compiler = PolicyCompiler::Global();
    ASSERT_TRUE(compiler.ok());
    compiler_ = *compiler;
  }
  void TearDown() override {
    compiler_->SetCompileCacheDir("");
    std::error_code ec;
    fs::permissions(dir_, fs::perms::owner_all, ec);
    fs::remove_all(dir_, ec);
  }

  std::unique_ptr<testing::LoadedPolicy> Load(const std::string& text) {
    return testing::LoadPolicy(text, "test/object_cache_");
  }
  std::unique_ptr<testing::LoadedPolicy> LoadAndCheck(const std::string& text) {
    return testing::LoadAndCheckCachedPolicy(text, "test/object_cache_");
  }

  // The compile cache's hits, misses and stores so far, and the objects in its directory.
  void ExpectCacheCounts(uint64_t hits, uint64_t misses, uint64_t stores, size_t files) {
    ObjectCacheStats s = compiler_->CompileCacheStats();
    EXPECT_EQ(s.hits, hits);
    EXPECT_EQ(s.misses, misses);
    EXPECT_EQ(s.stores, stores);
    EXPECT_EQ(CacheFiles(dir_).size(), files);
  }

  fs::path dir_;
  PolicyCompiler* compiler_ = nullptr;
};

TEST_F(ObjectCacheTest, SecondCompileLoadsTheStoredObjectAndAnswersTheSame) {
  compiler_->SetCompileCacheDir(dir_.string());
  auto first = Load(PolicyText());
  ASSERT_TRUE(first);
  ExpectCacheCounts(/*hits=*/0, /*misses=*/1, /*stores=*/1, /*files=*/1);
  struct stat st;
  ASSERT_EQ(::stat(dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);

  // The same text under another path: PolicyCompiler's in-memory cache does not answer, the
  // front end runs again, and the JIT takes the object from disk instead of lowering it.
  auto second = Load(PolicyText());
  ASSERT_TRUE(second);
  ExpectCacheCounts(/*hits=*/1, /*misses=*/1, /*stores=*/1, /*files=*/1);
  EXPECT_EQ(NodeOrder(*first), 1425.0);
  EXPECT_EQ(NodeOrder(*second), 1425.0);
}

TEST_F(ObjectCacheTest, ChangedPolicyMisses) {
  compiler_->SetCompileCacheDir(dir_.string());
  auto a = Load(PolicyText("2.5"));
  auto b = Load(PolicyText("4.0"));
  ASSERT_TRUE(a && b);
  ExpectCacheCounts(/*hits=*/0, /*misses=*/2, /*stores=*/2, /*files=*/2);
  EXPECT_EQ(NodeOrder(*a), 1425.0);
  EXPECT_EQ(NodeOrder(*b), 2280.0);
}

// Damage done to the one cache file before the second compile.
struct Damage {
  const char* name;
  void (*apply)(const fs::path& file);
};

void Truncate(const fs::path& file) { fs::resize_file(file, fs::file_size(file) / 2); }
void TruncateIntoHeader(const fs::path& file) { fs::resize_file(file, 20); }
void OtherFormatVersion(const fs::path& file) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(8);  // after the magic: the format version
  f.put(static_cast<char>(kCacheFormat + 1));
}
void Empty(const fs::path& file) { fs::resize_file(file, 0); }

class ObjectCacheDamageTest : public ObjectCacheTest,
                              public ::testing::WithParamInterface<Damage> {};

TEST_P(ObjectCacheDamageTest, DamagedFileIsRejectedRecompiledAndReplaced) {
  compiler_->SetCompileCacheDir(dir_.string());
  ASSERT_TRUE(Load(PolicyText()));
  auto files = CacheFiles(dir_);
  ASSERT_EQ(files.size(), 1u);
  GetParam().apply(files[0]);

  ASSERT_TRUE(LoadAndCheck(PolicyText()));
  ObjectCacheStats s = compiler_->CompileCacheStats();
  EXPECT_EQ(s.hits, 0u);
  EXPECT_EQ(s.misses, 2u);
  EXPECT_EQ(s.rejected, 1u);
  EXPECT_EQ(s.stores, 2u);

  // The recompile replaced the file: the next compile hits it.
  ASSERT_TRUE(LoadAndCheck(PolicyText()));
  EXPECT_EQ(compiler_->CompileCacheStats().hits, 1u);
  EXPECT_EQ(CacheFiles(dir_).size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(Damages, ObjectCacheDamageTest,
                         ::testing::Values(Damage{"FlippedPayloadByte", FlipPayloadByte},
                                           Damage{"Truncated", Truncate},
                                           Damage{"TruncatedIntoHeader", TruncateIntoHeader},
                                           Damage{"OtherFormatVersion", OtherFormatVersion},
                                           Damage{"Empty", Empty}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST_F(ObjectCacheTest, FileOfAnotherKeyIsRejected) {
  // A valid file renamed to another key's name: its header names the wrong key.
  ObjectCache cache(dir_.string());
  ASSERT_TRUE(cache.enabled());
  ObjectCacheTarget target{"x86_64-unknown-linux-gnu", "cpu", "+sse2"};
  ObjectCacheKey a = MakeObjectCacheKey("source a", target);
  ObjectCacheKey b = MakeObjectCacheKey("source b", target);
  ASSERT_FALSE(a == b);
  cache.Store(a, "object of a");
  ASSERT_EQ(cache.Lookup(a), std::optional<std::string>("object of a"));
  fs::rename(cache.PathFor(a), cache.PathFor(b));
  EXPECT_EQ(cache.Lookup(b), std::nullopt);
  ObjectCacheStats s = cache.Stats();
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.rejected, 1u);
}

// LLVM options (KILN_LLVM_OPTIONS) may change the code, so an object compiled under them is not
// the answer for a process without them, nor for other options.
TEST_F(ObjectCacheTest, LlvmOptionsArePartOfTheKey) {
  ObjectCacheTarget plain{"x86_64-unknown-linux-gnu", "cpu", "+sse2"};
  ObjectCacheTarget with = plain;
  with.llvm_options = "-x86-asm-syntax=intel";
  ObjectCacheTarget other = plain;
  other.llvm_options = "-enable-misched=false";
  ObjectCacheKey a = MakeObjectCacheKey("source", plain);
  EXPECT_FALSE(a == MakeObjectCacheKey("source", with));
  EXPECT_FALSE(MakeObjectCacheKey("source", with) == MakeObjectCacheKey("source", other));
  EXPECT_EQ(a, MakeObjectCacheKey("source", plain));
  // Fields are length-prefixed: moving text between the features and the options is another key.
  ObjectCacheTarget shifted{"x86_64-unknown-linux-gnu", "cpu", "+sse2-x86-asm-syntax=intel", ""};
  ObjectCacheTarget split{"x86_64-unknown-linux-gnu", "cpu", "+sse2", "-x86-asm-syntax=intel"};
  EXPECT_FALSE(MakeObjectCacheKey("source", shifted) == MakeObjectCacheKey("source", split));
}

TEST_F(ObjectCacheTest, OpeningKeepsTheMostRecentlyUsedObjects) {
  ObjectCacheTarget target{"x86_64-unknown-linux-gnu", "cpu", "+sse2"};
  const auto now = fs::file_time_type::clock::now();
  std::vector<ObjectCacheKey> keys;
  {
    ObjectCache cache(dir_.string());
    ASSERT_TRUE(cache.enabled());
    // kCacheMaxEntries + 20 objects, key i last used i minutes after the oldest.
    for (size_t i = 0; i < kCacheMaxEntries + 20; ++i) {
      keys.push_back(MakeObjectCacheKey("source " + std::to_string(i), target));
      cache.Store(keys.back(), "object " + std::to_string(i));
      fs::last_write_time(cache.PathFor(keys.back()),
                          now - std::chrono::hours(48) + std::chrono::minutes(i));
    }
    // The oldest one is used again: a hit makes it the most recent.
    ASSERT_EQ(cache.Lookup(keys[0]), std::optional<std::string>("object 0"));
  }
  std::ofstream(dir_ / (keys[1].Hex() + ".kobj.tmp.1.0")) << "left by a crashed writer";
  fs::last_write_time(dir_ / (keys[1].Hex() + ".kobj.tmp.1.0"), now - std::chrono::hours(2));
  std::ofstream(dir_ / (keys[2].Hex() + ".kobj.tmp.2.0")) << "being written right now";

  ObjectCache reopened(dir_.string());
  EXPECT_EQ(reopened.Stats().pruned, 21u) << "20 least recently used objects and the stale temp file";
  EXPECT_EQ(CacheFiles(dir_).size(), kCacheMaxEntries);
  EXPECT_TRUE(fs::exists(reopened.PathFor(keys[0]))) << "refreshed by its hit";
  for (size_t i = 1; i <= 20; ++i) EXPECT_FALSE(fs::exists(reopened.PathFor(keys[i]))) << i;
  EXPECT_TRUE(fs::exists(reopened.PathFor(keys[21])));
  EXPECT_FALSE(fs::exists(dir_ / (keys[1].Hex() + ".kobj.tmp.1.0")));
  EXPECT_TRUE(fs::exists(dir_ / (keys[2].Hex() + ".kobj.tmp.2.0")));
}

TEST_F(ObjectCacheTest, KeyCoversTheTarget) {
  ObjectCacheTarget host{"x86_64-unknown-linux-gnu", "skylake", "+avx2"};
  ObjectCacheTarget other_cpu{"x86_64-unknown-linux-gnu", "znver3", "+avx2"};
  ObjectCacheTarget other_features{"x86_64-unknown-linux-gnu", "skylake", "-avx2"};
  ObjectCacheKey k = MakeObjectCacheKey("bc", host);
  EXPECT_EQ(k, MakeObjectCacheKey("bc", host));
  EXPECT_FALSE(k == MakeObjectCacheKey("bc", other_cpu));
  EXPECT_FALSE(k == MakeObjectCacheKey("bc", other_features));
  EXPECT_FALSE(k == MakeObjectCacheKey("bd", host));
}

TEST_F(ObjectCacheTest, UncreatableDirStillCompiles) {
  // The cache "directory" lies under a regular file: it can never be created (even by root).
  fs::create_directories(dir_);
  std::ofstream(dir_ / "file") << "not a directory";
  compiler_->SetCompileCacheDir((dir_ / "file" / "cache").string());
  ASSERT_TRUE(LoadAndCheck(PolicyText()));
  ObjectCacheStats s = compiler_->CompileCacheStats();
  EXPECT_EQ(s.hits, 0u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.stores, 0u);
}

TEST_F(ObjectCacheTest, StoreThatCannotWriteStillCompiles) {
  // The directory is fine when the cache opens it, then turns into a regular file: every write
  // fails (even for root, which a read-only mode would not stop).
  compiler_->SetCompileCacheDir(dir_.string());
  fs::remove_all(dir_);
  std::ofstream(dir_) << "not a directory any more";
  ASSERT_TRUE(LoadAndCheck(PolicyText()));
  ObjectCacheStats s = compiler_->CompileCacheStats();
  EXPECT_EQ(s.stores, 0u);
  EXPECT_EQ(s.store_failures, 1u);
}

TEST_F(ObjectCacheTest, DirectoryOthersMayWriteIsNotUsed) {
  // Whoever can write there could plant code: the cache is disabled and the compile goes on.
  fs::create_directories(dir_);
  fs::permissions(dir_, fs::perms::owner_all | fs::perms::group_all | fs::perms::others_all);
  compiler_->SetCompileCacheDir(dir_.string());
  ASSERT_TRUE(LoadAndCheck(PolicyText()));
  EXPECT_EQ(compiler_->CompileCacheStats().stores, 0u);
  EXPECT_TRUE(CacheFiles(dir_).empty());
}

TEST_F(ObjectCacheTest, AllBuiltinsCompiledTogetherHitTheSecondTime) {
  // CompileAll's parallel compiles store and load concurrently.
  compiler_->SetCompileCacheDir(dir_.string());
  auto sources = [](int round) {
    std::vector<SourceFile> out;
    for (const auto& b : BuiltinPolicies())
      out.push_back(SourceFile{"test/object_cache_all/" + std::to_string(::getpid()) + "/" +
                                   std::to_string(round) + "/" + std::string(b.path),
                               std::string(b.text)});
    return out;
  };
  size_t n = BuiltinPolicies().size();
  for (auto& r : compiler_->CompileAll(sources(0))) ASSERT_TRUE(r.ok()) << r.error().Format();
  EXPECT_EQ(compiler_->CompileCacheStats().stores, n);
  EXPECT_EQ(CacheFiles(dir_).size(), n);
  auto warm = compiler_->CompileAll(sources(1));
  for (auto& r : warm) {
    ASSERT_TRUE(r.ok()) << r.error().Format();
    EXPECT_FALSE((*r)->Code()->points.empty());
  }
  ObjectCacheStats s = compiler_->CompileCacheStats();
  EXPECT_EQ(s.hits, n);
  EXPECT_EQ(s.misses, n);
  EXPECT_EQ(s.stores, n);
}

}  // namespace
}  // namespace kiln
