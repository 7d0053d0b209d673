// `kiln simulate --report FILE.html`: one self-contained page of a trace replay
// (scenario-format.md, "Trace replay and the simulation report").
//
// The page carries its data as one JSON document inside <script type="application/json"> and
// builds every element from it with textContent, so nothing from the scenario is ever parsed as
// HTML; in the JSON text every `<` is written `\u003c`, so no name (`</script>` included) can end
// the script element. Chart.js comes from Debian's libjs-chart.js and is inlined into the page at
// run time (KILN_CHARTJS_PATH, found at configure time): opening the page needs no network.
//
// Bounded: the page keeps, per session, its binds and evictions, at most kReasonsPerSession
// unschedulable reasons (and the count) and the pending-pod digests the simulator made.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>

#include "cli/output_format.h"
#include "cli/report_html.h"
#include "runtime/resource.h"
#include "simulator/scenario.h"

#ifndef KILN_CHARTJS_PATH
#define KILN_CHARTJS_PATH "/usr/share/javascript/chart.js/chart.min.js"
#endif

namespace kiln::cli {

namespace {

using Json = nlohmann::ordered_json;

constexpr size_t kReasonsPerSession = 20;

// JSON text safe inside a <script> element: `<` only occurs inside JSON strings, where \u003c
// means the same character.
std::string ScriptSafeJson(const Json& j) {
  std::string text = j.dump();
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '<')
      out += "\\u003c";
    else
      out += c;
  }
  return out;
}

// The share of the cluster a resource vector is: its largest dimension's share of the nodes'
// total (the dominant share, as drf measures a job).
double DominantShare(const Resource& r, const Resource& total) {
  double share = 0;
  ForEachBit(r.present & ~(1u << kPods), [&](ResourceId id) {
    if (total.Get(id) > 0) share = std::max(share, r.Get(id) / total.Get(id));
  });
  return share;
}

