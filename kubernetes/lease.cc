#include "kubernetes/lease.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "kubernetes/client.h"
#include "kubernetes/decode.h"
#include "kubernetes/encode.h"
#include "runtime/quantity.h"

namespace kiln::kube {

using json = nlohmann::json;

namespace {

class KubeLeaseStore : public LeaseStore {
 public:
  KubeLeaseStore(std::shared_ptr<KubeClient> client, std::string ns, std::string name)
      : client_(std::move(client)), ns_(std::move(ns)), name_(std::move(name)) {}

  LeaseReply Get() override {
    return Reply(client_->Get(ItemPath()), "get");
  }
  LeaseReply Create(const LeaseRecord& record) override {
    return Reply(client_->Post(CollectionPath(), ToJson(record, false).dump()), "create");
  }
  LeaseReply Update(const LeaseRecord& record) override {
    return Reply(client_->Put(ItemPath(), ToJson(record, true).dump()), "update");
  }
  std::string Describe() const override { return ns_ + "/" + name_; }

 private:
  std::string CollectionPath() const {
    return fmt::format("/apis/coordination.k8s.io/v1/namespaces/{}/leases", ns_);
  }
  std::string ItemPath() const { return CollectionPath() + "/" + name_; }

  json ToJson(const LeaseRecord& r, bool with_version) const {
    json meta = {{"name", name_}, {"namespace", ns_}};
    if (with_version && !r.resource_version.empty()) meta["resourceVersion"] = r.resource_version;
    json spec = json::object();
    if (!r.holder_identity.empty()) spec["holderIdentity"] = r.holder_identity;
    if (r.lease_duration_seconds) spec["leaseDurationSeconds"] = r.lease_duration_seconds;
    // MicroTime: RFC 3339 with microseconds.
    auto micro = [](TimeNs t) { return FormatTimestamp(t / 1000 * 1000); };
    if (r.acquire_time) spec["acquireTime"] = micro(r.acquire_time);
    if (r.renew_time) spec["renewTime"] = micro(r.renew_time);
    spec["leaseTransitions"] = r.lease_transitions;
    return {{"apiVersion", "coordination.k8s.io/v1"}, {"kind", "Lease"}, {"metadata", meta}, {"spec", spec}};
  }

  LeaseReply Reply(const Result<Response>& r, std::string_view verb) const {
    LeaseReply reply;
    if (!r) {
      reply.message = fmt::format("{} lease {}: {}", verb, Describe(), r.error().message);
      return reply;
    }
    if (!r->ok()) {
      ApiStatus s = DecodeStatus(r->status, r->body);
      reply.code = s.code == 404   ? LeaseReply::Code::kNotFound
                   : s.code == 409 ? LeaseReply::Code::kConflict
                                   : LeaseReply::Code::kError;
      reply.message = fmt::format("{} lease {}: {}", verb, Describe(), kube::Describe(s));
      return reply;
    }
    json obj = json::parse(r->body, nullptr, false);
    if (obj.is_discarded() || !obj.is_object()) {
      reply.message = fmt::format("{} lease {}: the answer is not a JSON object", verb, Describe());
      return reply;
    }
    const json meta = obj.value("metadata", json::object());
    const json spec = obj.value("spec", json::object());
    LeaseRecord& rec = reply.record;
    rec.resource_version = meta.value("resourceVersion", "");
    auto str = [&](const char* k) {
      auto it = spec.find(k);
      return it != spec.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    auto num = [&](const char* k) {
      auto it = spec.find(k);
      return it != spec.end() && it->is_number_integer() ? it->get<int32_t>() : 0;
    };
    auto time = [&](const char* k) -> TimeNs {
      std::string s = str(k);
      if (s.empty()) return 0;
      auto t = ParseTimestamp(s);
      return t ? *t : 0;
    };
    rec.holder_identity = str("holderIdentity");
    rec.lease_duration_seconds = num("leaseDurationSeconds");
    rec.acquire_time = time("acquireTime");
    rec.renew_time = time("renewTime");
    rec.lease_transitions = num("leaseTransitions");
    reply.code = LeaseReply::Code::kOk;
    return reply;
  }

  std::shared_ptr<KubeClient> client_;
  std::string ns_, name_;
};

}  // namespace

std::unique_ptr<LeaseStore> NewKubeLeaseStore(std::shared_ptr<KubeClient> client, std::string namespace_,
                                              std::string name) {
  return std::make_unique<KubeLeaseStore>(std::move(client), std::move(namespace_), std::move(name));
}

}  // namespace kiln::kube
