// kubernetes/ against the API-server emulator (tools/kube-emulator, over TLS with a bearer
// token): the client, reflectors (sync, re-watch after a dropped stream, relist after a 410),
// and the KubernetesCluster's writes (bind 201/409/5xx, eviction both ways, status writes).
// Each test starts its own emulator on a free port and stops it at the end.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "kubernetes/client.h"
#include "kubernetes/encode.h"
#include "kubernetes/kubernetes_cluster.h"
#include "kubernetes/lease.h"
#include "kubernetes/reflector.h"
#include "compiler/host/compiled_policy_provider.h"
#include "runtime/scheduler.h"
#include "simulator/scenario.h"
#include "simulator/simulator.h"
#include "tests/unit/kubernetes/cluster_spec_dump.h"
#include "tests/unit/source_dir.h"

extern char** environ;

namespace kiln::kube {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

// The cluster every test starts from: two nodes, a PodGroup, pending pods of ours, a running pod
// of ours and one of another scheduler.
json Manifests() {
  auto pod = [](std::string name, std::string node, std::string phase, std::string scheduler = "volcano") {
    json p = {{"apiVersion", "v1"}, {"kind", "Pod"},
              {"metadata", {{"name", name}, {"namespace", "ns"}, {"labels", {{"app", "web"}}},
                            {"annotations", {{"scheduling.k8s.io/group-name", "g"}}}}},
              {"spec", {{"schedulerName", scheduler},
                        {"containers", json::array({{{"name", "c"}, {"image", "img"},
                                                     {"resources", {{"requests", {{"cpu", "1"}}}}}}})}}},
              {"status", {{"phase", phase}}}};
    if (!node.empty()) p["spec"]["nodeName"] = node;
    return p;
  };
  auto node = [](std::string name) {
    return json{{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", name}}},
                {"status", {{"allocatable", {{"cpu", "4"}, {"memory", "8Gi"}, {"pods", "110"}}},
                            {"capacity", {{"cpu", "4"}, {"memory", "8Gi"}, {"pods", "110"}}}}}};
  };
  json items = json::array({
      {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "ns"}}}},
      {{"apiVersion", "scheduling.volcano.sh/v1beta1"}, {"kind", "Queue"}, {"metadata", {{"name", "default"}}},
       {"spec", {{"weight", 1}}}, {"status", {{"state", "Open"}}}},
      node("n1"), node("n2"),
      {{"apiVersion", "scheduling.volcano.sh/v1beta1"}, {"kind", "PodGroup"},
       {"metadata", {{"name", "g"}, {"namespace", "ns"}}}, {"spec", {{"minMember", 1}, {"queue", "default"}}},
       {"status", {{"phase", "Pending"}}}},
      pod("p1", "", "Pending"), pod("p2", "", "Pending"), pod("p3", "", "Pending"),
      pod("r1", "n1", "Running"), pod("other", "n2", "Running", "default-scheduler"),
      pod("other-pending", "", "Pending", "default-scheduler"),
  });
  return {{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}};
}

class Emulator {
 public:
  // Starts the emulator; false (with a test failure) when it does not come up in time.
  bool Start(const json& manifests, std::vector<std::string> extra = {}) {
    return StartText(manifests.dump(), "cluster.json", std::move(extra));
  }
  bool StartText(const std::string& manifests, const std::string& file, std::vector<std::string> extra = {}) {
    dir_ = std::filesystem::temp_directory_path() / ("kiln-kube-test-" + std::to_string(::getpid()) + "-" +
                                                     std::to_string(counter_++));
    std::filesystem::create_directories(dir_);
    std::string load = (dir_ / file).string();
    std::ofstream(load) << manifests;
    kubeconfig_ = (dir_ / "kubeconfig").string();
    std::vector<std::string> args = {"/usr/bin/python3",
                                     KilnSourceDir().string() + "/tools/kube-emulator/kube_emulator.py",
                                     "--port", "0", "--tls", "--write-kubeconfig", kubeconfig_,
                                     "--load", load, "--bookmark-interval", "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    int out[2];
    if (pipe(out) != 0) return false;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    std::string err = (dir_ / "stderr").string();
    posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int rc = posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    close(out[1]);
    if (rc != 0) {
      close(out[0]);
      ADD_FAILURE() << "cannot start the emulator";
      return false;
    }
    // The first stdout line is the URL, printed once it listens.
    std::string line;
    auto deadline = std::chrono::steady_clock::now() + 30s;
    while (line.find('\n') == std::string::npos && std::chrono::steady_clock::now() < deadline) {
      pollfd p{out[0], POLLIN, 0};
      if (poll(&p, 1, 200) > 0) {
        char buf[256];
        ssize_t n = read(out[0], buf, sizeof buf);
        if (n <= 0) break;
        line.append(buf, static_cast<size_t>(n));
      }
    }
    close(out[0]);
    if (line.find('\n') == std::string::npos) {
      ADD_FAILURE() << "the emulator did not start; stderr: " << std::ifstream(err).rdbuf();
      return false;
    }
    auto cfg = LoadKubeConfig(kubeconfig_);
    if (!cfg) {
      ADD_FAILURE() << cfg.error().message;
      return false;
    }
    auto client = KubeClient::Create(*cfg);
    if (!client) {
      ADD_FAILURE() << client.error().message;
      return false;
    }
    client_ = *client;
    return true;
  }

  ~Emulator() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int status = 0;
      waitpid(pid_, &status, 0);
    }
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }

  std::shared_ptr<KubeClient> client() { return client_; }
  const std::string& kubeconfig() const { return kubeconfig_; }
  std::filesystem::path dir() const { return dir_; }

  json Control(const std::string& what, const json& body = json::object()) {
    auto r = client_->Post("/emulator/" + what, body.dump());
    EXPECT_TRUE(r.ok() && r->ok()) << what << ": " << (r ? r->body : r.error().message);
    return r && r->ok() ? json::parse(r->body, nullptr, false) : json();
  }
  json Stats() {
    auto r = client_->Get("/emulator/stats");
    return r && r->ok() ? json::parse(r->body) : json::object();
  }
  int Count(const std::string& table, const std::string& key) {
    json s = Stats();
    return s.contains(table) && s[table].contains(key) ? s[table][key].get<int>() : 0;
  }
  // `table` (binds, evictions) counts `sent` requests for `key`, `ok` of them successful.
  void ExpectRequests(const std::string& table, const std::string& key, int sent, int ok) {
    EXPECT_EQ(Count(table, key), sent) << table << " of " << key;
    EXPECT_EQ(Count(table + "Ok", key), ok) << table << "Ok of " << key;
  }
  json GetPod(const std::string& name) {
    auto r = client_->Get("/api/v1/namespaces/ns/pods/" + name);
    return r && r->ok() ? json::parse(r->body) : json();
  }

 private:
  static inline int counter_ = 0;
  std::filesystem::path dir_;
  std::string kubeconfig_;
  pid_t pid_ = -1;
  std::shared_ptr<KubeClient> client_;
};

// Polls `cond` every 20 ms up to `timeout`.
template <typename F>
bool Eventually(F&& cond, std::chrono::milliseconds timeout = 10s) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return cond();
}

