#!/usr/bin/env python3
"""`kiln serve` with Volcano's topology objects, against the API-server emulator over real sockets.

The cluster comes from a scenario through `kiln export-manifests` (HyperNodes and PodGroups with
spec.networkTopology), plus Numatopology objects and a few bad objects written straight to the
API. kiln serve lists and watches HyperNodes and Numatopologies; a gang with a hard network
topology lands inside one allowed HyperNode; a gang no allowed HyperNode can hold waits, and an
edit of the HyperNodes made with kubectl during the run lets it land in the next sessions; bad
objects are logged with what is wrong and skipped; the PodGroup keeps its spec and annotations
through the status writes (Volcano updates the whole object and, at ed72c7c8, keeps the allocated
HyperNode in memory, writing no annotation for it). kubectl gets and lists the new CRD objects.
numa-aware, run through the emulator, judges pods by the QoS class Kubernetes gives the whole pod:
a Guaranteed pod lands only where its NUMA cells fit, a Burstable one is not judged.

Run with Debian's python3 (PyYAML): serve_topology_test.py KILN [TestCase.test_name]
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "emulator"))
from emulator_fixture import KUBECTL_VERSIONS, Emulator, kubectl_path, wait_until  # noqa: E402
from serve_fixtures import scheduler_conf, served_scenario  # noqa: E402
from serve_util import ServeProcess, kiln_from_argv  # noqa: E402

KILN = kiln_from_argv(ROOT)

# The cluster, its leaves and the gangs `near` and `wide`: data/serve-topology.yaml.
with open(os.path.join(HERE, "data", "serve-topology.yaml")) as f:
    SCENARIO = f.read()

LEAVES = {"n0": "s0", "n1": "s0", "n2": "s1", "n3": "s1", "n4": "s2", "n5": "s3"}


def numatopology(name, allocatable="0-3", reserved="1"):
    return {"apiVersion": "nodeinfo.volcano.sh/v1alpha1", "kind": "Numatopology",
            "metadata": {"name": name},
            "spec": {"policies": {"CPUManagerPolicy": "static", "TopologyManagerPolicy": "single-numa-node"},
                     "resReserved": {"cpu": reserved},
                     "numares": {"cpu": {"allocatable": allocatable, "capacity": 4}},
                     "cpuDetail": {str(c): {"numa": c // 2, "socket": 0, "core": c} for c in range(4)}}}


class Serve(ServeProcess):
    def __init__(self, emu, conf):
        super().__init__(KILN, emu, conf, period="500ms")


class Topology(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="serve-topology-")
        cls.conf, cls.manifests = served_scenario(KILN, cls.tmp, SCENARIO)
        # The scenario format has no Numatopologies yet: they are loaded beside the export.
        cls.extra = os.path.join(cls.tmp, "extra.yaml")
        with open(cls.extra, "w") as f:
            yaml.safe_dump_all([numatopology("n0"), numatopology("n1")], f)

    @classmethod
    def tearDownClass(cls):
        subprocess.run(["rm", "-rf", cls.tmp])

    def kubectl(self, emu, *args, check=True):
        r = subprocess.run([kubectl_path(KUBECTL_VERSIONS[-1]), "--kubeconfig", emu.kubeconfig,
                            "--cache-dir", os.path.join(self.tmp, "kube-cache"), *args],
                           capture_output=True, text=True, timeout=60)
        if check:
            self.assertEqual(r.returncode, 0, r.stderr)
        return r

    def near_nodes(self, emu):
        p = self.pods(emu)
        return [p[n]["spec"].get("nodeName") for n in ("near-0", "near-1")]

    def pods(self, emu):
        code, out, _ = emu.get("/api/v1/namespaces/c1/pods")
        self.assertEqual(code, 200, out)
        return {p["metadata"]["name"]: p for p in out["items"]}

    def test_export_holds_the_topology(self):
        with open(self.manifests) as f:
            objs = [o for o in yaml.safe_load_all(f) if o]
        hns = {o["metadata"]["name"]: o for o in objs if o["kind"] == "HyperNode"}
        self.assertEqual(sorted(hns), ["s0", "s1", "s2", "s3", "spine"])
        self.assertEqual(hns["s1"]["apiVersion"], "topology.volcano.sh/v1alpha1")
        self.assertNotIn("namespace", hns["s1"]["metadata"])
        self.assertEqual(hns["s1"]["spec"], {"tier": 1, "tierName": "leaf", "members": [
            {"type": "Node", "selector": {"regexMatch": {"pattern": "^n[23]$"}}}]})
        pgs = {o["metadata"]["name"]: o for o in objs if o["kind"] == "PodGroup"}
        self.assertEqual(pgs["near"]["spec"]["networkTopology"], {"mode": "hard", "highestTierAllowed": 1})
        self.assertEqual(pgs["wide"]["spec"]["networkTopology"], {"mode": "hard", "highestTierName": "leaf"})

    def test_gangs_land_in_their_domain_and_a_hypernode_edit_takes_effect(self):
        with Emulator(load=[self.manifests, self.extra]) as emu:
            # Bad objects the API server lets through (the emulator does not validate CRDs): a
            # HyperNode without a tier, a Numatopology of the wrong shape and one whose cpuset
            # does not parse are each logged and skipped; the rest of the cluster schedules.
            code, out, _ = emu.post("/apis/topology.volcano.sh/v1alpha1/hypernodes",
                                    {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
                                     "metadata": {"name": "bad"},
                                     "spec": {"members": [{"type": "Node", "selector": {"exactMatch": {"name": "n4"}}}]}})
            self.assertEqual(code, 201, out)
            bad_numa = numatopology("n2")
            bad_numa["spec"]["numares"] = {"cpu": "0-3"}
            self.assertEqual(emu.post("/apis/nodeinfo.volcano.sh/v1alpha1/numatopologies", bad_numa)[0], 201)
            self.assertEqual(emu.post("/apis/nodeinfo.volcano.sh/v1alpha1/numatopologies",
                                      numatopology("n3", allocatable="3-0"))[0], 201)

            serve = Serve(emu, self.conf)
            try:
                # 1. `near` lands inside one leaf; `wide` waits (no leaf has two free nodes).
                def near_bound():
                    p = self.pods(emu)
                    nodes = [p[n]["spec"].get("nodeName") for n in ("near-0", "near-1")]
                    return nodes if all(nodes) else None
                nodes = wait_until(near_bound, timeout=60, what="gang near bound")
                self.assertEqual(LEAVES[nodes[0]], LEAVES[nodes[1]], f"near spans leaves: {nodes}")
                self.assertIn(LEAVES[nodes[0]], ("s0", "s1"))
                start = serve.sessions()
                wait_until(lambda: serve.sessions() >= start + 3, timeout=60, what="three more sessions")
                p = self.pods(emu)
                self.assertFalse(p["wide-0"]["spec"].get("nodeName"), "wide bound before the edit")
                self.assertFalse(p["wide-1"]["spec"].get("nodeName"), "wide bound before the edit")

                # Both CRDs are listed and watched.
                reqs = emu.stats()["requests"]
                for r in ("hypernodes", "numatopologies"):
                    self.assertGreaterEqual(reqs.get(f"list {r}", 0), 1, reqs)
                    self.assertGreaterEqual(reqs.get(f"watch {r}", 0), 1, reqs)
                log = serve.text()
                self.assertIn("hypernodes: skipping an object: hypernode bad: spec: has no tier", log)
                self.assertIn("numatopologies: skipping an object: numatopology n2: spec.numares.cpu: "
                              "must be an object, got a string", log)
                self.assertIn("numatopologies: skipping an object: numatopology n3: spec.numares.cpu.allocatable: "
                              "`3-0` is not a cpuset (`0-3,8`): bad part `3-0`", log)

                # 2. The edit, with kubectl: s2 now holds n4 and n5, s3 is gone.
                s2 = json.loads(self.kubectl(emu, "get", "hypernode", "s2", "-o", "json").stdout)
                s2["spec"]["members"] = [{"type": "Node", "selector": {"regexMatch": {"pattern": "^n[45]$"}}}]
                edited = os.path.join(self.tmp, "s2.json")
                with open(edited, "w") as f:
                    json.dump(s2, f)
                self.kubectl(emu, "replace", "-f", edited)
                self.kubectl(emu, "delete", "hn", "s3")
                edit_at = serve.sessions()

                def wide_bound():
                    p = self.pods(emu)
                    nodes = [p[n]["spec"].get("nodeName") for n in ("wide-0", "wide-1")]
                    return nodes if all(nodes) else None
                wide = wait_until(wide_bound, timeout=60, what="gang wide bound after the edit")
                self.assertEqual(sorted(wide), ["n4", "n5"])
                # Within a few sessions of the edit (the watch delivers it at once).
                self.assertLessEqual(serve.sessions(), edit_at + 4, "the edit took too long to take effect")
                self.assertEqual(sorted(self.near_nodes(emu)), sorted(nodes))  # near did not move
                # The HyperNodes the session placed the jobs under (logged at -v 2).
                leaf = LEAVES[nodes[0]]
                wait_until(lambda: re.search(rf"allocated HyperNodes: c1/near={leaf}, c1/wide=s2\b", serve.text()),
                           timeout=30, what="the allocated HyperNodes in the log")

                # 3. The PodGroups keep their spec and annotations through the status writes, and
                # no allocated-HyperNode annotation is written (Volcano keeps it in memory).
                time.sleep(1.5)
                code, pgs, _ = emu.get("/apis/scheduling.volcano.sh/v1beta1/namespaces/c1/podgroups")
                self.assertEqual(code, 200)
                pgs = {g["metadata"]["name"]: g for g in pgs["items"]}
                self.assertEqual(pgs["wide"]["spec"]["networkTopology"], {"mode": "hard", "highestTierName": "leaf"})
                self.assertEqual(pgs["near"]["metadata"].get("annotations"), {"team": "a"})
                self.assertEqual(pgs["wide"]["metadata"].get("annotations"), {"team": "b"})
                writes = [w for w in emu.control("writes")["writes"] if "/podgroups/" in w["path"]]
                self.assertTrue(writes, "no PodGroup status was written")
                self.assertTrue(any(pgs[g].get("status", {}).get("phase") for g in pgs))
            finally:
                self.assertEqual(serve.stop(), 0, serve.text())

    def test_kubectl_gets_and_lists_the_topology_objects(self):
        with Emulator(load=[self.manifests, self.extra]) as emu:
            out = self.kubectl(emu, "get", "hypernodes").stdout
            self.assertRegex(out, r"(?m)^NAME\s+TIER\s+TIERNAME\s+NODECOUNT\s+AGE")
            self.assertRegex(out, r"(?m)^spine\s+2\s+spine\s")
            self.assertRegex(out, r"(?m)^s1\s+1\s+leaf\s")
            names = self.kubectl(emu, "get", "hn", "-o", "name").stdout.split()
            self.assertEqual(sorted(names), [f"hypernode.topology.volcano.sh/{n}" for n in ("s0", "s1", "s2", "s3", "spine")])
            s0 = json.loads(self.kubectl(emu, "get", "hypernode.topology.volcano.sh", "s0", "-o", "json").stdout)
            self.assertEqual(s0["spec"]["members"][1], {"type": "Node", "selector": {"exactMatch": {"name": "n1"}}})
            numa = json.loads(self.kubectl(emu, "get", "numatopologies", "-o", "json").stdout)["items"]
            self.assertEqual([n["metadata"]["name"] for n in numa], ["n0", "n1"])
            self.assertEqual(numa[0]["spec"]["policies"]["TopologyManagerPolicy"], "single-numa-node")
            one = json.loads(self.kubectl(emu, "get", "numatopo", "n1", "-o", "json").stdout)
            self.assertEqual(one["spec"]["numares"]["cpu"], {"allocatable": "0-3", "capacity": 4})
            # Cluster-scoped: a namespace flag does not hide them, and the API has no namespaced path.
            self.assertIn("s0", self.kubectl(emu, "get", "hn", "-n", "c1").stdout)
            code, _, _ = emu.get("/apis/topology.volcano.sh/v1alpha1/namespaces/c1/hypernodes/s0")
            self.assertEqual(code, 404)
            # kubectl apply of an edit, and the watch sees it.
            self.kubectl(emu, "patch", "hn", "s0", "--type", "merge", "-p", '{"spec": {"tierName": "rack"}}')
            s0 = json.loads(self.kubectl(emu, "get", "hn", "s0", "-o", "json").stdout)
            self.assertEqual(s0["spec"]["tierName"], "rack")


# numa-aware through kiln serve: two 4-cpu nodes whose kubelets run the static CPU manager under
# single-numa-node, two CPUs per NUMA node. On m0 all four CPUs are free; on m1 only CPUs 1 and 3,
# one per NUMA node. A Guaranteed pod of two containers (1 cpu + 1 cpu, requests = limits) asking
# for single-numa-node needs two free CPUs in one NUMA node: m0 holds them, m1 does not (the
# kubelet would refuse it there). The same pod pinned to m1 waits with numa-aware's reason; a
# Burstable twin (its second container sets no limits) is not judged and binds on m1.
NUMA_SCENARIO = """name: serve-numa
now: "2025-01-01T00:00:00Z"
conf: |
""" + textwrap.indent(scheduler_conf("allocate", ["priority", "gang", "predicates", "numa-aware"]), "  ") + """cluster:
  queues: [{name: q1, weight: 1}]
  nodes:
  - {name: m0, allocatable: {cpu: "4", memory: 16Gi}}
  - {name: m1, allocatable: {cpu: "4", memory: 16Gi}}
