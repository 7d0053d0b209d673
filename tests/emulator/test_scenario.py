#!/usr/bin/python3
"""`kiln export-manifests`: a Kiln scenario becomes Kubernetes objects the emulator serves.

The kiln binary is $KILN (ctest sets it), else build/kiln of the checkout.
"""

import concurrent.futures
import glob
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from emulator_fixture import (EMULATOR, KUBECTL_VERSIONS, ROOT, Emulator,  # noqa: E402
                              kubectl_path, wait_until)

sys.path.insert(0, os.path.dirname(EMULATOR))
import kube_emulator  # noqa: E402

TRAINING = os.path.join(ROOT, "examples", "scenarios", "training-cluster.yaml")
KILN = os.environ.get("KILN") or os.path.join(ROOT, "build", "kiln")


def export(*args, **kw):
    return subprocess.run([KILN, "export-manifests", *args], **kw)


class Scenario(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="scenario-test-")
        cls.manifests = os.path.join(cls.tmp, "training.yaml")
        cls.conf = os.path.join(cls.tmp, "scheduler.conf")
        export(TRAINING, "-o", cls.manifests, "--conf-out", cls.conf, check=True)
        cls.emu = Emulator(load=[cls.manifests])

    @classmethod
    def tearDownClass(cls):
        cls.emu.stop()
        subprocess.run(["rm", "-rf", cls.tmp])

    def items(self, path):
        code, out, _ = self.emu.get(path)
        self.assertEqual(code, 200, out)
        return out["items"]

    def test_training_cluster_objects(self):
        nodes = {n["metadata"]["name"]: n for n in self.items("/api/v1/nodes")}
        self.assertEqual(sorted(nodes), ["cpu-0", "cpu-1", "gpu-0", "gpu-1", "gpu-2", "gpu-3"])
        gpu0 = nodes["gpu-0"]
        self.assertEqual(gpu0["status"]["allocatable"],
                         {"cpu": "96", "memory": str(1024 << 30), "nvidia.com/gpu": "8", "pods": "110"})
        self.assertEqual(gpu0["status"]["capacity"], gpu0["status"]["allocatable"])
        self.assertEqual(gpu0["spec"]["taints"], [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}])
        self.assertEqual(gpu0["metadata"]["labels"]["nvidia.com/gpu.product"], "NVIDIA-A100-SXM4-80GB")

        queues = {q["metadata"]["name"]: q for q in self.items("/apis/scheduling.volcano.sh/v1beta1/queues")}
        self.assertEqual(sorted(queues), ["default", "dev", "prod", "research"])
        # cpu and memory are dimensions of every Kiln resource, so the capability names them (0:
        # unlimited for proportion, as Volcano reads an absent one).
        self.assertEqual(queues["research"]["spec"], {"weight": 2, "reclaimable": True, "capability": {
            "cpu": "0", "memory": "0", "nvidia.com/gpu": "24"}})
        self.assertEqual(queues["prod"]["status"], {"state": "Open"})
        # No uid in the manifests: the API server gives each object its own, as a real one does.
        self.assertRegex(queues["prod"]["metadata"]["uid"], r"^[0-9a-f]{8}-[0-9a-f]{4}-")

        pgs = {f'{g["metadata"]["namespace"]}/{g["metadata"]["name"]}': g
               for g in self.items("/apis/scheduling.volcano.sh/v1beta1/podgroups")}
        self.assertEqual(len(pgs), 8)  # the two plain pods get no PodGroup object
        llama = pgs["prod/llama-finetune"]
        self.assertEqual(llama["spec"], {"minMember": 3, "queue": "prod", "priorityClassName": "high-priority",
                                         "minResources": {"cpu": "24", "memory": str(192 << 30), "nvidia.com/gpu": "6"}})
        self.assertEqual(llama["status"]["phase"], "Inqueue")
        self.assertEqual(llama["metadata"]["creationTimestamp"], "2025-03-03T08:55:00Z")
        self.assertEqual(pgs["research/vit-huge"]["status"]["phase"], "Pending")

        pods = {f'{p["metadata"]["namespace"]}/{p["metadata"]["name"]}': p for p in self.items("/api/v1/pods")}
        self.assertEqual(len(pods), 31)
        e0 = pods["prod/embeddings-batch-0"]
        self.assertRegex(e0["metadata"]["uid"], r"^[0-9a-f]{8}-[0-9a-f]{4}-")
        self.assertEqual(e0["metadata"]["annotations"], {"volcano.sh/preemptable": "false",
                                                         "scheduling.k8s.io/group-name": "embeddings-batch"})
        self.assertEqual((e0["spec"]["nodeName"], e0["status"]["phase"]), ("gpu-0", "Running"))
        self.assertEqual((e0["spec"]["priority"], e0["spec"]["priorityClassName"]), (10, "low-priority"))
        self.assertEqual(e0["spec"]["schedulerName"], "volcano")
        self.assertEqual(e0["spec"]["containers"][0]["resources"]["requests"],
                         {"cpu": "8", "memory": str(64 << 30), "nvidia.com/gpu": "2"})
        self.assertEqual(e0["spec"]["tolerations"], [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])
        warmer = pods["data/cache-warmer"]
        self.assertNotIn("annotations", warmer["metadata"])  # no group: no annotation
        self.assertNotIn("priorityClassName", warmer["spec"])
        self.assertEqual(warmer["spec"]["priority"], 100)  # the globalDefault class, as the loader does
        self.assertEqual(warmer["spec"]["nodeSelector"], {"disktype": "nvme"})
        self.assertNotIn("nodeName", warmer["spec"])
        self.assertEqual(warmer["status"]["phase"], "Pending")
        exporter = pods["monitoring/node-exporter"]
        self.assertNotIn("resources", exporter["spec"]["containers"][0])
        self.assertEqual(exporter["status"]["qosClass"], "BestEffort")

        classes = {c["metadata"]["name"]: c for c in self.items("/apis/scheduling.k8s.io/v1/priorityclasses")}
        self.assertTrue(classes["normal"]["globalDefault"])
        self.assertEqual(classes["high-priority"]["value"], 1000)
        with open(self.conf) as f:
            self.assertIn('actions: "enqueue, allocate, preempt, reclaim, backfill"', f.read())

    def test_kubectl_shows_the_scenario(self):
        v = KUBECTL_VERSIONS[-1]
        out = subprocess.run([kubectl_path(v), "--kubeconfig", self.emu.kubeconfig, "--cache-dir",
                              os.path.join(self.tmp, "cache"), "get", "podgroups", "-A"],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertRegex(out.stdout, r"(?m)^research\s+vit-huge\s+Pending\s+2\s")
        self.assertRegex(out.stdout, r"(?m)^prod\s+llama-finetune\s+Inqueue\s+3\s")

    def test_every_scenario_converts_and_loads(self):
        """Every scenario of the test suite and the examples becomes objects the emulator accepts."""
        files = sorted(glob.glob(os.path.join(ROOT, "tests", "scenarios", "**", "*.yaml"), recursive=True) +
                       glob.glob(os.path.join(ROOT, "tests", "volcano-compat", "**", "*.yaml"), recursive=True) +
                       glob.glob(os.path.join(ROOT, "examples", "scenarios", "*.yaml")))
        self.assertGreater(len(files), 20)
        opts = kube_emulator.make_parser().parse_args(["--history", "1000000"])
        # One kiln process per scenario, a few at a time: the exports are most of the test's time.
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            exported = list(pool.map(lambda f: export(f, "--format", "json", capture_output=True,
                                                      text=True), files))
        for f, p in zip(files, exported):
            with self.subTest(scenario=os.path.relpath(f, ROOT)):
                self.assertEqual(p.returncode, 0, p.stderr)
                objs = json.loads(p.stdout)["items"]
                api = kube_emulator.Api(opts)
                for o in json.loads(json.dumps(objs)):
                    api.load(o)
                pods = api.store.objects[kube_emulator.POD.key]
                self.assertEqual(len(pods), sum(1 for o in objs if o["kind"] == "Pod"))

    def test_bad_scenarios_name_file_and_line(self):
        bad = os.path.join(self.tmp, "bad.yaml")
        with open(bad, "w") as f:
            f.write("name: x\ncluster:\n  nodes:\n  - name: n1\n    labels: {a: b}\n")
        p = export(bad, capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stderr.splitlines()[0], f"{bad}:4:5: error: node `n1` has no `allocatable`")
        with open(bad, "w") as f:
            f.write("name: x\ncluster: {nodes: [\n")
        p = export(bad, capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn(f"{bad}:3:1: error: invalid YAML", p.stderr)

    def test_kubelet_mode_runs_a_converted_scenario(self):
        scenario = os.path.join(self.tmp, "small.yaml")
        with open(scenario, "w") as f:
            f.write('''name: small
now: "2025-01-01T00:00:00Z"
cluster:
  nodes: [{name: n1, allocatable: {cpu: "4"}}]
  pods:
  - {name: old, node: n1, phase: Running, deleting: true, requests: {cpu: "1"}}
  - {name: job, duration: 300ms, requests: {cpu: "1"}}
''')
        out = os.path.join(self.tmp, "small-manifests.yaml")
        export(scenario, "-o", out, check=True)
        with Emulator("--kubelet", "--kubelet-delay", "0.1", load=[out], tls=False) as emu:
            pod = lambda n: emu.get(f"/api/v1/namespaces/default/pods/{n}")
            self.assertEqual(pod("job")[1]["metadata"]["annotations"], {"kiln.sh/duration": "300ms"})
            wait_until(lambda: pod("old")[0] == 404, timeout=30, what="the terminating pod removed")
            self.assertEqual(emu.post("/api/v1/namespaces/default/pods/job/binding",
                                      {"target": {"kind": "Node", "name": "n1"}})[0], 201)
            # 300 ms of Running can pass between two polls of a loaded machine: wait for the end
            # and check that it ran (startTime, terminated container) on the way.
            done = wait_until(lambda: (lambda p: p if p["status"]["phase"] == "Succeeded" else None)(pod("job")[1]),
                              timeout=30, what="job Succeeded")
            self.assertTrue(done["status"]["startTime"])
            self.assertEqual(done["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"], 0)

    def test_json_list_output_loads(self):
        out = os.path.join(self.tmp, "list.json")
        export(TRAINING, "--format", "json", "-o", out, check=True)
        with open(out) as f:
            doc = json.load(f)
        self.assertEqual(doc["kind"], "List")
        with Emulator(load=[out], tls=False) as emu:
            code, pods, _ = emu.get("/api/v1/namespaces/research/pods?labelSelector=")
            self.assertEqual(len(pods["items"]), 8)


if __name__ == "__main__":
    unittest.main()
