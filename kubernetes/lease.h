#pragma once
// The Lease a leader-election loop holds (coordination.k8s.io/v1), as a small store interface:
// read it, create it, or update it under a resourceVersion precondition. The elector
// (server/leader_election.*) decides when to acquire, renew or give up; this file only moves
// the record to and from the API server, so the elector can be tested against a fake store.
//
// Times are wall-clock nanoseconds since the Unix epoch (Lease's MicroTime keeps microseconds,
// so a read-back time is truncated to whole microseconds).

#include <cstdint>
#include <memory>
#include <string>

#include "runtime/model.h"

namespace kiln::kube {

class KubeClient;

// spec of a coordination.k8s.io/v1 Lease plus the resourceVersion it was read at.
struct LeaseRecord {
  std::string holder_identity;       // "" = released
  int32_t lease_duration_seconds = 0;
  TimeNs acquire_time = 0;           // 0 = unset
  TimeNs renew_time = 0;             // 0 = unset
  int32_t lease_transitions = 0;
  // Set by the store on every record it returns; Update sends it as the precondition.
  std::string resource_version;
};

struct LeaseReply {
  enum class Code {
    kOk,        // `record` is the lease as the server now stores it
    kNotFound,  // Get: no such lease (create it)
    kConflict,  // Create: it exists already; Update: resourceVersion stale (re-read it)
    kError,     // network or server error (`message` says what); retry later
  };
  Code code = Code::kError;
  LeaseRecord record;
  std::string message;

  bool ok() const { return code == Code::kOk; }
};

class LeaseStore {
 public:
  virtual ~LeaseStore() = default;
  virtual LeaseReply Get() = 0;
  virtual LeaseReply Create(const LeaseRecord& record) = 0;
  // PUT with record.resource_version as the precondition.
  virtual LeaseReply Update(const LeaseRecord& record) = 0;
  // "<namespace>/<name>" for logs.
  virtual std::string Describe() const = 0;
};

// The Lease `namespace_/name` on the API server `client` talks to. Each call is one request
// (bounded by the client's request timeout); the store keeps no state between calls.
std::unique_ptr<LeaseStore> NewKubeLeaseStore(std::shared_ptr<KubeClient> client,
                                              std::string namespace_, std::string name);

}  // namespace kiln::kube
