// The initial LIST of kiln serve at issue 33's scale, 10k nodes and 100k pods, decoded from the
// JSON pages an API server sends (500 objects a page, as the reflectors ask), into the stores'
// staging maps, two ways:
//   BM_DecodeInitialList/dom       nlohmann DOM of each page, then decode.h's decoders (the path
//                                   before kubernetes/decode_fast.h);
//   BM_DecodeInitialList/simdjson  simdjson on demand: the page split into items, each decoded
//                                   by decode_fast.h, no DOM.
// The objects are shaped as a real cluster's (metadata with labels, annotations and owner
// references, volumes, containers with env, ports and resources, tolerations the admission
// plugins add, conditions, container statuses; nodes with capacity, conditions, addresses,
// nodeInfo and images), without managedFields (the reflectors could ask for them to be left out).
// Counters: objects/s, the megabytes read, and how many objects took the reference path.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kubernetes/decode.h"
#include "kubernetes/decode_fast.h"

namespace kiln::kube {
namespace {

using json = nlohmann::json;

constexpr int kNodes = 10'000;
constexpr int kPods = 100'000;
constexpr int kPageSize = 500;

std::string Node(int i) {
  return fmt::format(
      R"({{"metadata":{{"name":"node-{0:05}","uid":"6f1c2a4e-0000-4000-8000-{0:012}","resourceVersion":"{1}",)"
      R"("creationTimestamp":"2026-11-01T10:00:00Z","labels":{{"beta.kubernetes.io/arch":"amd64",)"
      R"("beta.kubernetes.io/os":"linux","kubernetes.io/arch":"amd64","kubernetes.io/hostname":"node-{0:05}",)"
      R"("kubernetes.io/os":"linux","node.kubernetes.io/instance-type":"m5.4xlarge",)"
      R"("topology.kubernetes.io/region":"us-east-1","topology.kubernetes.io/zone":"us-east-1{2}"}},)"
      R"("annotations":{{"node.alpha.kubernetes.io/ttl":"0","volumes.kubernetes.io/controller-managed-attach-detach":"true"}}}},)"
      R"("spec":{{"podCIDR":"10.{3}.{4}.0/24","podCIDRs":["10.{3}.{4}.0/24"],"providerID":"aws:///us-east-1{2}/i-0{0:016x}"}},)"
      R"("status":{{"capacity":{{"cpu":"16","ephemeral-storage":"104845292Ki","hugepages-1Gi":"0","hugepages-2Mi":"0",)"
      R"("memory":"64453876Ki","pods":"110"}},"allocatable":{{"cpu":"15890m","ephemeral-storage":"95551679124",)"
      R"("hugepages-1Gi":"0","hugepages-2Mi":"0","memory":"63324404Ki","pods":"110"}},"conditions":[)"
      R"({{"type":"MemoryPressure","status":"False","lastHeartbeatTime":"2026-11-29T10:00:00Z","lastTransitionTime":"2026-11-01T10:00:00Z","reason":"KubeletHasSufficientMemory","message":"kubelet has sufficient memory available"}},)"
      R"({{"type":"DiskPressure","status":"False","lastHeartbeatTime":"2026-11-29T10:00:00Z","lastTransitionTime":"2026-11-01T10:00:00Z","reason":"KubeletHasNoDiskPressure","message":"kubelet has no disk pressure"}},)"
      R"({{"type":"PIDPressure","status":"False","lastHeartbeatTime":"2026-11-29T10:00:00Z","lastTransitionTime":"2026-11-01T10:00:00Z","reason":"KubeletHasSufficientPID","message":"kubelet has sufficient PID available"}},)"
      R"({{"type":"Ready","status":"True","lastHeartbeatTime":"2026-11-29T10:00:00Z","lastTransitionTime":"2026-11-01T10:00:00Z","reason":"KubeletReady","message":"kubelet is posting ready status"}}],)"
      R"("addresses":[{{"type":"InternalIP","address":"10.0.{3}.{4}"}},{{"type":"Hostname","address":"node-{0:05}"}}],)"
      R"("daemonEndpoints":{{"kubeletEndpoint":{{"Port":10250}}}},"nodeInfo":{{"machineID":"ec2{0:029}",)"
      R"("systemUUID":"ec2{0:029}","bootID":"b{0:031}","kernelVersion":"6.1.0-13-cloud-amd64","osImage":"Debian GNU/Linux 12",)"
      R"("containerRuntimeVersion":"containerd://1.6.20","kubeletVersion":"v1.29.0","kubeProxyVersion":"v1.29.0",)"
      R"("operatingSystem":"linux","architecture":"amd64"}},"images":[)"
      R"({{"names":["registry.k8s.io/kube-proxy@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","registry.k8s.io/kube-proxy:v1.29.0"],"sizeBytes":28404623}},)"
      R"({{"names":["docker.io/library/busybox@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","docker.io/library/busybox:1.36"],"sizeBytes":2231050}},)"
      R"({{"names":["docker.io/pytorch/pytorch@sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb","docker.io/pytorch/pytorch:2.1.0-cuda12.1-cudnn8-runtime"],"sizeBytes":3829283747}},)"
      R"({{"names":["registry.k8s.io/pause@sha256:7031c1b283388d2c2e09b57badb803c05ebed362dc88d84b480cc47f72a21097","registry.k8s.io/pause:3.9"],"sizeBytes":321520}}]}}}})",
      i, 1000 + i, "abc"[i % 3], i / 250, i % 250);
}

std::string Pod(int i) {
  int job = i / 8, task = i % 8;
  bool running = i % 5 == 0;  // a fifth are bound and running, the rest pending
  std::string node = running ? fmt::format(R"("nodeName":"node-{:05}",)", i % kNodes) : "";
  std::string status =
      running
          ? fmt::format(
                R"({{"phase":"Running","conditions":[{{"type":"Initialized","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-11-29T10:00:05Z"}},)"
                R"({{"type":"Ready","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-11-29T10:00:09Z"}},)"
                R"({{"type":"ContainersReady","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-11-29T10:00:09Z"}},)"
                R"({{"type":"PodScheduled","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-11-29T10:00:04Z"}}],)"
                R"("hostIP":"10.0.1.{0}","podIP":"10.244.{0}.{1}","podIPs":[{{"ip":"10.244.{0}.{1}"}}],"startTime":"2026-11-29T10:00:05Z",)"
                R"("containerStatuses":[{{"name":"worker","state":{{"running":{{"startedAt":"2026-11-29T10:00:08Z"}}}},"lastState":{{}},)"
                R"("ready":true,"restartCount":0,"image":"docker.io/pytorch/pytorch:2.1.0-cuda12.1-cudnn8-runtime",)"
                R"("imageID":"docker.io/pytorch/pytorch@sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",)"
                R"("containerID":"containerd://{2:064x}","started":true}}],"qosClass":"Burstable"}})",
                i % 250, i % 200, i)
          : R"({"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","lastProbeTime":null,)"
            R"("lastTransitionTime":"2026-11-29T10:00:04Z","reason":"Unschedulable","message":"0/10000 nodes are available: 10000 Insufficient cpu."}],"qosClass":"Burstable"})";
  return fmt::format(
      R"({{"metadata":{{"name":"job-{0:05}-worker-{1}","generateName":"job-{0:05}-worker-","namespace":"team-{2}",)"
      R"("uid":"0b4c6c1e-8f0e-4d4f-9a55-{3:012}","resourceVersion":"{4}","creationTimestamp":"2026-11-29T10:00:00Z",)"
      R"("labels":{{"app":"job-{0:05}","volcano.sh/job-name":"job-{0:05}","volcano.sh/job-namespace":"team-{2}",)"
      R"("volcano.sh/queue-name":"queue-{5}","volcano.sh/task-spec":"worker","volcano.sh/task-index":"{1}"}},)"
      R"("annotations":{{"scheduling.k8s.io/group-name":"job-{0:05}","volcano.sh/job-name":"job-{0:05}",)"
      R"("volcano.sh/job-version":"0","volcano.sh/queue-name":"queue-{5}","volcano.sh/task-spec":"worker",)"
      R"("volcano.sh/template-uid":"job-{0:05}-worker"}},"ownerReferences":[{{"apiVersion":"batch.volcano.sh/v1alpha1",)"
      R"("kind":"Job","name":"job-{0:05}","uid":"7d2e9a10-1111-4222-8333-{0:012}","controller":true,"blockOwnerDeletion":true}}]}},)"
      R"("spec":{{"volumes":[{{"name":"kube-api-access-{3:05}","projected":{{"sources":[{{"serviceAccountToken":)"
      R"({{"expirationSeconds":3607,"path":"token"}}}},{{"configMap":{{"name":"kube-root-ca.crt","items":[{{"key":"ca.crt","path":"ca.crt"}}]}}}},)"
      R"({{"downwardAPI":{{"items":[{{"path":"namespace","fieldRef":{{"apiVersion":"v1","fieldPath":"metadata.namespace"}}}}]}}}}],"defaultMode":420}}}}],)"
      R"("containers":[{{"name":"worker","image":"docker.io/pytorch/pytorch:2.1.0-cuda12.1-cudnn8-runtime",)"
      R"("command":["python","train.py"],"args":["--rank","{1}"],"ports":[{{"containerPort":29500,"protocol":"TCP"}}],)"
      R"("env":[{{"name":"VC_TASK_INDEX","value":"{1}"}},{{"name":"VK_TASK_INDEX","value":"{1}"}},{{"name":"MASTER_ADDR","value":"job-{0:05}-master-0"}}],)"
      R"("resources":{{"limits":{{"cpu":"{6}","memory":"{7}Gi"}},"requests":{{"cpu":"{8}m","memory":"{7}Gi"}}}},)"
      R"("volumeMounts":[{{"name":"kube-api-access-{3:05}","readOnly":true,"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}}],)"
      R"("terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}}],)"
      R"("restartPolicy":"OnFailure","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst",)"
      R"("serviceAccountName":"default","serviceAccount":"default",{9}"securityContext":{{}},"schedulerName":"volcano",)"
      R"("tolerations":[{{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}},)"
      R"({{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}}],)"
      R"("priorityClassName":"batch-{10}","priority":{11},"enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority"}},)"
      R"("status":{12}}})",
      job, task, job % 40, i, 200000 + i, job % 16, 1 + i % 4, 1 + i % 8, 500 + (i % 7) * 250, node,
      i % 3, (i % 3) * 100, status);
}

