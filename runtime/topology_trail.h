#pragma once
// What allocate's HyperNode search (runtime/actions/allocate.cc, T2-T5) did for one job with a
// network topology: which HyperNodes each gradient offered and kept, which dry runs placed the
// job or its sub-job, which one was chosen and with what score.
//
// The trail is kept for every such job whether or not anyone explains the session, because it
// also words the unschedulable reason: when the search leaves the job unplaced, End() sets
// Job::topology_reason ("Network topology (hard, highestTierAllowed 1): no HyperNode could hold
// the gang: s0, s1 (gang not satisfiable inside it); s2, <cluster-top-hypernode> (tier above
// highestTierAllowed)"), which the job's FitError and its pending pods' messages end with. With
// an ExplainRecorder attached, End() also hands the whole trail to `kiln explain` (explain.h:
// TopologyExplain). The cost is a few pointers per HyperNode considered.
//
// Why a HyperNode the gradient did not keep was rejected is read from the job: a tier above its
// highestTierAllowed; otherwise, when the job (or its sub-job) already runs under some
// HyperNode, outside the domain that allows; otherwise not enough resources (what the
// network-topology-aware policy checks). A HyperNode kept but never searched (a lower tier had a
// solution) is "notTried".

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace kiln {

class Session;
struct Job;
struct HyperNode;

class TopologyTrail {
 public:
  explicit TopologyTrail(Session& ssn) : ssn_(ssn) {}

  // A search for `job` begins; what an earlier search recorded is forgotten.
  void Begin(const Job* job);
  // A gradient point kept `kept` of `candidates`. within: null for the job's gradients (T2),
  // the job-level HyperNode for its sub-job's (T4).
  void Gradient(std::span<HyperNode* const> candidates, std::span<HyperNode* const> kept,
                const HyperNode* within);
  // A dry run under `hn` placed the job / sub-job (`solution`) or not. score: the job's Σ of
  // sub-job scores (job level); sub-job scores come with Scored.
  void Tried(const HyperNode* hn, const HyperNode* within, bool solution, double score = 0);
  // The sub-job solutions of one gradient under `within`, their hyper_node_order scores, and
  // the index of the one taken.
  void Scored(std::span<HyperNode* const> placed, std::span<const double> scores, size_t best,
              const HyperNode* within);
  // A sub-job placed on the HyperNode a gang eviction nominated for it (allocate's N1), without
  // a gradient search.
  void Nominated(const HyperNode* hn, const HyperNode* within);
  // The job-level solution taken.
  void Chosen(const HyperNode* hn, double score);
  // The search is over. placed: allocate kept a statement for the job (ready or pipelined).
  void End(Job* job, bool placed);

 private:
  enum class Outcome : uint8_t { Kept, Rejected, NoSolution, Solution, Chosen };
  enum class Reason : uint8_t { None, Tier, Resources, Outside, NoGang, Nominated };
  struct Entry {
    const HyperNode* hn;
    const HyperNode* within;
    Outcome outcome;
    Reason reason;
    bool scored;
    double score;
  };
  Entry* Find(const HyperNode* hn, const HyperNode* within);
  std::string Summary(const Job* job) const;

  Session& ssn_;
  const Job* job_ = nullptr;
  std::vector<Entry> entries_;

 public:
  // What the trail holds now, to go back to: allocate's best-first search (T3) repeats a dry run
  // only for its side effects, or gives up and tries every HyperNode in order.
  class Checkpoint {
    friend class TopologyTrail;
    std::vector<Entry> entries_;
  };
  Checkpoint Save() const;
  void Restore(Checkpoint checkpoint);
};

}  // namespace kiln