Json ReportData(const SimulationResult& result, const ClusterSpec& cluster) {
  Resource total;
  for (const NodeSpec& n : cluster.nodes) total.Add(n.allocatable);
  Json d;
  d["scenario"] = result.scenario;
  d["nodes"] = cluster.nodes.size();
  Json times = Json::array(), pending = Json::array(), running = Json::array();
  Json util = Json::object(), frag = Json::object();
  std::vector<std::string> queue_names;
  for (const auto& m : result.metrics)
    for (const auto& [name, q] : m.queues)
      if (std::find(queue_names.begin(), queue_names.end(), name) == queue_names.end())
        queue_names.push_back(name);
  std::sort(queue_names.begin(), queue_names.end());
  Json queues = Json::object();
  for (const std::string& q : queue_names) {
    queues[q]["allocated"] = Json::array();
    queues[q]["deserved"] = Json::array();
  }
  const TimeNs start = result.summary.start;
  for (size_t i = 0; i < result.metrics.size(); ++i) {
    const SessionMetrics& m = result.metrics[i];
    times.push_back(static_cast<double>(m.time - start) / 60e9);  // minutes since start
    pending.push_back(m.pending);
    running.push_back(m.running);
    for (const auto& [name, u] : m.utilisation) {
      if (!util.contains(name)) util[name] = Json::array();
      while (util[name].size() < i) util[name].push_back(nullptr);
      util[name].push_back(u);
    }
    for (const auto& [name, f] : m.fragmentation) {
      if (!frag.contains(name)) frag[name] = Json::array();
      while (frag[name].size() < i) frag[name].push_back(nullptr);
      frag[name].push_back(f);
    }
    for (const std::string& q : queue_names) {
      auto it = m.queues.find(q);
      if (it == m.queues.end()) {
        queues[q]["allocated"].push_back(nullptr);
        queues[q]["deserved"].push_back(nullptr);
        continue;
      }
      queues[q]["allocated"].push_back(DominantShare(it->second.allocated, total));
      queues[q]["deserved"].push_back(it->second.deserved
                                          ? Json(DominantShare(*it->second.deserved, total))
                                          : Json(nullptr));
    }
  }
  // Series that stopped early (a resource nobody pends for any more) are padded to full length.
  for (Json* series : {&util, &frag})
    for (auto& [name, values] : series->items())
      while (values.size() < result.metrics.size()) values.push_back(nullptr);
  d["start"] = FormatTime(start);
  d["minutes"] = std::move(times);
  d["pending"] = std::move(pending);
  d["running"] = std::move(running);
  d["utilisation"] = std::move(util);
  d["fragmentation"] = std::move(frag);
  d["queues"] = std::move(queues);
  // Gangs by the tier of the lowest HyperNode holding them, per sample (clusters with HyperNodes).
  Json gang_tiers = Json::object();
  for (size_t i = 0; i < result.metrics.size(); ++i)
    for (const auto& [tier, gangs] : result.metrics[i].gang_tiers) {
      std::string key = std::to_string(tier);
      if (!gang_tiers.contains(key)) gang_tiers[key] = Json::array();
      while (gang_tiers[key].size() < i) gang_tiers[key].push_back(0);
      gang_tiers[key].push_back(gangs);
    }
  for (auto& [tier, values] : gang_tiers.items())
    while (values.size() < result.metrics.size()) values.push_back(0);
  d["gangTiers"] = std::move(gang_tiers);
  Json waits = Json::object();
  for (const JobRecord& j : result.summary.jobs) {
    if (!waits.contains(j.queue)) waits[j.queue] = Json::array();
    if (j.first_bind) waits[j.queue].push_back(static_cast<double>(*j.first_bind - j.arrival) / 1e9);
  }
  d["waiting"] = std::move(waits);
  d["summary"] = SummaryJson(result.summary);
  Json sessions = Json::array();
  for (size_t i = 0; i < result.sessions.size(); ++i) {
    const SessionResult& s = result.sessions[i];
    Json j;
    j["index"] = s.index;
    j["time"] = FormatTime(s.time);
    Json binds = Json::array();
    for (const std::string& pod : s.bind_order) binds.push_back({pod, s.binds.at(pod)});
    j["binds"] = std::move(binds);
    j["evictions"] = s.evictions;
    Json pipelined = Json::array();
    for (const auto& [pod, node] : s.pipelined) pipelined.push_back({pod, node});
    j["pipelined"] = std::move(pipelined);
    j["unschedulableCount"] = s.unschedulable.size();
    Json reasons = Json::array();
    for (const auto& [pod, reason] : s.unschedulable) {
      if (reasons.size() >= kReasonsPerSession) break;
      reasons.push_back({pod, reason});
    }
    j["unschedulable"] = std::move(reasons);
    Json explained = Json::array();
    if (i < result.metrics.size())
      for (const PendingDigest& pd : result.metrics[i].explained) {
        Json e;
        e["pod"] = pd.pod;
        e["reason"] = pd.reason;
        Json rej = Json::array();
        for (const auto& r : pd.rejections) rej.push_back({r.plugin, r.reason, r.nodes});
        e["rejections"] = std::move(rej);
        Json best = Json::array();
        for (const auto& [node, total_score] : pd.best_nodes) best.push_back({node, total_score});
        e["bestNodes"] = std::move(best);
        explained.push_back(std::move(e));
      }
    j["explained"] = std::move(explained);
    sessions.push_back(std::move(j));
  }
  d["sessions"] = std::move(sessions);
  return d;
}

