// kubernetes/decode: Kubernetes JSON → ClusterSpec, the encoder back, and the round trip that
// proves `kiln serve` and `kiln simulate` see the same cluster: every scenario in the repository,
// exported as manifests and decoded again, gives the loader's ClusterSpec field by field.
#include <gtest/gtest.h>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "kubernetes/decode.h"
#include "kubernetes/encode.h"
#include "tests/unit/kubernetes/cluster_spec_dump.h"
#include "kubernetes/kubeconfig.h"
#include "runtime/quantity.h"
#include "simulator/scenario.h"
#include "tests/unit/source_dir.h"

namespace kiln::kube {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

using namespace kiln::testing;

// Appends the spec `decoded` holds to `into` (a pod's or PodGroup's spec, the others are their
// own), or fails the test naming the object's kind.
template <typename Decoded, typename Spec>
void Add(const std::string& kind, const Result<Decoded>& decoded, std::vector<Spec>& into) {
  if (!decoded.ok()) {
    ADD_FAILURE() << kind << ": " << decoded.error().message;
  } else if constexpr (std::is_same_v<Decoded, Spec>) {
    into.push_back(*decoded);
  } else {
    into.push_back(decoded->spec);
  }
}

// Decodes a manifest list as the reflectors would, into a ClusterSpec completed like the cache's.
ClusterSpec DecodeAll(const json& list, TimeNs now) {
  ClusterSpec c;
  for (const json& item : list["items"]) {
    std::string kind = item.value("kind", "");
    const std::map<std::string, std::function<void()>> decoders = {
        {"PriorityClass", [&] { Add(kind, DecodePriorityClass(item), c.priority_classes); }},
        {"Queue", [&] { Add(kind, DecodeQueue(item), c.queues); }},
        {"Node", [&] { Add(kind, DecodeNode(item), c.nodes); }},
        {"PodGroup", [&] { Add(kind, DecodePodGroup(item), c.pod_groups); }},
        {"Pod", [&] { Add(kind, DecodePod(item), c.pods); }},
        {"PodDisruptionBudget", [&] { Add(kind, DecodePdb(item), c.pdbs); }},
        {"ResourceQuota", [&] { Add(kind, DecodeResourceQuota(item), c.resource_quotas); }},
        {"HyperNode", [&] { Add(kind, DecodeHyperNode(item), c.hyper_nodes); }},
        {"Numatopology", [&] { Add(kind, DecodeNumatopology(item), c.numatopologies); }},
        {"Namespace", [&] { EXPECT_TRUE(DecodeNamespace(item).ok()); }},
    };
    auto decoder = decoders.find(kind);
    if (decoder == decoders.end())
      ADD_FAILURE() << "unexpected kind " << kind;
    else
      decoder->second();
  }
  CompleteOptions options;
  options.now = now;
  CompleteCluster(c, options);
  return c;
}

TEST(KubernetesRoundTrip, EveryScenarioDecodesToTheLoadersClusterSpec) {
  int checked = 0, with_hyper_nodes = 0, with_topology_groups = 0;
  for (const fs::path& file : AllScenarioFiles()) {
    auto spec = LoadScenarioFile(file.string());
    if (!spec) continue;  // scenarios that test loader errors
    SCOPED_TRACE(file.string());
    EncodeOptions options;
    options.now = spec->now;
    // Through text, as an API server would see it.
    json list = json::parse(ManifestsToJson(EncodeCluster(spec->cluster, options)));
    ClusterSpec got = DecodeAll(list, spec->now);
    ClusterSpec want = spec->cluster;
    // The one intended difference: Kubernetes requires an image, so an imageless scenario pod is
    // written with the pause image (no scenario node holds it: image locality scores 0 for both).
    for (auto& p : want.pods)
      if (p.image().empty()) p.mutable_extras().image = std::string(kDefaultImage);
    CompareClusterSpecs(got, want, [](const char* field, const auto& g, const auto& w) {
      EXPECT_EQ(g, w) << field;
    });
    // The decoder judges QoS from the Kubernetes pod as the snapshot does from the scenario's.
    if (auto cluster = BuildCluster(want); cluster.ok()) {
      for (const json& item : list["items"]) {
        if (item.value("kind", "") != "Pod") continue;
        auto pod = DecodePod(item);
        ASSERT_TRUE(pod.ok()) << pod.error().message;
        if (const Task* t = cluster->FindTask(pod->spec.Uid()))
          EXPECT_EQ(pod->qos_guaranteed, t->qos_guaranteed) << pod->spec.Key();
      }
    }
    if (!want.hyper_nodes.empty()) ++with_hyper_nodes;
    for (const auto& g : want.pod_groups)
      if (g.network_topology || !g.sub_group_policy.empty()) {
        ++with_topology_groups;
        break;
      }
    ++checked;
    if (HasFailure()) break;  // one file's diff is enough to read
  }
  EXPECT_GT(checked, 100);
  // The topology scenarios are among them (HyperNodes, networkTopology, subGroupPolicy).
  EXPECT_GT(with_hyper_nodes, 5);
  EXPECT_GT(with_topology_groups, 5);
}

TEST(KubernetesRoundTrip, YamlOutputParsesToTheSameObjectsAsJson) {
  auto spec = LoadScenarioFile(KilnSourceDir().string() + "/examples/scenarios/training-cluster.yaml");
  ASSERT_TRUE(spec.ok()) << spec.error().Format();
  EncodeOptions options;
  options.now = spec->now;
  auto items = EncodeCluster(spec->cluster, options);
  std::string yaml = ManifestsToYaml(items);
  // Every document starts with ---; the count matches, and no string that looks like a number
  // lost its quotes (quantities stay strings).
  size_t docs = 0;
  for (size_t pos = 0; (pos = yaml.find("---\n", pos)) != std::string::npos; pos += 4) ++docs;
  EXPECT_EQ(docs, items.size());
  EXPECT_EQ(yaml.find("cpu: 4\n"), std::string::npos) << "a quantity was written as a number";
}

// ---- decoder details ----

json PodJson() {
  return json::parse(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "p", "namespace": "ns", "uid": "u-1", "resourceVersion": "42",
                 "creationTimestamp": "2025-01-01T00:00:05Z",
                 "annotations": {"scheduling.k8s.io/group-name": "g", "volcano.sh/task-spec": "worker", "a": "b"},
                 "someFutureField": {"x": 1}},
    "spec": {"schedulerName": "volcano", "priority": 7,
             "containers": [{"name": "a", "image": "img:1", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
                             "ports": [{"containerPort": 80}, {"containerPort": 8080, "hostPort": 8080}]},
                            {"name": "b", "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": "1", "foo": "3"}}}],
             "initContainers": [{"name": "init", "resources": {"requests": {"cpu": "2", "memory": "512Mi"}}}],
             "overhead": {"cpu": "100m"}},
    "status": {"phase": "Pending",
               "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "m"}]}
  })");
}

