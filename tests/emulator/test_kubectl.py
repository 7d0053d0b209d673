#!/usr/bin/python3
"""Real kubectl binaries (1.27 ... 1.33) against the emulator over HTTPS with token auth.

The oldest and the newest version run the whole set (get, get -o json, apply twice, get -w,
delete, the Volcano CRDs by name and short name); the versions between run a shorter set, so all
seven are exercised and the test stays fast.
"""

import json
import os
import select
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from emulator_fixture import (KUBECTL_VERSIONS, Emulator, kubectl_path, node_manifest,  # noqa: E402
                              pod_manifest)

FULL = {KUBECTL_VERSIONS[0], KUBECTL_VERSIONS[-1]}


def manifest(ns, image="busybox:1"):
    return f"""apiVersion: v1
kind: Namespace
metadata:
  name: {ns}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: {ns}-queue
spec:
  weight: 2
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata:
  name: job
  namespace: {ns}
spec:
  minMember: 1
  queue: {ns}-queue
---
apiVersion: v1
kind: Pod
metadata:
  name: worker-0
  namespace: {ns}
  annotations:
    scheduling.k8s.io/group-name: job
spec:
  schedulerName: volcano
  containers:
  - name: main
    image: {image}
    resources:
      requests:
        cpu: 500m
"""