constexpr const char* kStyle = R"(
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;background:#fafafa}
h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.6em}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:1em}
.card{background:#fff;border:1px solid #ddd;border-radius:6px;padding:.8em}
.card canvas{width:100%;height:260px}
table{border-collapse:collapse;width:100%;font-size:.9em;background:#fff}
th,td{border-bottom:1px solid #eee;padding:.25em .5em;text-align:left;vertical-align:top}
tr.session{cursor:pointer}tr.session:hover{background:#eef4ff}
.detail{background:#f6f8fa;font-family:ui-monospace,monospace;font-size:.85em;white-space:pre-wrap}
.summary td:first-child{font-weight:600}
#kiln-errors{color:#b00}
)";

// What both pages' scripts begin with: errors (a script error, a chart that fails) are shown in
// #kiln-errors and counted in the marker of kScriptEnd; the data; and how elements are made,
// always through textContent. A page's own script follows, then kScriptEnd.
constexpr const char* kScriptStart = R"JS(
(function () {
  'use strict';
  var errors = [];
  function fail(msg) {
    errors.push(String(msg));
    var e = document.getElementById('kiln-errors');
    if (e) e.textContent = errors.join('\n');
  }
  window.addEventListener('error', function (ev) { fail(ev.message); });
  var D = JSON.parse(document.getElementById('kiln-data').textContent);
  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }
  function card(parent, title) {
    var c = el('div', null, 'card');
    c.appendChild(el('h3', title));
    var canvas = document.createElement('canvas');
    canvas.width = 560; canvas.height = 260;
    c.appendChild(canvas);
    parent.appendChild(c);
    return canvas;
  }
)JS";

// What both pages' scripts end with: the marker the render test reads (tests/report).
constexpr const char* kScriptEnd = R"JS(
  // For tests and for people: did every chart draw something?
  var canvases = document.querySelectorAll('canvas'), painted = 0;
  canvases.forEach(function (c) {
    var px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    for (var i = 3; i < px.length; i += 4) if (px[i] !== 0) { painted++; break; }
  });
  var marker = document.getElementById('kiln-rendered');
  marker.setAttribute('data-charts', String(charts.length));
  marker.setAttribute('data-canvases', String(canvases.length));
  marker.setAttribute('data-painted', String(painted));
  marker.setAttribute('data-errors', String(errors.length));
  marker.setAttribute('data-done', 'yes');
})();
)JS";

// The run report's own script.
constexpr const char* kScript = R"JS(
  var origError = console.error;
  console.error = function () { fail(Array.prototype.join.call(arguments, ' ')); origError.apply(console, arguments); };
  document.title = 'Kiln simulation: ' + D.scenario;
  function pct(x) { return x === null || x === undefined ? '' : (100 * x).toFixed(1) + '%'; }
  function num(x) { return x === null || x === undefined ? '—' : (Math.round(x * 100) / 100).toString(); }
  var palette = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2',
                 '#7f7f7f', '#bcbd22', '#17becf'];
  var charts = [];
  function xy(values) {
    var pts = [];
    for (var i = 0; i < values.length; i++)
      if (values[i] !== null) pts.push({x: D.minutes[i], y: values[i]});
    return pts;
  }
  function lineChart(canvas, datasets, yTitle, yMax) {
    charts.push(new Chart(canvas, {
      type: 'line',
      data: {datasets: datasets},
      options: {
        animation: false, responsive: false, parsing: true, normalized: true,
        elements: {point: {radius: 0}, line: {borderWidth: 1.5}},
        scales: {
          x: {type: 'linear', title: {display: true, text: 'minutes since ' + D.start}},
          y: {beginAtZero: true, max: yMax, title: {display: true, text: yTitle}}
        },
        plugins: {legend: {position: 'bottom'}}
      }
    }));
  }
  function ds(label, values, i, dashed) {
    return {label: label, data: xy(values), borderColor: palette[i % palette.length],
            backgroundColor: palette[i % palette.length], stepped: true, fill: false,
            borderDash: dashed ? [6, 4] : []};
  }

  document.getElementById('title').textContent = 'Kiln simulation: ' + D.scenario;
  var S = D.summary;
  var sum = document.getElementById('summary');
  [['from', S.start], ['to (last session)', S.end], ['nodes', D.nodes],
   ['sessions run', S.sessionsRun], ['periods skipped (provably idle)', S.sessionsSkipped],
   ['stopped by', S.stopped]].forEach(function (r) {
    var tr = el('tr'); tr.appendChild(el('td', r[0])); tr.appendChild(el('td', r[1])); sum.appendChild(tr);
  });
  Object.keys(S.utilisation.mean).forEach(function (k) {
    var tr = el('tr'); tr.appendChild(el('td', 'mean utilisation ' + k));
    tr.appendChild(el('td', pct(S.utilisation.mean[k]))); sum.appendChild(tr);
  });
  var qt = document.getElementById('queue-table');
  Object.keys(S.queues).forEach(function (q) {
    var s = S.queues[q], tr = el('tr');
    [q, s.jobs, s.notStarted, num(s.waitingSeconds.mean), num(s.waitingSeconds.p50),
     num(s.waitingSeconds.p95), num(s.waitingSeconds.max)].forEach(function (v) { tr.appendChild(el('td', v)); });
    qt.appendChild(tr);
  });
  if (S.waitingByTopology) {
    document.getElementById('topology-waiting').style.display = '';
    var tt = document.getElementById('topology-table');
    Object.keys(S.waitingByTopology).forEach(function (q) {
      Object.keys(S.waitingByTopology[q]).forEach(function (mode) {
        var s = S.waitingByTopology[q][mode], tr = el('tr');
        [q, mode, s.jobs, s.notStarted, num(s.waitingSeconds.mean), num(s.waitingSeconds.p50),
         num(s.waitingSeconds.p95), num(s.waitingSeconds.max)].forEach(function (v) { tr.appendChild(el('td', v)); });
        tt.appendChild(tr);
      });
    });
  }

  var grid = document.getElementById('charts');
  lineChart(card(grid, 'Utilisation per resource'),
            Object.keys(D.utilisation).map(function (k, i) { return ds(k, D.utilisation[k], i); }),
            'share of allocatable', 1);
  lineChart(card(grid, 'Pending and running pods'),
            [ds('pending', D.pending, 3), ds('running', D.running, 2)], 'pods');
  var qsets = [];
  Object.keys(D.queues).forEach(function (q, i) {
    qsets.push(ds(q + ' allocated', D.queues[q].allocated, i));
    if (D.queues[q].deserved.some(function (v) { return v !== null; }))
      qsets.push(ds(q + ' deserved', D.queues[q].deserved, i, true));
  });
  lineChart(card(grid, 'Queue share of the cluster (dominant resource): allocated vs deserved'),
            qsets, 'share', 1);
  lineChart(card(grid, 'Fragmentation (free capacity that cannot host the median pending request)'),
            Object.keys(D.fragmentation).map(function (k, i) { return ds(k, D.fragmentation[k], i); }),
            'share of free', 1);
  if (Object.keys(D.gangTiers).length > 0)
    lineChart(card(grid, 'Gangs by the tier they span (the lowest HyperNode holding all their pods)'),
              Object.keys(D.gangTiers).map(function (k, i) { return ds('tier ' + k, D.gangTiers[k], i); }),
              'gangs');
  // Waiting-time distribution: one histogram per queue over shared bins that widen with the
  // wait (waits span from under a second to hours).
  var edges = [0, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, Infinity];
  function span(s) { return s < 60 ? s + 's' : s < 3600 ? (s / 60) + 'm' : (s / 3600) + 'h'; }
  var labels = [];
  for (var b = 0; b + 1 < edges.length; b++)
    labels.push(edges[b + 1] === Infinity ? '≥ ' + span(edges[b]) : span(edges[b]) + '–' + span(edges[b + 1]));
  var hsets = Object.keys(D.waiting).map(function (q, i) {
    var counts = new Array(labels.length).fill(0);
    D.waiting[q].forEach(function (w) {
      var k = 0;
      while (k + 2 < edges.length && w >= edges[k + 1]) k++;
      counts[k]++;
    });
    return {label: q, data: counts, backgroundColor: palette[i % palette.length]};
  });
  charts.push(new Chart(card(grid, 'Waiting time (arrival → first bind) per queue'), {
    type: 'bar', data: {labels: labels, datasets: hsets},
    options: {animation: false, responsive: false,
              scales: {y: {beginAtZero: true, title: {display: true, text: 'jobs'}}},
              plugins: {legend: {position: 'bottom'}}}
  }));

  // The sessions: a filterable, paged table; a row opens the session's decisions.
  var tbody = document.getElementById('sessions-body');
  var filter = document.getElementById('filter');
  var pageSize = 100, page = 0;
  function matches(s, f) {
    if (!f) return true;
    if (f === 'busy') return s.binds.length + s.evictions.length + s.pipelined.length > 0;
    if (f === 'stuck') return s.unschedulableCount > 0;
    return true;
  }
  function detail(s) {
    var lines = [];
    s.binds.forEach(function (b) { lines.push('bind     ' + b[0] + ' → ' + b[1]); });
    s.evictions.forEach(function (p) { lines.push('evict    ' + p); });
    s.pipelined.forEach(function (b) { lines.push('pipeline ' + b[0] + ' → ' + b[1]); });
    s.unschedulable.forEach(function (u) { lines.push('pending  ' + u[0] + ': ' + u[1]); });
    if (s.unschedulableCount > s.unschedulable.length)
      lines.push('… and ' + (s.unschedulableCount - s.unschedulable.length) + ' more pending pods');
    s.explained.forEach(function (e) {
      lines.push('');
      lines.push('why ' + e.pod + ' stayed pending (' + e.reason + '):');
      e.rejections.forEach(function (r) {
        lines.push('  ' + r[2] + ' node(s): ' + (r[0] || 'session') + ': ' + r[1]);
      });
      e.bestNodes.forEach(function (n) { lines.push('  passed: ' + n[0] + ' (score ' + num(n[1]) + ')'); });
    });
    return lines.join('\n');
  }
  function render() {
    while (tbody.firstChild) tbody.removeChild(tbody.firstChild);
    var rows = D.sessions.filter(function (s) { return matches(s, filter.value); });
    var pages = Math.max(1, Math.ceil(rows.length / pageSize));
    page = Math.min(page, pages - 1);
    document.getElementById('page').textContent = 'page ' + (page + 1) + ' of ' + pages +
        ' (' + rows.length + ' sessions)';
    rows.slice(page * pageSize, (page + 1) * pageSize).forEach(function (s) {
      var tr = el('tr', null, 'session');
      [s.index, s.time, s.binds.length, s.evictions.length, s.pipelined.length, s.unschedulableCount]
        .forEach(function (v) { tr.appendChild(el('td', v)); });
      var open = null;
      tr.addEventListener('click', function () {
        if (open) { open.remove(); open = null; return; }
        open = el('tr'); var td = el('td', detail(s), 'detail'); td.colSpan = 6;
        open.appendChild(td); tr.after(open);
      });
      tbody.appendChild(tr);
    });
  }
  filter.addEventListener('change', function () { page = 0; render(); });
  document.getElementById('prev').addEventListener('click', function () { page = Math.max(0, page - 1); render(); });
  document.getElementById('next').addEventListener('click', function () { page++; render(); });
  render();
)JS";