TEST(KubernetesDecode, PodRequestsAreSumOfContainersMaxInitPlusOverhead) {
  auto r = DecodePod(PodJson());
  ASSERT_TRUE(r.ok()) << r.error().message;
  const PodSpec& p = r->spec;
  // cpu: max(0.5 + 1, 2) + 0.1 = 2.1 cores; memory: max(1Gi, 512Mi) = 1Gi; gpu 1 (milli 1000);
  // `foo` is not a resource name Volcano keeps.
  EXPECT_EQ(p.requests.cpu(), 2100);
  EXPECT_EQ(p.requests.memory(), 1073741824.0);
  EXPECT_EQ(p.requests.Get(*ResourceRegistry::Find("nvidia.com/gpu")), 1000);
  EXPECT_FALSE(ResourceRegistry::Find("foo").has_value());
  EXPECT_EQ(p.group, "g");
  EXPECT_EQ(p.task(), "worker");
  EXPECT_EQ(p.annotations(), (StringMap{{"a", "b"}}));
  EXPECT_EQ(p.priority, 7);
  EXPECT_EQ(p.image(), "img:1");
  ASSERT_EQ(p.host_ports().size(), 1u);  // only the port bound on the host
  EXPECT_EQ(p.host_ports()[0].host_port, 8080);
  EXPECT_EQ(r->meta.uid, "u-1");
  EXPECT_EQ(r->meta.resource_version, "42");
  EXPECT_EQ(r->scheduled_status, "False");
  EXPECT_EQ(r->scheduled_message, "m");
  EXPECT_EQ(p.scheduled_at, 0);
}