// Pages of kPageSize objects, as the API server sends a LIST (metadata, then items).
std::vector<std::string> Pages(std::string_view kind, int count, std::string (*object)(int)) {
  std::vector<std::string> pages;
  for (int start = 0; start < count; start += kPageSize) {
    int end = std::min(count, start + kPageSize);
    std::string page = fmt::format(R"({{"kind":"{}List","apiVersion":"v1","metadata":{{"resourceVersion":"99999")",
                                   kind);
    if (end < count) page += fmt::format(R"(,"continue":"eyJydiI6OTk5OTksInN0YXJ0IjoiIn0-{}")", end);
    page += R"(},"items":[)";
    for (int i = start; i < end; ++i) {
      if (i > start) page += ',';
      page += object(i);
    }
    page += "]}";
    pages.push_back(std::move(page));
  }
  return pages;
}

struct ListPages {
  std::vector<std::string> nodes, pods;
  size_t bytes = 0;
};

const ListPages& Cluster() {
  static const ListPages* pages = [] {
    auto* p = new ListPages{Pages("Node", kNodes, Node), Pages("Pod", kPods, Pod)};
    for (const auto* list : {&p->nodes, &p->pods})
      for (const auto& page : *list) p->bytes += page.size();
    return p;
  }();
  return *pages;
}

