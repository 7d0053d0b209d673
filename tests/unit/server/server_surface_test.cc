// Issue 28, `kiln serve`'s surface and inputs: files that are FIFOs, devices or too large are
// refused without blocking (the last good configuration stays); the config watcher reacts only
// to the files the configuration reads (a log file in the conf's directory cannot feed it); a
// slow compile runs off the watcher's thread, is superseded by a newer change and never holds
// up Stop(); kubeconfig ports, duplicate keys and token files; one YAML document per scenario,
// nested at most 256 levels, refused in linear time.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "kubernetes/client.h"
#include "kubernetes/kubeconfig.h"
#include "packs/pack.h"
#include "runtime/file_read.h"
#include "server/config_watcher.h"
#include "server/policy_set.h"
#include "server/server.h"
#include "runtime/yaml_doc.h"
#include "simulator/scenario.h"
#include "tests/unit/temp_dir.h"

namespace kiln::server {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr std::string_view kConfA = "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: gang\n";
constexpr std::string_view kConfB = "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: binpack\n";
constexpr std::string_view kConfC = "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: drf\n";

using ::kiln::testing::TempDir;
using ::kiln::testing::WriteFileWhole;

// Generous: the loads compile real policies, and CI runs tests side by side on few cores.
bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout = 60s) {
  auto deadline = Clock::now() + timeout;
  while (!done()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// The compiled provider, except that chosen calls (1-based) block until released (or 60 s):
// a compile as slow as we like. Shared state, so a load abandoned by its reloader may finish
// after the test's objects are gone.
struct SlowCompiles {
  struct State {
    std::atomic<int> calls{0};
    std::atomic<int> slow_from{1 << 30};  // calls from this one on are slow...
    std::atomic<int> slow_to{1 << 30};    // ...up to this one
    std::atomic<int> blocked{0};          // slow calls entered so far
    std::atomic<bool> release{false};
  };
  std::shared_ptr<State> state = std::make_shared<State>();

  SlowCompiles() = default;
  SlowCompiles(int slow_from, int slow_to) {
    state->slow_from = slow_from;
    state->slow_to = slow_to;
  }

  ProviderFactory Factory() const {
    return [s = state](const PolicySources& sources,
                       const std::vector<NamedPolicySource>& named)
               -> Result<std::unique_ptr<PolicyProvider>> {
      int n = ++s->calls;
      if (n >= s->slow_from && n <= s->slow_to) {
        ++s->blocked;
        auto until = Clock::now() + 60s;
        while (!s->release && Clock::now() < until) std::this_thread::sleep_for(5ms);
      }
      return CompiledProviderFactory()(sources, named);
    };
  }
  // Lets every blocked load finish and waits for it, so no thread outlives the test.
  ~SlowCompiles() {
    state->release = true;
    WaitFor([] { return PolicyReloader::LoadsInFlight() == 0; }, 60s);
  }
};

// Writes kConfA to `conf`: the sources that read only it.
PolicySources ConfSources(const fs::path& conf) {
  WriteFileWhole(conf, kConfA);
  PolicySources sources;
  sources.conf_file = conf.string();
  return sources;
}

// scheduler.conf holding kConfA, loaded by a reloader whose compiles `slow` holds up (calls
// slow_from..slow_to), and a watcher that reloads it.
struct SlowReload {
  TempDir dir;
  fs::path conf = dir.path() / "scheduler.conf";
  PolicySources sources = ConfSources(conf);
  SlowCompiles slow;
  PolicyReloader reloader{sources, slow.Factory()};
  std::unique_ptr<ConfigWatcher> watcher;

  SlowReload(int slow_from, int slow_to) : slow(slow_from, slow_to) {}
  // Loads the conf and starts watching; false when either fails.
  bool Start() {
    if (!reloader.LoadInitial().ok()) return false;
    watcher = WatchAndReload(reloader, 50ms);
    return watcher->Start().ok();
  }
};

std::string ConfText(const PolicySet& set) {
  return set.conf.tiers.empty() || set.conf.tiers[0].plugins.empty()
             ? ""
             : set.conf.tiers[0].plugins[0].name;
}

// ---- files that are not regular files, or too large ----

TEST(BoundedFileTest, RegularFilesAreReadAndEverythingElseIsRefusedAtOnce) {
  TempDir dir;
  fs::path ok = dir.path() / "ok.txt";
  WriteFileWhole(ok, "hello");
  auto text = ReadBoundedFile(ok.string(), 16, "test file");
  ASSERT_TRUE(text.ok()) << text.error().Format();
  EXPECT_EQ(*text, "hello");

  fs::path fifo = dir.path() / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto start = Clock::now();
  auto r = ReadBoundedFile(fifo.string(), 16, "scheduler.conf");
  ASSERT_FALSE(r.ok());
  EXPECT_LT(SecondsSince(start), 1.0);
  EXPECT_EQ(r.error().message, "cannot read scheduler.conf " + fifo.string() +
                                   ": a FIFO (only regular files are read)");
  EXPECT_EQ(r.error().where.file, fifo.string());

  r = ReadBoundedFile("/dev/zero", 1 << 20, "tokenFile");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("a character device"), std::string::npos) << r.error().message;

  r = ReadBoundedFile(dir.path().string(), 16, "conf");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("a directory"), std::string::npos);

  fs::path big = dir.path() / "big";
  WriteFileWhole(big, std::string(17, 'x'));
  r = ReadBoundedFile(big.string(), 16, "pack");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("it is 17 bytes, more than the 16 bytes allowed"),
            std::string::npos)
      << r.error().message;
  EXPECT_TRUE(ReadBoundedFile(big.string(), 17, "pack").ok());

  r = ReadBoundedFile((dir.path() / "missing").string(), 16, "conf");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("No such file"), std::string::npos);
}

