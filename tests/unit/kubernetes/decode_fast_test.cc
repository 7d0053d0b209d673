// kubernetes/decode_fast: the simdjson decoders of kiln serve's LIST and watch path give what the
// reference decoders of kubernetes/decode.h give (the same struct, or the same Error) for every
// object of a corpus: every pod and node of every scenario in the repository as the encoder
// writes them, plus odd shapes (missing fields, nulls, unicode, big numbers, every quantity
// suffix, unknown fields, duplicate keys, type errors, text that is not JSON). The common shapes
// must be read by the fast path itself, not handed to the reference.
#include <gtest/gtest.h>
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kubernetes/decode.h"
#include "kubernetes/decode_fast.h"
#include "kubernetes/encode.h"
#include "simulator/scenario.h"
#include "tests/unit/kubernetes/cluster_spec_dump.h"
#include "tests/unit/source_dir.h"

namespace kiln::kube {
namespace {

using json = nlohmann::json;
using testing::D;

std::string Dump(const Result<DecodedPod>& r) {
  if (!r) return "error: " + r.error().message;
  const DecodedPod& p = *r;
  return fmt::format("{} | lim{} where={} | meta {} {} {} {} | sn={} qos={} sched={}/{}/{}", D(p.spec),
                     D(p.spec.limits()), p.spec.where.file, p.meta.namespace_, p.meta.name, p.meta.uid,
                     p.meta.resource_version, p.scheduler_name, p.qos_guaranteed, p.scheduled_status,
                     p.scheduled_reason, p.scheduled_message);
}

std::string Dump(const Result<NodeSpec>& r, const ObjectMeta& m) {
  if (!r) return "error: " + r.error().message;
  return fmt::format("{} | where={} | meta {} {} {} {}", D(*r), r->where.file, m.namespace_, m.name, m.uid,
                     m.resource_version);
}

// Decodes `text` both ways and expects the same; returns whether the fast path read it itself.
bool SamePod(const std::string& text) {
  SCOPED_TRACE(text);
  int64_t before = FastDecodeFallbacks();
  PaddedJson padded(text);
  std::string fast = Dump(DecodePodJson(padded.view()));
  bool own = FastDecodeFallbacks() == before;
  EXPECT_EQ(fast, Dump(DecodePodReference(text)));
  return own;
}

bool SameNode(const std::string& text) {
  SCOPED_TRACE(text);
  int64_t before = FastDecodeFallbacks();
  PaddedJson padded(text);
  ObjectMeta fm, rm;
  std::string fast = Dump(DecodeNodeJson(padded.view(), &fm), fm);
  bool own = FastDecodeFallbacks() == before;
  EXPECT_EQ(fast, Dump(DecodeNodeReference(text, &rm), rm));
  return own;
}

// A pod as the API server sends one, with what kubelet and the admission plugins add.
json RealisticPod() {
  return json::parse(R"({
    "kind": "Pod", "apiVersion": "v1",
    "metadata": {"name": "job-7-worker-3", "generateName": "job-7-", "namespace": "team-a",
      "uid": "0b4c6c1e-8f0e-4d4f-9a55-1d2c3b4a5f60", "resourceVersion": "81234",
      "creationTimestamp": "2026-11-29T10:00:00Z",
      "labels": {"app": "job-7", "volcano.sh/job-name": "job-7", "volcano.sh/task-spec": "worker"},
      "annotations": {"scheduling.k8s.io/group-name": "job-7", "volcano.sh/task-spec": "worker",
                      "kiln.sh/duration": "90s", "volcano.sh/job-version": "0"},
      "ownerReferences": [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "job-7",
                           "uid": "u-1", "controller": true, "blockOwnerDeletion": true}],
      "finalizers": []},
    "spec": {
      "volumes": [{"name": "token", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}],
      "containers": [
        {"name": "worker", "image": "busybox:1.36", "command": ["sh", "-c", "sleep 3600"],
         "env": [{"name": "RANK", "value": "3"}],
         "ports": [{"containerPort": 8080, "protocol": "TCP"}],
         "resources": {"limits": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "1"},
                       "requests": {"cpu": "1500m", "memory": "3Gi", "nvidia.com/gpu": "1",
                                    "ephemeral-storage": "1G"}},
         "imagePullPolicy": "IfNotPresent"},
        {"name": "sidecar", "image": "envoy:1.28", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}],
      "restartPolicy": "OnFailure", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
      "serviceAccountName": "default", "nodeName": "node-12", "securityContext": {},
      "schedulerName": "volcano", "priorityClassName": "high", "priority": 1000,
      "preemptionPolicy": "Never", "enableServiceLinks": true,
      "nodeSelector": {"kubernetes.io/os": "linux"},
      "schedulingGates": [{"name": "wait"}],
      "tolerations": [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]},
    "status": {"phase": "Running", "hostIP": "10.0.0.12", "podIP": "10.1.0.7",
      "startTime": "2026-11-29T10:00:05Z", "nominatedNodeName": "node-9",
      "conditions": [
        {"type": "Initialized", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-11-29T10:00:05Z"},
        {"type": "PodScheduled", "status": "True", "lastProbeTime": null,
         "lastTransitionTime": "2026-11-29T10:00:04Z", "reason": "", "message": ""}],
      "containerStatuses": [{"name": "worker", "ready": true, "restartCount": 0, "state": {"running": {}}}]}
  })");
}