TEST(KubernetesDecode, SidecarInitContainersAddToTheSum) {
  json pod = PodJson();
  pod["spec"]["initContainers"] = json::parse(R"([
    {"name": "sidecar", "restartPolicy": "Always", "resources": {"requests": {"cpu": "300m"}}},
    {"name": "init", "resources": {"requests": {"cpu": "1"}}}])");
  pod["spec"].erase("overhead");
  auto r = DecodePod(pod);
  ASSERT_TRUE(r.ok()) << r.error().message;
  // containers 1.5 + sidecar 0.3 = 1.8 > init (1 + sidecar 0.3 = 1.3).
  EXPECT_EQ(r->spec.requests.cpu(), 1800);
}

// QoS class Guaranteed as Kubernetes computes it (v1qos.ComputePodQOS) over every container, and
// status.qosClass first when the API server has set it (v1qos.GetPodQOS, what numa-aware asks).
bool Guaranteed(const std::string& containers, const std::string& extra = "") {
  json pod = json::parse(R"({"metadata": {"name": "p"}, "spec": {"containers": )" + containers + "}" +
                         extra + "}");
  auto r = DecodePod(pod);
  EXPECT_TRUE(r.ok()) << r.error().message;
  return r.ok() && r->qos_guaranteed;
}

TEST(KubernetesDecode, QosGuaranteedNeedsEveryContainerToLimitCpuAndMemoryAtItsRequests) {
  const std::string two = R"({"cpu": "2", "memory": "1Gi"})";
  const std::string one = R"({"cpu": "1", "memory": "512Mi"})";
  auto c = [](const std::string& name, const std::string& req, const std::string& lim) {
    std::string res;
    if (!req.empty()) res += R"("requests": )" + req;
    if (!lim.empty()) res += std::string(res.empty() ? "" : ", ") + R"("limits": )" + lim;
    return R"({"name": ")" + name + R"(", "resources": {)" + res + "}}";
  };
  // Requests equal to limits in both containers; absent requests default to the limits; a
  // quantity written differently is the same quantity.
  EXPECT_TRUE(Guaranteed("[" + c("a", two, two) + ", " + c("b", one, one) + "]"));
  EXPECT_TRUE(Guaranteed("[" + c("a", "", two) + ", " + c("b", R"({"cpu": "1000m"})", one) + "]"));
  EXPECT_TRUE(Guaranteed("[" + c("a", R"({"cpu": "2000m", "memory": "1024Mi"})", two) + "]"));
  // The second container requests less cpu than it limits, or limits no memory: Burstable, though
  // the pod's summed limits would cover cpu and memory.
  EXPECT_FALSE(Guaranteed("[" + c("a", two, two) + ", " + c("b", R"({"cpu": "500m", "memory": "512Mi"})", one) + "]"));
  EXPECT_FALSE(Guaranteed("[" + c("a", two, two) + ", " + c("b", R"({"cpu": "1"})", R"({"cpu": "1"})") + "]"));
  // A request of 0 is not defaulted: Burstable. No resources at all: BestEffort.
  EXPECT_FALSE(Guaranteed("[" + c("a", R"({"cpu": "0", "memory": "1Gi"})", two) + "]"));
  EXPECT_FALSE(Guaranteed(R"([{"name": "a"}])"));
  EXPECT_FALSE(Guaranteed("[]"));
  // Init containers count like the others.
  EXPECT_TRUE(Guaranteed("[" + c("a", two, two) + R"(], "initContainers": [)" + c("i", one, one) + "]"));
  EXPECT_FALSE(Guaranteed("[" + c("a", two, two) + R"(], "initContainers": [)" + c("i", one, "") + "]"));
  // Pod-level resources decide when present (PodLevelResources, on in Kubernetes 1.36), whatever
  // the containers say; absent pod-level cpu and memory requests default to the pod's limits.
  EXPECT_TRUE(Guaranteed("[" + c("a", one, "") + R"(], "resources": {"limits": )" + two + "}"));
  EXPECT_FALSE(Guaranteed("[" + c("a", two, two) + R"(], "resources": {"limits": )" + two +
                          R"(, "requests": )" + one + "}"));
  EXPECT_FALSE(Guaranteed("[" + c("a", two, two) + R"(], "resources": {"requests": )" + two + "}"));
  // status.qosClass, when set, is the answer (the API server wrote it at creation).
  EXPECT_FALSE(Guaranteed("[" + c("a", two, two) + "]", R"(, "status": {"qosClass": "Burstable"})"));
  EXPECT_TRUE(Guaranteed(R"([{"name": "a"}])", R"(, "status": {"qosClass": "Guaranteed"})"));
}