// Issue 28 item 8: a FIFO renamed over scheduler.conf. The reload is rejected at once with the
// reason (the old generation stays), the watcher keeps watching (the next good conf loads), and
// stopping works.
TEST(SurfaceReloadTest, FifoRenamedOverTheConfIsRejectedAndTheWatcherGoesOn) {
  TempDir dir;
  fs::path conf = dir.path() / "scheduler.conf";
  PolicySources sources = ConfSources(conf);
  PolicyReloader reloader(sources, CompiledProviderFactory());
  ASSERT_TRUE(reloader.LoadInitial().ok());
  std::atomic<int> rejected{0};
  std::string error;
  std::mutex mu;
  reloader.AddObserver([&](const ReloadOutcome& o, const PolicySet*) {
    if (o.kind == ReloadOutcome::Kind::kRejected) {
      std::lock_guard<std::mutex> l(mu);
      error = o.error->Format();
      ++rejected;
    }
  });
  auto watcher = WatchAndReload(reloader, 50ms);
  ASSERT_TRUE(watcher->Start().ok());

  fs::path fifo = dir.path() / "conf.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  fs::rename(fifo, conf);
  ASSERT_TRUE(WaitFor([&] { return rejected.load() >= 1; }));
  {
    std::lock_guard<std::mutex> l(mu);
    EXPECT_NE(error.find("a FIFO (only regular files are read)"), std::string::npos) << error;
  }
  EXPECT_EQ(reloader.Current()->generation, 1u);
  EXPECT_EQ(ConfText(*reloader.Current()), "gang");

  WriteFileWhole(conf, kConfB);
  ASSERT_TRUE(WaitFor([&] { return reloader.Current()->generation == 2; }));
  EXPECT_EQ(ConfText(*reloader.Current()), "binpack");
  auto start = Clock::now();
  watcher->Stop();
  EXPECT_LT(SecondsSince(start), 1.0);
}