// The comparison page's own script: two sides A and B drawn solid and dashed.
constexpr const char* kCompareScript = R"JS(
  function pct(x) { return x === null || x === undefined ? '—' : (100 * x).toFixed(1) + '%'; }
  function num(x) { return x === null || x === undefined ? '—' : (Math.round(x * 10) / 10).toString(); }
  var palette = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b'];
  var charts = [];
  document.getElementById('title').textContent = 'Kiln compare-conf: ' + D.scenario;
  var sides = [['A', D.a], ['B', D.b]];
  var sum = document.getElementById('summary');
  function row(tbody, cells) {
    var tr = el('tr');
    cells.forEach(function (c) { tr.appendChild(el('td', c)); });
    tbody.appendChild(tr);
  }
  row(sum, ['', 'A', 'B']);
  row(sum, ['configuration', D.a.conf, D.b.conf]);
  ['sessions', 'binds', 'evictions', 'pipelined', 'pendingAtEnd'].forEach(function (k) {
    row(sum, [k, D.a[k], D.b[k]]);
  });
  Object.keys(D.a.utilisation).forEach(function (r) {
    row(sum, ['mean utilisation ' + r, pct(D.a.utilisation[r]), pct(D.b.utilisation[r])]);
  });
  Object.keys(D.a.fragmentation).forEach(function (r) {
    row(sum, ['mean fragmentation ' + r, pct(D.a.fragmentation[r]), pct(D.b.fragmentation[r])]);
  });
  var qt = document.getElementById('queue-table');
  var queues = {};
  sides.forEach(function (s) { Object.keys(s[1].waiting).forEach(function (q) { queues[q] = 1; }); });
  Object.keys(queues).sort().forEach(function (q) {
    var a = D.a.waiting[q] || {}, b = D.b.waiting[q] || {};
    row(qt, [q, a.jobs, num(a.meanSeconds), num(a.p95Seconds), b.jobs, num(b.meanSeconds), num(b.p95Seconds)]);
  });
  var t0 = D.a.series.length ? D.a.series[0].time : 0;
  function points(series, f) {
    return series.map(function (p) { return {x: (p.time - t0) / 6e10, y: f(p)}; });
  }
  function lineChart(title, datasets, yTitle) {
    charts.push(new Chart(card(document.getElementById('charts'), title), {
      type: 'line', data: {datasets: datasets},
      options: {animation: false, responsive: false,
                elements: {point: {radius: 0}, line: {borderWidth: 1.5}},
                scales: {x: {type: 'linear', title: {display: true, text: 'minutes'}},
                         y: {beginAtZero: true, title: {display: true, text: yTitle}}},
                plugins: {legend: {position: 'bottom'}}}
    }));
  }
  function perResource(field) {
    var out = [], i = 0;
    var resources = D.a.series.length ? Object.keys(D.a.series[0][field] || {}) : [];
    resources.forEach(function (r) {
      sides.forEach(function (s, k) {
        out.push({label: s[0] + ' ' + r, stepped: true, fill: false,
                  borderColor: palette[i % palette.length], borderDash: k ? [6, 4] : [],
                  data: points(s[1].series, function (p) { return p[field] ? p[field][r] : null; })});
      });
      i++;
    });
    return out;
  }
  lineChart('Utilisation (A solid, B dashed)', perResource('utilisation'), 'share');
  lineChart('Fragmentation (A solid, B dashed)', perResource('fragmentation'), 'share');
  lineChart('Pending pods', sides.map(function (s, k) {
    return {label: s[0], stepped: true, fill: false, borderColor: palette[k], borderDash: k ? [6, 4] : [],
            data: points(s[1].series, function (p) { return p.pending; })};
  }), 'pods');
  var dt = document.getElementById('diff-table');
  D.differences.slice(0, 500).forEach(function (d) { row(dt, [d.after, d.pod, d.kind, d.a, d.b]); });
  document.getElementById('diff-count').textContent = D.differences.length + ' decisions differ' +
      (D.differences.length > 500 ? ' (the first 500 shown)' : '');
)JS";

