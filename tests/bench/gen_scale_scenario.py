#!/usr/bin/env python3
"""Writes a synthetic scenario of N nodes and M pods for timing `kiln simulate`.

Usage: gen_scale_scenario.py NODES PODS [--conf FILE] [--topology] > scale.yaml

The cluster is deterministic (no randomness): four queues, gang jobs of 1-16 pods with mixed
CPU/memory/GPU requests, a tenth of the nodes carrying GPUs, some pods already running.

--topology adds a 3-tier HyperNode tree over the same nodes (leaves of 32 consecutive nodes at
tier 1, spines of 8 leaves at tier 2, blocks of 8 spines at tier 3) and gives every other gang
(even job numbers) a hard network topology within tier 2; the rest have none. Nodes, jobs and
pods are otherwise identical to the scenario without it, so the two time the same work.
"""
import argparse
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("nodes", type=int)
    ap.add_argument("pods", type=int)
    ap.add_argument("--conf", help="scheduler.conf to embed (default: Volcano's default conf)")
    ap.add_argument("--topology", action="store_true",
                    help="HyperNodes (3 tiers) and a hard network topology on half of the gangs")
    args = ap.parse_args()
    out = sys.stdout.write
    out(f"name: scale-{args.nodes}n-{args.pods}p{'-topology' if args.topology else ''}\n")
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
    if args.topology:
        hyper_nodes(args.nodes, out)
    groups = []
    pods = []
    made = 0
    j = 0
    while made < args.pods:
        size = min(1 + (j * 7) % 16, args.pods - made)
        q = queues[j % len(queues)]
        gpu = j % 9 == 0
        running = j % 5 == 0
        topology = ""
        if args.topology and j % 2 == 0:
            topology = ", networkTopology: {mode: hard, highestTierAllowed: 2}"
        groups.append(f"  - {{name: job{j}, namespace: ns{j % 8}, queue: {q}, minMember: {size}, "
                      f"phase: {'Running' if running else 'Pending'}{topology}}}\n")
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


def hyper_nodes(nodes, out):
    """Leaves of 32 consecutive nodes (tier 1), spines of 8 leaves (tier 2), blocks of 8 spines
    (tier 3)."""
    out("  hyperNodes:\n")
    leaves = (nodes + 31) // 32
    for l in range(leaves):
        members = ", ".join(f"{{type: Node, selector: {{exactMatch: {{name: n{k}}}}}}}"
                            for k in range(l * 32, min(nodes, (l + 1) * 32)))
        out(f"  - {{name: leaf{l}, tier: 1, members: [{members}]}}\n")
    spines = (leaves + 7) // 8
    for s in range(spines):
        members = ", ".join(f"{{type: HyperNode, selector: {{exactMatch: {{name: leaf{l}}}}}}}"
                            for l in range(s * 8, min(leaves, (s + 1) * 8)))
        out(f"  - {{name: spine{s}, tier: 2, members: [{members}]}}\n")
    for b in range((spines + 7) // 8):
        members = ", ".join(f"{{type: HyperNode, selector: {{exactMatch: {{name: spine{s}}}}}}}"
                            for s in range(b * 8, min(spines, (b + 1) * 8)))
        out(f"  - {{name: block{b}, tier: 3, members: [{members}]}}\n")


if __name__ == "__main__":
    main()
