// `kiln explain SCENARIO [--conf F] [--policy-dir D]... [--pod ns/name]... [--at-open]
//                        [--output table|json|html]`
//
// Says, for each pending pod, what every plugin said about every node (scenario-format.md,
// "Explaining a session"). Default: runs the first session as `kiln simulate` does and shows each
// pod an action considered, as it stood when the pod was placed or given up, with the outcome.
// --at-open: opens the session and evaluates every pending pod with no action run.
//
// Exit codes: 0 ok, 2 bad input.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/commands.h"
#include "cli/errors.h"
#include "cli/json_util.h"
#include "cli/shared_options.h"
#include "runtime/explain.h"
#include "runtime/quantity.h"
#include "simulator/explain_scenario.h"
#include "simulator/scenario.h"
#include "simulator/simulator.h"

namespace kiln::cli {

namespace {

using Json = nlohmann::ordered_json;

struct ExplainOptions {
  std::string file;
  PolicyOptions policy;  // --conf, --policy-dir, ...
  std::vector<std::string> pods;
  bool at_open = false;
  std::string output = "table";
};

// ---- quantities for people ------------------------------------------------------------------

std::string ResourceText(const Resource& r) {
  std::vector<std::string> parts;
  ForEachBit(r.present, [&](ResourceId id) {
    std::string_view name = ResourceRegistry::Name(id);
    parts.push_back(fmt::format("{}: {}", name, FormatResourceQuantity(name, r.values[id])));
  });
  return parts.empty() ? "{}" : "{" + fmt::format("{}", fmt::join(parts, ", ")) + "}";
}

std::string Num(double x) {
  if (std::fabs(x - std::round(x)) < 1e-9 && std::fabs(x) < 1e15)
    return fmt::format("{}", static_cast<int64_t>(std::round(x)));
  return fmt::format("{:.4g}", x);
}

// A plugin's figures for a queue, each as "name value" (a resource vector or a number).
std::vector<std::string> FigureTexts(const std::vector<Figure>& figures) {
  std::vector<std::string> parts;
  for (const Figure& f : figures) {
    if (const Resource* r = std::get_if<Resource>(&f.value))
      parts.push_back(fmt::format("{} {}", f.name, ResourceText(*r)));
    else
      parts.push_back(fmt::format("{} {}", f.name, Num(std::get<double>(f.value))));
  }
  return parts;
}

// " [CodeA, CodeB]" after a reason text, for people: the codes docs/reasons.md lists.
std::string CodesSuffix(const std::vector<std::string>& codes) {
  if (codes.empty()) return "";
  return fmt::format(" [{}]", fmt::join(codes, ", "));
}
std::string CodeSuffix(const std::string& code) { return code.empty() ? "" : " [" + code + "]"; }

// ---- JSON -----------------------------------------------------------------------------------

Json NodeJson(const NodeExplain& n) {
  Json j;
  j["status"] = std::string(ToString(n.code));
  j["reason"] = n.reason;
  // The stable codes of the reasons (docs/reasons.md); "code" is the status, kept as it was.
  if (!n.codes.empty()) j["reasonCodes"] = n.codes;
  Json preds = Json::array();
  for (const PluginAnswer& a : n.predicates) {
    Json p{{"plugin", a.plugin}, {"code", std::string(ToString(a.code))}, {"reason", a.reason}};
    if (!a.codes.empty()) p["reasonCodes"] = a.codes;
    preds.push_back(std::move(p));
  }
  j["predicates"] = std::move(preds);
  if (n.scored) {
    Json scores = Json::object();
    for (const auto& [plugin, s] : n.scores) scores[plugin] = s;
    j["scores"] = std::move(scores);
    j["nodeOrder"] = n.node_order;
    Json batch = Json::object();
    for (const auto& [plugin, s] : n.batch_scores) batch[plugin] = s;
    j["batchScores"] = std::move(batch);
    j["total"] = n.total;
    if (!n.score_error.empty()) j["scoreError"] = n.score_error;
  }
  // Kiln extensions: the action's own resource check.
  j["fits"] = n.fits;
  if (!n.insufficient.empty()) {
    j["insufficient"] = n.insufficient;
    j["insufficientCode"] = "InsufficientResource";
  }
  return j;
}

Json TaskJson(const TaskExplain& t) {
  Json j;
  if (!t.action.empty()) j["action"] = t.action;
  if (!t.result_kind.empty()) j["result"] = Json{{t.result_kind, t.result_value}};
  if (!t.result_codes.empty()) j["resultReasonCodes"] = t.result_codes;
  j["job"] = t.job;
  if (!t.note.empty()) j["note"] = t.note;
  if (!t.note_code.empty()) j["noteCode"] = t.note_code;
  if (t.pre_predicate) {
    j["prePredicate"] = Json{{"plugin", t.pre_predicate->plugin},
                             {"code", std::string(ToString(t.pre_predicate->code))},
                             {"reason", t.pre_predicate->reason}};
    if (!t.pre_predicate->codes.empty())
      j["prePredicate"]["reasonCodes"] = t.pre_predicate->codes;
  }
  // Node names are distinct: appending keeps a pod on many nodes linear.
  j["nodes"] = ObjectOfDistinctKeys(t.nodes, [](const NodeExplain& n) {
    return std::pair(n.node, NodeJson(n));
  });
  return j;
}

// A job's HyperNode search (explain.h TopologyExplain).
Json TopologyJson(const TopologyExplain& t) {
  Json o{{"mode", t.mode}, {"highestTierAllowed", t.highest_tier_allowed}};
  if (!t.chosen.empty()) {
    o["chosen"] = t.chosen;
    if (t.chosen_score) o["chosenScore"] = *t.chosen_score;
  }
  if (!t.allocated_hyper_node.empty()) o["allocatedHyperNode"] = t.allocated_hyper_node;
  Json tries = Json::array();
  for (const HyperNodeTry& h : t.tries) {
    Json e{{"hyperNode", h.hyper_node}, {"tier", h.tier}, {"level", h.level}};
    if (!h.within.empty()) e["within"] = h.within;
    e["outcome"] = h.outcome;
    if (!h.reason.empty()) e["reason"] = h.reason;
    if (!h.reason_code.empty()) e["reasonCode"] = h.reason_code;
    if (h.score) e["score"] = *h.score;
    tries.push_back(std::move(e));
  }
  o["hyperNodes"] = std::move(tries);
  return o;
}

// One line per HyperNode tried, for people: "tier 1  s0  rejected: not enough resources".
std::vector<std::string> TopologyLines(const TopologyExplain& t) {
  std::vector<std::string> out;
  out.push_back(fmt::format("network topology: {}, highestTierAllowed {}{}{}", t.mode,
                            t.highest_tier_allowed,
                            t.chosen.empty() ? std::string(", no HyperNode chosen")
                                             : fmt::format(", chosen {} (score {})", t.chosen,
                                                           Num(t.chosen_score.value_or(0))),
                            t.allocated_hyper_node.empty()
                                ? std::string()
                                : ", allocated HyperNode " + t.allocated_hyper_node));
  for (const HyperNodeTry& h : t.tries) {
    std::string what = h.outcome;
    if (!h.reason.empty()) what += ": " + h.reason + CodeSuffix(h.reason_code);
    if (h.score) what += fmt::format(" (score {})", Num(*h.score));
    out.push_back(fmt::format("{}tier {}  {}  {}",
                              h.level == "job" ? "" : "  sub-job in " + h.within + ": ", h.tier,
                              h.hyper_node, what));
  }
  return out;
}

// What gangpreempt/gangreclaim did for a job (explain.h GangEvictionExplain).
Json GangEvictionJson(const GangEvictionExplain& g) {
  Json o{{"action", g.action}, {"need", g.need}, {"committed", g.committed}};
  Json domains = Json::array();
  for (const EvictionDomainTry& d : g.domains) {
    Json e{{"hyperNode", d.hyper_node.empty() ? std::string("(whole cluster)") : d.hyper_node},
           {"tier", d.tier},
           {"outcome", d.outcome}};
    if (!d.reason.empty()) e["reason"] = d.reason;
    if (!d.reason_code.empty()) e["reasonCode"] = d.reason_code;
    if (!d.detail.empty()) e["detail"] = d.detail;
    if (!d.bundles.empty()) e["bundles"] = d.bundles;
    if (!d.victims.empty()) e["victims"] = d.victims;
    if (!d.placed.empty()) {
      Json placed = Json::object();
      for (const auto& [part, hn] : d.placed) placed[part] = hn;
      e["placed"] = std::move(placed);
    }
    domains.push_back(std::move(e));
  }
  o["domains"] = std::move(domains);
  return o;
}

// For people: a header line, then per domain one line and its bundles, victims and placements.
std::vector<std::string> GangEvictionLines(const GangEvictionExplain& g) {
  std::vector<std::string> out;
  out.push_back(fmt::format("{}: need {}, {}", g.action, g.need,
                            g.committed ? "plan committed" : "no plan committed"));
  for (const EvictionDomainTry& d : g.domains) {
    std::string name = d.hyper_node.empty() ? "(whole cluster)"
                                            : fmt::format("tier {}  {}", d.tier, d.hyper_node);
    std::string what = d.outcome;
    if (!d.reason.empty()) what += ": " + d.reason;
    if (!d.detail.empty()) what += " (" + d.detail + ")";
    what += CodeSuffix(d.reason_code);
    out.push_back(fmt::format("domain {}  {}", name, what));
    for (const std::string& b : d.bundles) out.push_back("  bundle " + b);
    if (!d.victims.empty()) out.push_back(fmt::format("  victims {}", fmt::join(d.victims, ", ")));
    for (const auto& [part, hn] : d.placed)
      out.push_back(fmt::format("  placed {} in {} (nominated)", part, hn));
  }
  return out;
}

// The same document as one nlohmann dump(2) of the whole, written pod by pod: the whole document
// of a large scenario (pods × nodes answers) would need many times the memory of its text.
void WriteExplainJson(std::FILE* out, const std::string& scenario, const Explanation& e) {
  auto put = [out](const std::string& s) { std::fwrite(s.data(), 1, s.size(), out); };
  put("{\n  \"scenario\": " + Json(scenario).dump() + ",\n  \"mode\": " +
      Json(e.at_open ? "atOpen" : "session").dump() + ",\n  \"tasks\": ");
  if (e.tasks.empty()) {
    put("{}");
  } else {
    put("{\n");
    for (size_t i = 0; i < e.tasks.size(); ++i) {
      TaskExplain t = e.tasks[i];
      put("    " + Json(t.key).dump() + ": " + Nested(TaskJson(t), 2) +
          (i + 1 < e.tasks.size() ? ",\n" : "\n"));
    }
    put("  }");
  }
  Json doc;
  Json jobs = Json::object();
  for (const JobExplain& j : e.jobs) {
    Json o{{"queue", j.queue}, {"ready", j.ready}, {"pipelined", j.pipelined}, {"valid", j.valid}};
    if (!j.valid) {
      o["invalidReason"] = j.invalid_reason;
      o["invalidReasonCode"] = j.invalid_code;
    }
    if (j.admission)
      o["admission"] = Json{{"admitted", false},
                            {"plugin", j.admission->plugin},
                            {"code", j.admission->code},
                            {"message", j.admission->message}};
    o["starving"] = j.starving;
    o["order"] = j.order;
    o["phase"] = j.phase;
    if (j.topology) o["topology"] = TopologyJson(*j.topology);
    if (j.gang_eviction) o["gangEviction"] = GangEvictionJson(*j.gang_eviction);
    jobs[j.uid] = std::move(o);
  }
  doc["jobs"] = std::move(jobs);
  Json queues = Json::object();
  for (const QueueExplain& q : e.queues) {
    Json plugins = Json::object();
    for (const auto& [plugin, figures] : q.plugins) {
      Json f = Json::object();
      for (const Figure& fig : figures) {
        if (const Resource* r = std::get_if<Resource>(&fig.value))
          f[fig.name] = ResourceJson(*r, /*with_pods=*/true);
        else
          f[fig.name] = std::get<double>(fig.value);
      }
      plugins[plugin] = std::move(f);
    }
    queues[q.name] = Json{{"overused", q.overused}, {"order", q.order}, {"plugins", std::move(plugins)}};
  }
  doc["queues"] = std::move(queues);
  put(",\n  \"jobs\": " + Nested(doc["jobs"], 1) + ",\n  \"queues\": " + Nested(doc["queues"], 1) +
      "\n}\n");
}

// ---- shared by the table and the page -------------------------------------------------------

// One pod's nodes for people: the candidates ranked by total (ties in node order), the plugin
// columns, and the rejected nodes grouped by reason.
struct PodView {
  std::vector<const NodeExplain*> ranked;
  std::vector<std::string> score_plugins;  // node_order plugins, in plugin order
  std::vector<std::string> batch_plugins;
  std::vector<std::pair<std::string, std::vector<std::string>>> rejected;  // reason → nodes
};

PodView ViewOf(const TaskExplain& t) {
  PodView v;
  std::map<std::string, size_t> group_of;
  auto reject = [&](std::string reason, const std::string& node) {
    auto [it, inserted] = group_of.emplace(reason, v.rejected.size());
    if (inserted) v.rejected.emplace_back(std::move(reason), std::vector<std::string>{});
    v.rejected[it->second].second.push_back(node);
  };
  auto add_plugin = [](std::vector<std::string>& list, const std::string& p) {
    if (std::find(list.begin(), list.end(), p) == list.end()) list.push_back(p);
  };
  for (const NodeExplain& n : t.nodes) {
    if (n.code != StatusCode::Success) {
      std::string who;
      for (const PluginAnswer& a : n.predicates)
        if (a.code == n.code && a.reason == n.reason) {
          who = a.plugin;
          break;
        }
      reject(fmt::format("{}{}: {}{}", ToString(n.code), who.empty() ? "" : " (" + who + ")",
                         n.reason.empty() ? "(no reason given)" : n.reason, CodesSuffix(n.codes)),
             n.node);
      continue;
    }
    if (n.fits == "none") {
      reject(fmt::format("Insufficient {} [InsufficientResource]", fmt::join(n.insufficient, ", ")),
             n.node);
      continue;
    }
    for (const auto& [p, s] : n.scores) add_plugin(v.score_plugins, p);
    for (const auto& [p, s] : n.batch_scores) add_plugin(v.batch_plugins, p);
    v.ranked.push_back(&n);
  }
  std::stable_sort(v.ranked.begin(), v.ranked.end(),
                   [](const NodeExplain* a, const NodeExplain* b) { return a->total > b->total; });
  return v;
}

double ScoreOf(const std::vector<std::pair<std::string, double>>& scores, const std::string& p,
               bool* present) {
  for (const auto& [name, s] : scores)
    if (name == p) {
      *present = true;
      return s;
    }
  *present = false;
  return 0;
}

// Why enqueue left the PodGroup Pending, for people.
std::string AdmissionText(const AdmissionRefusal& a) {
  return fmt::format("not admitted by enqueue: {} refused it: {} [{}]",
                     a.plugin.empty() ? "(no plugin)" : a.plugin, a.message, a.code);
}

std::string ResultText(const TaskExplain& t) {
  if (t.result_kind.empty()) return "";
  if (t.result_kind == "unschedulable")
    return "unschedulable: " + t.result_value + CodesSuffix(t.result_codes);
  return t.result_kind + " on " + t.result_value;
}

// ---- table ----------------------------------------------------------------------------------

struct Style {
  bool on = false;
  std::string operator()(std::string_view code, std::string_view text) const {
    if (!on) return std::string(text);
    return fmt::format("\033[{}m{}\033[0m", code, text);
  }
};

std::string Pad(std::string_view s, size_t width, bool right = false) {
  std::string out(s);
  if (out.size() >= width) return out;
  std::string pad(width - out.size(), ' ');
  return right ? pad + out : out + pad;
}

std::string FormatExplainTable(const std::string& scenario, const Explanation& e, Style style) {
  std::string out = fmt::format("{} {}\n", style("1", "scenario"), scenario);
  out += e.at_open ? "every pending pod at session open (no action run)\n"
                   : "each pod as the session's actions saw it when they placed it or gave it up\n";
  if (e.tasks.empty()) out += "\nno pending pod was considered\n";
  for (const TaskExplain& t : e.tasks) {
    PodView v = ViewOf(t);
    out += "\n" + style("1", fmt::format("pod {}", t.key));
    if (!t.job.empty()) out += fmt::format("  job {}", t.job);
    if (!t.action.empty()) out += fmt::format("  ({})", t.action);
    out += "\n";
    if (!t.result_kind.empty()) {
      const char* colour = t.result_kind == "bound" ? "32" : t.result_kind == "pipelined" ? "33" : "31";
      out += "  result: " + style(colour, ResultText(t)) + "\n";
    }
    if (!t.note.empty()) out += fmt::format("  note: {}{}\n", t.note, CodeSuffix(t.note_code));
    if (t.pre_predicate)
      out += "  " + style("31", fmt::format("pre_predicate ({}): {}: {}{}", t.pre_predicate->plugin,
                                            ToString(t.pre_predicate->code),
                                            t.pre_predicate->reason,
                                            CodesSuffix(t.pre_predicate->codes))) +
             "\n";
    if (!v.ranked.empty()) {
      // "sum of scores" is the node_order sum (JSON `nodeOrder`); the columns after it are each
      // plugin's own score, the nodeorder plugin's among them.
      std::vector<std::string> header{"node", "total", "sum of scores"};
      for (const auto& p : v.score_plugins) header.push_back(p);
      for (const auto& p : v.batch_plugins) header.push_back(p + " (batch)");
      header.push_back("fits");
      std::vector<std::vector<std::string>> rows;
      for (const NodeExplain* n : v.ranked) {
        std::vector<std::string> row{n->node, Num(n->total), Num(n->node_order)};
        for (const auto& p : v.score_plugins) {
          bool present = false;
          double s = ScoreOf(n->scores, p, &present);
          row.push_back(present ? Num(s) : "-");
        }
        for (const auto& p : v.batch_plugins) {
          bool present = false;
          double s = ScoreOf(n->batch_scores, p, &present);
          row.push_back(present ? Num(s) : "-");
        }
        row.push_back(n->fits);
        rows.push_back(std::move(row));
      }
      std::vector<size_t> width(header.size());
      for (size_t c = 0; c < header.size(); ++c) {
        width[c] = header[c].size();
        for (const auto& row : rows) width[c] = std::max(width[c], row[c].size());
      }
      auto format_row = [&](const std::vector<std::string>& cells) {
        std::string line;
        for (size_t c = 0; c < cells.size(); ++c) {
          // The last column (fits) is left-aligned and needs no padding after it.
          line += "  " + (c + 1 == cells.size() ? cells[c] : Pad(cells[c], width[c], c > 0));
        }
        return line;
      };
      out += style("1", format_row(header)) + "\n";
      for (size_t r = 0; r < rows.size(); ++r) {
        std::string line = format_row(rows[r]);
        bool chosen = (t.result_kind == "bound" || t.result_kind == "pipelined") &&
                      v.ranked[r]->node == t.result_value;
        out += (chosen ? style("32", line) : line) + "\n";
      }
    } else {
      out += "  no node can take it\n";
    }
    if (!v.rejected.empty()) {
      out += "  rejected:\n";
      for (const auto& [reason, nodes] : v.rejected)
        out += "    " + style("31", reason) + fmt::format(" — {} node(s): {}\n", nodes.size(),
                                                        fmt::join(nodes, ", "));
    }
  }
  if (!e.jobs.empty()) {
    out += "\n" + style("1", "jobs") + "\n";
    for (const JobExplain& j : e.jobs) {
      out += fmt::format("  {}  queue {}  order {}  phase {}  ready {}  pipelined {}  valid {}{}  starving {}\n",
                         j.uid, j.queue, j.order, j.phase, j.ready, j.pipelined, j.valid,
                         j.valid ? "" : " (" + j.invalid_reason + CodeSuffix(j.invalid_code) + ")",
                         j.starving);
      if (j.admission)
        out += "    " + style("31", AdmissionText(*j.admission)) + "\n";
    }
    // A job's section: its lines, green where they hold `good` (what was taken), red where
    // they hold "  rejected".
    auto section = [&](const std::string& title, const std::vector<std::string>& lines,
                       const char* good) {
      out += "\n" + style("1", title) + "\n";
      for (const std::string& line : lines) {
        bool taken = line.find(good) != std::string::npos;
        bool rejected = line.find("  rejected") != std::string::npos;
        out += "  " + (taken ? style("32", line) : rejected ? style("31", line) : line) + "\n";
      }
    };
    for (const JobExplain& j : e.jobs)
      if (j.topology)
        section("HyperNodes tried for " + j.uid, TopologyLines(*j.topology), "  chosen");
    for (const JobExplain& j : e.jobs)
      if (j.gang_eviction)
        section("Gang eviction for " + j.uid, GangEvictionLines(*j.gang_eviction), "  planned");
  }
  if (!e.queues.empty()) {
    out += "\n" + style("1", "queues") + "\n";
    for (const QueueExplain& q : e.queues) {
      out += fmt::format("  {}  order {}  overused {}\n", q.name, q.order, q.overused);
      for (const auto& [plugin, figures] : q.plugins) {
        out += fmt::format("    {}: {}\n", plugin, fmt::join(FigureTexts(figures), "  "));
      }
    }
  }
  return out;
}

// ---- HTML -----------------------------------------------------------------------------------

std::string Esc(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string FormatExplainHtml(const std::string& scenario, const Explanation& e) {
  std::string out = R"(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>kiln explain: )" + Esc(scenario) + R"(</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
th { background: #f3f3f3; }
tr.chosen td { background: #e6f6e6; font-weight: bold; }
tr.rejected td { color: #b00020; } tr.notTried td { color: #888; }
.bound { color: #176317; } .pipelined { color: #8a6100; } .unschedulable { color: #b00020; }
.rejected li { color: #b00020; }
section { border-top: 1px solid #ddd; margin-top: 1em; }
</style></head><body>
)";
  out += fmt::format("<h1>kiln explain: {}</h1>\n<p>{}</p>\n", Esc(scenario),
                     e.at_open ? "Every pending pod at session open, before any action ran."
                               : "Each pod as the session's actions saw it when they placed it or "
                                 "gave it up.");
  for (const TaskExplain& t : e.tasks) {
    PodView v = ViewOf(t);
    out += fmt::format("<section><h2>pod {}</h2>\n<p>job {}{}</p>\n", Esc(t.key), Esc(t.job),
                       t.action.empty() ? "" : fmt::format(" — {}", Esc(t.action)));
    if (!t.result_kind.empty())
      out += fmt::format("<p class=\"{}\">{}</p>\n", t.result_kind, Esc(ResultText(t)));
    if (!t.note.empty())
      out += fmt::format("<p>{}</p>\n", Esc(t.note + CodeSuffix(t.note_code)));
    if (t.pre_predicate)
      out += fmt::format("<p class=\"unschedulable\">pre_predicate ({}): {}: {}</p>\n",
                         Esc(t.pre_predicate->plugin), ToString(t.pre_predicate->code),
                         Esc(t.pre_predicate->reason + CodesSuffix(t.pre_predicate->codes)));
    if (!v.ranked.empty()) {
      out += "<table><tr><th>node</th><th>total</th><th>sum of scores</th>";
      for (const auto& p : v.score_plugins) out += "<th>" + Esc(p) + "</th>";
      for (const auto& p : v.batch_plugins) out += "<th>" + Esc(p) + " (batch)</th>";
      out += "<th>fits</th></tr>\n";
      for (const NodeExplain* n : v.ranked) {
        bool chosen = (t.result_kind == "bound" || t.result_kind == "pipelined") &&
                      n->node == t.result_value;
        out += fmt::format("<tr{}><td>{}</td><td>{}</td><td>{}</td>", chosen ? " class=\"chosen\"" : "",
                           Esc(n->node), Num(n->total), Num(n->node_order));
        for (const auto& p : v.score_plugins) {
          bool present = false;
          double s = ScoreOf(n->scores, p, &present);
          out += "<td>" + (present ? Num(s) : "-") + "</td>";
        }
        for (const auto& p : v.batch_plugins) {
          bool present = false;
          double s = ScoreOf(n->batch_scores, p, &present);
          out += "<td>" + (present ? Num(s) : "-") + "</td>";
        }
        out += "<td>" + Esc(n->fits) + "</td></tr>\n";
      }
      out += "</table>\n";
    }
    if (!v.rejected.empty()) {
      out += "<p>Rejected:</p><ul class=\"rejected\">\n";
      for (const auto& [reason, nodes] : v.rejected)
        out += fmt::format("<li>{} — {} node(s): {}</li>\n", Esc(reason), nodes.size(),
                           Esc(fmt::format("{}", fmt::join(nodes, ", "))));
      out += "</ul>\n";
    }
    out += "</section>\n";
  }
  if (!e.jobs.empty()) {
    out += "<section><h2>jobs</h2><table><tr><th>job</th><th>queue</th><th>order</th><th>phase</th>"
           "<th>ready</th><th>pipelined</th><th>valid</th><th>starving</th></tr>\n";
    for (const JobExplain& j : e.jobs)
      out += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
                         "<td>{}</td><td>{}</td></tr>\n",
                         Esc(j.uid), Esc(j.queue), j.order, Esc(j.phase), j.ready, j.pipelined,
                         j.valid ? "true" : Esc("false: " + j.invalid_reason), j.starving);
    out += "</table>";
    for (const JobExplain& j : e.jobs)
      if (j.admission)
        out += fmt::format("\n<p class=\"unschedulable\">{}: {}</p>", Esc(j.uid),
                           Esc(AdmissionText(*j.admission)));
    out += "</section>\n";
    for (const JobExplain& j : e.jobs) {
      if (!j.topology) continue;
      const TopologyExplain& t = *j.topology;
      out += fmt::format("<section><h2>HyperNodes tried for {}</h2><p>{}</p>", Esc(j.uid),
                         Esc(TopologyLines(t).front()));
      out += "<table><tr><th>level</th><th>within</th><th>tier</th><th>HyperNode</th>"
             "<th>outcome</th><th>reason</th><th>score</th></tr>\n";
      for (const HyperNodeTry& h : t.tries)
        out += fmt::format("<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
                           "<td>{}</td><td>{}</td></tr>\n",
                           Esc(h.outcome), Esc(h.level), Esc(h.within), h.tier, Esc(h.hyper_node),
                           Esc(h.outcome), Esc(h.reason + CodeSuffix(h.reason_code)),
                           h.score ? Num(*h.score) : "");
      out += "</table></section>\n";
    }
    for (const JobExplain& j : e.jobs) {
      if (!j.gang_eviction) continue;
      const std::vector<std::string> lines = GangEvictionLines(*j.gang_eviction);
      out += fmt::format("<section><h2>Gang eviction for {}</h2><p>{}</p><ul>\n", Esc(j.uid),
                         Esc(lines.front()));
      for (size_t i = 1; i < lines.size(); ++i) out += "<li>" + Esc(lines[i]) + "</li>\n";
      out += "</ul></section>\n";
    }
  }
  if (!e.queues.empty()) {
    out += "<section><h2>queues</h2><table><tr><th>queue</th><th>order</th><th>overused</th>"
           "<th>what the plugins show</th></tr>\n";
    for (const QueueExplain& q : e.queues) {
      std::string figures;
      for (const auto& [plugin, list] : q.plugins) {
        figures += fmt::format("<b>{}</b>: {}<br>", Esc(plugin),
                               Esc(fmt::format("{}", fmt::join(FigureTexts(list), "; "))));
      }
      out += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td style=\"text-align:left\">{}</td></tr>\n",
                         Esc(q.name), q.order, q.overused, figures);
    }
    out += "</table></section>\n";
  }
  out += "</body></html>\n";
  return out;
}

// ---- running --------------------------------------------------------------------------------

int RunExplain(const ExplainOptions& opts) {
  if (Status s = CheckChoice("--output", opts.output, {"table", "json", "html"}); !s)
    return BadInput(s.error());
  auto spec = LoadScenarioFile(opts.file);
  if (!spec) return BadInput(spec.error());
  std::set<std::string> pods;
  for (const std::string& p : opts.pods) {
    bool known = false;
    for (const PodSpec& pod : spec->cluster.pods) known |= pod.Key() == p;
    if (!known) {
      return BadInput(Error{fmt::format("--pod {}: no such pod in the scenario (pods are named "
                                        "<namespace>/<name>)",
                                        p),
                            SourceLocation{spec->file}});
    }
    pods.insert(p);
  }
  auto conf = LoadScenarioConf(*spec, opts.policy);
  if (!conf) return BadInput(conf.error());
  auto provider = MakeProvider(
      opts.policy, static_cast<uint64_t>(spec->cluster.pods.size()) * spec->cluster.nodes.size());
  if (!provider) return BadInput(provider.error());

  auto explanation = opts.at_open ? ExplainScenarioAtOpen(*spec, *conf, **provider, pods)
                                  : ExplainScenarioSession(*spec, *conf, **provider, pods);
  if (!explanation) return BadInput(explanation.error());

  if (opts.output == "json") {
    WriteExplainJson(stdout, spec->name, *explanation);
    return kExitOk;
  }
  std::string out;
  if (opts.output == "html") out = FormatExplainHtml(spec->name, *explanation);
  else out = FormatExplainTable(spec->name, *explanation, Style{isatty(STDOUT_FILENO) == 1});
  std::fputs(out.c_str(), stdout);
  return kExitOk;
}

}  // namespace

void AddExplainCommand(CLI::App& app) {
  auto opts = std::make_shared<ExplainOptions>();
  CLI::App* cmd = app.add_subcommand(
      "explain", "Show what every plugin said about every node for each pending pod of a scenario");
  cmd->add_option("scenario", opts->file, "scenario YAML file (see scenario-format.md)")->required();
  cmd->add_option("-o,--output", opts->output, "table (default), json or html");
  cmd->add_option("--pod", opts->pods, "explain only this pod, <namespace>/<name> (repeatable)")
      ->allow_extra_args(false);
  cmd->add_flag("--at-open", opts->at_open,
                "evaluate every pending pod right after the session opens, before any action");
  AddPolicyOptions(*cmd, opts->policy, kConfFlag | kPolicyDirFlags | kPackFlags);
  cmd->callback([opts] { EndCommand(RunExplain(*opts)); });
}

std::string ExplainJsonText(const std::string& scenario, const Explanation& e) {
  char* buf = nullptr;
  size_t len = 0;
  std::FILE* f = open_memstream(&buf, &len);
  if (f == nullptr) return "{}\n";
  WriteExplainJson(f, scenario, e);
  std::fclose(f);
  std::string out(buf, len);
  std::free(buf);
  return out;
}

}  // namespace kiln::cli
