#!/usr/bin/env python3
"""`kiln serve` against the API-server emulator (tools/kube-emulator), end to end.

Run with Debian's python3 (PyYAML): serve_cluster_test.py KILN [TestCase.test_name]
"""
import datetime
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "emulator"))
from emulator_fixture import Emulator, wait_until  # noqa: E402

# argv[1]: the kiln binary (ctest passes it); the rest goes to unittest.
if len(sys.argv) > 1 and os.path.isfile(sys.argv[1]):
    KILN = os.path.abspath(sys.argv.pop(1))
else:
    KILN = os.environ.get("KILN", os.path.join(ROOT, "build", "kiln"))
KUBECTL = "/usr/lib/google-cloud-sdk/bin/kubectl"
TRAINING = os.path.join(ROOT, "examples", "scenarios", "training-cluster.yaml")


def export_manifests(scenario, out):
    subprocess.run([KILN, "export-manifests", scenario, "-o", out], check=True)


def scenario_conf(scenario, out):
    with open(scenario) as f:
        conf = yaml.safe_load(f).get("conf")
    if conf is None:
        with open(os.path.join(ROOT, "examples", "conf", "volcano-default.conf")) as f:
            conf = f.read()
    with open(out, "w") as f:
        f.write(conf)


def simulate(scenario, cycles=1):
    r = subprocess.run([KILN, "simulate", scenario, "-o", "json", "--cycles", str(cycles)],
                       check=True, capture_output=True, text=True)
    return json.loads(r.stdout)