json NewPod(const std::string& name) {
  return {{"apiVersion", "v1"}, {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", "ns"}}},
          {"spec", {{"schedulerName", "volcano"}, {"containers", json::array({{{"name", "c"}, {"image", "img"}}})}}}};
}

KubernetesClusterOptions FastOptions() {
  KubernetesClusterOptions o;
  o.reflector.initial_backoff = 20ms;
  o.reflector.max_backoff = 200ms;
  o.bind_retry_initial = 300ms;
  o.write_workers = 2;
  // Every snapshot that reads only the changed pods is checked against a whole reading
  // (SyncedCluster's end expects no difference).
  o.check_snapshots = true;
  return o;
}

const PodSpec* FindPod(const ClusterSpec& c, std::string_view key) {
  for (const auto& p : c.pods)
    if (p.Key() == key) return &p;
  return nullptr;
}

// An emulator loaded with the manifests, and a KubernetesCluster synced to it (stopped first at
// the end).
struct SyncedCluster {
  Emulator emu;
  std::unique_ptr<KubernetesCluster> cluster;

  // False (with a test failure) when the emulator does not start or the cache does not sync.
  bool Start(const json& manifests = Manifests(), KubernetesClusterOptions options = FastOptions(),
             std::vector<std::string> extra = {}) {
    if (!emu.Start(manifests, std::move(extra))) return false;
    cluster = std::make_unique<KubernetesCluster>(emu.client(), options);
    cluster->Start();
    if (cluster->WaitForSync(10s)) return true;
    ADD_FAILURE() << "the cluster did not sync";
    return false;
  }
  // Applies a session's decisions; true once they are written.
  bool Apply(const SessionResult& s) {
    cluster->Apply(s);
    return cluster->WaitForWrites(10s);
  }
  ~SyncedCluster() {
    if (!cluster) return;
    cluster->Stop();
    EXPECT_EQ(cluster->stats().snapshot_mismatches, 0);
  }
};

// A session that binds one pod.
SessionResult BindOne(const std::string& pod, const std::string& node) {
  SessionResult s;
  s.binds[pod] = node;
  s.bind_order = {pod};
  return s;
}

// A reflector's options for tests: it retries after 20 ms.
ReflectorOptions QuickRetry() {
  ReflectorOptions o;
  o.initial_backoff = 20ms;
  return o;
}

// The pod names a reflector's handler has seen: the last list, then the events since.
class PodNames {
 public:
  ReflectorHandler Handler() {
    ReflectorHandler h;
    h.begin_list = [this] {
      std::lock_guard l(mu_);
      staging_.clear();
    };
    h.list_item = [this](const json& o) {
      std::lock_guard l(mu_);
      staging_.insert(o["metadata"]["name"].get<std::string>());
    };
    h.end_list = [this] {
      std::lock_guard l(mu_);
      names_ = staging_;
    };
    h.event = [this](std::string_view type, const json& o) {
      std::lock_guard l(mu_);
      if (type == "DELETED")
        names_.erase(o["metadata"]["name"].get<std::string>());
      else
        names_.insert(o["metadata"]["name"].get<std::string>());
    };
    return h;
  }
  std::set<std::string> Get() {
    std::lock_guard l(mu_);
    return names_;
  }
  bool Has(const std::string& name) { return Get().count(name) > 0; }

 private:
  std::mutex mu_;
  std::set<std::string> names_, staging_;
};

// The whole path `kiln serve` takes: a scenario exported as YAML manifests, loaded by the API
// server, listed by the reflectors, snapshotted by the cache: the same ClusterSpec the scenario
// loader gives `kiln simulate`.
TEST(KubernetesEmulator, ExportedScenarioSnapshotsAsTheSimulatorLoadsIt) {
  auto spec = LoadScenarioFile(KilnSourceDir().string() + "/examples/scenarios/training-cluster.yaml");
  ASSERT_TRUE(spec.ok()) << spec.error().Format();
  EncodeOptions eo;
  eo.now = spec->now;
  Emulator emu;
  ASSERT_TRUE(emu.StartText(ManifestsToYaml(EncodeCluster(spec->cluster, eo)), "cluster.yaml"));
  KubernetesCluster cluster(emu.client(), FastOptions());
  cluster.Start();
  ASSERT_TRUE(cluster.WaitForSync(10s));
  ClusterSpec got = cluster.SnapshotSpec(spec->now);
  ClusterSpec want = spec->cluster;
  for (auto& p : want.pods)
    if (p.image().empty()) p.mutable_extras().image = std::string(kDefaultImage);
  // The API server lists in key order (namespace, name), the scenario in file order; and it
  // labels nodes with their hostname as a kubelet would (BuildCluster adds the same label).
  for (auto& n : want.nodes) n.labels.try_emplace("kubernetes.io/hostname", n.name);
  kiln::testing::CompareClusterSpecs(got, want, [](const char* field, auto g, auto w) {
    std::sort(g.begin(), g.end());
    std::sort(w.begin(), w.end());
    EXPECT_EQ(g, w) << field;
  });
  // And the first session decides the same on both, whatever order the objects came in.
  auto model = cluster.Snapshot(spec->now);
  ASSERT_TRUE(model.ok()) << model.error().message;
  auto sim_model = BuildCluster(spec->cluster);
  ASSERT_TRUE(sim_model.ok());
  auto conf = ResolveScenarioConf(*spec, nullptr, "");
  ASSERT_TRUE(conf.ok()) << conf.error().Format();
  auto provider = MakeCompiledPolicyProvider(CompiledPolicyOptions{});
  ASSERT_TRUE(provider.ok()) << provider.error().message;
  auto registry = ResolvePlugins(*conf, **provider);
  ASSERT_TRUE(registry.ok()) << registry.error().message;
  auto kube_result = RunSession(std::move(*model), *conf, *registry, spec->now, 0);
  auto sim_result = RunSession(std::move(*sim_model), *conf, *registry, spec->now, 0);
  ASSERT_TRUE(kube_result.ok() && sim_result.ok());
  EXPECT_FALSE(sim_result->binds.empty());
  EXPECT_EQ(kube_result->binds, sim_result->binds);
  EXPECT_EQ(kube_result->evictions, sim_result->evictions);
  EXPECT_EQ(kube_result->pipelined, sim_result->pipelined);
  EXPECT_EQ(kube_result->nominated, sim_result->nominated);
  EXPECT_EQ(kube_result->pod_group_phases, sim_result->pod_group_phases);
  EXPECT_EQ(kube_result->unschedulable, sim_result->unschedulable);
  cluster.Stop();
}

// A projected service-account token is rotated in place: the client reads the file again when it
// changes (the emulator checks the token on every request over TLS).
TEST(KubernetesEmulator, ClientRereadsARotatedTokenFile) {
  Emulator emu;
  ASSERT_TRUE(emu.Start(Manifests()));
  auto cfg = LoadKubeConfig(emu.kubeconfig());
  ASSERT_TRUE(cfg.ok());
  std::string good = cfg->token;
  std::string token_file = (emu.dir() / "token").string();
  std::ofstream(token_file) << "wrong-token\n";
  cfg->token.clear();
  cfg->token_file = token_file;
  auto client = KubeClient::Create(*cfg);
  ASSERT_TRUE(client.ok()) << client.error().message;
  auto denied = (*client)->Get("/api/v1/nodes");
  ASSERT_TRUE(denied.ok());
  EXPECT_EQ(denied->status, 401);
  std::this_thread::sleep_for(20ms);  // a new mtime
  std::ofstream(token_file) << good << "\n";
  auto allowed = (*client)->Get("/api/v1/nodes");
  ASSERT_TRUE(allowed.ok());
  EXPECT_EQ(allowed->status, 200);
}

TEST(KubernetesEmulator, ClientListsInPagesOverTls) {
  Emulator emu;
  ASSERT_TRUE(emu.Start(Manifests()));
  std::vector<std::string> names;
  std::string rv;
  Status s = emu.client()->List("/api/v1/pods", "", 2, [&](const json& item) {
    names.push_back(item["metadata"]["name"].get<std::string>());
  }, &rv);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(names, (std::vector<std::string>{"other", "other-pending", "p1", "p2", "p3", "r1"}));
  EXPECT_FALSE(rv.empty());
  EXPECT_GE(emu.Stats()["requests"]["list pods"].get<int>(), 3);  // three pages of two
  ApiStatus st;
  Status missing = emu.client()->List("/api/v1/nonexistent", "", 10, [](const json&) {}, nullptr, &st);
  EXPECT_FALSE(missing.ok());
  EXPECT_EQ(st.code, 404);
}

TEST(KubernetesEmulator, ClusterSyncsAndFollowsTheWatch) {
  SyncedCluster k;
  ASSERT_TRUE(k.Start());
  ClusterSpec c = k.cluster->SnapshotSpec(0);
  EXPECT_EQ(c.nodes.size(), 2u);
  // Ours: p1, p2, p3, r1; the other scheduler's running pod only holds its node; its pending pod
  // is not ours to schedule and is left out.
  ASSERT_NE(FindPod(c, "ns/other"), nullptr);
  EXPECT_EQ(FindPod(c, "ns/other-pending"), nullptr);
  EXPECT_EQ(c.pods.size(), 5u);
  auto model = k.cluster->Snapshot(0);
  ASSERT_TRUE(model.ok()) << model.error().message;
  EXPECT_EQ(model->tasks().size(), 4u);  // p1 p2 p3 r1
  EXPECT_EQ(model->orphan_tasks().size(), 1u);
  EXPECT_EQ(model->FindNode("n2")->used.cpu(), 1000);  // the other scheduler's pod
  EXPECT_EQ(model->FindNode("n1")->used.cpu(), 1000);  // r1

  ASSERT_TRUE(k.emu.client()->Post("/api/v1/namespaces/ns/pods", NewPod("late").dump())->ok());
  EXPECT_TRUE(
      Eventually([&] { return FindPod(k.cluster->SnapshotSpec(0), "ns/late") != nullptr; }));
  ASSERT_TRUE(k.emu.client()->Delete("/api/v1/namespaces/ns/pods/late")->ok());
  EXPECT_TRUE(
      Eventually([&] { return FindPod(k.cluster->SnapshotSpec(0), "ns/late") == nullptr; }));
  EXPECT_EQ(k.cluster->stats().relists["pods"], 0);
}

// A snapshot reads again only the pods that changed since the last one (a watch event, an
// assumed bind), keeps the rest, and reads every pod after a change to the set of nodes, which
// every bound pod's entry depends on. check_snapshots compares each such reading with a whole one.
TEST(KubernetesEmulator, SnapshotReadsAgainOnlyThePodsThatChanged) {
  SyncedCluster k;
  ASSERT_TRUE(k.Start());
  auto stats = [&] { return k.cluster->stats(); };
  auto nodes_of = [](const ClusterSpec& c) {
    std::map<std::string, std::string> out;
    for (const auto& p : c.pods) out[p.Key()] = p.node;
    return out;
  };
  const ClusterSpec first = k.cluster->SnapshotSpec(0);
  EXPECT_EQ(stats().snapshots_whole, 1);
  EXPECT_EQ(stats().snapshot_pods_read, 6);  // the cache's pods, other-pending too
  const ClusterSpec again = k.cluster->SnapshotSpec(0);
  EXPECT_EQ(stats().snapshot_pods_read, 0);
  EXPECT_EQ(nodes_of(again), nodes_of(first));

  // An assumed bind: p1 read again, on n1 at once.
  k.cluster->Apply(BindOne("ns/p1", "n1"));
  ClusterSpec bound = k.cluster->SnapshotSpec(0);
  EXPECT_EQ(stats().snapshot_pods_read, 1);
  auto expected = nodes_of(first);
  expected["ns/p1"] = "n1";
  EXPECT_EQ(nodes_of(bound), expected);
  ASSERT_TRUE(k.cluster->WaitForWrites(10s));

  // A pod created, then deleted: it comes and goes between the pods kept.
  ASSERT_TRUE(k.emu.client()->Post("/api/v1/namespaces/ns/pods", NewPod("late").dump())->ok());
  ASSERT_TRUE(Eventually([&] { return FindPod(k.cluster->SnapshotSpec(0), "ns/late") != nullptr; }));
  ASSERT_TRUE(k.emu.client()->Delete("/api/v1/namespaces/ns/pods/late")->ok());
  ASSERT_TRUE(Eventually([&] { return FindPod(k.cluster->SnapshotSpec(0), "ns/late") == nullptr; }));
  EXPECT_EQ(nodes_of(k.cluster->SnapshotSpec(0)), expected);
  EXPECT_EQ(stats().snapshots_whole, 1);

  // A pod bound to a node the cache lacks is not in the snapshot; once the node is added it is,
  // on that node, although the pod itself did not change.
  json early = NewPod("early");
  early["spec"]["nodeName"] = "n3";
  ASSERT_TRUE(k.emu.client()->Post("/api/v1/namespaces/ns/pods", early.dump())->ok());
  ASSERT_TRUE(Eventually([&] { return k.cluster->stats().pods == 7; }));
  EXPECT_EQ(FindPod(k.cluster->SnapshotSpec(0), "ns/early"), nullptr);
  json node = {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", "n3"}}},
               {"status", {{"allocatable", {{"cpu", "4"}, {"memory", "8Gi"}, {"pods", "110"}}}}}};
  ASSERT_TRUE(k.emu.client()->Post("/api/v1/nodes", node.dump())->ok());
  ASSERT_TRUE(Eventually([&] {
    const ClusterSpec c = k.cluster->SnapshotSpec(0);
    const PodSpec* p = FindPod(c, "ns/early");
    return p != nullptr && p->node == "n3";
  }));
  EXPECT_GE(stats().snapshots_whole, 2);
  EXPECT_EQ(k.cluster->stats().relists["pods"], 0);
}

// A pod's QoS class is judged over all its containers (v1qos.GetPodQOS), which its spec, one
// container's worth of requests and limits, cannot show: the snapshot carries the decoder's
// judgement, so a model built from SnapshotSpec (what-if, shadow) sees it as the live one does.
// The copy of the cache checks every bound pod's node against the nodes it has (a NameTable):
// a pending pod bound to a node the cache lacks is not scheduled, a running one stays without a
// node, another scheduler's pod there is not seen, and each pod on a known node keeps it.
TEST(KubernetesEmulator, SnapshotChecksEveryPodsNodeAgainstTheNodesItHas) {
  // In the manifests the emulator starts from: an API server drops the status of a pod created
  // through it, and these must be Running.
  auto bound = [](const std::string& name, const std::string& node, const std::string& phase,
                  const std::string& scheduler) {
    json pod = NewPod(name);
    pod["spec"]["schedulerName"] = scheduler;
    pod["spec"]["nodeName"] = node;
    pod["status"] = {{"phase", phase}};
    return pod;
  };
  json manifests = Manifests();
  for (json pod : {bound("ours-on-n2", "n2", "Running", "volcano"),
                   bound("ours-pending-on-gone", "n9", "Pending", "volcano"),
                   bound("ours-running-on-gone", "n9", "Running", "volcano"),
                   bound("ours-running-on-prefix", "n", "Running", "volcano"),
                   bound("theirs-on-n1", "n1", "Running", "default-scheduler"),
                   bound("theirs-on-gone", "n10", "Running", "default-scheduler")})
    manifests["items"].push_back(std::move(pod));
  SyncedCluster k;
  ASSERT_TRUE(k.Start(manifests));
  ClusterSpec spec = k.cluster->SnapshotSpec(0);
  ASSERT_NE(FindPod(spec, "ns/ours-on-n2"), nullptr);
  EXPECT_EQ(FindPod(spec, "ns/ours-on-n2")->node, "n2");
  EXPECT_EQ(FindPod(spec, "ns/ours-pending-on-gone"), nullptr);
  ASSERT_NE(FindPod(spec, "ns/ours-running-on-gone"), nullptr);
  EXPECT_EQ(FindPod(spec, "ns/ours-running-on-gone")->node, "");
  EXPECT_EQ(FindPod(spec, "ns/ours-running-on-prefix")->node, "");
  ASSERT_NE(FindPod(spec, "ns/theirs-on-n1"), nullptr);
  EXPECT_EQ(FindPod(spec, "ns/theirs-on-n1")->node, "n1");
  EXPECT_EQ(FindPod(spec, "ns/theirs-on-gone"), nullptr);
  // And the model puts each pod that kept its node on it.
  auto live = k.cluster->Snapshot(0);
  ASSERT_TRUE(live.ok()) << live.error().message;
  const Node* n2 = live->FindNode("n2");
  const Node* n1 = live->FindNode("n1");
  ASSERT_NE(n2, nullptr);
  ASSERT_NE(n1, nullptr);
  auto on = [](const Node* n, const std::string& uid) {
    return std::any_of(n->tasks.begin(), n->tasks.end(), [&](const Task* t) { return t->uid == uid; });
  };
  EXPECT_TRUE(on(n2, FindPod(spec, "ns/ours-on-n2")->Uid()));
  EXPECT_TRUE(on(n1, FindPod(spec, "ns/theirs-on-n1")->Uid()));
}

TEST(KubernetesEmulator, SnapshotCarriesTheQosOfEveryContainer) {
  SyncedCluster k;
  ASSERT_TRUE(k.Start());
  auto limited = [](const std::string& name) {
    json r = {{"cpu", "1"}, {"memory", "1Gi"}};
    return json{{"name", name}, {"image", "img"}, {"resources", {{"requests", r}, {"limits", r}}}};
  };
  // Both containers limited at their requests: Guaranteed. The second without resources: the
  // sums still equal, but Kubernetes calls the pod Burstable.
  json both = NewPod("both");
  both["spec"]["containers"] = json::array({limited("a"), limited("b")});
  json mixed = NewPod("mixed");
  mixed["spec"]["containers"] = json::array({limited("a"), {{"name", "b"}, {"image", "img"}}});
  for (const json& pod : {both, mixed})
    ASSERT_TRUE(k.emu.client()->Post("/api/v1/namespaces/ns/pods", pod.dump())->ok());
  ASSERT_TRUE(Eventually([&] { return FindPod(k.cluster->SnapshotSpec(0), "ns/mixed") != nullptr; }));
  ClusterSpec spec = k.cluster->SnapshotSpec(0);
  EXPECT_EQ(FindPod(spec, "ns/both")->qos_guaranteed, std::optional<bool>(true));
  EXPECT_EQ(FindPod(spec, "ns/mixed")->qos_guaranteed, std::optional<bool>(false));
  auto from_spec = BuildCluster(spec);
  auto live = k.cluster->Snapshot(0);
  ASSERT_TRUE(from_spec.ok()) << from_spec.error().message;
  ASSERT_TRUE(live.ok()) << live.error().message;
  for (const Cluster* c : {&*from_spec, &*live}) {
    ASSERT_NE(c->FindTask(FindPod(spec, "ns/both")->Uid()), nullptr);
    EXPECT_TRUE(c->FindTask(FindPod(spec, "ns/both")->Uid())->qos_guaranteed);
    EXPECT_FALSE(c->FindTask(FindPod(spec, "ns/mixed")->Uid())->qos_guaranteed);
  }
}

// A job's pods carry equal extras (annotations, image, scheduler name): the cache shares one copy
// between key-order neighbours, from the LIST and from the watch, and a pod whose extras change
// gets its own again without changing its neighbours' (copy on write).
TEST(KubernetesEmulator, NeighbouringPodsShareEqualExtrasAndEachKeepsItsOwnValues) {
  // Members of the manifests' PodGroup g.
  auto member = [](const std::string& name, const std::string& job, const std::string& image) {
    json pod = NewPod(name);
    pod["metadata"]["annotations"] = {{"scheduling.k8s.io/group-name", job}};
    pod["spec"]["containers"][0]["image"] = image;
    return pod;
  };
  json manifests = Manifests();
  for (json pod : {member("j-0", "g", "img:1"), member("j-1", "g", "img:1"), member("j-2", "g", "img:2")})
    manifests["items"].push_back(std::move(pod));
  SyncedCluster k;
  ASSERT_TRUE(k.Start(manifests));
  ClusterSpec spec = k.cluster->SnapshotSpec(0);
  ASSERT_NE(FindPod(spec, "ns/j-0"), nullptr);
  ASSERT_NE(FindPod(spec, "ns/j-2"), nullptr);
  EXPECT_EQ(FindPod(spec, "ns/j-0")->extras.get(), FindPod(spec, "ns/j-1")->extras.get());
  EXPECT_NE(FindPod(spec, "ns/j-1")->extras.get(), FindPod(spec, "ns/j-2")->extras.get());
  EXPECT_EQ(FindPod(spec, "ns/j-2")->image(), "img:2");

  // A pod that arrives by the watch next to an equal one shares it too.
  ASSERT_TRUE(k.emu.client()->Post("/api/v1/namespaces/ns/pods", member("j-00", "g", "img:1").dump())->ok());
  ASSERT_TRUE(Eventually([&] { return FindPod(k.cluster->SnapshotSpec(0), "ns/j-00") != nullptr; }));
  spec = k.cluster->SnapshotSpec(0);
  EXPECT_EQ(FindPod(spec, "ns/j-00")->extras.get(), FindPod(spec, "ns/j-0")->extras.get());

  // j-1 changes its annotation: it has its own values, its neighbours keep theirs.
  const std::string j1 = "/api/v1/namespaces/ns/pods/j-1";
  auto got = k.emu.client()->Get(j1);
  ASSERT_TRUE(got.ok() && got->ok());
  json changed = json::parse(got->body);
  changed["metadata"]["annotations"]["volcano.sh/task-spec"] = "worker";
  changed["metadata"]["annotations"]["example.com/team"] = "a";
  ASSERT_TRUE(k.emu.client()->Put(j1, changed.dump())->ok());
  ASSERT_TRUE(Eventually([&] { return FindPod(k.cluster->SnapshotSpec(0), "ns/j-1")->task() == "worker"; }));
  spec = k.cluster->SnapshotSpec(0);
  EXPECT_NE(FindPod(spec, "ns/j-1")->extras.get(), FindPod(spec, "ns/j-0")->extras.get());
  // (The decoder takes the group-name and task-spec annotations into fields of their own.)
  EXPECT_EQ(FindPod(spec, "ns/j-1")->annotations(), (StringMap{{"example.com/team", "a"}}));
  for (const char* neighbour : {"ns/j-0", "ns/j-00"}) {
    EXPECT_TRUE(FindPod(spec, neighbour)->annotations().empty()) << neighbour;
    EXPECT_EQ(FindPod(spec, neighbour)->task(), "") << neighbour;
    EXPECT_EQ(FindPod(spec, neighbour)->group, "g") << neighbour;
  }
  EXPECT_EQ(FindPod(spec, "ns/j-2")->image(), "img:2");

  // The model gives each pod its own role and image, whatever it shares.
  auto live = k.cluster->Snapshot(0);
  ASSERT_TRUE(live.ok()) << live.error().message;
  const Task* worker = live->FindTask(FindPod(spec, "ns/j-1")->Uid());
  const Task* plain = live->FindTask(FindPod(spec, "ns/j-0")->Uid());
  const Task* other_image = live->FindTask(FindPod(spec, "ns/j-2")->Uid());
  ASSERT_NE(worker, nullptr);
  ASSERT_NE(plain, nullptr);
  ASSERT_NE(other_image, nullptr);
  EXPECT_EQ(worker->role, "worker");
  EXPECT_EQ(plain->role, "");
  EXPECT_NE(plain->shape, other_image->shape);
}

TEST(KubernetesEmulator, ReflectorReWatchesAfterADroppedStreamWithoutRelisting) {
  Emulator emu;
  ASSERT_TRUE(emu.Start(Manifests()));
  std::atomic<int> added{0};
  ReflectorHandler h;
  h.event = [&](std::string_view type, const json&) {
    if (type == "ADDED") ++added;
  };
  Reflector r(emu.client(), "pods", "/api/v1/pods", h, QuickRetry());
  r.Start();
  ASSERT_TRUE(Eventually([&] { return r.HasSynced() && r.watches() >= 1; }));
  for (std::string mode : {"close", "reset"}) {
    // Drop only a watch the server has open (the reflector counts a watch when it sends it).
    ASSERT_TRUE(Eventually([&] {
      auto rev = emu.client()->Get("/emulator/revision");
      return rev && rev->ok() && json::parse(rev->body).value("watches", 0) >= 1;
    }));
    int64_t watches = r.watches();
    emu.Control("drop-watches", {{"resource", "pods"}, {"mode", mode}});
    ASSERT_TRUE(Eventually([&] { return r.watches() > watches; })) << mode;
    int before = added;
    ASSERT_TRUE(emu.client()->Post("/api/v1/namespaces/ns/pods", NewPod("after-" + mode).dump())->ok());
    EXPECT_TRUE(Eventually([&] { return added > before; })) << mode;
  }
  EXPECT_EQ(r.relists(), 0);
  EXPECT_EQ(emu.Stats()["requests"]["list pods"].get<int>(), 1);
  r.Stop();
}

TEST(KubernetesEmulator, ReflectorRelistsAfterCompaction) {
  Emulator emu;
  ASSERT_TRUE(emu.Start(Manifests()));
  PodNames pods;
  Reflector r(emu.client(), "pods", "/api/v1/pods", pods.Handler(), QuickRetry());
  r.Start();
  ASSERT_TRUE(Eventually([&] { return r.HasSynced() && r.watches() >= 1; }));
  // While the reflector cannot watch (injected 500s), a pod is created and the history compacted
  // past it: the re-watch from the old resourceVersion is answered 410 and the reflector lists.
  emu.Control("faults", {{"verb", "watch"}, {"resource", "pods"}, {"count", 1000}, {"code", 500}});
  emu.Control("drop-watches", {{"resource", "pods"}});
  ASSERT_TRUE(emu.client()->Post("/api/v1/namespaces/ns/pods", NewPod("missed").dump())->ok());
  emu.Control("compact");
  emu.Control("clear-faults");
  EXPECT_TRUE(Eventually([&] { return r.relists() == 1; }));
  // The relisted store is complete, and the watch resumes from the new list.
  ASSERT_TRUE(emu.client()->Post("/api/v1/namespaces/ns/pods", NewPod("fresh").dump())->ok());
  EXPECT_TRUE(Eventually([&] { return pods.Has("fresh"); }));
  EXPECT_EQ(pods.Get().size(), 8u);  // six loaded, `missed` (from the relist) and `fresh`
  EXPECT_EQ(pods.Get().count("missed"), 1u);
  r.Stop();
}

// Issue 28 item 10: the API server's etcd is restored from a backup taken before the last pods
// were written, so resourceVersions go backwards. A re-watch from the cached (newer) version is
// answered "Too large resource version"; the reflector lists again, as client-go's does, and
// sees the pod created after the restore (at a version it had already passed) and no longer
// the pods the restore removed. Watching on from the old version would miss both.
TEST(KubernetesEmulator, ReflectorRelistsWhenResourceVersionsGoBackwards) {
  Emulator emu;
  ASSERT_TRUE(emu.Start(Manifests(), {"--too-large-wait", "0.5"}));
  PodNames pods;
  Reflector r(emu.client(), "pods", "/api/v1/pods", pods.Handler(), QuickRetry());
  r.Start();
  ASSERT_TRUE(Eventually([&] { return r.HasSynced() && r.watches() >= 1; }));
  int backup = json::parse(emu.client()->Get("/emulator/revision")->body)["revision"].get<int>();
  for (std::string name : {"lost-1", "lost-2", "lost-3"})
    ASSERT_TRUE(emu.client()->Post("/api/v1/namespaces/ns/pods", NewPod(name).dump())->ok());
  ASSERT_TRUE(Eventually([&] { return pods.Has("lost-3"); }));
  std::string before = r.last_resource_version();
  EXPECT_EQ(before, std::to_string(backup + 3));

  emu.Control("restore", {{"revision", backup}});
  ASSERT_TRUE(emu.client()->Post("/api/v1/namespaces/ns/pods", NewPod("after-restore").dump())->ok());
  EXPECT_TRUE(Eventually([&] { return r.relists() == 1; }));
  EXPECT_TRUE(Eventually([&] { return pods.Has("after-restore"); }));
  EXPECT_EQ(pods.Get().size(), 7u);  // six loaded and `after-restore`
  EXPECT_EQ(pods.Get().count("lost-1"), 0u);
  EXPECT_EQ(r.last_resource_version(), std::to_string(backup + 1));
  // The watch resumes from the relisted version and follows new writes.
  ASSERT_TRUE(emu.client()->Post("/api/v1/namespaces/ns/pods", NewPod("fresh").dump())->ok());
  EXPECT_TRUE(Eventually([&] { return pods.Has("fresh"); }));
  EXPECT_EQ(r.relists(), 1);
  r.Stop();
}

TEST(KubernetesEmulator, ReflectorBacksOffOnServerErrorsAndRecovers) {
  Emulator emu;
  ASSERT_TRUE(emu.Start(Manifests()));
  emu.Control("faults", {{"verb", "list"}, {"resource", "pods"}, {"count", 3}, {"code", 500}});
  ReflectorHandler h;
  Reflector r(emu.client(), "pods", "/api/v1/pods", h, QuickRetry());
  r.Start();
  EXPECT_TRUE(Eventually([&] { return r.HasSynced(); }));
  EXPECT_EQ(emu.Stats()["requests"]["list pods"].get<int>(), 4);
  r.Stop();  // returns promptly although a watch is streaming
}

TEST(KubernetesEmulator, BindAssumesAtOnceAndNeverBindsTwice) {
  SyncedCluster k;
  ASSERT_TRUE(k.Start());
  SessionResult s = BindOne("ns/p1", "n1");
  k.cluster->Apply(s);
  // The session after this one sees p1 on n1 whether or not the bind has landed.
  EXPECT_EQ(FindPod(k.cluster->SnapshotSpec(0), "ns/p1")->node, "n1");
  ASSERT_TRUE(k.Apply(s));  // a second decision for the same pod (e.g. a stale session) is dropped
  EXPECT_TRUE(Eventually([&] { return k.emu.GetPod("p1")["spec"].value("nodeName", "") == "n1"; }));
  k.emu.ExpectRequests("binds", "ns/p1", 1, 1);
  EXPECT_TRUE(Eventually([&] { return k.emu.Count("events", "ns/p1") == 1; }));  // Scheduled
  EXPECT_EQ(k.cluster->stats().binds_ok, 1);
}

TEST(KubernetesEmulator, BindConflictReReadsThePod) {
  SyncedCluster k;
  ASSERT_TRUE(k.Start());
  // Another scheduler wins the race for p2: it is on n2 when our bind arrives.
  k.emu.Control("bind-conflict",
                {{"namespace", "ns"}, {"name", "p2"}, {"count", 1}, {"node", "n2"}});
  SessionResult s = BindOne("ns/p2", "n1");
  ASSERT_TRUE(k.Apply(s));
  EXPECT_EQ(k.cluster->stats().binds_conflict, 1);
  EXPECT_EQ(FindPod(k.cluster->SnapshotSpec(0), "ns/p2")->node, "n2");  // the truth, not our guess
  ASSERT_TRUE(k.Apply(s));  // a later session that still wants it: nothing to do, it is bound
  k.emu.ExpectRequests("binds", "ns/p2", 1, 0);
}

TEST(KubernetesEmulator, BindServerErrorKeepsThePodPendingAndRetriesAfterBackoff) {
  SyncedCluster k;
  ASSERT_TRUE(k.Start());
  k.emu.Control("faults",
                {{"verb", "create"}, {"resource", "pods/binding"}, {"count", 1}, {"code", 503}});
  SessionResult s = BindOne("ns/p3", "n1");
  ASSERT_TRUE(k.Apply(s));
  EXPECT_EQ(k.cluster->stats().binds_retry, 1);
  EXPECT_EQ(FindPod(k.cluster->SnapshotSpec(0), "ns/p3")->node, "");  // pending again, not lost
  ASSERT_TRUE(k.Apply(s));  // within the backoff: not sent
  EXPECT_EQ(k.emu.Count("binds", "ns/p3"), 1);
  std::this_thread::sleep_for(350ms);
  ASSERT_TRUE(k.Apply(s));
  k.emu.ExpectRequests("binds", "ns/p3", 2, 1);
}

TEST(KubernetesEmulator, BindsAFullWriteQueueDropsAreForgottenAndALaterSessionSends) {
  KubernetesClusterOptions o = FastOptions();
  o.write_workers = 1;
  o.write_queue_capacity = 1;  // a session of three binds: at most one waits, the rest are dropped
  SyncedCluster k;
  ASSERT_TRUE(k.Start(Manifests(), o));
  SessionResult s;
  s.binds = {{"ns/p1", "n1"}, {"ns/p2", "n1"}, {"ns/p3", "n2"}};
  s.bind_order = {"ns/p1", "ns/p2", "ns/p3"};
  ASSERT_TRUE(k.Apply(s));
  // A dropped bind is not assumed: its pod is pending again for the next session. (Status and
  // event writes share the queue, so more than the binds may be dropped.)
  int pending = 0;
  for (const char* p : {"ns/p1", "ns/p2", "ns/p3"}) pending += FindPod(k.cluster->SnapshotSpec(0), p)->node.empty();
  EXPECT_GE(pending, 1);
  EXPECT_LE(pending, 2);
  EXPECT_GE(k.cluster->stats().writes_dropped, pending);
  // The same decisions again, as the next sessions would make them, until all are sent.
  for (int round = 0; round < 5 && k.cluster->stats().binds_ok < 3; ++round) ASSERT_TRUE(k.Apply(s));
  EXPECT_EQ(k.cluster->stats().binds_ok, 3);
  for (const char* p : {"ns/p1", "ns/p2", "ns/p3"}) k.emu.ExpectRequests("binds", p, 1, 1);  // never twice
  EXPECT_EQ(k.emu.GetPod("p3")["spec"].value("nodeName", ""), "n2");
}

TEST(KubernetesEmulator, EvictionMarksDisruptionTargetThenDeletesOnce) {
  SyncedCluster k;
  ASSERT_TRUE(k.Start());
  SessionResult s;
  s.evictions = {"ns/r1"};
  k.cluster->Apply(s);
  EXPECT_TRUE(FindPod(k.cluster->SnapshotSpec(0), "ns/r1")->deleting);  // Releasing at once
  ASSERT_TRUE(k.Apply(s));
  json pod = k.emu.GetPod("r1");
  ASSERT_TRUE(pod.is_object());
  EXPECT_TRUE(pod["metadata"].contains("deletionTimestamp"));  // graceful: the kubelet finishes it
  bool marked = false;
  for (const auto& c : pod["status"]["conditions"])
    marked |= c["type"] == "DisruptionTarget" && c["status"] == "True";
  EXPECT_TRUE(marked);
  EXPECT_EQ(k.emu.Count("podDeletes", "ns/r1"), 1);
  ASSERT_TRUE(k.Apply(s));
  EXPECT_EQ(k.emu.Count("podDeletes", "ns/r1"), 1);
  EXPECT_EQ(k.cluster->stats().evictions_ok, 1);
}

// The snapshot walks the pods and the claims made on them (assumed binds, evictions,
// nominations) side by side in key order: each claim must land on its own pod when the claimed
// pods interleave with unclaimed ones, and pods on nodes the cache lacks follow §7.
TEST(KubernetesEmulator, SnapshotAppliesInterleavedClaimsEachToItsOwnPod) {
  json m = Manifests();
  json pending = m["items"][5];  // ns/p1, Pending, ours
  ASSERT_EQ(pending["metadata"]["name"], "p1");
  auto add_pod = [&](const std::string& name, const std::string& node, const std::string& phase) {
    json p = pending;
    p["metadata"]["name"] = name;
    if (!node.empty()) p["spec"]["nodeName"] = node;
    p["status"]["phase"] = phase;
    m["items"].push_back(p);
  };
  add_pod("p0-lost-pending", "n9", "Pending");  // on a node the cache lacks: not in the snapshot
  add_pod("p2a-lost-running", "n9", "Running");  // kept, on no node
  add_pod("p1b", "", "Pending");  // between two claimed pods, claimed by nothing
  add_pod("p4", "", "Pending");
  SyncedCluster k;
  ASSERT_TRUE(k.Start(m));
  SessionResult s;
  s.binds = {{"ns/p1", "n1"}, {"ns/p3", "n2"}};
  s.bind_order = {"ns/p1", "ns/p3"};
  s.evictions = {"ns/r1"};
  s.nominated["ns/p2"] = "n2";
  // A snapshot first, so that the next one reads the claimed pods as changes to this one.
  ASSERT_EQ(FindPod(k.cluster->SnapshotSpec(0), "ns/p1")->node, "");
  k.cluster->Apply(s);
  ClusterSpec c = k.cluster->SnapshotSpec(0);
  ASSERT_NE(FindPod(c, "ns/p1"), nullptr);
  EXPECT_EQ(FindPod(c, "ns/p1")->node, "n1");
  EXPECT_EQ(FindPod(c, "ns/p2")->node, "");
  EXPECT_EQ(FindPod(c, "ns/p2")->nominated_node, "n2");
  EXPECT_FALSE(FindPod(c, "ns/p2")->deleting);
  EXPECT_EQ(FindPod(c, "ns/p3")->node, "n2");
  EXPECT_EQ(FindPod(c, "ns/p3")->nominated_node, "");
  EXPECT_EQ(FindPod(c, "ns/p4")->node, "");
  EXPECT_EQ(FindPod(c, "ns/p4")->nominated_node, "");
  EXPECT_EQ(FindPod(c, "ns/p1b")->node, "");
  EXPECT_EQ(FindPod(c, "ns/p1b")->nominated_node, "");
  EXPECT_TRUE(FindPod(c, "ns/r1")->deleting);
  EXPECT_FALSE(FindPod(c, "ns/p1")->deleting);
  EXPECT_EQ(FindPod(c, "ns/p0-lost-pending"), nullptr);
  ASSERT_NE(FindPod(c, "ns/p2a-lost-running"), nullptr);
  EXPECT_EQ(FindPod(c, "ns/p2a-lost-running")->node, "");
  ASSERT_NE(FindPod(c, "ns/other"), nullptr);  // the other scheduler's pod on a node
  EXPECT_EQ(FindPod(c, "ns/other")->node, "n2");
  EXPECT_EQ(FindPod(c, "ns/other-pending"), nullptr);
  // The binds land and the watch brings them back; the next snapshot says the same.
  ASSERT_TRUE(k.cluster->WaitForWrites(10s));
  EXPECT_TRUE(Eventually([&] {
    ClusterSpec d = k.cluster->SnapshotSpec(0);
    return FindPod(d, "ns/p1")->node == "n1" && FindPod(d, "ns/p3")->node == "n2" &&
           FindPod(d, "ns/p2")->nominated_node == "n2" && FindPod(d, "ns/p4")->node.empty();
  }));
}

TEST(KubernetesEmulator, EvictionApiRefusedByABudgetIsRetriedLater) {
  json m = Manifests();
  // r1 and the other scheduler's pod match and are healthy: minAvailable 2 allows no disruption.
  m["items"].push_back({{"apiVersion", "policy/v1"}, {"kind", "PodDisruptionBudget"},
                        {"metadata", {{"name", "keep"}, {"namespace", "ns"}}},
                        {"spec", {{"minAvailable", 2}, {"selector", {{"matchLabels", {{"app", "web"}}}}}}}});
  KubernetesClusterOptions o = FastOptions();
  o.evict_with_eviction_api = true;
  SyncedCluster k;
  ASSERT_TRUE(k.Start(m, o));
  SessionResult s;
  s.evictions = {"ns/r1"};
  ASSERT_TRUE(k.Apply(s));
  EXPECT_EQ(k.cluster->stats().evictions_refused, 1);
  EXPECT_FALSE(FindPod(k.cluster->SnapshotSpec(0), "ns/r1")->deleting);
  ASSERT_TRUE(k.Apply(s));  // a later session may try again
  k.emu.ExpectRequests("evictions", "ns/r1", 2, 0);
}

TEST(KubernetesEmulator, StatusWritesHappenOnceForTheSameContent) {
  SyncedCluster k;
  ASSERT_TRUE(k.Start());
  SessionResult s;
  s.pod_group_phases["ns/g"] = "Inqueue";
  s.conditions["ns/g"] = {PodGroupCondition{"Unschedulable", "True", "t1", 0, "NotEnoughResources", "3/4 tasks"}};
  s.unschedulable["ns/p1"] = "0/2 nodes are available: 2 Insufficient cpu.";
  s.nominated["ns/p2"] = "n2";
  k.cluster->Apply(s);
  // The next session sees the phase it wrote even before the watch brings it back.
  bool seen = false;
  for (const auto& g : k.cluster->SnapshotSpec(0).pod_groups)
    if (g.Uid() == "ns/g") seen = g.phase == PodGroupPhase::Inqueue;
  EXPECT_TRUE(seen);
  ASSERT_TRUE(k.cluster->WaitForWrites(10s));
  auto pg = k.emu.client()->Get("/apis/scheduling.volcano.sh/v1beta1/namespaces/ns/podgroups/g");
  ASSERT_TRUE(pg.ok() && pg->ok());
  json g = json::parse(pg->body);
  EXPECT_EQ(g["status"]["phase"], "Inqueue");
  EXPECT_EQ(g["status"]["running"], 1);  // r1 (the other scheduler's pod in the group is no task)
  EXPECT_EQ(g["status"]["conditions"][0]["reason"], "NotEnoughResources");
  json p1 = k.emu.GetPod("p1");
  bool unschedulable = false;
  for (const auto& c : p1["status"]["conditions"])
    unschedulable |= c["type"] == "PodScheduled" && c["status"] == "False" && c["reason"] == "Unschedulable" &&
                     c["message"] == "0/2 nodes are available: 2 Insufficient cpu.";
  EXPECT_TRUE(unschedulable);
  EXPECT_EQ(k.emu.GetPod("p2")["status"]["nominatedNodeName"], "n2");
  EXPECT_TRUE(Eventually([&] { return k.emu.Count("events", "ns/p1") == 1; }));  // FailedScheduling
  // Let the watch catch up, then decide the same again (a new transitionID, same content).
  EXPECT_TRUE(Eventually([&] {
    ClusterSpec c = k.cluster->SnapshotSpec(0);
    return FindPod(c, "ns/p2")->nominated_node == "n2";
  }));
  std::this_thread::sleep_for(300ms);
  int pg_writes = k.emu.Count("podGroupWrites", "ns/g");
  int pod_writes =
      k.emu.Count("podStatusWrites", "ns/p1") + k.emu.Count("podStatusWrites", "ns/p2");
  s.conditions["ns/g"][0].transition_id = "t2";
  ASSERT_TRUE(k.Apply(s));
  EXPECT_EQ(k.emu.Count("podGroupWrites", "ns/g"), pg_writes);
  EXPECT_EQ(k.emu.Count("podStatusWrites", "ns/p1") + k.emu.Count("podStatusWrites", "ns/p2"),
            pod_writes);
  EXPECT_EQ(k.emu.Count("events", "ns/p1"), 1);
  EXPECT_GT(k.cluster->stats().status_writes_skipped, 0);
}

// The cluster of the status tests below: three PodGroups in two namespaces and three queues, pods
// of ours and of another scheduler, one pod without a PodGroup (its own one-pod job) and one
// pending.
json StatusTestCluster() {
  auto pod = [](std::string ns, std::string name, std::string group, int cpu, std::string node,
                std::string scheduler = "volcano") {
    json p = {{"apiVersion", "v1"}, {"kind", "Pod"},
              {"metadata", {{"name", name}, {"namespace", ns}}},
              {"spec", {{"schedulerName", scheduler},
                        {"containers", json::array({{{"name", "c"}, {"image", "img"},
                                                     {"resources", {{"requests", {{"cpu", std::to_string(cpu)}}}}}}})}}},
              {"status", {{"phase", node.empty() ? "Pending" : "Running"}}}};
    if (!group.empty()) p["metadata"]["annotations"] = {{"scheduling.k8s.io/group-name", group}};
    if (!node.empty()) p["spec"]["nodeName"] = node;
    return p;
  };
  auto queue = [](std::string name) {
    return json{{"apiVersion", "scheduling.volcano.sh/v1beta1"}, {"kind", "Queue"}, {"metadata", {{"name", name}}},
                {"spec", {{"weight", 1}}}, {"status", {{"state", "Open"}}}};
  };
  auto group = [](std::string ns, std::string name, std::string queue) {
    return json{{"apiVersion", "scheduling.volcano.sh/v1beta1"}, {"kind", "PodGroup"},
                {"metadata", {{"name", name}, {"namespace", ns}}},
                {"spec", {{"minMember", 1}, {"queue", queue}}}, {"status", {{"phase", "Running"}}}};
  };
  json items = json::array({
      {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "ns-a"}}}},
      {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "ns-b"}}}},
      queue("default"), queue("q1"), queue("q2"),
      {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", "n1"}}},
       {"status", {{"allocatable", {{"cpu", "1000"}, {"memory", "8Gi"}, {"pods", "110"}}},
                   {"capacity", {{"cpu", "1000"}, {"memory", "8Gi"}, {"pods", "110"}}}}}},
      group("ns-a", "g", "q1"), group("ns-a", "h", "q2"), group("ns-b", "g", "q2"),
      pod("ns-a", "a1", "g", 1, "n1"), pod("ns-a", "a2", "h", 2, "n1"), pod("ns-a", "a3", "g", 4, "n1"),
      pod("ns-a", "a4", "g", 8, "n1", "default-scheduler"), pod("ns-a", "a5", "g", 16, "n1"),
      pod("ns-b", "b1", "g", 32, "n1"), pod("ns-b", "b2", "", 64, "n1"), pod("ns-b", "b3", "g", 128, ""),
  });
  return {{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}};
}

