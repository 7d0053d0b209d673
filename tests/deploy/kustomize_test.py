#!/usr/bin/env python3
"""deploy/ as a kustomize base, applied to the API-server emulator with kubectl, and run.

Usage: kustomize_test.py KILN. `kubectl kustomize deploy/` renders the base; its Deployment runs
the image that kustomization.yaml's `images:` entry names, as the image's user, read-only. The
rendered manifests are applied with kubectl to the emulator (loaded with the example training
cluster), every object is created, a second apply changes nothing, and the objects read back
are what was rendered. Last, `kiln serve` runs with the applied Deployment's args and env and
its ConfigMaps' files (as kubelet would mount them), and binds research/tokenize's three pods.
"""
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "emulator"))
sys.path.insert(0, os.path.join(ROOT, "tests", "server"))
import deployed  # noqa: E402
from emulator_fixture import Emulator  # noqa: E402
from serve_util import fail, kiln_from_argv  # noqa: E402

KILN = kiln_from_argv(ROOT)
TRAINING = os.path.join(ROOT, "examples", "scenarios", "training-cluster.yaml")
EXPECTED_KINDS = sorted(["ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap",
                         "ConfigMap", "Deployment", "NetworkPolicy"])
IMAGE_UID = 10001  # scripts/image's user


def main():
    rendered, docs = deployed.render()
    kinds = sorted(d["kind"] for d in docs)
    if kinds != EXPECTED_KINDS:
        fail(f"kubectl kustomize deploy/ rendered {kinds}, expected {EXPECTED_KINDS}")
    dep = next(d for d in docs if d["kind"] == "Deployment")
    image = deployed.container(dep)["image"]
    if image != deployed.kustomize_image():
        fail(f"the Deployment runs {image}, kustomization.yaml's images: entry says "
             f"{deployed.kustomize_image()}")
    pod_sc = dep["spec"]["template"]["spec"].get("securityContext", {})
    c_sc = deployed.container(dep).get("securityContext", {})
    if pod_sc.get("runAsUser") != IMAGE_UID or not pod_sc.get("runAsNonRoot"):
        fail(f"the pod should run as the image's user {IMAGE_UID}, non-root: {pod_sc}")
    if not c_sc.get("readOnlyRootFilesystem") or c_sc.get("allowPrivilegeEscalation") is not False:
        fail(f"the container should be read-only without privilege escalation: {c_sc}")

    with tempfile.TemporaryDirectory(prefix="kiln-kustomize-test-") as tmp:
        manifests = os.path.join(tmp, "cluster.yaml")
        subprocess.run([KILN, "export-manifests", TRAINING, "-o", manifests], check=True)
        with Emulator("--kubelet", load=[manifests]) as emu:
            out = deployed.apply(emu, rendered)
            created = [l for l in out.splitlines() if l.endswith(" created")]
            if len(created) != len(docs):
                fail(f"kubectl apply created {len(created)} of {len(docs)} objects:\n{out}")
            again = deployed.apply(emu, rendered)
            if any(not l.endswith(" unchanged") for l in again.splitlines()):
                fail(f"a second kubectl apply changed something:\n{again}")
            for d in docs:
                ns = d["metadata"].get("namespace")
                back = deployed.get_json(emu, d["kind"].lower(), d["metadata"]["name"],
                                         *(["-n", ns] if ns else []))
                for key in ("spec", "data", "rules", "roleRef", "subjects"):
                    if key in d and back.get(key) != d[key]:
                        fail(f"{d['kind']} {d['metadata']['name']}: {key} read back differs:\n"
                             f"{back.get(key)}\nvs rendered\n{d[key]}")
            print(f"applied {len(docs)} objects: {', '.join(kinds)}")

            root = os.path.join(tmp, "pod")
            args, env = deployed.serve_command(emu, root, emu.kubeconfig, rewrite_paths=True)
            log_path = os.path.join(tmp, "serve.log")
            with open(log_path, "w") as log:
                proc = subprocess.Popen([KILN, *args], stdout=subprocess.DEVNULL, stderr=log,
                                        env={**os.environ, **env})
            try:
                deadline = time.time() + 60
                while time.time() < deadline and deployed.tokenize_bound(emu) < 3:
                    if proc.poll() is not None:
                        break
                    time.sleep(0.5)
                bound = deployed.tokenize_bound(emu)
            finally:
                if proc.poll() is None:
                    proc.terminate()
                rc = proc.wait(30)
            with open(log_path) as f:
                log_text = f.read()
            if bound != 3:
                fail(f"kiln serve {' '.join(args)}: {bound} of research/tokenize's 3 pods on "
                     f"cpu-1\n{log_text}")
            if rc != 0:
                fail(f"kiln serve exited {rc} on SIGTERM:\n{log_text}")
            print(f"kiln serve with the Deployment's args bound research/tokenize's 3 pods: {' '.join(args)}")
    print("PASS kustomize base rendered, applied and run")


if __name__ == "__main__":
    main()