class Serve:
    """One `kiln serve` process against an emulator."""

    def __init__(self, emu, conf, *extra, period="1s"):
        self.log = []
        self.proc = subprocess.Popen(
            [KILN, "serve", "--kubeconfig", emu.kubeconfig, "--conf", conf, "--listen", "127.0.0.1:0",
             "--schedule-period", period, "-v", "2", *extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self):
        for line in self.proc.stderr:
            self.log.append(line)

    def text(self):
        return "".join(self.log)

    def sessions(self):
        return sum(1 for l in self.log if re.search(r"session \d+ \(generation", l))

    def stop(self, sig=signal.SIGTERM, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                return self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("kiln serve did not stop:\n" + self.text())
        return self.proc.returncode


def kubectl_json(emu, *args):
    r = subprocess.run([KUBECTL, "--kubeconfig", emu.kubeconfig, "get", *args, "-o", "json"],
                       check=True, capture_output=True, text=True)
    return json.loads(r.stdout)


def cluster_state(emu):
    pods = kubectl_json(emu, "pods", "-A")["items"]
    groups = kubectl_json(emu, "podgroups.scheduling.volcano.sh", "-A")["items"]
    return pods, groups


class FirstSession(unittest.TestCase):
    def test_first_session_matches_simulate(self):
        with tempfile.TemporaryDirectory() as tmp:
            manifests = os.path.join(tmp, "m.yaml")
            conf = os.path.join(tmp, "scheduler.conf")
            export_manifests(TRAINING, manifests)
            scenario_conf(TRAINING, conf)
            want = simulate(TRAINING)["sessions"][0]
            with Emulator(load=[manifests]) as emu:
                before = {f'{p["metadata"]["namespace"]}/{p["metadata"]["name"]}': p
                          for p in kubectl_json(emu, "pods", "-A")["items"]}
                # A long period: exactly one session runs while we look.
                serve = Serve(emu, conf, period="1h")
                try:
                    wait_until(lambda: serve.sessions() >= 1, timeout=60, what="the first session")
                    # Writes are asynchronous: wait until every bind and eviction landed.
                    def landed():
                        s = emu.stats()
                        return (sum(s["bindsOk"].values()) >= len(want["binds"]) and
                                sum(s.get("podDeletes", {}).values()) + sum(s.get("evictionsOk", {}).values())
                                >= len(want["evictions"]))
                    wait_until(landed, timeout=30, what="the writes")
                    time.sleep(1.0)  # status writes after the binds
                    pods, groups = cluster_state(emu)
                finally:
                    self.assertEqual(serve.stop(), 0, serve.text())
        binds = {}
        evicted = set()
        nominated = {}
        for p in pods:
            key = f'{p["metadata"]["namespace"]}/{p["metadata"]["name"]}'
            node = p["spec"].get("nodeName")
            if node and not before.get(key, {}).get("spec", {}).get("nodeName"):
                binds[key] = node
            if p["metadata"].get("deletionTimestamp"):
                evicted.add(key)
            if p.get("status", {}).get("nominatedNodeName"):
                nominated[key] = p["status"]["nominatedNodeName"]
        # Evicted pods may be gone already (a pod without a node is deleted at once).
        gone = set(before) - {f'{p["metadata"]["namespace"]}/{p["metadata"]["name"]}' for p in pods}
        self.assertEqual(binds, want["binds"])
        self.assertEqual(evicted | gone, set(want["evictions"]))
        self.assertEqual(nominated, want["pipelined"])
        phases = {f'{g["metadata"]["namespace"]}/{g["metadata"]["name"]}': g.get("status", {}).get("phase")
                  for g in groups}
        for job, phase in want["podGroupPhases"].items():
            if job in phases:
                self.assertEqual(phases[job], phase, job)


def small_scenario(path, nodes=4, jobs=6, per_job=3):
    """Every pod fits: `nodes` nodes of 8 cpu, `jobs` gangs of `per_job` 1-cpu pods."""
    doc = {"name": "fault-cluster",
           "cluster": {"nodes": [{"name": f"n{i}", "allocatable": {"cpu": "8", "memory": "32Gi"}}
                                 for i in range(nodes)],
                       "podGroups": [{"name": f"job{j}", "namespace": "c1", "minMember": per_job}
                                     for j in range(jobs)],
                       "pods": [{"name": f"job{j}-{k}", "namespace": "c1", "group": f"job{j}",
                                 "requests": {"cpu": "1", "memory": "1Gi"}}
                                for j in range(jobs) for k in range(per_job)]}}
    with open(path, "w") as f:
        yaml.safe_dump(doc, f)
    return [f"c1/job{j}-{k}" for j in range(jobs) for k in range(per_job)], [f"c1/job{j}" for j in range(jobs)]


class Faults(unittest.TestCase):
    def check_converged(self, emu, pods_expected, groups_expected):
        def all_running():
            pods, groups = cluster_state(emu)
            running = {f'{p["metadata"]["namespace"]}/{p["metadata"]["name"]}' for p in pods
                       if p["spec"].get("nodeName") and p.get("status", {}).get("phase") == "Running"}
            phases = {f'{g["metadata"]["namespace"]}/{g["metadata"]["name"]}': g.get("status", {}).get("phase")
                      for g in groups}
            return running >= set(pods_expected) and all(phases.get(g) == "Running" for g in groups_expected)
        wait_until(all_running, timeout=90, interval=0.5, what="every pod Running, every PodGroup Running")
        s = emu.stats()
        for pod in pods_expected:
            self.assertEqual(s["bindsOk"].get(pod, 0), 1, f"{pod}: bound {s['bindsOk'].get(pod, 0)} times")
        for pod, n in s.get("evictions", {}).items():
            self.assertLessEqual(n, 1, pod)
        for pod, n in s.get("podDeletes", {}).items():
            self.assertLessEqual(n, 1, pod)
        return s

    def run_with_faults(self, inject):
        with tempfile.TemporaryDirectory() as tmp:
            scenario = os.path.join(tmp, "s.yaml")
            pods, groups = small_scenario(scenario)
            manifests = os.path.join(tmp, "m.yaml")
            conf = os.path.join(tmp, "scheduler.conf")
            export_manifests(scenario, manifests)
            scenario_conf(scenario, conf)
            with Emulator("--kubelet", "--kubelet-delay", "0.2", load=[manifests]) as emu:
                serve = inject(emu, conf, tmp)
                try:
                    self.check_converged(emu, pods, groups)
                finally:
                    if serve is not None:
                        self.assertIn(serve.stop(), (0, -9), serve.text())

    def test_bind_5xx_burst_and_409(self):
        def inject(emu, conf, tmp):
            emu.control("faults", {"verb": "create", "resource": "pods/binding", "count": 5, "code": 503})
            emu.control("bind-conflict", {"namespace": "c1", "name": "job0-0", "count": 1})
            return Serve(emu, conf, period="500ms")
        self.run_with_faults(inject)

    def test_watch_drop_and_compaction(self):
        def inject(emu, conf, tmp):
            serve = Serve(emu, conf, period="500ms")
            wait_until(lambda: serve.sessions() >= 1, timeout=60, what="a session")
            emu.control("drop-watches", {"mode": "reset"})
            emu.control("compact", {})
            emu.control("drop-watches", {"mode": "close"})
            return serve
        self.run_with_faults(inject)

    def test_kill9_restart(self):
        def inject(emu, conf, tmp):
            # Slow binds so the kill lands with writes in flight.
            emu.control("latency", {"seconds": 0.3, "verb": "create", "resource": "pods/binding"})
            first = Serve(emu, conf, period="500ms")
            wait_until(lambda: sum(emu.stats()["bindsOk"].values()) >= 2, timeout=60, what="some binds")
            first.proc.kill()
            first.proc.wait()
            emu.control("clear-faults", {})
            return Serve(emu, conf, period="500ms")
        self.run_with_faults(inject)


class LeaderElection(unittest.TestCase):
    def lease(self, emu):
        code, out, _ = emu.get("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kiln-scheduler")
        return out if code == 200 else None

    def test_two_replicas_one_writer_and_handover(self):
        with tempfile.TemporaryDirectory() as tmp:
            scenario = os.path.join(tmp, "s.yaml")
            pods, groups = small_scenario(scenario, jobs=3)
            manifests = os.path.join(tmp, "m.yaml")
            conf = os.path.join(tmp, "scheduler.conf")
            export_manifests(scenario, manifests)
            scenario_conf(scenario, conf)
            with Emulator("--kubelet", load=[manifests]) as emu:
                a = Serve(emu, conf, "--leader-elect", period="500ms")
                wait_until(lambda: self.lease(emu) is not None, timeout=60, what="a lease")
                b = Serve(emu, conf, "--leader-elect", period="500ms")
                try:
                    wait_until(lambda: any("is leading" in l for l in a.log), timeout=30, what="a leading")
                    leader_id = self.lease(emu)["spec"]["holderIdentity"]
                    wait_until(lambda: sum(emu.stats()["bindsOk"].values()) >= len(pods), timeout=60,
                               what="all binds")
                    time.sleep(3)
                    # Only the leader ran sessions; the standby never did.
                    self.assertGreater(a.sessions(), 0)
                    self.assertEqual(b.sessions(), 0, b.text())
                    self.assertFalse(any("is leading" in l for l in b.log))
                    # Kill the leader hard: the standby takes over within the lease duration.
                    killed = time.time()
                    a.proc.kill()
                    a.proc.wait()
                    renewed = self.lease(emu)["spec"]["renewTime"]  # a's last renewal
                    last_renew = datetime.datetime.strptime(renewed, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
                        tzinfo=datetime.timezone.utc).timestamp()
                    wait_until(lambda: any("is leading" in l for l in b.log), timeout=25,
                               interval=0.05, what="the standby leading")
                    now = time.time()
                    print(f"[ measured ] handover {now - killed:.1f} s after kill -9, "
                          f"{now - last_renew:.1f} s after the dead leader's last renewal (lease 15 s)")
                    # client-go semantics: the standby takes the lease once it has seen it unchanged
                    # for 15 s; it notices the last renewal at its next poll and acts at the poll
                    # after 15 s, each poll 2 s + up to 20% jitter apart.
                    self.assertLess(now - last_renew, 15 + 2 * 2.4 + 0.5)
                    self.assertGreater(now - last_renew, 15 - 0.5)
                    lease = self.lease(emu)["spec"]
                    self.assertNotEqual(lease["holderIdentity"], leader_id)
                    self.assertEqual(lease["leaseTransitions"], 1)
                    wait_until(lambda: b.sessions() > 0, timeout=10, what="sessions on the new leader")
                    s = emu.stats()
                    for pod in pods:
                        self.assertEqual(s["bindsOk"].get(pod, 0), 1, pod)
                    # A clean stop releases the lease.
                    self.assertEqual(b.stop(), 0, b.text())
                    self.assertEqual(self.lease(emu)["spec"].get("holderIdentity", ""), "")
                finally:
                    for s in (a, b):
                        if s.proc.poll() is None:
                            s.proc.kill()


if __name__ == "__main__":
    unittest.main()