// Queue status.allocated and PodGroup status counts are summed in one walk over the pods in key
// order, which carries the previous pod's job and scheduler to the next: each pod must still count
// for its own. Here a namespace's jobs interleave, another scheduler's pod sits inside a job of
// ours, two namespaces have a PodGroup of the same name in different queues, and a pod without a
// PodGroup is its own job in queue `default`.
TEST(KubernetesEmulator, QueueAndPodGroupStatusCountEachPodForItsOwnJob) {
  SyncedCluster k;
  ASSERT_TRUE(k.Start(StatusTestCluster()));
  SessionResult s;
  for (const char* g : {"ns-a/g", "ns-a/h", "ns-b/g"}) s.pod_group_phases[g] = "Running";
  ASSERT_TRUE(k.Apply(s));
  auto allocated = [&](const std::string& q) {
    auto r = k.emu.client()->Get("/apis/scheduling.volcano.sh/v1beta1/queues/" + q);
    EXPECT_TRUE(r.ok() && r->ok()) << q;
    return r.ok() ? json::parse(r->body)["status"]["allocated"] : json();
  };
  // a1 + a3 + a5 (a4 is the other scheduler's); a2 + b1 (ns-b's g is q2's); b2 (b3 holds nothing).
  EXPECT_EQ(allocated("q1"), json({{"cpu", "21"}, {"memory", "0"}, {"pods", "3"}}));
  EXPECT_EQ(allocated("q2"), json({{"cpu", "34"}, {"memory", "0"}, {"pods", "2"}}));
  EXPECT_EQ(allocated("default"), json({{"cpu", "64"}, {"memory", "0"}, {"pods", "1"}}));
  auto running = [&](const std::string& ns, const std::string& name) {
    auto r = k.emu.client()->Get("/apis/scheduling.volcano.sh/v1beta1/namespaces/" + ns + "/podgroups/" + name);
    EXPECT_TRUE(r.ok() && r->ok()) << ns << "/" << name;
    return r.ok() ? json::parse(r->body)["status"].value("running", -1) : -1;
  };
  EXPECT_EQ(running("ns-a", "g"), 3);
  EXPECT_EQ(running("ns-a", "h"), 1);
  EXPECT_EQ(running("ns-b", "g"), 1);
}