class Kubectl(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="kubectl-test-")
        nodes = os.path.join(cls.tmp, "nodes.json")
        with open(nodes, "w") as f:
            json.dump({"apiVersion": "v1", "kind": "List",
                       "items": [node_manifest("node-a"), node_manifest("node-b")]}, f)
        cls.emu = Emulator("--bookmark-interval", "1", load=[nodes])

    @classmethod
    def tearDownClass(cls):
        cls.emu.stop()
        subprocess.run(["rm", "-rf", cls.tmp])

    def kubectl(self, version, *args, check=True, stdin=None):
        cmd = [kubectl_path(version), "--kubeconfig", self.emu.kubeconfig,
               "--cache-dir", os.path.join(self.tmp, f"cache-{version}")] + list(args)
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60, input=stdin)
        if check:
            self.assertEqual(p.returncode, 0, f"{' '.join(args)}: {p.stderr}")
        return p

    # Two tests so that ctest can run them side by side.
    def test_oldest_and_newest(self):
        self.check_versions([v for v in KUBECTL_VERSIONS if v in FULL])

    def test_versions_between(self):
        self.check_versions([v for v in KUBECTL_VERSIONS if v not in FULL])

    def check_versions(self, versions):
        for version in versions:
            with self.subTest(kubectl=version):
                if not os.path.exists(kubectl_path(version)):
                    self.fail(f"{kubectl_path(version)} is not installed")
                self.check_version(version, full=version in FULL)

    def check_version(self, v, full):
        ns = "ns-" + v.replace(".", "-")
        out = self.kubectl(v, "get", "nodes").stdout
        self.assertRegex(out, r"(?m)^NAME\s+STATUS\s+ROLES\s+AGE\s+VERSION")
        self.assertRegex(out, r"(?m)^node-a\s+Ready\s")

        path = os.path.join(self.tmp, f"{ns}.yaml")
        with open(path, "w") as f:
            f.write(manifest(ns))
        out = self.kubectl(v, "apply", "-f", path).stdout
        for line in (f"namespace/{ns} created", f"queue.scheduling.volcano.sh/{ns}-queue created",
                     "podgroup.scheduling.volcano.sh/job created", "pod/worker-0 created"):
            self.assertIn(line, out)
        code, pod, _ = self.emu.get(f"/api/v1/namespaces/{ns}/pods/worker-0")
        self.assertEqual(pod["spec"]["schedulerName"], "volcano")
        self.assertIn("kubectl.kubernetes.io/last-applied-configuration", pod["metadata"]["annotations"])

        out = self.kubectl(v, "get", "podgroups", "-n", ns).stdout
        self.assertRegex(out, r"(?m)^job\s")
        out = self.kubectl(v, "get", "queues").stdout
        self.assertRegex(out, rf"(?m)^{ns}-queue\s")
        if not full:
            return

        # A second apply computes a patch: a strategic merge patch for the pod (containers merge
        # by name) and a JSON merge patch for the CRD.
        with open(path, "w") as f:
            f.write(manifest(ns, image="busybox:2").replace("weight: 2", "weight: 5"))
        out = self.kubectl(v, "apply", "-f", path).stdout
        self.assertIn("pod/worker-0 configured", out)
        self.assertIn(f"queue.scheduling.volcano.sh/{ns}-queue configured", out)
        self.assertIn("podgroup.scheduling.volcano.sh/job unchanged", out)
        code, pod, _ = self.emu.get(f"/api/v1/namespaces/{ns}/pods/worker-0")
        c = pod["spec"]["containers"][0]
        self.assertEqual((c["image"], c["resources"]["requests"]["cpu"]), ("busybox:2", "500m"))
        code, q, _ = self.emu.get(f"/apis/scheduling.volcano.sh/v1beta1/queues/{ns}-queue")
        self.assertEqual(q["spec"]["weight"], 5)

        out = self.kubectl(v, "get", "pg", "-n", ns, "-o", "json").stdout
        self.assertEqual(json.loads(out)["items"][0]["spec"]["minMember"], 1)

        # Bind through the API, then read it back with kubectl.
        self.assertEqual(self.emu.post(f"/api/v1/namespaces/{ns}/pods/worker-0/binding",
                                       {"target": {"kind": "Node", "name": "node-b"}})[0], 201)
        pods = json.loads(self.kubectl(v, "get", "pods", "-A", "-o", "json").stdout)
        mine = [p for p in pods["items"] if p["metadata"]["namespace"] == ns]
        self.assertEqual([(p["metadata"]["name"], p["spec"]["nodeName"]) for p in mine], [("worker-0", "node-b")])
        out = self.kubectl(v, "get", "pods", "-n", ns, "-o", "wide").stdout
        self.assertRegex(out, r"(?m)^worker-0\s+0/1\s+Pending\s+0\s+\S+\s+<none>\s+node-b\s")

        self.watch_sees_a_change(v, ns)

        self.assertEqual(self.emu.post(f"/api/v1/namespaces/{ns}/pods", pod_manifest("doomed", ns=ns))[0], 201)
        out = self.kubectl(v, "delete", "pod", "doomed", "-n", ns).stdout
        self.assertIn('pod "doomed" deleted', out)
        self.assertEqual(self.emu.get(f"/api/v1/namespaces/{ns}/pods/doomed")[0], 404)
        p = self.kubectl(v, "get", "pod", "doomed", "-n", ns, check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn('pods "doomed" not found', p.stderr)

    def watch_sees_a_change(self, v, ns):
        cmd = [kubectl_path(v), "--kubeconfig", self.emu.kubeconfig, "--cache-dir",
               os.path.join(self.tmp, f"cache-{v}"), "get", "pods", "-n", ns, "-w"]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0)
        try:
            lines, pending = [], [b""]

            def read_until(pattern, timeout=20):
                # os.read on the raw pipe: a buffered reader could hold a line select() cannot see.
                deadline = time.time() + timeout
                while time.time() < deadline:
                    while b"\n" in pending[0]:
                        line, pending[0] = pending[0].split(b"\n", 1)
                        lines.append(line.decode())
                        if pattern in lines[-1]:
                            return lines[-1]
                    r, _, _ = select.select([proc.stdout], [], [], 0.2)
                    if r:
                        chunk = os.read(proc.stdout.fileno(), 65536)
                        if not chunk:
                            break
                        pending[0] += chunk
                self.fail(f"kubectl get -w never printed {pattern!r}; got {lines!r}")
            read_until("worker-0")  # the initial listing
            code, out, _ = self.emu.post(f"/api/v1/namespaces/{ns}/pods", pod_manifest("watched", ns=ns))
            self.assertEqual(code, 201, out)
            line = read_until("watched")
            self.assertRegex(line, r"^watched\s+0/1\s+Pending\s")
        finally:
            proc.kill()
            proc.wait()
            proc.stdout.close()


if __name__ == "__main__":
    unittest.main()