// What the stores hold after the LIST (the staging maps of kubernetes_cluster.cc).
struct Stores {
  std::map<std::string, NodeSpec> nodes;
  std::map<std::string, DecodedPod> pods;
  int errors = 0;
};

void Stage(Stores& s, Result<NodeSpec> r, const ObjectMeta& m) {
  if (!r) {
    ++s.errors;
    return;
  }
  s.nodes[m.name] = std::move(*r);
}
void Stage(Stores& s, Result<DecodedPod> r) {
  if (!r) {
    ++s.errors;
    return;
  }
  std::string key = r->spec.Key();
  s.pods[std::move(key)] = std::move(*r);
}

// Today's path before decode_fast.h: the client parsed each page into a DOM.
void DecodeWithDom(const ListPages& c, Stores& s) {
  for (const auto& text : c.nodes) {
    json page = json::parse(text);
    for (const json& item : page["items"]) {
      ObjectMeta m;
      auto r = DecodeNode(item, &m);
      Stage(s, std::move(r), m);
    }
  }
  for (const auto& text : c.pods) {
    json page = json::parse(text);
    for (const json& item : page["items"]) Stage(s, DecodePod(item));
  }
}

// The path through decode_fast.h: each page (padded by the client as it arrives) split into
// items, each item decoded without a DOM.
void DecodeWithSimdjson(const std::vector<std::string>& node_pages,
                        const std::vector<std::string>& pod_pages, Stores& s) {
  ListPageMeta meta;
  auto each_item = [&](const std::vector<std::string>& pages, auto&& decode) {
    for (const auto& page : pages) {
      std::string_view text(page.data(), page.size() - kJsonPadding);
      if (!ForEachListItem(text, decode, &meta)) std::abort();
    }
  };
  each_item(node_pages, [&](std::string_view item) {
    ObjectMeta m;
    auto r = DecodeNodeJson(item, &m);
    Stage(s, std::move(r), m);
    return Status::Ok();
  });
  each_item(pod_pages, [&](std::string_view item) {
    Stage(s, DecodePodJson(item));
    return Status::Ok();
  });
}

