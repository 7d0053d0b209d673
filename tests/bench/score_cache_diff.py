#!/usr/bin/env python3
"""Checks that cached node_order scores change no decision: runs `kiln simulate -o json` on a
generated scale scenario with the score cache on and off (KILN_SCORE_CACHE) and compares the
outputs byte for byte, `durationMicros` aside. Prints the cache's hit rate from --timings.

Usage: score_cache_diff.py KILN NODES PODS [--conf FILE]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def run(kiln, scenario, cache):
    env = dict(os.environ, KILN_SCORE_CACHE="1" if cache else "0", KILN_JIT_TIERS="0")
    p = subprocess.run([kiln, "simulate", scenario, "-o", "json", "--timings"], env=env,
                       capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"kiln simulate failed (cache {'on' if cache else 'off'}):\n{p.stderr}")
    out = re.sub(r'"durationMicros": *[0-9]+', '"durationMicros": 0', p.stdout)
    stats = re.search(r"score cache: .*", p.stderr)
    return out, stats.group(0) if stats else "score cache: (no line)"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kiln")
    ap.add_argument("nodes", type=int)
    ap.add_argument("pods", type=int)
    ap.add_argument("--conf", default=os.path.join(HERE, "confs", "default-binpack.conf"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        scenario = os.path.join(tmp, "scale.yaml")
        with open(scenario, "w") as f:
            subprocess.run([sys.executable, os.path.join(HERE, "gen_scale_scenario.py"),
                            str(args.nodes), str(args.pods), "--conf", args.conf], stdout=f,
                           check=True)
        on, on_stats = run(args.kiln, scenario, True)
        off, off_stats = run(args.kiln, scenario, False)
    print(f"cache on:  {on_stats}\ncache off: {off_stats}")
    if on != off:
        for i, (a, b) in enumerate(zip(on.splitlines(), off.splitlines())):
            if a != b:
                sys.exit(f"outputs differ at line {i + 1}:\n  on:  {a}\n  off: {b}")
        sys.exit("outputs differ in length")
    if " 0 hits" in on_stats:
        sys.exit("the cache never hit: is node_order still proved cacheable?")
    print(f"identical JSON ({len(on)} bytes)")


if __name__ == "__main__":
    main()