"""


def numa_pod(name, node=None, burstable=False):
    def container(c, cpu):
        resources = {"cpu": cpu, "memory": "1Gi"}
        return {"name": c, "image": "pause", "resources": {"requests": resources, "limits": resources}}
    # The Burstable twin asks for the same 2 cpu in its first container and nothing in its
    # second: the summed limits equal the summed requests, but a container without cpu and memory
    # limits makes the pod Burstable in Kubernetes.
    containers = ([container("a", "2"), {"name": "b", "image": "pause"}] if burstable
                  else [container("a", "1"), container("b", "1")])
    spec = {"schedulerName": "volcano", "containers": containers}
    if node:
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "c1",
                         "annotations": {"volcano.sh/numa-topology-policy": "single-numa-node"}},
            "spec": spec}


class Numa(unittest.TestCase):
    maxDiff = None

    def test_guaranteed_pod_lands_where_its_numa_cells_fit(self):
        tmp = tempfile.mkdtemp(prefix="serve-numa-")
        try:
            conf, manifests = served_scenario(KILN, tmp, NUMA_SCENARIO)
            extra = os.path.join(tmp, "numa.yaml")
            with open(extra, "w") as f:
                yaml.safe_dump_all([numatopology("m0", reserved="0"), numatopology("m1", allocatable="1,3", reserved="0")], f)
            with Emulator(load=[manifests, extra]) as emu:
                code, out, _ = emu.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                               "metadata": {"name": "c1"}})
                self.assertEqual(code, 201, out)
                for pod in (numa_pod("aligned"), numa_pod("pinned", node="m1"), numa_pod("burst", node="m1", burstable=True)):
                    code, out, _ = emu.post("/api/v1/namespaces/c1/pods", pod)
                    self.assertEqual(code, 201, out)
                serve = Serve(emu, conf)
                try:
                    def pods():
                        code, out, _ = emu.get("/api/v1/namespaces/c1/pods")
                        self.assertEqual(code, 200, out)
                        return {p["metadata"]["name"]: p for p in out["items"]}

                    def bound(name):
                        return lambda: pods()[name]["spec"].get("nodeName")
                    self.assertEqual(wait_until(bound("aligned"), timeout=60, what="aligned bound"), "m0")
                    # Judged by its QoS class as Kubernetes computes it, not by its summed containers.
                    self.assertEqual(wait_until(bound("burst"), timeout=60, what="burst bound"), "m1")
                    p = pods()
                    self.assertEqual(p["aligned"]["status"]["qosClass"], "Guaranteed")
                    self.assertEqual(p["burst"]["status"]["qosClass"], "Burstable")

                    def refused():
                        c = [c for c in pods()["pinned"].get("status", {}).get("conditions", [])
                             if c.get("type") == "PodScheduled"]
                        return c[0] if c and c[0].get("status") == "False" else None
                    cond = wait_until(refused, timeout=60, what="pinned marked Unschedulable")
                    self.assertIn("cannot be assigned by numa", cond.get("message", ""))
                    self.assertFalse(pods()["pinned"]["spec"].get("nodeName"))
                finally:
                    self.assertEqual(serve.stop(), 0, serve.text())
        finally:
            subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    unittest.main()