// Chart.js from Debian's libjs-chart.js, checked so that it can be inlined in a <script>.
Result<std::string> ReadChartJs() {
  auto chartjs = ReadTextFile(KILN_CHARTJS_PATH);
  if (!chartjs)
    return Error{fmt::format("--report needs Chart.js at {} (Debian package libjs-chart.js; "
                             "scripts/install-deps installs it): {}",
                             KILN_CHARTJS_PATH, chartjs.error().message),
                 SourceLocation{}};
  // Chart.js does not contain `</script`; make sure a future version cannot end its element.
  if (chartjs->find("</script") != std::string::npos)
    return Error{fmt::format("{} contains `</script`; it cannot be inlined", KILN_CHARTJS_PATH),
                 SourceLocation{}};
  return std::move(*chartjs);
}

// A page: its head (title, style, Chart.js inlined); the title, errors and summary elements,
// `body` and the marker; then the data as JSON in a script element and the page's script
// between kScriptStart and kScriptEnd.
Result<std::string> Page(const char* title, const char* body, const Json& data,
                         const char* script) {
  auto chartjs = ReadChartJs();
  if (!chartjs) return chartjs.error();
  std::string page;
  page.reserve(chartjs->size() + 65536);
  page += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  page += fmt::format("<title>{}</title>\n<style>", title);
  page += kStyle;
  page += "</style>\n<script>\n";
  page += *chartjs;
  page += "\n</script>\n</head><body>\n";
  page += R"(<h1 id="title"></h1>
<div id="kiln-errors"></div>
<div class="card"><table class="summary"><tbody id="summary"></tbody></table></div>
)";
  page += body;
  page += R"(<div id="kiln-rendered" hidden></div>
)";
  page += "<script id=\"kiln-data\" type=\"application/json\">";
  page += ScriptSafeJson(data);
  page += "</script>\n<script>";
  page += kScriptStart;
  page += script;
  page += kScriptEnd;
  page += "</script>\n</body></html>\n";
  return page;
}

