#!/usr/bin/python3
"""JIT'd handlers vs the same logic in C++: runs kiln_bench's BM_Jit<X>/BM_Native<X> pairs in one
process and prints `handler | jit ns | native ns | ratio`, ns per handler call (CPU time: the
machine is shared). Pairs whose benchmark loops over a list report `calls` per iteration.

  tests/bench/handler_ratios.py [--bench build/tests/kiln_bench] [--filter REGEX]
                                [--repetitions N] [--min-time S] [--markdown] [--json FILE]

Exit status 1 when kiln_bench fails (a JIT/C++ mismatch aborts it) or no pair ran.
"""
import argparse
import json
import os
import re
import subprocess
import sys


def run(bench, filt, repetitions, min_time):
    cmd = [bench, "--benchmark_filter=" + filt, "--benchmark_format=json",
           "--benchmark_min_time=%g" % min_time]
    if repetitions > 1:
        # Interleaved repetitions: a burst of load on the shared machine then hits both sides of
        # a pair instead of one.
        cmd += ["--benchmark_repetitions=%d" % repetitions,
                "--benchmark_report_aggregates_only=true",
                "--benchmark_enable_random_interleaving=true"]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise SystemExit("%s failed (exit %d)" % (bench, proc.returncode))
    return json.loads(proc.stdout)


def per_call_ns(b):
    """CPU ns per handler call of one benchmark entry."""
    scale = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}[b.get("time_unit", "ns")]
    calls = b.get("calls", 1.0) or 1.0
    return b["cpu_time"] * scale / calls


def pairs(doc):
    """{handler: {"jit": ns, "native": ns}}."""
    out = {}
    for b in doc["benchmarks"]:
        # With repetitions, keep the median only.
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        # "BM_JitX/iterations:50000" and the like: the pair is named by the part before '/'.
        name = b.get("run_name", b["name"]).split("/")[0]
        m = re.fullmatch(r"BM_(Jit|Native)(\w+)", name)
        if not m:
            continue
        out.setdefault(m.group(2), {})[m.group(1).lower()] = per_call_ns(b)
    return {k: v for k, v in out.items() if "jit" in v and "native" in v}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", default=os.path.join(here, "..", "..", "build", "tests",
                                                    "kiln_bench"))
    ap.add_argument("--filter", default="^BM_(Jit|Native)",
                    help="benchmark regex (default: every Jit/Native pair)")
    ap.add_argument("--repetitions", type=int, default=1)
    ap.add_argument("--min-time", type=float, default=0.2)
    ap.add_argument("--markdown", action="store_true", help="a Markdown table")
    ap.add_argument("--json", help="also write {handler: {jit, native, ratio}} here")
    args = ap.parse_args()

    table = pairs(run(args.bench, args.filter, args.repetitions, args.min_time))
    if not table:
        raise SystemExit("no BM_Jit*/BM_Native* pair matched %r" % args.filter)
    # By name, so that the policy's pairs stand together whatever order they ran in.
    rows = [(h, v["jit"], v["native"], v["jit"] / v["native"] if v["native"] > 0 else 0.0)
            for h, v in sorted(table.items())]
    width = max(len("handler"), max(len(r[0]) for r in rows))
    if args.markdown:
        print("| handler | jit ns | native ns | ratio |")
        print("|---|---:|---:|---:|")
        for h, j, n, r in rows:
            print("| %s | %.1f | %.1f | %.2f |" % (h, j, n, r))
    else:
        print("%-*s | %10s | %10s | %6s" % (width, "handler", "jit ns", "native ns", "ratio"))
        print("-" * (width + 35))
        for h, j, n, r in rows:
            print("%-*s | %10.1f | %10.1f | %6.2f" % (width, h, j, n, r))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({h: {"jit": j, "native": n, "ratio": r} for h, j, n, r in rows}, f, indent=1)


if __name__ == "__main__":
    main()