// One session's PodGroup statuses are built one after the other into the same buffers, walking
// the cache's PodGroups beside the session's maps: each group gets its own phase, conditions and
// counts, nothing of the group before it, and a one-pod group the cluster does not store (between
// stored ones in key order) keeps its phase for the next snapshot without a write. ns-a/i has no
// pods and comes right after ns-a/h, which has one running.
TEST(KubernetesEmulator, EachPodGroupStatusOfASessionIsItsOwn) {
  json cluster = StatusTestCluster();
  cluster["items"].push_back({{"apiVersion", "scheduling.volcano.sh/v1beta1"}, {"kind", "PodGroup"},
                              {"metadata", {{"name", "i"}, {"namespace", "ns-a"}}},
                              {"spec", {{"minMember", 1}, {"queue", "q1"}}}, {"status", {{"phase", "Pending"}}}});
  SyncedCluster k;
  ASSERT_TRUE(k.Start(cluster));
  SessionResult s;
  s.index = 7;
  s.pod_group_phases["ns-a/g"] = "Running";
  s.pod_group_phases["ns-a/gone"] = "Inqueue";  // no such PodGroup: between ns-a/g and ns-a/h
  s.pod_group_phases["ns-a/h"] = "Pending";
  s.pod_group_phases["ns-a/i"] = "Inqueue";
  s.pod_group_phases["ns-b/g"] = "Inqueue";
  s.pod_group_phases["ns-b/podgroup-ns-b-b2"] = "Running";  // b2's one-pod group
  s.conditions["ns-a/g"] = {PodGroupCondition{"Unschedulable", "True", "t1", 0, "NotEnoughResources", "1/2 tasks"},
                            PodGroupCondition{"Scheduled", "True", "t1", 0, "tasks", "3/3 tasks"}};
  s.admission_refusals["ns-a/h"] = AdmissionRefusal{"capacity", "QueueOverCapability", "insufficient cpu"};
  ASSERT_TRUE(k.Apply(s));
  auto status = [&](const std::string& ns, const std::string& name) {
    auto r = k.emu.client()->Get("/apis/scheduling.volcano.sh/v1beta1/namespaces/" + ns + "/podgroups/" + name);
    EXPECT_TRUE(r.ok() && r->ok()) << ns << "/" << name;
    return r.ok() ? json::parse(r->body)["status"] : json();
  };
  json ag = status("ns-a", "g");
  EXPECT_EQ(ag["phase"], "Running");
  EXPECT_EQ(ag.value("running", -1), 3);
  ASSERT_EQ(ag["conditions"].size(), 2u) << ag.dump();
  EXPECT_EQ(ag["conditions"][0]["reason"], "NotEnoughResources");
  EXPECT_EQ(ag["conditions"][1]["type"], "Scheduled");
  json ah = status("ns-a", "h");
  EXPECT_EQ(ah["phase"], "Pending");
  EXPECT_EQ(ah.value("running", -1), 1);
  ASSERT_EQ(ah["conditions"].size(), 1u) << ah.dump();
  EXPECT_EQ(ah["conditions"][0]["reason"], "QueueOverCapability");
  EXPECT_EQ(ah["conditions"][0]["transitionID"], "session-7");
  json ai = status("ns-a", "i");
  EXPECT_EQ(ai["phase"], "Inqueue");
  EXPECT_EQ(ai.value("running", 0), 0) << ai.dump();
  EXPECT_TRUE(ai["conditions"].empty()) << ai.dump();
  json bg = status("ns-b", "g");
  EXPECT_EQ(bg["phase"], "Inqueue");
  EXPECT_EQ(bg.value("running", -1), 1);  // b1 (b3 is pending)
  EXPECT_TRUE(bg["conditions"].empty()) << bg.dump();
  EXPECT_EQ(k.emu.Count("podGroupWrites", "ns-a/gone"), 0);
  bool implicit_seen = false;
  for (const auto& g : k.cluster->SnapshotSpec(0).pod_groups)
    if (g.implicit && g.Uid() == "ns-b/podgroup-ns-b-b2") implicit_seen = g.phase == PodGroupPhase::Running;
  EXPECT_TRUE(implicit_seen);
}

