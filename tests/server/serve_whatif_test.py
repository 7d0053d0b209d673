#!/usr/bin/env python3
"""`POST /whatif`, `kiln whatif` and `GET /explain` on `kiln serve`, against the API-server emulator.

The cluster is examples/scenarios/training-cluster.yaml, served with --dry-run so that it stands
still. A what-if must answer what `kiln simulate` decides on the `kiln snapshot` output with the
same job added to it: the job's placements and pipelined pods, the evictions the job causes (those
of that session that the session without the job does not make: the cluster's own preempt and
reclaim evict pods in every session), and whether enqueue admitted the job. A Volcano Job is
answered as the PodGroup and pods its controller would make. Three jobs: one that fits, one that enqueue refuses (its
minResources ask for 16 GPUs; overcommit has 6.4 idle), one admitted that fits no node (pending
reasons). Bad input is a 400 that says where and what, changes nothing, and the server goes on
scheduling. GET /explain answers for a pod, for a PodGroup with no pods (research/vit-huge), and
404 for a name the cluster does not have.

Run with Debian's python3 (PyYAML): serve_whatif_test.py KILN [TestCase.test_name]
"""
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import unittest
import urllib.error
import urllib.request

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "emulator"))
sys.path.insert(0, HERE)
from emulator_fixture import Emulator, wait_until  # noqa: E402
from serve_util import DryRunServe, kiln_from_argv  # noqa: E402

KILN = kiln_from_argv(ROOT)
SCENARIO = os.path.join(ROOT, "examples", "scenarios", "training-cluster.yaml")
SESSION = re.compile(r"session (\d+) \(generation")
GPU_TOLERATION = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def job(name, ns, queue, pods, min_member, min_resources=None, node_selector=None,
        tolerations=None):
    """The same job as Kubernetes objects (a List, what `kiln whatif` sends) and as scenario
    entries (what `kiln simulate` reads). `pods`: requests of each pod."""
    pg = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
          "metadata": {"name": name, "namespace": ns},
          "spec": {"queue": queue, "minMember": min_member}}
    spg = {"name": name, "namespace": ns, "queue": queue, "minMember": min_member}
    if min_resources:
        pg["spec"]["minResources"] = min_resources
        spg["minResources"] = min_resources
    items, spods = [pg], []
    for i, req in enumerate(pods):
        spec = {"schedulerName": "volcano",
                "containers": [{"name": "main", "image": "busybox", "resources": {"requests": req}}]}
        sp = {"name": f"{name}-{i}", "namespace": ns, "group": name, "requests": req, "image": "busybox"}
        if node_selector:
            spec["nodeSelector"] = node_selector
            sp["nodeSelector"] = node_selector
        if tolerations:
            spec["tolerations"] = tolerations
            sp["tolerations"] = tolerations
        items.append({"apiVersion": "v1", "kind": "Pod",
                      "metadata": {"name": f"{name}-{i}", "namespace": ns,
                                   "annotations": {"scheduling.k8s.io/group-name": name}},
                      "spec": spec})
        spods.append(sp)
    return {"apiVersion": "v1", "kind": "List", "items": items}, spg, spods