json RealisticNode() {
  return json::parse(R"({
    "kind": "Node", "apiVersion": "v1",
    "metadata": {"name": "node-12", "uid": "9d0e", "resourceVersion": "777",
      "creationTimestamp": "2026-11-01T00:00:00Z",
      "labels": {"kubernetes.io/hostname": "node-12", "topology.kubernetes.io/zone": "z1"},
      "annotations": {"node.alpha.kubernetes.io/ttl": "0"}},
    "spec": {"podCIDR": "10.1.12.0/24", "providerID": "kind://node-12", "unschedulable": true,
             "taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule", "timeAdded": null}]},
    "status": {
      "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110", "ephemeral-storage": "100Gi",
                   "hugepages-2Mi": "0", "nvidia.com/gpu": "4"},
      "allocatable": {"cpu": "15890m", "memory": "63324404Ki", "pods": "110", "nvidia.com/gpu": "4"},
      "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
      "addresses": [{"type": "InternalIP", "address": "10.0.0.12"}],
      "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
      "nodeInfo": {"kubeletVersion": "v1.29.0", "architecture": "amd64"},
      "images": [{"names": ["busybox@sha256:abc", "busybox:1.36"], "sizeBytes": 4261550},
                 {"names": ["envoy:1.28"], "sizeBytes": 61000000}]}
  })");
}

TEST(FastDecode, EveryScenarioPodAndNodeDecodesAsTheReferenceDoes) {
  int pods = 0, nodes = 0, own = 0;
  for (const auto& file : AllScenarioFiles()) {
    auto spec = LoadScenarioFile(file.string());
    if (!spec) continue;
    SCOPED_TRACE(file.string());
    EncodeOptions options;
    options.now = spec->now;
    json list = json::parse(ManifestsToJson(EncodeCluster(spec->cluster, options)));
    for (const json& item : list["items"]) {
      std::string kind = item.value("kind", "");
      if (kind == "Pod") {
        own += SamePod(item.dump());
        ++pods;
      } else if (kind == "Node") {
        own += SameNode(item.dump());
        ++nodes;
      }
    }
  }
  EXPECT_GT(pods, 1000);
  EXPECT_GT(nodes, 500);
  // Scenario pods with affinity, spread constraints or host ports go to the reference; most
  // objects must not.
  EXPECT_GT(own, (pods + nodes) * 8 / 10) << own << " of " << pods + nodes;
}

TEST(FastDecode, RealisticObjectsAreReadByTheFastPathItself) {
  EXPECT_TRUE(SamePod(RealisticPod().dump()));
  EXPECT_TRUE(SameNode(RealisticNode().dump()));
  // The same, pretty-printed, and with the keys in another order (json's dump sorts them).
  EXPECT_TRUE(SamePod(RealisticPod().dump(2)));
  std::string reordered = R"({"status": {"phase": "Pending"}, "spec": {"containers": [{"image": "x",
    "resources": {"requests": {"cpu": "1"}}}]}, "metadata": {"namespace": "a", "name": "p"}})";
  EXPECT_TRUE(SamePod(reordered));
}

