#!/usr/bin/env python3
"""The OCI image of scripts/image, built twice and run from its root filesystem.

Usage: image_test.py BUILD_DIR [IMAGE_DIR]

  1. Builds the image twice from BUILD_DIR's kiln and kiln-builtins (KILN_NO_BUILD=1
     scripts/image) and requires the same manifest digest and the same archive bytes. The pair
     is kept in BUILD_DIR/image-test/KEY/, KEY a hash of every input this machine controls
     (the binary, the shipped cache, scripts/image, SOURCE_DATE_EPOCH), so a rerun with the same inputs reuses it;
     IMAGE_DIR instead takes an image built already (then only once, not compared).
  2. Size: at most 150 MiB (the archive, layers compressed).
  3. Unpacks it with umoci: the config runs `/usr/bin/kiln serve` as a non-root user with the
     shipped cache's directory set.
  4. In its root filesystem (chroot, as that user, with the config's environment): `kiln
     --version` says what BUILD_DIR/kiln says, and `kiln simulate --check` passes on the example
     training cluster.
  5. `kiln serve` from the image, with the args, env and ConfigMaps of deploy/ as applied to the
     API-server emulator by kubectl (tests/deploy/deployed.py), binds the training cluster's
     first pods.

Needs root, chroot, mmdebstrap and umoci (scripts/install-deps installs them), and a Debian
mirror. Exits 77 (ctest: skipped, with the reason printed) only when one of those tools is not
installed or this is not root; every other problem fails.
"""
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import deployed
from deployed import ROOT, TRAINING
from emulator_fixture import Emulator
from serve_util import fail

MAX_BYTES = 150 * 1024 * 1024
SKIP = 77


def skip_unless_tools():
    missing = [t for t in ("mmdebstrap", "umoci", "chroot", "tar") if shutil.which(t) is None]
    if os.geteuid() != 0:
        missing.append("root (mmdebstrap --mode=root and chroot)")
    if missing:
        print(f"SKIPPED: the image test needs {', '.join(missing)}; scripts/install-deps installs "
              "mmdebstrap and umoci")
        sys.exit(SKIP)


def source_date_epoch():
    """Every timestamp of both builds: SOURCE_DATE_EPOCH when set, else the last commit's time
    (what scripts/image would pick) read once, so a commit between the builds changes nothing."""
    if os.environ.get("SOURCE_DATE_EPOCH"):
        return os.environ["SOURCE_DATE_EPOCH"]
    r = subprocess.run(["git", "-C", ROOT, "log", "-1", "--format=%ct"], capture_output=True,
                       text=True)
    return r.stdout.strip() if r.returncode == 0 and r.stdout.strip() else "0"


SOURCE_DATE_EPOCH = source_date_epoch()


def input_key(build_dir):
    h = hashlib.sha256()
    h.update(SOURCE_DATE_EPOCH.encode() + b"\0")
    files = [os.path.join(build_dir, "kiln"), os.path.join(ROOT, "scripts", "image")]
    files += sorted(glob.glob(os.path.join(build_dir, "kiln-builtins", "*")))
    for path in files:
        h.update(os.path.relpath(path, build_dir).encode() + b"\0")
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()[:16]


def read(path):
    with open(path) as f:
        return f.read().strip()


def build_image(build_dir, out):
    env = {**os.environ, "KILN_NO_BUILD": "1", "KILN_BUILD_DIR": build_dir,
           "SOURCE_DATE_EPOCH": SOURCE_DATE_EPOCH}
    t = time.time()
    r = subprocess.run([os.path.join(ROOT, "scripts", "image"), out], env=env, cwd=ROOT,
                       capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"scripts/image {out}: exit {r.returncode}\n{r.stdout}{r.stderr[-6000:]}")
    print(f"built {out} in {time.time() - t:.0f} s: {read(os.path.join(out, 'kiln-oci.digest'))}")


def built_pair(build_dir):
    key = input_key(build_dir)
    cache = os.path.join(build_dir, "image-test", key)
    for old in glob.glob(os.path.join(build_dir, "image-test", "*")):
        if os.path.basename(old) != key:
            shutil.rmtree(old)  # images of earlier inputs: 200 MB each, never reused
    a, b = os.path.join(cache, "a"), os.path.join(cache, "b")
    for out in (a, b):
        if os.path.exists(os.path.join(out, "kiln-oci.digest")):
            print(f"reusing {out} (same inputs)")
        else:
            shutil.rmtree(out, ignore_errors=True)
            build_image(build_dir, out)
    da, db = read(os.path.join(a, "kiln-oci.digest")), read(os.path.join(b, "kiln-oci.digest"))
    sa, sb = read(os.path.join(a, "kiln-oci.tar.sha256")), read(os.path.join(b, "kiln-oci.tar.sha256"))
    if da != db or sa != sb:
        fail(f"two builds from the same inputs differ: manifest {da} vs {db}, archive {sa} vs {sb}")
    print(f"reproducible: both builds have manifest digest {da} and archive {sa}")
    return a


def chroot_cmd(rootfs, user, env, *argv):
    envs = [f"{k}={v}" for k, v in env.items()]
    return ["chroot", f"--userspec={user['uid']}:{user['gid']}", rootfs, "/usr/bin/env", "-i",
            *envs, *argv]