// The run report's body: the elements kScript fills.
constexpr const char* kBody = R"(<h2>Waiting time per queue (seconds, nearest-rank percentiles)</h2>
<table><thead><tr><th>queue</th><th>jobs started</th><th>not started</th><th>mean</th><th>p50</th><th>p95</th><th>max</th></tr></thead><tbody id="queue-table"></tbody></table>
<div id="topology-waiting" style="display: none">
<h2>Waiting time per queue and network topology mode (seconds)</h2>
<table><thead><tr><th>queue</th><th>topology</th><th>jobs started</th><th>not started</th><th>mean</th><th>p50</th><th>p95</th><th>max</th></tr></thead><tbody id="topology-table"></tbody></table>
</div>
<h2>Over time</h2>
<div class="grid" id="charts"></div>
<h2>Sessions</h2>
<p><label>show <select id="filter"><option value="">all sessions</option><option value="busy">sessions that decided something</option><option value="stuck">sessions with pending pods</option></select></label>
<button id="prev">previous</button> <button id="next">next</button> <span id="page"></span></p>
<table><thead><tr><th>session</th><th>time</th><th>binds</th><th>evictions</th><th>pipelined</th><th>pending (unschedulable)</th></tr></thead><tbody id="sessions-body"></tbody></table>
)";

// The comparison page's body: the elements kCompareScript fills.
constexpr const char* kCompareBody = R"(<h2>Waiting time per queue (seconds)</h2>
<table><thead><tr><th>queue</th><th>A jobs started</th><th>A mean</th><th>A p95</th><th>B jobs started</th><th>B mean</th><th>B p95</th></tr></thead><tbody id="queue-table"></tbody></table>
<h2>Over time</h2>
<div class="grid" id="charts"></div>
<h2>Decisions that differ</h2>
<p id="diff-count"></p>
<table><thead><tr><th>after</th><th>pod</th><th>kind</th><th>A</th><th>B</th></tr></thead><tbody id="diff-table"></tbody></table>
)";

}  // namespace

Result<std::string> FormatReportHtml(const SimulationResult& result, const ClusterSpec& cluster) {
  return Page("Kiln simulation", kBody, ReportData(result, cluster), kScript);
}

// The comparison page is built like the run report.
Result<std::string> FormatCompareReportHtml(const std::string& comparison_json) {
  return Page("Kiln compare-conf", kCompareBody, Json::parse(comparison_json), kCompareScript);
}

}  // namespace kiln::cli