// Issue 28 item 9: with the log file inside the watched directory, every log line is an
// inotify event. Only the files the configuration reads count, so writing the log triggers no
// reload (and no trace line about it, which would be written to the log again).
TEST(SurfaceReloadTest, WritesToOtherFilesInTheWatchedDirectoryAreIgnored) {
  TempDir dir;
  fs::path conf = dir.path() / "scheduler.conf";
  fs::path policies = dir.path() / "policies";
  fs::create_directories(policies);
  PolicySources sources = ConfSources(conf);
  sources.policy_dirs = {policies.string()};
  PolicyReloader reloader(sources, CompiledProviderFactory());
  ASSERT_TRUE(reloader.LoadInitial().ok());
  auto watcher = WatchAndReload(reloader, 50ms);
  ASSERT_TRUE(watcher->Start().ok());

  {
    std::ofstream log(dir.path() / "kiln.log", std::ios::app);
    for (int i = 0; i < 200; ++i) {
      log << "I1129 trace line " << i << "\n";
      log.flush();
    }
  }
  WriteFileWhole(policies / "notes.txt", "not a policy");
  std::this_thread::sleep_for(300ms);
  EXPECT_TRUE(watcher->WaitIdle(5s));
  EXPECT_EQ(watcher->callbacks(), 0u);
  EXPECT_GT(watcher->ignored_events(), 0u);  // inotify merges repeated identical events

  // The files it reads still count: the conf, a policy, a ConfigMap's `..data` swap.
  WriteFileWhole(conf, kConfB);
  ASSERT_TRUE(WaitFor([&] { return reloader.Current()->generation == 2; }));
  ASSERT_TRUE(WaitFor([&] { return watcher->callbacks() == 1; }));
  WriteFileWhole(policies / "mine.policy", "policy mine;\n");
  ASSERT_TRUE(WaitFor([&] { return watcher->callbacks() == 2; }));

  EXPECT_TRUE(reloader.IsRelevant(dir.path().string(), "scheduler.conf"));
  EXPECT_TRUE(reloader.IsRelevant(dir.path().string(), "..data"));
  EXPECT_TRUE(reloader.IsRelevant(dir.path().string(), "..2026_11_29_04_00_00.123"));
  EXPECT_FALSE(reloader.IsRelevant(dir.path().string(), "kiln.log"));
  EXPECT_FALSE(reloader.IsRelevant(dir.path().string(), "scheduler.conf.tmp"));
  EXPECT_TRUE(reloader.IsRelevant(policies.string(), "a.policy"));
  EXPECT_FALSE(reloader.IsRelevant(policies.string(), "a.policy.swp"));
  watcher->Stop();
}

// Issue 28 item 6: the compile runs off the watcher's thread. While a slow compile runs, a newer
// change is still seen; it supersedes the compile in flight (abandoned, its result dropped) and
// its own load becomes the next generation.
TEST(SurfaceReloadTest, ANewerChangeSupersedesASlowCompileInFlight) {
  SlowReload r(2, 2);  // the first reload's compile
  ASSERT_TRUE(r.Start());
  std::atomic<int> abandoned{0};
  r.reloader.AddObserver([&](const ReloadOutcome& o, const PolicySet*) {
    if (o.kind == ReloadOutcome::Kind::kAbandoned) ++abandoned;
  });

  WriteFileWhole(r.conf, kConfB);
  ASSERT_TRUE(WaitFor([&] { return r.slow.state->blocked.load() == 1; }));
  auto start = Clock::now();
  WriteFileWhole(r.conf, kConfC);
  ASSERT_TRUE(WaitFor([&] { return r.reloader.Current()->generation == 2; }));
  EXPECT_LT(SecondsSince(start), 5.0);
  EXPECT_EQ(ConfText(*r.reloader.Current()), "drf");
  EXPECT_EQ(abandoned.load(), 1);
  EXPECT_TRUE(WaitFor([] { return PolicyReloader::LoadsInFlight() == 1; }));  // the abandoned one
  r.slow.state->release = true;
  ASSERT_TRUE(WaitFor([] { return PolicyReloader::LoadsInFlight() == 0; }));
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(ConfText(*r.reloader.Current()), "drf");  // its result was dropped
  EXPECT_EQ(r.reloader.Current()->generation, 2u);
  r.watcher->Stop();
}

// At most two compiles at once: while an abandoned compile still runs, the load in flight is
// not abandoned for yet another change; the newest change loads after it.
TEST(SurfaceReloadTest, AtMostOneAbandonedCompileRunsAtATime) {
  SlowReload r(2, 3);  // the first two reloads' compiles
  ASSERT_TRUE(r.Start());

  WriteFileWhole(r.conf, kConfB);
  ASSERT_TRUE(WaitFor([&] { return r.slow.state->blocked.load() == 1; }));
  WriteFileWhole(r.conf, kConfC);  // abandons the first, starts the second (also slow)
  ASSERT_TRUE(WaitFor([&] { return r.slow.state->blocked.load() == 2; }));
  WriteFileWhole(r.conf, kConfA);  // must wait: one abandoned compile still runs
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(PolicyReloader::LoadsInFlight(), 2);
  EXPECT_EQ(r.slow.state->calls.load(), 3);
  r.slow.state->release = true;
  // The newest change wins. Either the second compile finishes first (generation 2, then the
  // newest loads as 3), or it is superseded once the first abandoned compile has ended, and the
  // newest change is the text generation 1 already runs (unchanged: still 1).
  ASSERT_TRUE(r.watcher->WaitIdle(30s));
  ASSERT_TRUE(WaitFor([] { return PolicyReloader::LoadsInFlight() == 0; }));
  EXPECT_EQ(ConfText(*r.reloader.Current()), "gang");
  const auto generation = r.reloader.Current()->generation;
  EXPECT_TRUE(generation == 1u || generation == 3u) << generation;
  r.watcher->Stop();
}