TEST(KubernetesDecode, MissingFieldsTakeKubernetesDefaults) {
  auto r = DecodePod(json::parse(R"({"metadata": {"name": "bare"}})"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->spec.namespace_, "default");
  EXPECT_EQ(r->scheduler_name, "default-scheduler");
  EXPECT_EQ(r->spec.phase, PodPhase::Pending);
  EXPECT_FALSE(r->spec.priority.has_value());
  EXPECT_EQ(r->spec.creation_time, kUnsetTime);
  auto q = DecodeQueue(json::parse(R"({"metadata": {"name": "q"}, "spec": {}})"));
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->weight, 1);
  EXPECT_TRUE(q->reclaimable);
  EXPECT_EQ(q->state, QueueState::Open);  // not reconciled yet
  auto g = DecodePodGroup(json::parse(R"({"metadata": {"name": "g", "namespace": "n"}})"));
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->spec.queue, "default");
  EXPECT_EQ(g->spec.min_member, 1);
  EXPECT_EQ(g->spec.phase, PodGroupPhase::Pending);
}

TEST(KubernetesDecode, BadQuantityIsAnErrorNamingTheObjectAndField) {
  json pod = PodJson();
  pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots";
  auto r = DecodePod(pod);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("pod ns/p"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("spec.containers[0].resources.requests.cpu"), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("lots"), std::string::npos) << r.error().message;
}

TEST(KubernetesDecode, WrongTypeIsAnErrorForThatObject) {
  auto r = DecodeNode(json::parse(R"({"metadata": {"name": "n1"}, "spec": {"taints": "none"}})"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "node n1: spec.taints: must be a list, got a string");
  auto q = DecodeQueue(json::parse(R"({"metadata": {"name": "q"}, "spec": {"weight": "heavy"}})"));
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.error().message.find("spec.weight: must be an integer"), std::string::npos) << q.error().message;
  EXPECT_FALSE(DecodePod(json::parse(R"({"metadata": {}})")).ok());  // no name
  EXPECT_FALSE(DecodePod(json::parse(R"([1, 2])")).ok());
}

// Whole numbers past int64 are refused, never converted with undefined behaviour (the kube
// fuzzer found a PriorityClass value of 1.3e90).
TEST(KubernetesDecode, IntegersPastInt64AreOutOfRange) {
  for (const char* value : {"1.3333e90", "-1e19", "18446744073709551615", "9223372036854775808"}) {
    auto r = DecodePriorityClass(
        json::parse(std::string(R"({"metadata": {"name": "big"}, "value": )") + value + "}"));
    ASSERT_FALSE(r.ok()) << value;
    EXPECT_NE(r.error().message.find("value: out of range for int64"), std::string::npos)
        << r.error().message;
  }
  // INT64_MAX itself is an int64; a PriorityClass value must then also fit an int32.
  auto edge = DecodePriorityClass(
      json::parse(R"({"metadata": {"name": "edge"}, "value": 9223372036854775807})"));
  ASSERT_FALSE(edge.ok());
  EXPECT_NE(edge.error().message.find("value: out of range for int32"), std::string::npos)
      << edge.error().message;
  auto small = DecodePriorityClass(json::parse(R"({"metadata": {"name": "f"}, "value": 1000.0})"));
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(small->value, 1000);
}

TEST(KubernetesDecode, PodScheduledTrueGivesScheduledAtAndDeletionMarksDeleting) {
  json pod = PodJson();
  pod["metadata"]["deletionTimestamp"] = "2025-01-01T00:01:00Z";
  pod["status"] = json::parse(R"({"phase": "Running", "conditions": [
      {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2025-01-01T00:00:10Z"}]})");
  auto r = DecodePod(pod);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->spec.scheduled_at, *ParseTimestamp("2025-01-01T00:00:10Z"));
  EXPECT_TRUE(r->spec.deleting);
  EXPECT_EQ(TaskStatusOf(r->spec), TaskStatus::Releasing);
}

