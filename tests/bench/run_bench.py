#!/usr/bin/env python3
"""The scale matrix of scripts/bench: `kiln simulate --timings` on generated clusters under three
confs, then the compile and handler benchmarks of kiln_bench, printed as one table.

Every figure in a table comes from this one run, and the ratios divide figures of the same run
(default conf vs plugin-free on the same cluster; JIT vs C++ in the same benchmark binary), so a
noisy shared machine moves both sides alike.

Usage: run_bench.py --kiln build/kiln --bench build/tests/kiln_bench --work DIR
                    [--sizes 1000x10000,3000x30000,10000x100000] [--confs default,...]
                    [--topology-size 10000x100000 | --topology-size none]
                    [--repeat N] [--no-kiln-bench] [--json FILE] [--baseline OLD_KILN]

The topology row (issue 30) times one cluster twice: without topology under the default conf,
and with a 3-tier HyperNode tree and half of the gangs in hard mode under the default conf plus
network-topology-aware (gen_scale_scenario.py --topology: the same nodes, jobs and pods).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CONFS = {
    "default": "default.conf",
    "+binpack": "default-binpack.conf",
    "plugin-free": "plugin-free.conf",
}
# The plain C++ loop (scale_limit_bench.cc) doing the same work as each conf: a session is
# divided by the limit with its own scorer, never by a cheaper one.
LIMIT_OF = {
    "default": "C++ limit",
    "+binpack": "C++ limit +binpack",
    "plugin-free": "C++ limit, fit only",
}
LIMIT_BENCHMARK = {
    "C++ limit": "BM_SampledLimit",
    "C++ limit +binpack": "BM_SampledLimitBinpack",
    "C++ limit, fit only": "BM_SampledLimitFit",
}


def parse_timings(text):
    """Reads `kiln simulate --timings` (stderr) into a dict: load, compile, output, rss and the
    first session's pending, binds, snapshot, open, each action, close, session."""
    out = {"actions": {}}
    session = None
    for line in text.splitlines():
        m = re.match(r"\s*session (\d+): pending (\d+) binds (\d+) evictions (\d+)", line)
        if m:
            session = int(m.group(1))
            if session == 0:
                out["pending"], out["binds"] = int(m.group(2)), int(m.group(3))
            continue
        m = re.match(r"(\s*)(.+?)\s+(-?[\d.]+)$", line)
        if not m:
            continue
        indent, name, value = len(m.group(1)), m.group(2).strip(), float(m.group(3))
        if name == "peak RSS (MiB)":
            out["rss_mib"] = value
        elif indent == 2:
            out[name] = value
        elif indent == 6 and session == 0:
            out.setdefault("open_plugins", {})[name] = value
        elif indent == 4 and session == 0:
            if name in ("snapshot", "open", "close", "session", "results"):
                out[name] = value
            else:
                out["actions"][name] = value
    return out