// PodGroup and Queue status come from walks over the whole pod cache. A session after which
// nothing they read changed (a quiet cluster: every session) reuses the last walks; a bind, a
// pod's new phase, each brings the next walk and the status it changes. The status writes come
// back by the watch as changes too, so a session or two after a write walk again, then none do.
TEST(KubernetesEmulator, StatusWalksThePodsAgainOnlyAfterAChangeTheyRead) {
  SyncedCluster k;
  ASSERT_TRUE(k.Start());
  SessionResult running;
  running.pod_group_phases["ns/g"] = "Running";
  auto walks = [&] { return k.cluster->stats().status_walks; };
  // Sessions until three in a row walk nothing; false if that never happens.
  auto settle = [&] {
    for (int attempt = 0; attempt < 20; ++attempt) {
      const int64_t before = walks();
      for (int i = 0; i < 3; ++i)
        if (!k.Apply(running)) return false;
      if (walks() == before) return true;
      std::this_thread::sleep_for(50ms);
    }
    return false;
  };
  auto status = [&](const std::string& path) {
    auto r = k.emu.client()->Get(path);
    EXPECT_TRUE(r.ok() && r->ok()) << path;
    return r.ok() ? json::parse(r->body)["status"] : json();
  };
  const std::string group = "/apis/scheduling.volcano.sh/v1beta1/namespaces/ns/podgroups/g";
  const std::string queue = "/apis/scheduling.volcano.sh/v1beta1/queues/default";
  ASSERT_TRUE(k.Apply(running));
  EXPECT_EQ(walks(), 2);  // one for the PodGroups, one for the queues
  EXPECT_EQ(status(group).value("running", -1), 1);  // r1
  EXPECT_EQ(status(queue)["allocated"], json({{"cpu", "1"}, {"memory", "0"}, {"pods", "1"}}));
  ASSERT_TRUE(settle());
  const int64_t quiet = walks();
  EXPECT_LE(quiet, 6);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(k.Apply(running));
  EXPECT_EQ(walks(), quiet);

  // A bind: the queue holds p1 from the moment it is assumed, before the watch shows it bound.
  ASSERT_TRUE(k.Apply(BindOne("ns/p1", "n1")));
  EXPECT_EQ(walks(), quiet + 1);  // no PodGroup phase in that session: the queues' walk only
  EXPECT_EQ(status(queue)["allocated"], json({{"cpu", "2"}, {"memory", "0"}, {"pods", "2"}}));

  // p1 starts running (the kubelet's status write): the PodGroup's count follows.
  ASSERT_TRUE(Eventually([&] { return FindPod(k.cluster->SnapshotSpec(0), "ns/p1")->node == "n1"; }));
  auto patched = k.emu.client()->Patch("/api/v1/namespaces/ns/pods/p1/status",
                                       R"({"status": {"phase": "Running"}})");
  ASSERT_TRUE(patched.ok() && patched->ok()) << (patched.ok() ? patched->body : patched.error().message);
  ASSERT_TRUE(Eventually(
      [&] { return FindPod(k.cluster->SnapshotSpec(0), "ns/p1")->phase == PodPhase::Running; }));
  ASSERT_TRUE(k.Apply(running));
  EXPECT_EQ(status(group).value("running", -1), 2);
  EXPECT_EQ(status(queue)["allocated"], json({{"cpu", "2"}, {"memory", "0"}, {"pods", "2"}}));
  ASSERT_TRUE(settle());
  const int64_t settled = walks();
  EXPECT_GT(settled, quiet + 2);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(k.Apply(running));
  EXPECT_EQ(walks(), settled);
}