TEST(FastDecode, OddPodsDecodeAsTheReferenceDoes) {
  const std::vector<std::string> pods = {
      // Missing parts, nulls.
      R"({"metadata": {"name": "p"}})",
      R"({"metadata": {"name": "p", "namespace": null, "labels": null, "annotations": {"a": null}},
          "spec": null, "status": null})",
      R"({"metadata": {"name": "p"}, "spec": {"containers": null, "tolerations": null, "nodeName": null,
          "schedulerName": null, "priority": null, "preemptionPolicy": null}, "status": {"phase": null}})",
      R"({"metadata": {"name": "p"}, "spec": {"schedulerName": ""}, "status": {"phase": ""}})",
      R"({"metadata": {"name": "p"}, "spec": {"containers": [{"resources": null}, {}]}})",
      // Unicode in keys and values, escapes.
      R"({"metadata": {"name": "p\u00e9", "labels": {"k\u00fcy": "v\u2603", "emoji": "\ud83d\ude00"},
          "annotations": {"q": "a\"b\\c\n"}}})",
      // Quantities in every suffix.
      R"({"metadata": {"name": "p"}, "spec": {"containers": [{"resources": {"requests": {
          "cpu": "0.5", "memory": "1Ki", "ephemeral-storage": "1Mi", "hugepages-2Mi": "1Gi",
          "nvidia.com/gpu": "2", "example.com/a": "1Ti", "example.com/b": "1Pi", "example.com/c": "1Ei",
          "example.com/d": "1k", "example.com/e": "1M", "example.com/f": "1G", "example.com/g": "1T",
          "example.com/h": "1P", "example.com/i": "1E", "example.com/j": "100m", "example.com/k": "5e3",
          "example.com/l": "1n", "example.com/m": "1u"}}}]}})",
      // Bad quantities, quantities as numbers, big and fractional numbers.
      R"({"metadata": {"name": "p"}, "spec": {"containers": [{"resources": {"requests": {"cpu": "lots"}}}]}})",
      R"({"metadata": {"name": "p"}, "spec": {"containers": [{"resources": {"requests": {"cpu": 2}}}]}})",
      R"({"metadata": {"name": "p"}, "spec": {"containers": [{"resources": {"limits": {"memory": 1.5e9}}}]}})",
      R"({"metadata": {"name": "p"}, "spec": {"priority": 99999999999999999999}})",
      R"({"metadata": {"name": "p"}, "spec": {"priority": 3.0}})",
      R"({"metadata": {"name": "p"}, "spec": {"priority": 3.5}})",
      R"({"metadata": {"name": "p"}, "spec": {"priority": -2147483649}})",
      R"({"metadata": {"name": "p"}, "spec": {"tolerations": [{"key": "k", "tolerationSeconds": 1e30}]}})",
      // Unknown fields everywhere.
      R"({"x": [1, {"y": null}], "metadata": {"name": "p", "zz": {"a": [true]}}, "spec": {"weird": 1,
          "containers": [{"image": "i", "unknown": {"deep": [[]]}, "ports": [{"containerPort": 1}]}]},
          "status": {"other": "x", "conditions": [{"type": "Ready", "extra": 1}]}})",
      // Type errors.
      R"({"metadata": {"name": 5}})",
      R"({"metadata": {"name": "p", "labels": {"a": 1}}})",
      R"({"metadata": {"name": "p", "labels": []}})",
      R"({"metadata": "p"})",
      R"({"metadata": {"name": "p"}, "spec": {"containers": {}}})",
      R"({"metadata": {"name": "p"}, "spec": {"containers": [{"image": 7}]}})",
      R"({"metadata": {"name": "p"}, "spec": {"containers": [1]}})",
      R"({"metadata": {"name": "p"}, "spec": {"tolerations": ["x"]}})",
      R"({"metadata": {"name": "p"}, "spec": {"preemptionPolicy": "Sometimes"}})",
      R"({"metadata": {"name": "p"}, "status": {"conditions": [{"type": "PodScheduled", "status": "True",
          "lastTransitionTime": "yesterday"}]}})",
      R"({"metadata": {"name": "p", "creationTimestamp": "0001-01-01T00:00:00Z"}})",
      R"({"metadata": {"name": "p", "creationTimestamp": "not a time"}})",
      R"({"metadata": {"name": "p", "annotations": {"kiln.sh/duration": "-5s"}}})",
      R"({"metadata": {"name": ""}})",
      R"({})",
      R"([])",
      R"("pod")",
      // Duplicate keys (the reference keeps the last).
      R"({"metadata": {"name": "a", "name": "b"}})",
      R"({"metadata": {"name": "a"}, "spec": {"nodeName": "n1"}, "spec": {"priority": 4}})",
      // What the reference alone reads.
      R"({"metadata": {"name": "p"}, "spec": {"containers": [{"ports": [{"hostPort": 80, "containerPort": 8080}]}]}})",
      R"({"metadata": {"name": "p"}, "spec": {"initContainers": [{"resources": {"requests": {"cpu": "2"}}}],
          "containers": [{"resources": {"requests": {"cpu": "1"}}}], "overhead": {"cpu": "10m"}}})",
      R"({"metadata": {"name": "p"}, "spec": {"affinity": {"nodeAffinity": {
          "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions":
          [{"key": "a", "operator": "In", "values": ["b"]}]}]}}}}})",
      R"({"metadata": {"name": "p"}, "spec": {"topologySpreadConstraints": [{"maxSkew": 1,
          "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}], "initContainers": []}})",
      // QoS computed from the containers, given by status, and pod-level resources.
      R"({"metadata": {"name": "p"}, "spec": {"containers": [{"resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}})",
      R"({"metadata": {"name": "p"}, "spec": {"containers": [{"resources": {"limits": {"cpu": "1", "memory": "1Gi"},
          "requests": {"cpu": "500m"}}}]}})",
      R"({"metadata": {"name": "p"}, "status": {"qosClass": "Guaranteed"}})",
      R"({"metadata": {"name": "p"}, "spec": {"resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}})",
      // Deleting, several PodScheduled conditions.
      R"({"metadata": {"name": "p", "deletionTimestamp": "2026-11-29T10:00:00Z"},
          "status": {"conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-11-29T09:00:00Z"},
          {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/3 nodes"}]}})",
      // Not JSON: the same parse error (where and what).
      R"({"metadata": {"name": "p"})",
      R"({"metadata": {"name": "p"}, "spec": {"priority": tru}})",
      R"({"metadata": {"name": "p\x"}})",
      R"({"metadata": {"name": "p"}} trailing)",
      "",
  };
  for (const std::string& text : pods) SamePod(text);
}