def run_simulate(kiln, scenario, conf):
    start = time.monotonic()
    proc = subprocess.run([kiln, "simulate", scenario, "--conf", conf, "-o", "json", "--timings"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - start
    if proc.returncode != 0:
        sys.exit(f"kiln simulate {scenario} --conf {conf} failed ({proc.returncode}):\n"
                 f"{proc.stderr}")
    t = parse_timings(proc.stderr)
    t["wall"] = wall * 1000
    return t


def best_of(runs):
    """The run with the shortest session: on a shared machine the fastest run is the one least
    disturbed by others."""
    return min(runs, key=lambda t: t["session"])


def fmt_ms(ms):
    return f"{ms / 1000:.2f} s" if ms >= 1000 else f"{ms:.0f} ms"


def scale_matrix(args):
    rows = []
    for size in args.sizes.split(","):
        nodes, pods = (int(x) for x in size.split("x"))
        scenario = os.path.join(args.work, f"scale-{nodes}x{pods}.yaml")
        if not os.path.exists(scenario):
            with open(scenario + ".tmp", "w") as f:
                subprocess.run([sys.executable, os.path.join(HERE, "gen_scale_scenario.py"),
                                str(nodes), str(pods)], stdout=f, check=True)
            os.replace(scenario + ".tmp", scenario)
        results, baseline = {}, {}
        for conf in args.confs.split(","):
            conf_path = os.path.join(HERE, "confs", CONFS[conf])
            runs, base_runs = [], []
            # With a baseline the two binaries alternate, so a noisy stretch of the machine hits
            # both alike.
            for _ in range(args.repeat):
                if args.baseline:
                    base_runs.append(run_simulate(args.baseline, scenario, conf_path))
                runs.append(run_simulate(args.kiln, scenario, conf_path))
            results[conf] = best_of(runs)
            t = results[conf]
            print(f"  {nodes}x{pods} {conf}: session {fmt_ms(t['session'])}, "
                  f"{t['binds']} binds", file=sys.stderr, flush=True)
            if base_runs:
                baseline[conf] = best_of(base_runs)
                b = baseline[conf]
                if b["binds"] != t["binds"]:
                    print(f"  note: the baseline bound {b['binds']} pods, this build {t['binds']}",
                          file=sys.stderr)
                print(f"  {nodes}x{pods} {conf}: baseline session {fmt_ms(b['session'])}",
                      file=sys.stderr, flush=True)
        if args.bench:
            # Best of the repeats, as the sessions it divides: one slow run of the limit would
            # flatter every ratio.
            for conf in args.confs.split(","):
                name = LIMIT_OF[conf]
                results[name] = best_of([sampled_limit(args, scenario, LIMIT_BENCHMARK[name])
                                         for _ in range(args.repeat)])
        rows.append(((nodes, pods), results, baseline))
    return rows


def scenario_file(args, nodes, pods, topology):
    name = f"scale-{nodes}x{pods}{'-topology' if topology else ''}.yaml"
    scenario = os.path.join(args.work, name)
    if not os.path.exists(scenario):
        cmd = [sys.executable, os.path.join(HERE, "gen_scale_scenario.py"), str(nodes), str(pods)]
        if topology:
            cmd.append("--topology")
        with open(scenario + ".tmp", "w") as f:
            subprocess.run(cmd, stdout=f, check=True)
        os.replace(scenario + ".tmp", scenario)
    return scenario


def topology_row(args):
    """The same cluster without and with topology; best of the repeats each. The two cases take
    turns, so a noisy stretch of the shared machine hits both alike."""
    nodes, pods = (int(x) for x in args.topology_size.split("x"))
    cases = (("no topology", False, "default.conf"), ("topology", True, "default-topology.conf"))
    scenarios = {label: scenario_file(args, nodes, pods, topology)
                 for label, topology, _ in cases}
    runs = {label: [] for label, _, _ in cases}
    for _ in range(args.repeat):
        for label, _, conf in cases:
            runs[label].append(run_simulate(args.kiln, scenarios[label],
                                            os.path.join(HERE, "confs", conf)))
    cells = {}
    for label, _, _ in cases:
        cells[label] = best_of(runs[label])
        t = cells[label]
        print(f"  {nodes}x{pods} {label}: session {fmt_ms(t['session'])}, {t['binds']} binds",
              file=sys.stderr, flush=True)
    return (nodes, pods), cells


def print_topology(row):
    (nodes, pods), cells = row
    print("### Topology (`kiln simulate --timings`; 3-tier HyperNode tree, half of the gangs hard "
          "within tier 2; the same cluster without topology)\n")
    print("| cluster | case | pending | binds | load | open | allocate | session | peak RSS "
          "| session / no topology |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    base = cells["no topology"]
    for label, t in cells.items():
        ratio = f"{t['session'] / base['session']:.2f}×" if base["session"] else "–"
        print(f"| {nodes // 1000}k × {pods // 1000}k | {label} | {t['pending']} | {t['binds']} "
              f"| {fmt_ms(t['load'])} | {fmt_ms(t['open'])} "
              f"| {fmt_ms(t['actions'].get('allocate', 0))} | {fmt_ms(t['session'])} "
              f"| {t['rss_mib']:.0f} MiB | {ratio} |")
    print()


def sampled_limit(args, scenario, benchmark):
    """A BM_SampledLimit* (scale_limit_bench.cc): the same pending pods placed by plain one-thread
    C++ over dense arrays (fit, and the conf's scorer, over Volcano's node sample), as a
    session-shaped row."""
    env = dict(os.environ, KILN_BENCH_SCENARIO=scenario)
    proc = subprocess.run([args.bench, f"--benchmark_filter={benchmark}$",
                           "--benchmark_format=json", "--benchmark_min_time=0.01"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    if proc.returncode != 0:
        sys.exit(f"kiln_bench {benchmark} failed:\n{proc.stderr}")
    b = json.loads(proc.stdout)["benchmarks"][0]
    if b.get("error_occurred"):
        sys.exit(f"{benchmark}: {b.get('error_message')}")
    ms = to_ns(b) / 1e6
    return {"pending": "–", "binds": int(b["binds"]), "load": 0, "compile": 0, "open": 0,
            "actions": {"allocate": ms}, "session": ms, "output": 0, "rss_mib": 0}


def print_scale(rows):
    print("### Scale matrix (`kiln simulate --timings`, first session; best of the repeats)\n")
    print("| cluster | conf | pending | binds | load | compile | open | allocate | session "
          "| pods/s | output | peak RSS | session / plugin-free | session / its C++ limit |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (nodes, pods), results, _ in rows:
        base = results.get("plugin-free")
        for conf, t in results.items():
            limit = results.get(LIMIT_OF.get(conf, ""))
            pods_s = t["binds"] / (t["session"] / 1000) if t["session"] > 0 else 0
            ratio = f"{t['session'] / base['session']:.2f}×" if base and base["session"] else "–"
            to_limit = f"{t['session'] / limit['session']:.1f}×" if limit and limit["session"] else "–"
            if conf in LIMIT_BENCHMARK:
                ratio = to_limit = "–"
            print(f"| {nodes // 1000}k × {pods // 1000}k | {conf} | {t['pending']} | {t['binds']} "
                  f"| {fmt_ms(t['load'])} | {fmt_ms(t['compile'])} | {fmt_ms(t['open'])} "
                  f"| {fmt_ms(t['actions'].get('allocate', 0))} | {fmt_ms(t['session'])} "
                  f"| {pods_s / 1000:.1f}k | {fmt_ms(t['output'])} | {t['rss_mib']:.0f} MiB "
                  f"| {ratio} | {to_limit} |")
    print()


def print_baseline(rows):
    """Before (--baseline) and after (--kiln), best of the interleaved repeats of each cell."""
    print("### Before → after (interleaved runs of both binaries; best of the repeats)\n")
    print("| cluster | conf | allocate | session | pods/s | snapshot | open | peak RSS "
          "| session / plugin-free |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (nodes, pods), results, baseline in rows:
        for conf, b in baseline.items():
            t = results[conf]

            def arrow(key):
                return f"{fmt_ms(b.get(key, 0))} → {fmt_ms(t.get(key, 0))}"

            def pods_s(r):
                return r["binds"] / (r["session"] / 1000) / 1000 if r["session"] else 0

            ratio = "–"
            if "plugin-free" in baseline:
                bp, tp = baseline["plugin-free"], results["plugin-free"]
                ratio = (f"{b['session'] / bp['session']:.2f}× → "
                         f"{t['session'] / tp['session']:.2f}×")
            print(f"| {nodes // 1000}k × {pods // 1000}k | {conf} "
                  f"| {fmt_ms(b['actions'].get('allocate', 0))} → "
                  f"{fmt_ms(t['actions'].get('allocate', 0))} | {arrow('session')} "
                  f"| {pods_s(b):.1f}k → {pods_s(t):.1f}k | {arrow('snapshot')} | {arrow('open')} "
                  f"| {b['rss_mib']:.0f} → {t['rss_mib']:.0f} MiB | {ratio} |")
    print()


def kiln_bench(args, pattern):
    proc = subprocess.run([args.bench, f"--benchmark_filter={pattern}",
                           "--benchmark_format=json", f"--benchmark_min_time={args.min_time}"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        sys.exit(f"kiln_bench failed:\n{proc.stderr}")
    return json.loads(proc.stdout)["benchmarks"]


def to_ns(b):
    scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[b.get("time_unit", "ns")]
    return b["real_time"] * scale


def print_kiln_bench(args):
    compile_rows = kiln_bench(args, "BM_Compile")
    print("### Compile (kiln_bench)\n")
    print("| benchmark | time |")
    print("|---|---|")
    for b in compile_rows:
        print(f"| {b['name']} | {to_ns(b) / 1e6:.1f} ms |")
    print()
    # Handler pairs: tests/bench/handler_ratios.py pairs BM_Jit<X> with BM_Native<X> (per-call
    # CPU time, interleaved repetitions) from the same binary and run.
    print("### Handlers: JIT'd policy vs the same algorithm in C++ (kiln_bench)\n", flush=True)
    subprocess.run([sys.executable, os.path.join(HERE, "handler_ratios.py"), "--bench", args.bench,
                    "--min-time", str(args.min_time), "--repetitions", str(args.repeat),
                    "--markdown"], check=True)
    print()


def check(rows):
    """What CI's short run asserts: every conf ran on every cluster, bound pods, never more than
    were pending, and `--timings` reported each phase (a parse miss would print zeros)."""
    problems = []
    for (nodes, pods), results, _ in rows:
        for conf, t in results.items():
            where = f"{nodes}x{pods} {conf}"
            if not 0 < t["binds"] <= (pods if conf in LIMIT_BENCHMARK else t["pending"]):
                problems.append(f"{where}: {t['binds']} binds of {t['pending']} pending")
            if conf in LIMIT_BENCHMARK:
                continue
            for phase in ("load", "compile", "session", "rss_mib"):
                if not t.get(phase, 0) > 0:
                    problems.append(f"{where}: no `{phase}` figure")
            if "allocate" not in t["actions"]:
                problems.append(f"{where}: no allocate timing")
    if problems:
        sys.exit("bench check failed:\n  " + "\n  ".join(problems))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--bench")
    ap.add_argument("--work", required=True)
    ap.add_argument("--sizes", default="1000x10000,3000x30000,10000x100000")
    ap.add_argument("--confs", default="default,+binpack,plugin-free")
    ap.add_argument("--topology-size", default="10000x100000",
                    help="NODESxPODS of the topology row, or 'none' to skip it")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--min-time", default="0.2")
    ap.add_argument("--no-kiln-bench", action="store_true")
    ap.add_argument("--json", help="also write the scale matrix's figures here")
    ap.add_argument("--baseline", help="another kiln binary to run interleaved with --kiln on "
                    "every cell, and print a before → after table")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 unless every cell ran, bound pods and reported every phase")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    rows = scale_matrix(args) if args.sizes != "none" else []
    if rows:
        print_scale(rows)
    if args.topology_size != "none":
        print_topology(topology_row(args))
    if args.baseline:
        print_baseline(rows)
    if args.check:
        check(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump([{"nodes": n, "pods": p, "results": r, "baseline": b}
                       for (n, p), r, b in rows], f, indent=1)
    if not args.no_kiln_bench and args.bench:
        print_kiln_bench(args)


if __name__ == "__main__":
    main()