// docs/reasons.md "PodGroup conditions": a PodGroup enqueue refused, with no condition of
// Volcano's, gets Unschedulable with the refusal's code as its reason.
TEST(KubernetesEmulator, RefusedPodGroupGetsItsReasonCodeWhereVolcanoWritesNone) {
  SyncedCluster k;
  ASSERT_TRUE(k.Start());
  SessionResult s;
  s.index = 3;
  s.pod_group_phases["ns/g"] = "Pending";
  s.admission_refusals["ns/g"] = AdmissionRefusal{
      "proportion", "QueueOverCapability", "queue resource quota insufficient: insufficient cpu"};
  ASSERT_TRUE(k.Apply(s));
  auto pg = k.emu.client()->Get("/apis/scheduling.volcano.sh/v1beta1/namespaces/ns/podgroups/g");
  ASSERT_TRUE(pg.ok() && pg->ok());
  json g = json::parse(pg->body);
  ASSERT_EQ(g["status"]["conditions"].size(), 1u) << g["status"].dump();
  const json& c = g["status"]["conditions"][0];
  EXPECT_EQ(c["type"], "Unschedulable");
  EXPECT_EQ(c["status"], "True");
  EXPECT_EQ(c["reason"], "QueueOverCapability");
  EXPECT_EQ(c["message"],
            "enqueue did not admit the PodGroup: proportion: queue resource quota insufficient: "
            "insufficient cpu");
  EXPECT_EQ(c["transitionID"], "session-3");
}