TEST(FastDecode, OddNodesDecodeAsTheReferenceDoes) {
  const std::vector<std::string> nodes = {
      R"({"metadata": {"name": "n"}})",
      R"({"metadata": {"name": "n"}, "spec": null, "status": {"capacity": null, "allocatable": {"cpu": "4"}}})",
      R"({"metadata": {"name": "n"}, "status": {"capacity": {"cpu": "8"}, "allocatable": {"cpu": "7500m",
          "memory": "1e3Mi", "example.com/x": "2"}}})",
      R"({"metadata": {"name": "n"}, "spec": {"unschedulable": "yes"}})",
      R"({"metadata": {"name": "n"}, "spec": {"unschedulable": null, "taints": [{"key": "k"}, {}]}})",
      R"({"metadata": {"name": "n"}, "spec": {"taints": [{"key": 1}]}})",
      R"({"metadata": {"name": "n"}, "status": {"images": [{"names": ["a", "b"], "sizeBytes": 10},
          {"names": ["a"], "sizeBytes": 20}, {"names": null}, {"sizeBytes": 5}]}})",
      R"({"metadata": {"name": "n"}, "status": {"images": [{"names": ["a"], "sizeBytes": 1e3}]}})",
      R"({"metadata": {"name": "n"}, "status": {"images": [{"names": [1]}]}})",
      R"({"metadata": {"name": "n"}, "status": {"images": [3]}})",
      R"({"metadata": {"name": "n", "annotations": {"kiln.sh/usage": "{\"cpu\": 50, \"memory\": \"20\"}"}}})",
      R"({"metadata": {"name": "n", "annotations": {"kiln.sh/usage": "nope"}}})",
      R"({"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "1"}, "allocatable": {"memory": "1Gi"}}})",
      R"({"metadata": {"name": "n", "namespace": "odd", "uid": "u", "resourceVersion": "9"}})",
      R"({"metadata": {"name": "n"}, "status": {"allocatable": {"pods": "1.5"}}})",
      R"({"metadata": {"name": "n"})",
      R"({"metadata": {"nam)",
      R"(null)",
  };
  for (const std::string& text : nodes) SameNode(text);
}

TEST(FastDecode, BadJsonGivesTheParseErrorWithItsPlace) {
  PaddedJson text(R"({"metadata": {"name": "p"}, "spec": {"priority": tru}})");
  auto r = DecodePodJson(text.view());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("pod: not JSON:"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("column 53"), std::string::npos) << r.error().message;
}

