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
import tempfile

import deployed
from deployed import ROOT, TRAINING
from emulator_fixture import Emulator
from serve_util import fail, kiln_from_argv

KILN = kiln_from_argv(ROOT)
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
            bound, rc, log_text = deployed.serve_until_tokenize_bound(
                emu, [KILN, *args], os.path.join(tmp, "serve.log"), 60, env={**os.environ, **env})
            if bound != 3:
                fail(f"kiln serve {' '.join(args)}: {bound} of research/tokenize's 3 pods on "
                     f"cpu-1\n{log_text}")
            if rc != 0:
                fail(f"kiln serve exited {rc} on SIGTERM:\n{log_text}")
            print(f"kiln serve with the Deployment's args bound research/tokenize's 3 pods: {' '.join(args)}")
    print("PASS kustomize base rendered, applied and run")


if __name__ == "__main__":
    main()