// SIGTERM during a long compile: Stop() abandons it and returns at once.
TEST(SurfaceReloadTest, StopDuringASlowCompileReturnsPromptly) {
  SlowReload r(2, 2);
  ASSERT_TRUE(r.Start());
  WriteFileWhole(r.conf, kConfB);
  ASSERT_TRUE(WaitFor([&] { return r.slow.state->blocked.load() == 1; }));
  auto start = Clock::now();
  r.watcher->Stop();
  EXPECT_LT(SecondsSince(start), 1.0);
  EXPECT_EQ(r.reloader.Current()->generation, 1u);
  r.slow.state->release = true;  // the abandoned compile may end now
  // The first load can be abandoned too (SIGTERM before serving started).
  SlowCompiles slow_first(1, 1);
  PolicyReloader first(r.sources, slow_first.Factory());
  std::atomic<bool> stop{false};
  std::thread stopper([&] {
    WaitFor([&] { return slow_first.state->blocked.load() == 1; });
    stop = true;
  });
  start = Clock::now();
  Status s = first.LoadInitial([&] { return stop.load(); });
  stopper.join();
  EXPECT_FALSE(s.ok());
  EXPECT_LT(SecondsSince(start), 2.0);
  EXPECT_EQ(first.Current(), nullptr);
}

// ---- packs ----

TEST(BoundedFileTest, APackThatIsAFifoIsRefusedWithoutBlocking) {
  TempDir dir;
  fs::path fifo = dir.path() / "team.kpack";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto start = Clock::now();
  auto pack = packs::ReadPack(fifo.string());
  ASSERT_FALSE(pack.ok());
  EXPECT_LT(SecondsSince(start), 1.0);
  EXPECT_NE(pack.error().message.find("a FIFO"), std::string::npos) << pack.error().message;
  // In a packs directory it is not a pack at all (only regular *.kpack files are), and a
  // --pack naming it rejects the configuration with the reason.
  PolicySources sources;
  sources.pack_files = {fifo.string()};
  auto set = LoadPolicySet(sources, CompiledProviderFactory(), 1);
  ASSERT_FALSE(set.ok());
  EXPECT_NE(set.error().message.find("a FIFO"), std::string::npos) << set.error().message;
}

}  // namespace
}  // namespace kiln::server

// ---- kubeconfig ----

