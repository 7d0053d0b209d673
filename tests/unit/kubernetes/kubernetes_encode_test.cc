// kubernetes/encode.h on its own: how manifests are written (what `kiln export-manifests` prints
// and kubectl or the emulator load), beside the round trips in kubernetes_decode_test.cc.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

#include "kubernetes/decode.h"
#include "kubernetes/encode.h"
#include "runtime/quantity.h"
#include "simulator/scenario.h"

namespace kiln::kube {
namespace {

using json = nlohmann::json;

// A string YAML would read as another type (a number, a bool, null) or that holds YAML syntax is
// double-quoted; any other string stays plain. Empty lists are written `[]`, null `~`.
TEST(KubernetesEncode, YamlQuotesStringsThatWouldReadAsAnotherType) {
  json item = {{"apiVersion", "v1"},
               {"kind", "ConfigMap"},
               {"metadata",
                {{"name", "x"},
                 {"labels",
                  {{"number", "123"},
                   {"float", "1.5"},
                   {"bool", "true"},
                   {"yes", "Yes"},
                   {"null", "null"},
                   {"dash", "-x"},
                   {"colon", "a: b"},
                   {"empty", ""},
                   {"plain", "web"}}}}},
               {"list", json::array()},
               {"nothing", nullptr},
               {"flag", true},
               {"count", 3}};
  std::string yaml = ManifestsToYaml({item});
  ASSERT_EQ(yaml.rfind("---\n", 0), 0u) << yaml;
  // Keys follow the same rule as values.
  for (const char* quoted : {"number: \"123\"", "float: \"1.5\"", "bool: \"true\"",
                             "\"yes\": \"Yes\"", "\"null\": \"null\"", "dash: \"-x\"",
                             "colon: \"a: b\"", "empty: \"\""})
    EXPECT_NE(yaml.find(quoted), std::string::npos) << quoted << " in\n" << yaml;
  for (const char* plain : {"plain: web", "list: []", "nothing: ~", "flag: true", "count: 3"})
    EXPECT_NE(yaml.find(plain), std::string::npos) << plain << " in\n" << yaml;
  // Read back, every label is the string it was.
  YAML::Node doc = YAML::Load(yaml);
  for (const auto& [key, value] : item["metadata"]["labels"].items())
    EXPECT_EQ(doc["metadata"]["labels"][key].as<std::string>(), value.get<std::string>()) << key;
  EXPECT_TRUE(doc["nothing"].IsNull());
  EXPECT_EQ(doc["count"].as<int>(), 3);
}

TEST(KubernetesEncode, ManifestsToJsonIsAV1List) {
  json item = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "ns"}}}};
  json list = json::parse(ManifestsToJson({item, item}));
  EXPECT_EQ(list["apiVersion"], "v1");
  EXPECT_EQ(list["kind"], "List");
  ASSERT_EQ(list["items"].size(), 2u);
  EXPECT_EQ(list["items"][0], item);
}

// What a pod carries that has no field of its own travels in annotations; a pod without an image
// gets the pause image; pods of the default scheduler get the one asked for; the cluster's own
// objects (queue `default`, one-pod PodGroups) are left out.
TEST(KubernetesEncode, PodFieldsWithoutASlotTravelInAnnotations) {
  auto spec = ParseScenario(R"(
name: encode
cluster:
  nodes:
    - name: n1
      allocatable: {cpu: "4", memory: 8Gi}
  podGroups:
    - name: g
      minMember: 1
  pods:
    - name: a
      group: g
      task: worker
      duration: 30s
      requests: {cpu: "1500m"}
    - name: lone
      requests: {cpu: "1"}
)",
                            "encode.yaml");
  ASSERT_TRUE(spec.ok()) << spec.error().Format();
  EncodeOptions options;
  options.scheduler_name = "kiln-test";
  std::vector<json> items = EncodeCluster(spec->cluster, options);
  const json* pod = nullptr;
  int queues = 0, groups = 0;
  for (const json& item : items) {
    if (item["kind"] == "Pod" && item["metadata"]["name"] == "a") pod = &item;
    queues += item["kind"] == "Queue" ? 1 : 0;
    groups += item["kind"] == "PodGroup" ? 1 : 0;
  }
  EXPECT_EQ(queues, 0) << "the implicit `default` queue is the cluster's own";
  EXPECT_EQ(groups, 1) << "lone's one-pod PodGroup is the cluster's own";
  ASSERT_NE(pod, nullptr);
  const json& annotations = (*pod)["metadata"]["annotations"];
  EXPECT_EQ(annotations[std::string(kGroupNameAnnotation)], "g");
  EXPECT_EQ(annotations[std::string(kTaskSpecAnnotation)], "worker");
  EXPECT_EQ(annotations[std::string(kDurationAnnotation)], "30000ms");
  EXPECT_EQ((*pod)["spec"]["schedulerName"], "kiln-test");
  EXPECT_EQ((*pod)["spec"]["containers"][0]["image"], std::string(kDefaultImage));
  EXPECT_EQ((*pod)["spec"]["containers"][0]["resources"]["requests"]["cpu"], "1500m");
  // Decoding the manifest gives the pod back.
  auto decoded = DecodePod(*pod);
  ASSERT_TRUE(decoded.ok()) << decoded.error().Format();
  EXPECT_EQ(decoded->spec.group, "g");
  EXPECT_EQ(decoded->spec.task(), "worker");
  EXPECT_EQ(decoded->scheduler_name, "kiln-test");
}

}  // namespace
}  // namespace kiln::kube
