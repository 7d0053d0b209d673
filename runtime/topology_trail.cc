// allocate's HyperNode search, kept for the unschedulable reason and `kiln explain`
// (topology_trail.h).

#include "runtime/topology_trail.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "runtime/explain.h"
#include "runtime/hyper_node.h"
#include "runtime/session.h"

namespace kiln {

namespace {

const char* TryReasonText(uint8_t r) {
  switch (r) {
    case 1: return "tier above highestTierAllowed";
    case 2: return "not enough resources";
    case 3: return "outside the domain the job already runs in";
    case 4: return "gang not satisfiable inside it";
    case 5: return "nominated by gang eviction";
  }
  return "";
}

// The stable code of each reason above (docs/reasons.md).
const char* TryReasonCode(uint8_t r) {
  switch (r) {
    case 1: return "TopologyTierNotAllowed";
    case 2: return "TopologyInsufficientResource";
    case 3: return "TopologyOutsideDomain";
    case 4: return "TopologyGangNotSatisfiable";
    case 5: return "TopologyNominated";
  }
  return "";
}

}  // namespace

void TopologyTrail::Begin(const Job* job) {
  job_ = job;
  entries_.clear();
}

TopologyTrail::Checkpoint TopologyTrail::Save() const {
  Checkpoint c;
  c.entries_ = entries_;
  return c;
}

void TopologyTrail::Restore(Checkpoint checkpoint) { entries_ = std::move(checkpoint.entries_); }

TopologyTrail::Entry* TopologyTrail::Find(const HyperNode* hn, const HyperNode* within) {
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it)
    if (it->hn == hn && it->within == within) return &*it;
  return nullptr;
}

void TopologyTrail::Gradient(std::span<HyperNode* const> candidates,
                             std::span<HyperNode* const> kept, const HyperNode* within) {
  if (job_ == nullptr) return;
  const HyperNode* placed =
      within != nullptr ? job_->sub_job_allocated_hyper_node : job_->allocated_hyper_node;
  size_t k = 0;  // kept is a subsequence of candidates
  for (const HyperNode* hn : candidates) {
    if (k < kept.size() && kept[k] == hn) {
      ++k;
      entries_.push_back({hn, within, Outcome::Kept, Reason::None, false, 0});
      continue;
    }
    Reason why = hn->tier > job_->highest_tier_allowed ? Reason::Tier
                 : placed != nullptr                   ? Reason::Outside
                                                       : Reason::Resources;
    entries_.push_back({hn, within, Outcome::Rejected, why, false, 0});
  }
}

void TopologyTrail::Tried(const HyperNode* hn, const HyperNode* within, bool solution,
                          double score) {
  if (job_ == nullptr) return;
  Entry* e = Find(hn, within);
  if (e == nullptr || e->outcome != Outcome::Kept) {
    entries_.push_back({hn, within, Outcome::Kept, Reason::None, false, 0});
    e = &entries_.back();
  }
  e->outcome = solution ? Outcome::Solution : Outcome::NoSolution;
  if (solution && within == nullptr) {
    e->scored = true;
    e->score = score;
  }
}

void TopologyTrail::Scored(std::span<HyperNode* const> placed, std::span<const double> scores,
                           size_t best, const HyperNode* within) {
  if (job_ == nullptr) return;
  for (size_t i = 0; i < placed.size() && i < scores.size(); ++i) {
    Entry* e = Find(placed[i], within);
    if (e == nullptr) continue;
    e->scored = true;
    e->score = scores[i];
    if (i == best) e->outcome = Outcome::Chosen;
  }
}

void TopologyTrail::Nominated(const HyperNode* hn, const HyperNode* within) {
  if (job_ == nullptr || hn == nullptr) return;
  entries_.push_back({hn, within, Outcome::Chosen, Reason::Nominated, false, 0});
}

void TopologyTrail::Chosen(const HyperNode* hn, double score) {
  if (job_ == nullptr) return;
  if (Entry* e = Find(hn, nullptr)) {
    e->outcome = Outcome::Chosen;
    e->scored = true;
    e->score = score;
  }
}

std::string TopologyTrail::Summary(const Job* job) const {
  // Job-level HyperNodes by reason, each reason in the order first met.
  std::vector<std::pair<uint8_t, std::vector<std::string>>> groups;
  for (const Entry& e : entries_) {
    if (e.within != nullptr) continue;
    uint8_t r = 0;
    if (e.outcome == Outcome::Rejected) r = static_cast<uint8_t>(e.reason);
    else if (e.outcome == Outcome::NoSolution) r = 4;
    else continue;
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == r; });
    if (it == groups.end()) {
      groups.push_back({r, {}});
      it = groups.end() - 1;
    }
    it->second.push_back(e.hn->name);
  }
  const bool soft = job->network_topology &&
                    job->network_topology->mode == NetworkTopologyMode::Soft;
  std::string out = fmt::format("Network topology ({}, highestTierAllowed {}): ",
                                soft ? "soft" : "hard", job->highest_tier_allowed);
  if (groups.empty()) return out + "no HyperNode could hold the gang";
  out += "no HyperNode could hold the gang: ";
  for (size_t g = 0; g < groups.size(); ++g)
    out += fmt::format("{}{} ({})", g ? "; " : "", fmt::join(groups[g].second, ", "),
                       TryReasonText(groups[g].first));
  return out;
}

void TopologyTrail::End(Job* job, bool placed) {
  if (job_ != job) return;
  job->topology_reason = placed ? std::string() : Summary(job);
  if (ExplainRecorder* r = ssn_.explain()) {
    TopologyExplain t;
    const bool soft = job->network_topology &&
                      job->network_topology->mode == NetworkTopologyMode::Soft;
    t.mode = soft ? "soft" : "hard";
    t.highest_tier_allowed = job->highest_tier_allowed;
    for (const Entry& e : entries_) {
      HyperNodeTry h;
      h.hyper_node = e.hn->name;
      h.tier = e.hn->tier;
      h.level = e.within == nullptr ? "job" : "subJob";
      if (e.within != nullptr) h.within = e.within->name;
      switch (e.outcome) {
        case Outcome::Kept: h.outcome = "notTried"; break;
        case Outcome::Rejected:
          h.outcome = "rejected";
          h.reason = TryReasonText(static_cast<uint8_t>(e.reason));
          h.reason_code = TryReasonCode(static_cast<uint8_t>(e.reason));
          break;
        case Outcome::NoSolution:
          h.outcome = "rejected";
          h.reason = TryReasonText(4);
          h.reason_code = TryReasonCode(4);
          break;
        case Outcome::Solution: h.outcome = "solution"; break;
        case Outcome::Chosen:
          h.outcome = "chosen";
          if (e.reason == Reason::Nominated) {
            h.reason = TryReasonText(5);
            h.reason_code = TryReasonCode(5);
          }
          break;
      }
      if (e.scored) h.score = e.score;
      if (e.within == nullptr && e.outcome == Outcome::Chosen && placed) {
        t.chosen = h.hyper_node;
        t.chosen_score = e.score;
      }
      t.tries.push_back(std::move(h));
    }
    r->RecordTopology(job->uid, std::move(t));
  }
  job_ = nullptr;
  entries_.clear();
}

}  // namespace kiln