TEST(KubernetesDecode, PdbIntOrStringAndQuotaUsed) {
  auto pdb = DecodePdb(json::parse(R"({"metadata": {"name": "b", "namespace": "n"},
      "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "x"}}},
      "status": {"disruptionsAllowed": 1, "disruptedPods": {"p1": "2025-01-01T00:00:00Z"}}})"));
  ASSERT_TRUE(pdb.ok());
  EXPECT_EQ(pdb->min_available, "2");
  EXPECT_FALSE(pdb->max_unavailable.has_value());
  EXPECT_EQ(pdb->disruptions_allowed, 1);
  EXPECT_EQ(pdb->disrupted_pods, std::vector<std::string>{"p1"});
  auto pct = DecodePdb(json::parse(R"({"metadata": {"name": "b"}, "spec": {"maxUnavailable": "25%"}})"));
  ASSERT_TRUE(pct.ok());
  EXPECT_EQ(pct->max_unavailable, "25%");
  auto rq = DecodeResourceQuota(json::parse(R"({"metadata": {"name": "q", "namespace": "n"},
      "spec": {"hard": {"cpu": "10"}}, "status": {"used": {"cpu": "2500m"}}})"));
  ASSERT_TRUE(rq.ok());
  EXPECT_EQ(rq->hard.cpu(), 10000);
  EXPECT_EQ(rq->used.cpu(), 2500);
}

TEST(KubernetesEncode, QuantitiesAndTimestamps) {
  EXPECT_EQ(FormatQuantity("cpu", 1500), "1500m");
  EXPECT_EQ(FormatQuantity("cpu", 4000), "4");
  EXPECT_EQ(FormatQuantity("memory", 1073741824), "1073741824");
  EXPECT_EQ(FormatQuantity("pods", 110), "110");
  EXPECT_EQ(FormatQuantity("nvidia.com/gpu", 2000), "2");
  EXPECT_EQ(FormatTimestamp(*ParseTimestamp("2025-01-01T00:00:00Z")), "2025-01-01T00:00:00Z");
  EXPECT_EQ(FormatTimestamp(*ParseTimestamp("2025-01-01T00:00:00.25Z")), "2025-01-01T00:00:00.25Z");
  EXPECT_EQ(FormatTimestamp(kZeroTime), "0001-01-01T00:00:00Z");
}

// Go's zero time in a decoded object means "unset" as Volcano reads the field (issue 31).
TEST(KubernetesDecode, GoZeroTimeMeansUnset) {
  auto r = DecodePod(json::parse(R"({"metadata": {"name": "p", "creationTimestamp": "0001-01-01T00:00:00Z"},
    "status": {"phase": "Running", "conditions": [
      {"type": "PodScheduled", "status": "True", "lastTransitionTime": "0001-01-01T00:00:00Z"}]}})"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->spec.creation_time, kZeroTime);
  EXPECT_EQ(r->spec.scheduled_at, 0);
  auto g = DecodePodGroup(json::parse(
      R"({"metadata": {"name": "g", "namespace": "n", "creationTimestamp": "0001-01-01T00:00:00Z"}})"));
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(g->spec.creation_time, kZeroTime);
}

// ---- kubeconfig ----

constexpr std::string_view kKubeconfig = R"(apiVersion: v1
kind: Config
clusters:
- name: c1
  cluster:
    server: https://127.0.0.1:6443/
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==
- name: c2
  cluster: {server: "http://10.0.0.1:8080", insecure-skip-tls-verify: true, certificate-authority: ca.crt}
users:
- name: u1
  user: {token: abc}
- name: u2
  user: {client-certificate: cert.pem, client-key: key.pem, tokenFile: tok}
- name: u3
  user: {exec: {command: aws}}
contexts:
- name: one
  context: {cluster: c1, user: u1, namespace: team}
- name: two
  context: {cluster: c2, user: u2}
- name: three
  context: {cluster: c1, user: u3}
- name: broken
  context: {cluster: nope, user: u1}
