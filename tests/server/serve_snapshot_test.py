#!/usr/bin/env python3
"""`GET /snapshot` on `kiln serve` and `kiln snapshot`, against the API-server emulator.

The live cluster comes back as a scenario that `kiln simulate` replays to the decisions kiln serve
makes next on the same state. kiln serve runs with --dry-run, so the cluster does not change
between sessions: the snapshot is taken after one session, and the session after it must decide
exactly what the replay decides (binds, evictions, pipelined pods). The snapshot carries nothing
secret: a pod applied with kubectl (whose last-applied annotation copies the pod, environment
values included) leaves only what the scheduler reads in it. (Secrets are never read: the
scheduler neither lists them nor is granted them in deploy/.) A binding with no snapshot to
give (a scenario served directly) answers 404, and `kiln snapshot` says so and writes nothing.

Run with Debian's python3 (PyYAML): serve_snapshot_test.py KILN [TestCase.test_name]
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "emulator"))
from emulator_fixture import Emulator, wait_until  # noqa: E402
from serve_fixtures import cluster_inputs, scenario_conf  # noqa: E402
from serve_util import DryRunServe, kiln_from_argv  # noqa: E402

KILN = kiln_from_argv(ROOT)
KUBECTL = "/usr/lib/google-cloud-sdk/bin/kubectl"
SCENARIOS = [os.path.join(ROOT, "examples", "scenarios", name)
             for name in ("training-cluster.yaml", "topology-cluster.yaml")]

SESSION = re.compile(r"session (\d+) \(generation")
BIND = re.compile(r"dry-run: would bind (\S+) to (\S+)")
EVICT = re.compile(r"dry-run: would evict (\S+)")
NOMINATE = re.compile(r"dry-run: would nominate (\S+) for (\S+)")


class Serve(DryRunServe):
    """One `kiln serve --dry-run` process; its log split into sessions."""

    def __init__(self, args):
        super().__init__(KILN, args)

    def sessions(self):
        """Each finished session's decisions, in order (the dry-run lines before its log line)."""
        out, cur = [], {"binds": {}, "evictions": set(), "pipelined": {}}
        for line in list(self.log):
            if m := BIND.search(line):
                cur["binds"][m.group(1)] = m.group(2)
            elif m := EVICT.search(line):
                cur["evictions"].add(m.group(1))
            elif m := NOMINATE.search(line):
                cur["pipelined"][m.group(2)] = m.group(1)
            elif SESSION.search(line):
                out.append(cur)
                cur = {"binds": {}, "evictions": set(), "pipelined": {}}
        return out



def simulate(scenario):
    r = subprocess.run([KILN, "simulate", scenario, "-o", "json"], check=True, capture_output=True, text=True)
    return json.loads(r.stdout)["sessions"][0]


def kubectl(emu, *args, stdin=None):
    return subprocess.run([KUBECTL, "--kubeconfig", emu.kubeconfig, *args], input=stdin,
                          check=True, capture_output=True, text=True).stdout


SECRET_POD = """apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  schedulerName: volcano
  containers:
  - name: main
    image: nginx
    env: [{name: API_TOKEN, value: hunter2-env-value}]
    resources: {requests: {cpu: 100m}}
"""


class Snapshot(unittest.TestCase):
    def replay(self, scenario):
        with tempfile.TemporaryDirectory() as tmp:
            manifests, conf = cluster_inputs(KILN, tmp, scenario)
            snap = os.path.join(tmp, "snapshot.yaml")
            with Emulator(load=[manifests]) as emu:
                serve = Serve(["--kubeconfig", emu.kubeconfig, "--conf", conf, "--schedule-period", "1s"])
                try:
                    wait_until(lambda: len(serve.sessions()) >= 1, timeout=60, what="the first session")
                    r = subprocess.run([KILN, "snapshot", "--server", f"http://127.0.0.1:{serve.port}",
                                        "-o", snap], capture_output=True, text=True)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    taken = len(serve.sessions())
                    wait_until(lambda: len(serve.sessions()) > taken, timeout=30, what="the next session")
                    nxt = serve.sessions()[taken]
                finally:
                    self.assertEqual(serve.stop(), 0, serve.text())
            want = simulate(snap)
            # Something to compare: the cluster has pending work for the session.
            self.assertTrue(nxt["binds"] or nxt["evictions"] or nxt["pipelined"], serve.text())
            self.assertEqual(nxt["binds"], want["binds"])
            self.assertEqual(nxt["evictions"], set(want["evictions"]))
            self.assertEqual(nxt["pipelined"], want["pipelined"])
            with open(snap) as f:
                doc = yaml.safe_load(f)
            self.assertIn("generation 1", doc["notes"])
            return doc

    def test_replay_reproduces_the_next_session(self):
        for scenario in SCENARIOS:
            with self.subTest(scenario=os.path.basename(scenario)):
                doc = self.replay(scenario)
                with open(scenario) as f:
                    original = yaml.safe_load(f)["cluster"]
                self.assertEqual(len(doc["cluster"]["nodes"]), len(original["nodes"]))
                self.assertEqual(sorted(h["name"] for h in doc["cluster"].get("hyperNodes", [])),
                                 sorted(h["name"] for h in original.get("hyperNodes", [])))

    def test_nothing_secret_in_the_snapshot(self):
        with tempfile.TemporaryDirectory() as tmp:
            manifests, conf = cluster_inputs(KILN, tmp, SCENARIOS[0])
            with Emulator(load=[manifests]) as emu:
                kubectl(emu, "apply", "-f", "-", stdin=SECRET_POD)
                applied = json.loads(kubectl(emu, "get", "pod", "web", "-o", "json"))
                # The precondition: kubectl's annotation does copy the environment value.
                self.assertIn("hunter2-env-value", json.dumps(applied["metadata"].get("annotations", {})))
                serve = Serve(["--kubeconfig", emu.kubeconfig, "--conf", conf, "--schedule-period", "1s"])
                try:
                    wait_until(lambda: len(serve.sessions()) >= 1, timeout=60, what="the first session")
                    r = subprocess.run([KILN, "snapshot", "--server", f"127.0.0.1:{serve.port}"],
                                       capture_output=True, text=True)
                finally:
                    self.assertEqual(serve.stop(), 0, serve.text())
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertNotIn("hunter2", r.stdout)
            self.assertNotIn("last-applied-configuration", r.stdout)
            pods = yaml.safe_load(r.stdout)["cluster"]["pods"]
            web = [p for p in pods if p["name"] == "web"]
            self.assertEqual(len(web), 1, "the applied pod is in the snapshot")
            self.assertEqual(web[0]["image"], "nginx")

    def test_a_binding_without_a_snapshot_answers_404(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "snap.yaml")
            conf = os.path.join(tmp, "scheduler.conf")
            scenario_conf(SCENARIOS[0], conf)
            serve = Serve(["--scenario", SCENARIOS[0], "--conf", conf, "--schedule-period", "1h"])
            try:
                r = subprocess.run([KILN, "snapshot", "--server", f"http://127.0.0.1:{serve.port}", "-o", out],
                                   capture_output=True, text=True)
            finally:
                self.assertEqual(serve.stop(), 0, serve.text())
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("HTTP 404", r.stderr)
            self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    unittest.main()
