"""deploy/ as kustomize renders it and as a cluster would run it (stdlib + PyYAML).

render() runs `kubectl kustomize deploy/`; apply() applies the rendered manifests to an emulator
with kubectl; serve_command() turns the Deployment's container (args, env) and the ConfigMaps'
files into a `kiln serve` command line that runs here against the emulator, with the ConfigMaps
written where the Deployment mounts them under a root directory (an unpacked image's rootfs, or
a temp dir whose paths are then rewritten).
"""
import json
import os
import subprocess
import sys
import time

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEPLOY = os.path.join(ROOT, "deploy")
TRAINING = os.path.join(ROOT, "examples", "scenarios", "training-cluster.yaml")
# The deploy tests import this module first: the emulator fixture and serve_util are found then.
sys.path.insert(0, os.path.join(ROOT, "tests", "emulator"))
sys.path.insert(0, os.path.join(ROOT, "tests", "server"))
KUBECTL = "/usr/lib/google-cloud-sdk/bin/kubectl"


def render():
    r = subprocess.run([KUBECTL, "kustomize", DEPLOY], capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(f"kubectl kustomize deploy/: exit {r.returncode}\n{r.stderr}")
    return r.stdout, [d for d in yaml.safe_load_all(r.stdout) if d]


def kustomize_image():
    """The image the base sets, from kustomization.yaml's `images:` entry for `kiln`."""
    with open(os.path.join(DEPLOY, "kustomization.yaml")) as f:
        k = yaml.safe_load(f)
    entry = next(i for i in k["images"] if i["name"] == "kiln")
    name = entry.get("newName", "kiln")
    if entry.get("digest"):
        return f"{name}@{entry['digest']}"
    return f"{name}:{entry['newTag']}"


def kubectl(emu, *args, stdin=None, check=True):
    r = subprocess.run([KUBECTL, "--kubeconfig", emu.kubeconfig, *args], input=stdin,
                       capture_output=True, text=True, timeout=60)
    if check and r.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)}: exit {r.returncode}\n{r.stdout}{r.stderr}")
    return r


def get_json(emu, *args):
    return json.loads(kubectl(emu, "get", *args, "-o", "json").stdout)


def apply(emu, rendered):
    return kubectl(emu, "apply", "-f", "-", stdin=rendered).stdout


def container(deployment):
    return deployment["spec"]["template"]["spec"]["containers"][0]


def serve_command(emu, root, kubeconfig_in_root, listen="127.0.0.1:0", rewrite_paths=False):
    """The applied Deployment's `kiln serve` args, read back from the emulator, with its
    ConfigMap volumes written under `root` at their mount paths. --listen becomes `listen` (the
    pod's 0.0.0.0:8080 would clash with parallel tests) and --kubeconfig is added (in a pod
    kiln finds its service account instead). With rewrite_paths the mount paths in the args
    are prefixed with `root` (for a kiln running outside `root`). Returns (args, env)."""
    dep = get_json(emu, "deployment", "kiln-scheduler", "-n", "kube-system")
    spec = dep["spec"]["template"]["spec"]
    c = container(dep)
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    mounts = {}
    for m in c.get("volumeMounts", []):
        mount = os.path.join(root, m["mountPath"].lstrip("/"))
        os.makedirs(mount, exist_ok=True)
        v = volumes[m["name"]]
        if "configMap" in v:
            cm = get_json(emu, "configmap", v["configMap"]["name"], "-n", "kube-system")
            for key, text in (cm.get("data") or {}).items():
                with open(os.path.join(mount, key), "w") as f:
                    f.write(text)
        mounts[m["mountPath"]] = mount
    args = []
    for a in c["args"]:
        if a.startswith("--listen="):
            a = "--listen=" + listen
        elif rewrite_paths:
            for path, mount in mounts.items():
                a = a.replace("=" + path, "=" + mount)
        args.append(a)
    args.append("--kubeconfig=" + kubeconfig_in_root)
    env = {}
    for e in c.get("env", []):
        if "value" in e:
            env[e["name"]] = e["value"]
        else:
            field = e["valueFrom"]["fieldRef"]["fieldPath"]
            env[e["name"]] = {"metadata.name": "kiln-scheduler-test-0",
                              "metadata.namespace": dep["metadata"]["namespace"],
                              "metadata.uid": "00000000-0000-0000-0000-000000000001"}[field]
    return args, env


def tokenize_bound(emu):
    """research/tokenize's pods that are bound to cpu-1 (the training cluster's first session
    places all three there; scripts/demo-cluster checks the same)."""
    pods = get_json(emu, "pods", "-n", "research")["items"]
    return sum(1 for p in pods if p["metadata"]["name"].startswith("tokenize-")
               and p["spec"].get("nodeName") == "cpu-1")


def serve_until_tokenize_bound(emu, cmd, log_path, timeout, env=None):
    """Runs `kiln serve` (`cmd`, stderr to `log_path`) until research/tokenize's 3 pods are bound
    or `timeout` seconds pass, then stops it with SIGTERM: (pods bound, exit code, its stderr)."""
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log, env=env)
    try:
        deadline = time.time() + timeout
        while time.time() < deadline and tokenize_bound(emu) < 3:
            if proc.poll() is not None:
                break
            time.sleep(0.5)
        bound = tokenize_bound(emu)
    finally:
        if proc.poll() is None:
            proc.terminate()
        rc = proc.wait(30)
    with open(log_path) as f:
        return bound, rc, f.read()