namespace kiln::kube {
namespace {

namespace fs = std::filesystem;
using kiln::server::SecondsSince;
using ::kiln::testing::TempDir;
using Clock = std::chrono::steady_clock;

std::string Kubeconfig(std::string_view server, std::string_view user_extra = "") {
  return fmt::format(R"(apiVersion: v1
kind: Config
current-context: c
contexts:
- name: c
  context: {{cluster: k, user: u}}
clusters:
- name: k
  cluster:
    server: "{}"
users:
- name: u
  user:
    token: abc{}
)",
                     server, user_extra);
}

TEST(KubeconfigLimitsTest, ServerPortOutOfRangeIsRejectedAtLoad) {
  for (std::string_view bad : {"https://h:999999", "https://h:0", "https://h:65536", "https://h:",
                               "https://h:6443x", "https://[::1]:70000", "https://:6443"}) {
    auto cfg = ParseKubeConfig(Kubeconfig(bad), "/k/config");
    ASSERT_FALSE(cfg.ok()) << bad;
    EXPECT_EQ(cfg.error().where.file, "/k/config");
    EXPECT_EQ(cfg.error().where.line, 10) << bad;  // the `server:` value
    EXPECT_NE(cfg.error().message.find("`server` of cluster `k`"), std::string::npos)
        << cfg.error().message;
  }
  auto cfg = ParseKubeConfig(Kubeconfig("https://h:999999"), "/k/config");
  EXPECT_EQ(cfg.error().Format(),
            "/k/config:10:13: error: kubeconfig /k/config: `server` of cluster `k` has port "
            "999999, which is not a number from 1 to 65535: `https://h:999999`");
  for (std::string_view good : {"https://h:6443", "https://h", "http://10.0.0.1:8080/prefix/",
                                "https://[::1]:443", "https://[fe80::1]"})
    EXPECT_TRUE(ParseKubeConfig(Kubeconfig(good), "/k/config").ok()) << good;
}

TEST(KubeconfigLimitsTest, DuplicateKeysAreRejectedWithTheirLine) {
  std::string text = Kubeconfig("https://h:6443");
  // A second `server` in the cluster, a second `current-context` at the top.
  std::string dup_server = text;
  dup_server.insert(dup_server.find("users:"), "    server: https://evil:6443\n");
  auto cfg = ParseKubeConfig(dup_server, "/k/config");
  ASSERT_FALSE(cfg.ok());
  EXPECT_EQ(cfg.error().where.line, 11);
  EXPECT_NE(cfg.error().message.find("duplicate key `server`"), std::string::npos)
      << cfg.error().message;
  EXPECT_NE(cfg.error().message.find("first at line 10"), std::string::npos) << cfg.error().message;

  std::string dup_top = text + "current-context: other\n";
  cfg = ParseKubeConfig(dup_top, "/k/config");
  ASSERT_FALSE(cfg.ok());
  EXPECT_NE(cfg.error().message.find("duplicate key `current-context`"), std::string::npos)
      << cfg.error().message;
  EXPECT_EQ(cfg.error().where.line, 15);
}

// `tokenFile: /dev/zero` reached 24 GB: now the client refuses it when it is created.
TEST(KubeconfigLimitsTest, TokenFileMustBeASmallRegularFile) {
  TempDir dir;
  for (std::string token_file : {"/dev/zero", "fifo", "big"}) {
    fs::path path = token_file[0] == '/' ? fs::path(token_file) : dir.path() / token_file;
    if (token_file == "fifo") ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
    if (token_file == "big") {
      std::ofstream out(path);
      out << std::string(kMaxCredentialBytes + 1, 'a');
    }
    std::string text = Kubeconfig("https://h:6443", fmt::format("\n    tokenFile: {}", path.string()));
    auto cfg = ParseKubeConfig(text, (dir.path() / "config").string());
    ASSERT_TRUE(cfg.ok()) << cfg.error().Format();
    auto start = Clock::now();
    auto client = KubeClient::Create(*cfg);
    ASSERT_FALSE(client.ok()) << token_file;
    EXPECT_LT(SecondsSince(start), 1.0);
    EXPECT_NE(client.error().message.find("cannot read tokenFile " + path.string()),
              std::string::npos)
        << client.error().message;
  }
}

}  // namespace
}  // namespace kiln::kube

// ---- scenario YAML ----

namespace kiln {
namespace {

using kiln::server::SecondsSince;
using Clock = std::chrono::steady_clock;

TEST(ScenarioShapeTest, ASecondYamlDocumentIsRejectedWhereItStarts) {
  std::string text = "name: one\ncluster:\n  nodes: []\n---\nname: two\n";
  auto spec = ParseScenario(text, "two-docs.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.error().where.file, "two-docs.yaml");
  EXPECT_EQ(spec.error().where.line, 4);
  EXPECT_EQ(spec.error().where.column, 1);
  EXPECT_NE(spec.error().message.find("a second YAML document starts here"), std::string::npos)
      << spec.error().message;
  // A document end marker alone is still one document.
  EXPECT_TRUE(yaml::Document::Parse("name: one\ncluster:\n  nodes: []\n...\n", "end.yaml").ok());
}

// 64 KB of 32k nested flow sequences took 5 s to reject (128 KB: 17 s). The depth is capped at
// 256 as the policy parser's is, and the file is refused before libyaml reads much further.
TEST(ScenarioShapeTest, DeepNestingIsRefusedQuicklyAtTheLimit) {
  for (size_t depth : {32u * 1024, 64u * 1024, 1024u * 1024}) {
    std::string text = "name: deep\ncluster: " + std::string(depth, '[') + std::string(depth, ']') + "\n";
    auto start = Clock::now();
    auto spec = ParseScenario(text, "deep.yaml");
    double took = SecondsSince(start);
    ASSERT_FALSE(spec.ok());
    EXPECT_LT(took, 0.5) << depth;
    EXPECT_EQ(spec.error().message, "YAML nested more than 256 levels deep");
    EXPECT_EQ(spec.error().where.line, 2);
    EXPECT_EQ(spec.error().where.column, 9 + 256);  // the 256th `[`, the 257th level
  }
  // Block mappings count the same way; 256 levels are fine.
  std::string ok = "name: deep\nx: " + std::string(255, '[') + std::string(255, ']') + "\n";
  auto doc = yaml::Document::Parse(ok, "ok.yaml");
  EXPECT_TRUE(doc.ok()) << doc.error().Format();
}

}  // namespace
}  // namespace kiln