void Report(benchmark::State& state, const Stores& s, int64_t fallbacks) {
  if (static_cast<int>(s.nodes.size()) != kNodes || static_cast<int>(s.pods.size()) != kPods || s.errors)
    state.SkipWithError("not every object decoded");
  state.counters["objects_per_s"] =
      benchmark::Counter(static_cast<double>(kNodes + kPods), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["MB"] = static_cast<double>(Cluster().bytes) / 1e6;
  state.counters["fallbacks"] = static_cast<double>(fallbacks);
}

void BM_DecodeInitialListDom(benchmark::State& state) {
  const ListPages& c = Cluster();
  for (auto _ : state) {
    Stores s;
    DecodeWithDom(c, s);
    state.PauseTiming();
    Report(state, s, 0);
    s = Stores{};  // freeing the stores is not part of the LIST
    state.ResumeTiming();
  }
}

void BM_DecodeInitialListSimdjson(benchmark::State& state) {
  const ListPages& c = Cluster();
  // The client pads each page as it arrives (PadInPlace); here outside the timing.
  std::vector<std::string> nodes = c.nodes, pods = c.pods;
  for (auto* list : {&nodes, &pods})
    for (auto& page : *list) (void)PadInPlace(page);
  for (auto _ : state) {
    Stores s;
    int64_t before = FastDecodeFallbacks();
    DecodeWithSimdjson(nodes, pods, s);
    state.PauseTiming();
    Report(state, s, FastDecodeFallbacks() - before);
    s = Stores{};
    state.ResumeTiming();
  }
}

// Watch events: MODIFIED lines of pods as a watch stream delivers them, through what the client
// and the reflector do with each line (split it, read the object's resourceVersion, decode it).
constexpr int kEvents = 20'000;

const std::vector<std::string>& WatchLines() {
  static const auto* lines = [] {
    auto* out = new std::vector<std::string>;
    for (int i = 0; i < kEvents; ++i) out->push_back(R"({"type":"MODIFIED","object":)" + Pod(i) + "}");
    return out;
  }();
  return *lines;
}

void CountEvents(benchmark::State& state, int decoded) {
  if (decoded != kEvents) state.SkipWithError("not every event decoded");
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(kEvents), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_DecodeWatchEventsDom(benchmark::State& state) {
  const auto& lines = WatchLines();
  for (auto _ : state) {
    int decoded = 0;
    for (const auto& line : lines) {
      json ev = json::parse(line);
      const json& object = ev["object"];
      std::string rv = object["metadata"].value("resourceVersion", "");
      benchmark::DoNotOptimize(rv);
      decoded += DecodePod(object).ok();
    }
    CountEvents(state, decoded);
  }
}

void BM_DecodeWatchEventsSimdjson(benchmark::State& state) {
  const auto& lines = WatchLines();
  std::string buffer, type;
  for (auto _ : state) {
    int decoded = 0;
    for (const auto& line : lines) {
      buffer.assign(line);  // the client copies each line into a padded buffer
      std::string_view object;
      if (SplitWatchEvent(PadInPlace(buffer), &type, &object) != WatchLine::Event) std::abort();
      std::string rv = DecodeMetaJson(object).resource_version;
      benchmark::DoNotOptimize(rv);
      decoded += DecodePodJson(object).ok();
    }
    CountEvents(state, decoded);
  }
}

BENCHMARK(BM_DecodeInitialListDom)->Name("BM_DecodeInitialList/dom")->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(2);
BENCHMARK(BM_DecodeInitialListSimdjson)->Name("BM_DecodeInitialList/simdjson")->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(2);
BENCHMARK(BM_DecodeWatchEventsDom)->Name("BM_DecodeWatchEvents/dom")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_DecodeWatchEventsSimdjson)->Name("BM_DecodeWatchEvents/simdjson")->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace kiln::kube