TEST(KubernetesEmulator, DisabledWritesWriteNothing) {
  SyncedCluster k;
  ASSERT_TRUE(k.Start());
  k.cluster->SetWritesEnabled(false);
  SessionResult s = BindOne("ns/p1", "n1");
  s.evictions = {"ns/r1"};
  ASSERT_TRUE(k.Apply(s));
  EXPECT_EQ(k.emu.Count("binds", "ns/p1"), 0);
  EXPECT_EQ(k.emu.Count("podDeletes", "ns/r1"), 0);
  EXPECT_EQ(FindPod(k.cluster->SnapshotSpec(0), "ns/p1")->node, "");
}

TEST(KubernetesEmulator, LeaseCreateUpdateWithPreconditions) {
  Emulator emu;
  ASSERT_TRUE(emu.Start(Manifests()));
  auto ns = emu.client()->Post("/api/v1/namespaces", R"({"metadata":{"name":"kube-system"}})");
  ASSERT_TRUE(ns.ok() && (ns->ok() || ns->status == 409)) << (ns ? ns->body : ns.error().message);
  auto store = NewKubeLeaseStore(emu.client(), "kube-system", "kiln-scheduler");
  EXPECT_EQ(store->Describe(), "kube-system/kiln-scheduler");
  EXPECT_EQ(store->Get().code, LeaseReply::Code::kNotFound);
  LeaseRecord rec;
  rec.holder_identity = "a";
  rec.lease_duration_seconds = 15;
  rec.acquire_time = rec.renew_time = 1'750'000'000'123'456'000;
  LeaseReply created = store->Create(rec);
  ASSERT_TRUE(created.ok()) << created.message;
  EXPECT_EQ(created.record.holder_identity, "a");
  EXPECT_EQ(created.record.renew_time, rec.renew_time);  // microseconds survive
  EXPECT_EQ(store->Create(rec).code, LeaseReply::Code::kConflict);
  LeaseRecord renew = created.record;
  renew.renew_time += 2'000'000'000;
  LeaseReply updated = store->Update(renew);
  ASSERT_TRUE(updated.ok()) << updated.message;
  EXPECT_NE(updated.record.resource_version, created.record.resource_version);
  // Someone holding the old resourceVersion loses.
  LeaseRecord stale = created.record;
  stale.holder_identity = "b";
  EXPECT_EQ(store->Update(stale).code, LeaseReply::Code::kConflict);
  EXPECT_EQ(store->Get().record.holder_identity, "a");
}

}  // namespace
}  // namespace kiln::kube