def main():
    skip_unless_tools()
    build_dir = os.path.abspath(sys.argv[1])
    image_dir = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else built_pair(build_dir)
    archive = os.path.join(image_dir, "kiln-oci.tar")
    size = os.path.getsize(archive)
    print(f"image archive: {size / 1024 / 1024:.1f} MiB")
    if size > MAX_BYTES:
        fail(f"{archive} is {size} bytes, over the {MAX_BYTES} byte (150 MiB) budget")

    with tempfile.TemporaryDirectory(prefix="kiln-image-test-") as tmp:
        layout = os.path.join(tmp, "layout")
        os.makedirs(layout)
        subprocess.run(["tar", "-C", layout, "-xf", archive], check=True)
        with open(os.path.join(layout, "index.json")) as f:
            index = json.load(f)
        tag = index["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"]
        if index["manifests"][0]["digest"] != read(os.path.join(image_dir, "kiln-oci.digest")):
            fail("index.json's manifest is not the digest scripts/image reported")
        bundle = os.path.join(tmp, "bundle")
        r = subprocess.run(["umoci", "unpack", "--image", f"{layout}:{tag}", bundle],
                           capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"umoci unpack: {r.stderr}")
        with open(os.path.join(bundle, "config.json")) as f:
            process = json.load(f)["process"]
        user, args = process["user"], process["args"]
        env = dict(e.split("=", 1) for e in process["env"])
        if user.get("uid", 0) == 0 or user.get("gid", 0) == 0:
            fail(f"the image runs as root: {user}")
        if args != ["/usr/bin/kiln", "serve"]:
            fail(f"the image runs {args}, expected /usr/bin/kiln serve")
        rootfs = os.path.join(bundle, "rootfs")
        if not os.path.isdir(os.path.join(rootfs, env.get("KILN_BUILTIN_CACHE", "/nonexistent").lstrip("/"))):
            fail(f"KILN_BUILTIN_CACHE={env.get('KILN_BUILTIN_CACHE')} is not a directory in the image")
        for absent in ("usr/bin/apt-get", "usr/share/man/man1", "usr/share/perl", "usr/share/locale/de"):
            if os.path.exists(os.path.join(rootfs, absent)):
                fail(f"the image has /{absent}; it should not")

        want = subprocess.run([os.path.join(build_dir, "kiln"), "--version"], capture_output=True,
                              text=True, check=True).stdout
        r = subprocess.run(chroot_cmd(rootfs, user, env, "/usr/bin/kiln", "--version"),
                           capture_output=True, text=True)
        if r.returncode != 0 or r.stdout != want:
            fail(f"kiln --version in the image: exit {r.returncode}, {r.stdout!r}{r.stderr}; "
                 f"the build says {want!r}")
        print(f"as uid {user['uid']} in the image: {r.stdout.strip()}")

        scratch = os.path.join(rootfs, "tmp", "kiln-test")
        os.makedirs(scratch)
        os.chown(scratch, user["uid"], user["gid"])
        shutil.copy(TRAINING, scratch)
        r = subprocess.run(chroot_cmd(rootfs, user, env, "/usr/bin/kiln", "simulate", "--check",
                                      "/tmp/kiln-test/training-cluster.yaml"),
                           capture_output=True, text=True)
        if r.returncode != 0 or "PASS training-cluster" not in r.stdout:
            fail(f"kiln simulate --check in the image: exit {r.returncode}\n{r.stdout}{r.stderr}")
        print(f"kiln simulate --check in the image: {r.stdout.strip()}")

        manifests = os.path.join(tmp, "cluster.yaml")
        subprocess.run([os.path.join(build_dir, "kiln"), "export-manifests", TRAINING, "-o",
                        manifests], check=True)
        with Emulator("--kubelet", load=[manifests]) as emu:
            rendered, _ = deployed.render()
            deployed.apply(emu, rendered)
            shutil.copy(emu.kubeconfig, os.path.join(scratch, "kubeconfig"))
            os.chown(os.path.join(scratch, "kubeconfig"), user["uid"], user["gid"])
            serve_args, serve_env = deployed.serve_command(emu, rootfs, "/tmp/kiln-test/kubeconfig")
            bound, rc, log_text = deployed.serve_until_tokenize_bound(
                emu, chroot_cmd(rootfs, user, {**env, **serve_env}, "/usr/bin/kiln", *serve_args),
                os.path.join(tmp, "serve.log"), 90)
            log_text = log_text.strip()
            if bound != 3:
                fail(f"kiln serve from the image: {bound} of research/tokenize's 3 pods on cpu-1\n"
                     f"{' '.join(serve_args)}\n{log_text}")
            if rc != 0:
                fail(f"kiln serve from the image exited {rc} on SIGTERM:\n{log_text}")
            print("kiln serve from the image, with deploy/'s args and ConfigMaps, bound "
                  "research/tokenize's 3 pods")
    print(f"PASS image {read(os.path.join(image_dir, 'kiln-oci.digest'))}")


if __name__ == "__main__":
    main()