TEST(FastDecode, MetaOfAnyObject) {
  PaddedJson a(R"({"kind": "X", "metadata": {"namespace": "ns", "name": "n", "uid": "u", "resourceVersion": "42"}})");
  ObjectMeta m = DecodeMetaJson(a.view());
  EXPECT_EQ(m.namespace_, "ns");
  EXPECT_EQ(m.name, "n");
  EXPECT_EQ(m.uid, "u");
  EXPECT_EQ(m.resource_version, "42");
  PaddedJson b(R"({"metadata": {"name": 3, "resourceVersion": "7"}})");
  EXPECT_EQ(DecodeMetaJson(b.view()).name, "");
  EXPECT_EQ(DecodeMetaJson(b.view()).resource_version, "7");
  PaddedJson c(R"({"metadata": [)");
  EXPECT_EQ(DecodeMetaJson(c.view()).resource_version, "");
}

// Collects the items of a page.
Status Items(const std::string& page, std::vector<std::string>* items, ListPageMeta* meta) {
  PaddedJson padded(page);
  return ForEachListItem(
      padded.view(),
      [&](std::string_view item) {
        items->emplace_back(item);
        return Status::Ok();
      },
      meta);
}

TEST(FastDecode, ListPagesGiveEachItemsTextAndTheContinueToken) {
  std::vector<std::string> items;
  ListPageMeta meta;
  ASSERT_TRUE(Items(R"({"kind": "PodList", "metadata": {"resourceVersion": "12", "continue": "c2"},
                        "items": [{"metadata": {"name": "a"}}, {"b": [1, 2]} , 3, "s", null, [4]]})",
                    &items, &meta));
  EXPECT_EQ(items, (std::vector<std::string>{R"({"metadata": {"name": "a"}})", R"({"b": [1, 2]})", "3",
                                             R"("s")", "null", "[4]"}));
  EXPECT_EQ(meta.continue_token, "c2");
  EXPECT_EQ(meta.resource_version, "12");
  // Items first, metadata last; no continue token on the last page.
  items.clear();
  meta = {};
  ASSERT_TRUE(Items(R"({"items": [], "metadata": {"resourceVersion": "13"}})", &items, &meta));
  EXPECT_TRUE(items.empty());
  EXPECT_EQ(meta.continue_token, "");
  EXPECT_EQ(meta.resource_version, "13");
}

TEST(FastDecode, BadListPagesAreErrorsThatSayWhat) {
  std::vector<std::string> items;
  ListPageMeta meta;
  Status s = Items("[1, 2]", &items, &meta);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message, "the answer is not a JSON object");
  items.clear();
  s = Items(R"({"items": [{"a": 1}, {"b": )", &items, &meta);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("not valid JSON"), std::string::npos) << s.error().message;
  // An item's own Error ends the page there.
  items.clear();
  PaddedJson page(R"({"items": [1, 2, 3]})");
  int seen = 0;
  s = ForEachListItem(
      page.view(),
      [&](std::string_view) -> Status {
        if (++seen == 2) return Error{"stop here", {}};
        return Status::Ok();
      },
      &meta);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message, "stop here");
  EXPECT_EQ(seen, 2);
}

TEST(FastDecode, WatchLinesSplitIntoTypeAndObject) {
  std::string type;
  std::string_view object;
  PaddedJson line(R"({"type":"MODIFIED","object":{"metadata":{"name":"p","resourceVersion":"5"}}})");
  ASSERT_EQ(SplitWatchEvent(line.view(), &type, &object), WatchLine::Event);
  EXPECT_EQ(type, "MODIFIED");
  EXPECT_EQ(object, R"({"metadata":{"name":"p","resourceVersion":"5"}})");
  PaddedJson no_object(R"({"type":"ADDED"})");
  EXPECT_EQ(SplitWatchEvent(no_object.view(), &type, &object), WatchLine::Incomplete);
  PaddedJson number_type(R"({"type":1,"object":{}})");
  EXPECT_EQ(SplitWatchEvent(number_type.view(), &type, &object), WatchLine::Incomplete);
  PaddedJson broken(R"({"type":"ADDED","object":{"metadata":)");
  EXPECT_EQ(SplitWatchEvent(broken.view(), &type, &object), WatchLine::NotJson);
  PaddedJson list(R"([1])");
  EXPECT_EQ(SplitWatchEvent(list.view(), &type, &object), WatchLine::NotJson);
}

}  // namespace
}  // namespace kiln::kube