namespace kiln::kube {
namespace {

json HyperNodeObject(const std::string& name, int tier, const json& members) {
  return {{"apiVersion", "topology.volcano.sh/v1alpha1"}, {"kind", "HyperNode"},
          {"metadata", {{"name", name}}}, {"spec", {{"tier", tier}, {"members", members}}}};
}
json NodeMember(const std::string& name) {
  return {{"type", "Node"}, {"selector", {{"exactMatch", {{"name", name}}}}}};
}

// HyperNodes and Numatopologies are listed and watched: an edit reaches the next snapshot (and
// so the next session's tree), a bad object is skipped and the rest stays.
TEST(KubernetesEmulator, TopologyObjectsAreWatchedIntoTheSnapshot) {
  json m = Manifests();
  m["items"].push_back(HyperNodeObject("s0", 1, json::array({NodeMember("n1")})));
  m["items"].push_back(json::parse(R"({"apiVersion": "nodeinfo.volcano.sh/v1alpha1", "kind": "Numatopology",
      "metadata": {"name": "n1"}, "spec": {"numares": {"cpu": {"allocatable": "0-3", "capacity": 4}}}})"));
  SyncedCluster k;
  ASSERT_TRUE(k.Start(m));
  ClusterSpec c = k.cluster->SnapshotSpec(0);
  ASSERT_EQ(c.hyper_nodes.size(), 1u);
  EXPECT_EQ(c.hyper_nodes[0].members.size(), 1u);
  ASSERT_EQ(c.numatopologies.size(), 1u);
  EXPECT_EQ(c.numatopologies[0].numares.at("cpu").allocatable, (std::set<int64_t>{0, 1, 2, 3}));
  auto model = k.cluster->Snapshot(0);
  ASSERT_TRUE(model.ok()) << model.error().message;
  ASSERT_NE(model->hyper_nodes(), nullptr);
  EXPECT_EQ(model->hyper_nodes()->Find("s0")->nodes.size(), 1u);

  // The edit: s0 takes n2 as well; a new spine above it; a HyperNode without a tier is skipped.
  const std::string path = "/apis/topology.volcano.sh/v1alpha1/hypernodes";
  auto got = k.emu.client()->Get(path + "/s0");
  ASSERT_TRUE(got.ok() && got->ok());
  json s0 = json::parse(got->body);
  s0["spec"]["members"].push_back(NodeMember("n2"));
  ASSERT_TRUE(k.emu.client()->Put(path + "/s0", s0.dump())->ok());
  json child = json::parse(R"({"type": "HyperNode", "selector": {"exactMatch": {"name": "s0"}}})");
  ASSERT_TRUE(
      k.emu.client()->Post(path, HyperNodeObject("spine", 2, json::array({child})).dump())->ok());
  json bad = HyperNodeObject("bad", 1, json::array());
  bad["spec"].erase("tier");
  ASSERT_TRUE(k.emu.client()->Post(path, bad.dump())->ok());
  // In name order: s0 (now two members), spine; `bad` was skipped.
  EXPECT_TRUE(Eventually([&] {
    ClusterSpec s = k.cluster->SnapshotSpec(0);
    return s.hyper_nodes.size() == 2u && s.hyper_nodes[0].members.size() == 2u && s.hyper_nodes[1].name == "spine";
  }));
  EXPECT_TRUE(Eventually([&] { return k.cluster->stats().decode_errors >= 1; }));
  auto next = k.cluster->Snapshot(0);
  ASSERT_TRUE(next.ok()) << next.error().message;
  const HyperNodeTree* tree = next->hyper_nodes();
  ASSERT_NE(tree, nullptr);
  ASSERT_NE(tree->Find("s0"), nullptr);
  EXPECT_EQ(tree->Find("s0")->nodes.size(), 2u);
  ASSERT_NE(tree->Find("spine"), nullptr);
  EXPECT_EQ(tree->Find("s0")->parent, tree->Find("spine"));
  EXPECT_EQ(tree->Find("bad"), nullptr);
  // Deleted: gone from the next snapshot.
  ASSERT_TRUE(k.emu.client()->Delete(path + "/spine")->ok());
  ASSERT_TRUE(k.emu.client()->Delete("/apis/nodeinfo.volcano.sh/v1alpha1/numatopologies/n1")->ok());
  EXPECT_TRUE(Eventually([&] {
    ClusterSpec s = k.cluster->SnapshotSpec(0);
    return s.hyper_nodes.size() == 1u && s.numatopologies.empty();
  }));
  EXPECT_EQ(k.cluster->stats().relists["hypernodes"], 0);
}

// A cluster without Volcano's topology CRDs: their LISTs answer 404, which counts as an empty
// list, so the cache syncs and sessions run; the other resources are unaffected.
TEST(KubernetesEmulator, ClusterWithoutTheTopologyCrdsSyncs) {
  SyncedCluster k;
  ASSERT_TRUE(k.Start(Manifests(), FastOptions(),
                      {"--without-crd", "hypernodes.topology.volcano.sh", "--without-crd",
                       "numatopologies.nodeinfo.volcano.sh"}));
  ClusterSpec c = k.cluster->SnapshotSpec(0);
  EXPECT_TRUE(c.hyper_nodes.empty());
  EXPECT_TRUE(c.numatopologies.empty());
  EXPECT_EQ(c.nodes.size(), 2u);
  EXPECT_GE(k.emu.Count("requests", "list pods"), 1);
  auto model = k.cluster->Snapshot(0);
  EXPECT_TRUE(model.ok());
}

}  // namespace
}  // namespace kiln::kube