FITS = job("whatif-small", "dev", "default", [{"cpu": "2", "memory": "4Gi"}] * 2, 2)
REFUSED = job("whatif-big", "research", "research", [{"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "8"}] * 2,
              2, min_resources={"cpu": "16", "memory": "128Gi", "nvidia.com/gpu": "16"},
              tolerations=GPU_TOLERATION)
NO_NODE = job("whatif-nvme", "dev", "default", [{"cpu": "1", "memory": "1Gi"}], 1,
              node_selector={"disktype": "nvme"})


def http(port, method, path, body=None, ctype=None):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, method=method)
    if ctype:
        req.add_header("Content-Type", ctype)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read().decode(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), dict(e.headers)


class Serve(DryRunServe):
    """One `kiln serve --dry-run` process, its log kept."""

    def __init__(self, args):
        super().__init__(KILN, args)



class WhatIf(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        manifests = os.path.join(cls.tmp.name, "m.yaml")
        cls.conf = os.path.join(cls.tmp.name, "scheduler.conf")
        subprocess.run([KILN, "export-manifests", SCENARIO, "-o", manifests], check=True)
        with open(SCENARIO) as f:
            conf = yaml.safe_load(f).get("conf")
        if conf is None:
            with open(os.path.join(ROOT, "examples", "conf", "volcano-default.conf")) as f:
                conf = f.read()
        with open(cls.conf, "w") as f:
            f.write(conf)
        cls.emu = Emulator(load=[manifests]).__enter__()
        cls.serve = Serve(["--kubeconfig", cls.emu.kubeconfig, "--conf", cls.conf, "--schedule-period", "1s"])
        wait_until(lambda: cls.serve.sessions() >= 1, timeout=60, what="the first session")

    @classmethod
    def tearDownClass(cls):
        try:
            rc = cls.serve.stop()
            assert rc == 0, cls.serve.text()
        finally:
            cls.emu.__exit__(None, None, None)
            cls.tmp.cleanup()

    def snapshot(self):
        path = os.path.join(self.tmp.name, "snapshot.yaml")
        r = subprocess.run([KILN, "snapshot", "--server", f"127.0.0.1:{self.serve.port}", "-o", path],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(path) as f:
            return yaml.safe_load(f)

    def simulate(self, doc, name):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            yaml.safe_dump(doc, f, sort_keys=False)
        r = subprocess.run([KILN, "simulate", path, "-o", "json"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)["sessions"][0]

    def simulate_with(self, spg, spods):
        """The session of `kiln simulate` on the snapshot with the job added, and without it."""
        doc = self.snapshot()
        without = self.simulate(doc, "without-job.yaml")
        doc["cluster"].setdefault("podGroups", []).append(spg)
        doc["cluster"].setdefault("pods", []).extend(spods)
        return self.simulate(doc, "with-job.yaml"), without

    def whatif(self, objects, fmt="yaml"):
        if fmt == "json":
            body, ctype = json.dumps(objects).encode(), "application/json"
        else:
            body, ctype = yaml.safe_dump(objects).encode(), "application/yaml"
        status, text, _ = http(self.serve.port, "POST", "/whatif", body, ctype)
        self.assertEqual(status, 200, text)
        return json.loads(text)

    def assert_equal_to_simulate(self, spec, fmt="yaml"):
        objects, spg, spods = spec
        got = self.whatif(objects, fmt)
        want, without = self.simulate_with(spg, spods)
        mine = {f"{p['namespace']}/{p['name']}" for p in spods}
        self.assertEqual(got["placements"], {k: v for k, v in want["binds"].items() if k in mine})
        self.assertEqual(got["pipelined"], {k: v for k, v in want.get("pipelined", {}).items() if k in mine})
        # The job's evictions: the session with it evicts them, the same session without it does not.
        caused = set(want.get("evictions", [])) - set(without.get("evictions", []))
        self.assertEqual(sorted(got["evictions"]), sorted(caused))
        self.evicted_anyway = without.get("evictions", [])
        uid = f"{spg['namespace']}/{spg['name']}"
        self.assertEqual(got["admitted"], want["podGroupPhases"][uid] != "Pending", want["podGroupPhases"])
        for key in ("admitted", "admission", "placements", "pipelined", "evictions", "queuePosition", "reasons"):
            self.assertIn(key, got)
        return got

    def test_a_job_that_fits_is_placed_as_simulate_places_it(self):
        got = self.assert_equal_to_simulate(FITS)
        # The cluster's own preempt and reclaim evict pods in every session (the dry run repeats
        # it): not the job's doing, so not in its answer.
        self.assertGreater(len(self.evicted_anyway), 0)
        self.assertEqual(got["evictions"], [])
        self.assertTrue(got["admitted"])
        self.assertEqual(len(got["placements"]), 2, got)
        self.assertEqual(got["reasons"], {})
        self.assertGreaterEqual(got["queuePosition"], 1)
        # JSON in, the same answer out.
        again = self.whatif(FITS[0], fmt="json")
        self.assertEqual(again["placements"], got["placements"])

    def test_a_job_enqueue_refuses_names_the_plugin(self):
        got = self.assert_equal_to_simulate(REFUSED)
        self.assertFalse(got["admitted"])
        self.assertIn("overcommit", got["admission"]["plugin"].split(","), got)
        self.assertIn("enqueue", got["admission"]["message"])
        # overcommit's stable code (docs/reasons.md), not a text to parse.
        self.assertEqual(got["admission"]["code"], "EnqueueRejectedOvercommit", got)
        self.assertEqual(got["placements"], {})
        for pod in ("research/whatif-big-0", "research/whatif-big-1"):
            self.assertIn(pod, got["reasons"])
            self.assertIn("not admitted", got["reasons"][pod][0]["message"])
            self.assertEqual(got["reasons"][pod][0]["code"], "EnqueueRejectedOvercommit")

    def test_a_job_that_fits_no_node_says_why(self):
        got = self.assert_equal_to_simulate(NO_NODE)
        self.assertTrue(got["admitted"])
        self.assertEqual(got["placements"], {})
        reasons = got["reasons"]["dev/whatif-nvme-0"]
        text = " ".join(r["message"] for r in reasons)
        self.assertIn("node(s) didn't match Pod's node affinity/selector", text)
        for r in reasons:
            self.assertEqual(set(r), {"code", "message"})
        codes = {r["code"] for r in reasons}
        self.assertIn("NodeAffinityMismatch", codes, reasons)
        self.assertNotIn("", codes)
        self.assertNotIn("Unspecified", codes, reasons)

    def test_a_volcano_job_is_expanded_as_its_controller_would(self):
        def task(name, replicas, cpu, memory):
            return {"name": name, "replicas": replicas,
                    "template": {"spec": {"containers": [{"name": name, "image": "busybox",
                                 "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}}}
        vcjob = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                 "metadata": {"name": "whatif-vcjob", "namespace": "dev"},
                 "spec": {"minAvailable": 3, "queue": "default",
                          "tasks": [task("ps", 1, "1", "2Gi"), task("worker", 2, "2", "4Gi")]}}
        # What the controller makes of it, in scenario form: the PodGroup named after the Job (no
        # uid yet), minResources of its three pods, the pods <job>-<task>-<index>.
        spg = {"name": "whatif-vcjob", "namespace": "dev", "queue": "default", "minMember": 3,
               "minTaskMember": {"ps": 1, "worker": 2},
               "minResources": {"cpu": "5", "memory": "10Gi", "pods": "3"}}
        spods = [{"name": f"whatif-vcjob-{t}-{i}", "namespace": "dev", "group": "whatif-vcjob", "task": t,
                  "requests": {"cpu": c, "memory": m}, "image": "busybox"}
                 for t, n, c, m in (("ps", 1, "1", "2Gi"), ("worker", 2, "2", "4Gi")) for i in range(n)]
        got = self.assert_equal_to_simulate((vcjob, spg, spods))
        self.assertEqual(got["job"], "dev/whatif-vcjob")
        self.assertEqual(set(got["placements"]) | set(got["pipelined"]) | set(got["reasons"]),
                         {"dev/whatif-vcjob-ps-0", "dev/whatif-vcjob-worker-0", "dev/whatif-vcjob-worker-1"})
        # A bad Job is a 400 naming the field.
        bad = dict(vcjob, spec=dict(vcjob["spec"], tasks=[dict(task("ps", 1, "1", "2Gi"), replicas="one")]))
        status, text, _ = http(self.serve.port, "POST", "/whatif", json.dumps(bad).encode(), "application/json")
        self.assertEqual(status, 400, text)
        self.assertIn("object 1 (Job dev/whatif-vcjob): spec.tasks[0].replicas: must be an integer",
                      json.loads(text)["error"])

    def test_kiln_whatif_prints_json_and_a_table(self):
        path = os.path.join(self.tmp.name, "job.yaml")
        with open(path, "w") as f:
            yaml.safe_dump(REFUSED[0], f)
        server = f"http://127.0.0.1:{self.serve.port}"
        r = subprocess.run([KILN, "whatif", "--server", server, path], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse(json.loads(r.stdout)["admitted"])
        r = subprocess.run([KILN, "whatif", "--server", server, path, "-o", "table"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("PodGroup research/whatif-big: NOT admitted by overcommit", r.stdout)
        self.assertIn("research/whatif-big-0", r.stdout)

    def test_bad_input_is_a_400_and_scheduling_goes_on(self):
        port = self.serve.port
        cases = [
            (b"kind: Pod\nmetadata: {name: x\n", "application/yaml", "not YAML"),
            (b"{\"kind\": \"Deployment\", \"metadata\": {\"name\": \"d\"}}", "application/json",
             "kind `Deployment` is not read"),
            (yaml.safe_dump({"kind": "Pod", "metadata": {"name": "p", "namespace": "dev"},
                             "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "lots"}}}]}}).encode(),
             "application/yaml", "object 1 (Pod dev/p)"),
            # A pod the cluster already has.
            (yaml.safe_dump({"kind": "Pod", "metadata": {"name": "embeddings-batch-0", "namespace": "prod"},
                             "spec": {"containers": [{"name": "c"}]}}).encode(),
             "application/yaml", "already exists"),
        ]
        for body, ctype, expect in cases:
            with self.subTest(expect=expect):
                status, text, _ = http(port, "POST", "/whatif", body, ctype)
                self.assertEqual(status, 400, text)
                self.assertIn(expect, json.loads(text)["error"])
        status, text, _ = http(port, "POST", "/whatif", b"{}", "text/plain")
        self.assertEqual(status, 415, text)
        status, text, headers = http(port, "POST", "/snapshot", b"{}", "application/json")
        self.assertEqual(status, 405, text)
        # A body over 1 MiB is refused on its Content-Length, before it is sent.
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(b"POST /whatif HTTP/1.1\r\nHost: x\r\nContent-Type: application/yaml\r\n"
                         b"Content-Length: 2097152\r\n\r\n")
            reply = sock.recv(4096).decode()
        self.assertTrue(reply.startswith("HTTP/1.1 413"), reply)
        # Nothing was applied, and the live loop goes on.
        before = self.serve.sessions()
        wait_until(lambda: self.serve.sessions() > before, timeout=30, what="a session after bad input")
        snap = self.snapshot()
        names = {p["name"] for p in snap["cluster"]["pods"]}
        self.assertFalse(any(n.startswith("whatif-") for n in names), names)
        self.assertNotRegex(self.serve.text(), r"would bind \S*whatif")
        status, metrics, _ = http(port, "GET", "/metrics")
        self.assertRegex(metrics, r'kiln_whatif_requests_total\{endpoint="whatif",outcome="bad_input"\} [1-9]')

    def test_explain_a_pod(self):
        status, text, _ = http(self.serve.port, "GET", "/explain?pod=prod/llama-finetune-master-0")
        self.assertEqual(status, 200, text)
        doc = json.loads(text)
        self.assertEqual(list(doc["tasks"]), ["prod/llama-finetune-master-0"])
        task = doc["tasks"]["prod/llama-finetune-master-0"]
        self.assertEqual(task["job"], "prod/llama-finetune")
        self.assertIn("gpu-0", task["nodes"])
        self.assertEqual(list(doc["jobs"]), ["prod/llama-finetune"])
        self.assertEqual(list(doc["queues"]), ["prod"])

    def test_explain_a_podgroup_with_no_pods(self):
        status, text, _ = http(self.serve.port, "GET", "/explain?podgroup=research/vit-huge")
        self.assertEqual(status, 200, text)
        doc = json.loads(text)
        self.assertEqual(doc["tasks"], {})
        self.assertEqual(doc["jobs"]["research/vit-huge"]["phase"], "Pending")
        self.assertEqual(list(doc["queues"]), ["research"])

    def test_explain_unknown_names_are_404(self):
        for q in ("pod=dev/nope", "podgroup=dev/nope"):
            status, text, _ = http(self.serve.port, "GET", "/explain?" + q)
            self.assertEqual(status, 404, text)
            self.assertIn("dev/nope", json.loads(text)["error"])
        status, text, _ = http(self.serve.port, "GET", "/explain")
        self.assertEqual(status, 400, text)


if __name__ == "__main__":
    unittest.main()