current-context: one
)";

TEST(KubeConfigTest, CurrentContextTokenAndCaData) {
  auto c = ParseKubeConfig(kKubeconfig, "/etc/kube/config");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->server, "https://127.0.0.1:6443");
  EXPECT_EQ(c->ca_pem, "-----BEGIN CERTIFICATE-----\n");
  EXPECT_EQ(c->token, "abc");
  EXPECT_EQ(c->namespace_, "team");
  EXPECT_FALSE(c->insecure_skip_tls_verify);
  EXPECT_EQ(c->context, "one");
}

TEST(KubeConfigTest, NamedContextResolvesFilesRelativeToTheKubeconfig) {
  auto c = ParseKubeConfig(kKubeconfig, "/etc/kube/config", "two");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->server, "http://10.0.0.1:8080");
  EXPECT_TRUE(c->insecure_skip_tls_verify);
  EXPECT_EQ(c->ca_file, "/etc/kube/ca.crt");
  EXPECT_EQ(c->client_cert_file, "/etc/kube/cert.pem");
  EXPECT_EQ(c->client_key_file, "/etc/kube/key.pem");
  EXPECT_EQ(c->token_file, "/etc/kube/tok");
  EXPECT_EQ(c->namespace_, "default");
}

TEST(KubeConfigTest, ErrorsNameTheFileAndTheField) {
  auto missing = ParseKubeConfig(kKubeconfig, "/k", "broken");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message,
            "kubeconfig /k: context `broken` names cluster `nope`, which is not defined in `clusters`");
  auto no_ctx = ParseKubeConfig(kKubeconfig, "/k", "four");
  ASSERT_FALSE(no_ctx.ok());
  EXPECT_EQ(no_ctx.error().message, "kubeconfig /k: --context names context `four`, which is not defined in `contexts`");
  auto exec = ParseKubeConfig(kKubeconfig, "/k", "three");
  ASSERT_FALSE(exec.ok());
  EXPECT_NE(exec.error().message.find("exec or auth-provider plugin"), std::string::npos);
  auto scheme = ParseKubeConfig("clusters: [{name: c, cluster: {server: 'ftp://x'}}]\n"
                                "contexts: [{name: a, context: {cluster: c}}]\ncurrent-context: a\n", "/k");
  ASSERT_FALSE(scheme.ok());
  EXPECT_NE(scheme.error().message.find("must start with https:// or http://"), std::string::npos);
  EXPECT_EQ(scheme.error().where.line, 1);
  auto b64 = ParseKubeConfig("clusters: [{name: c, cluster: {server: 'https://x', certificate-authority-data: '***'}}]\n"
                             "contexts: [{name: a, context: {cluster: c}}]\ncurrent-context: a\n", "/k");
  ASSERT_FALSE(b64.ok());
  EXPECT_NE(b64.error().message.find("is not base64"), std::string::npos);
  auto none = LoadKubeConfig("/nonexistent/kubeconfig");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().message,
            "cannot read kubeconfig /nonexistent/kubeconfig: No such file or directory");
}

// Found by the kube fuzz target: a kubeconfig without a `contexts` key (or an entry without a
// `name` or its inner map) threw yaml-cpp's InvalidNode instead of answering an error.
TEST(KubeConfigTest, MissingListsAndFieldsAreErrorsNotExceptions) {
  auto no_list = ParseKubeConfig("kind: Config\ncurrent-context: a\n", "/k");
  ASSERT_FALSE(no_list.ok());
  EXPECT_EQ(no_list.error().message,
            "kubeconfig /k: `current-context` names context `a`, which is not defined in `contexts`");
  auto unnamed = ParseKubeConfig("contexts: [{context: {cluster: c}}]\ncurrent-context: a\n", "/k");
  ASSERT_FALSE(unnamed.ok());
  EXPECT_NE(unnamed.error().message.find("not defined in `contexts`"), std::string::npos);
  auto no_inner = ParseKubeConfig("contexts: [{name: a}]\ncurrent-context: a\n", "/k");
  ASSERT_FALSE(no_inner.ok());
  EXPECT_NE(no_inner.error().message.find("has no `context` map"), std::string::npos);
}

}  // namespace
}  // namespace kiln::kube
