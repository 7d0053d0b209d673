#pragma once
// The session model built in two steps (BuildCluster, runtime/cluster_spec.h, takes both at once),
// so that the costly part, one Task per pod of a large cluster, can be done ahead of time and a
// few more PodGroups and pods added before the model is linked. `POST /whatif` prepares one on the
// snapshot thread and adds only the request's job to it (server/offpath_snapshot.h).
//
//   PartialCluster part(spec);                         // every object of `spec`, not linked
//   Result<Cluster> c = std::move(part).Finish(groups, pods);
//
// gives exactly the model BuildCluster gives for `spec` with `groups` and `pods` added where the
// off-path sessions add them (server/offpath_snapshot.h, OffPathExtension): a PodGroup that is not
// `implicit` after the spec's PodGroups that are not, an implicit one after the spec's implicit
// ones, the pods after the spec's pods. BuildCluster(spec) is PartialCluster(spec).Finish({}, {}).

#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "runtime/cluster_spec.h"
#include "runtime/model.h"
#include "runtime/name_table.h"

namespace kiln {

class PartialCluster {
 public:
  // `cluster` as CompleteCluster leaves it.
  explicit PartialCluster(const ClusterSpec& cluster);
  PartialCluster(PartialCluster&&) = default;
  PartialCluster& operator=(PartialCluster&&) = default;

  // Whether Finish gives what BuildCluster would with `groups` added. Not when one of them is a
  // PodGroup that pods of the spec name while the spec lacks it: those pods would join it, and
  // the ones on no node are not in the partial model at all.
  bool CanAdd(const std::vector<PodGroupSpec>& groups) const;

  // Adds the objects (completed as CompleteCluster completes them), links and returns the model;
  // the partial model is used up. Errors: BuildCluster's (a duplicate name, a task naming no
  // job, ...), and !CanAdd(groups).
  Result<Cluster> Finish(const std::vector<PodGroupSpec>& groups,
                         const std::vector<PodSpec>& pods) &&;

 private:
  void AddTask(const PodSpec& pod);
  // The pod's PodShape: the previous pod's when it has the same labels, annotations, image,
  // limits and placement (a job's pods, next to each other in the spec, mostly do), else a new
  // one. Shapes are read-only and copied on write, so sharing one changes nothing else.
  std::shared_ptr<const PodShape> ShapeFor(const PodSpec& pod);

  // The classes, queues, nodes, PDBs, quotas, the jobs of the PodGroups before the first
  // implicit one, and every pod's task.
  Cluster cluster_;
  // The jobs BuildCluster makes after those, in its order: the implicit PodGroups' (the first
  // `made_jobs_`), then one per missing PodGroup (and one for other schedulers' pods) that pods
  // on nodes hang off (Link drops them: they have no queue).
  std::vector<Job> later_jobs_;
  size_t made_jobs_ = 0;
  std::unordered_set<std::string> groups_;          // the spec's PodGroup uids
  NameTable nodes_;                                 // the spec's node names
  std::unordered_set<std::string> missing_groups_;  // PodGroups pods name and the spec lacks
  std::unordered_set<std::string> dropped_jobs_;    // uids of the dropped jobs in later_jobs_
  // One resreq per request shape, shared by the tasks that have it (Task::resreq_), and the
  // last one AddTask used.
  std::unordered_map<Resource, std::shared_ptr<const Resource>, ResourceHash> resreqs_;
  std::shared_ptr<const Resource> last_resreq_;
  // The PodGroup of the last pod AddTask saw that is not another scheduler's: its uid and
  // whether the spec lacks it.
  struct LastJob {
    bool known = false;
    std::string namespace_, group, uid;
    bool no_group = false;
  } last_job_;
  // The last shape ShapeFor made, and the placement and extras of the last pod that got it
  // (compared by address only: the spec, which owns them, outlives the build).
  std::shared_ptr<const PodShape> last_shape_;
  const PodPlacement* last_placement_ = nullptr;
  const PodExtras* last_extras_ = nullptr;
  // Applied after Link: each node's Numatopology (by name, in the spec's order), the HyperNodes.
  std::vector<std::pair<std::string, std::shared_ptr<const NumaTopology>>> numa_;
  std::vector<HyperNodeSpec> hyper_nodes_;
};

}  // namespace kiln
