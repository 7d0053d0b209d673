#!/usr/bin/env python3
"""Writes a synthetic scenario of N nodes and M pods for timing `kiln simulate`.

Usage: gen_scale_scenario.py NODES PODS [--conf FILE] > scale.yaml

The cluster is deterministic (no randomness): four queues, gang jobs of 1-16 pods with mixed
CPU/memory/GPU requests, a tenth of the nodes carrying GPUs, some pods already running.
"""
import argparse
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("nodes", type=int)
    ap.add_argument("pods", type=int)
    ap.add_argument("--conf", help="scheduler.conf to embed (default: Volcano's default conf)")
    args = ap.parse_args()
    out = sys.stdout.write
    out(f"name: scale-{args.nodes}n-{args.pods}p\n")
    if args.conf:
        text = open(args.conf).read()
        out("conf: |\n" + "".join("  " + l if l.strip() else "\n" for l in text.splitlines(True)))
    out('now: "2025-01-01T00:00:00Z"\ncluster:\n  queues:\n')
    queues = ["default", "prod", "research", "batch"]
    for i, q in enumerate(queues):
        out(f"  - {{name: {q}, weight: {i + 1}}}\n")
    out("  nodes:\n")
    for n in range(args.nodes):
        if n % 10 == 0:
            out(f"  - {{name: n{n}, allocatable: {{cpu: \"64\", memory: 512Gi, pods: \"110\", "
                f"nvidia.com/gpu: \"8\"}}, labels: {{zone: z{n % 3}, accelerator: a100}}}}\n")
        else:
            out(f"  - {{name: n{n}, allocatable: {{cpu: \"32\", memory: 128Gi, pods: \"110\"}}, "
                f"labels: {{zone: z{n % 3}}}}}\n")
    groups = []
    pods = []
    made = 0
    j = 0
    while made < args.pods:
        size = min(1 + (j * 7) % 16, args.pods - made)
        q = queues[j % len(queues)]
        gpu = j % 9 == 0
        running = j % 5 == 0
        groups.append(f"  - {{name: job{j}, namespace: ns{j % 8}, queue: {q}, minMember: {size}, "
                      f"phase: {'Running' if running else 'Pending'}}}\n")
        for t in range(size):
            req = f"cpu: \"{1 + (j + t) % 4}\", memory: {1 + (j * 3 + t) % 8}Gi"
            if gpu:
                req += ", nvidia.com/gpu: \"1\""
            node = ""
            if running:
                node = f", phase: Running, node: n{((j * 31 + t) * (10 if gpu else 1) + (0 if gpu else 1)) % args.nodes}"
            pods.append(f"  - {{name: job{j}-{t}, namespace: ns{j % 8}, group: job{j}, "
                        f"requests: {{{req}}}{node}}}\n")
        made += size
        j += 1
    out("  podGroups:\n")
    out("".join(groups))
    out("  pods:\n")
    out("".join(pods))


if __name__ == "__main__":
    main()
