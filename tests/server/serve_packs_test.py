#!/usr/bin/env python3
"""`kiln serve --packs DIR --trust PUB` as a process: the example pack's plugins run in sessions;
replacing the .kpack in the packs directory (a new version, written with a rename) reloads live
and bumps the generation; a pack signed by an untrusted key is refused whole, logged, and the old
generation keeps running; so is removing a pack the conf still needs.

Usage: serve_packs_test.py KILN SOURCE_DIR. Needs openssl. Stdlib only.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

from serve_util import fail, metric, get, start_serve, wait_for

KILN, SRC = sys.argv[1], sys.argv[2]
PACK_DIR = os.path.join(SRC, "examples/packs/team-fairness")
SCENARIO = os.path.join(PACK_DIR, "tests/team-share-order.yaml")


def build(src, out, key):
    r = subprocess.run([KILN, "pack", "build", src, "-o", out, "--sign", key],
                       capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"kiln pack build {src}: {r.stdout}{r.stderr}")


def install(kpack, packs_dir):
    """Into the watched directory with a rename, as a deployment would."""
    tmp = os.path.join(packs_dir, ".incoming")
    shutil.copyfile(kpack, tmp)
    os.rename(tmp, os.path.join(packs_dir, "team-fairness.kpack"))


tmp = tempfile.mkdtemp(prefix="kiln-serve-packs-")
proc = None
try:
    keys = {}
    for name in ["trusted", "stranger"]:
        k, p = os.path.join(tmp, name + ".pem"), os.path.join(tmp, name + "-pub.pem")
        subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519", "-out", k], check=True)
        subprocess.run(["openssl", "pkey", "-in", k, "-pubout", "-out", p], check=True)
        keys[name] = (k, p)
    v100 = os.path.join(tmp, "v100.kpack")
    build(PACK_DIR, v100, keys["trusted"][0])
    # 1.0.1: the same pack with a new version and a changed policy file (a comment: the pack's
    # own tests pin the scores, so the behaviour stays).
    src101 = os.path.join(tmp, "src101")
    shutil.copytree(PACK_DIR, src101)
    for rel, old, new in [("kiln-pack.yaml", "version: 1.0.0", "version: 1.0.1"),
                          ("policies/team-nodes.policy", "policy \"team-nodes\";",
                           "policy \"team-nodes\";  // 1.0.1")]:
        path = os.path.join(src101, rel)
        with open(path) as f:
            text = f.read()
        assert old in text, (rel, old)
        with open(path, "w") as f:
            f.write(text.replace(old, new))
    v101 = os.path.join(tmp, "v101.kpack")
    build(src101, v101, keys["trusted"][0])
    untrusted = os.path.join(tmp, "untrusted.kpack")
    build(src101, untrusted, keys["stranger"][0])

    packs_dir = os.path.join(tmp, "packs")
    os.mkdir(packs_dir)
    install(v100, packs_dir)
    conf_dir = os.path.join(tmp, "conf")
    os.mkdir(conf_dir)
    conf = os.path.join(conf_dir, "scheduler.conf")
    shutil.copyfile(os.path.join(PACK_DIR, "scheduler.conf"), conf)

    proc, log, port = start_serve(
        [KILN, "serve", "--scenario", SCENARIO, "--conf", conf, "--packs", packs_dir,
         "--trust", keys["trusted"][1], "--listen", "127.0.0.1:0", "--schedule-period", "200ms"])

    def config():
        return json.loads(get(port, "/config")[1])

    def metrics():
        return get(port, "/metrics")[1]

    cfg = wait_for(lambda: (c := config()).get("generation") == 1 and c, "generation 1")
    if not any(p.startswith("team-fairness 1.0.0") and "signed by ed25519:" in p
               for p in cfg.get("packs", [])):
        fail(f"/config does not list the signed pack: {cfg}")
    if "team-fairness/team-share" not in cfg["tiers"][1]:
        fail(f"/config tiers lack the pack's plugin: {cfg}")
    # The pack's plugins run: beta's job takes the last cpu (team-share), as in the pack's test.
    wait_for(lambda: (metric(metrics(), 'volcano_schedule_attempts_total{result="scheduled"}') or 0) >= 1,
             "a scheduled pod")
    text = metrics()
    if 'volcano_plugin_scheduling_latency_milliseconds_count{OnSession="OnSessionOpen",plugin="team-fairness/team-share"}' not in text:
        fail("no session-open latency for the pack's plugin:\n" + text)

    # Replace the pack with 1.0.1: reloaded live, generation 2.
    install(v101, packs_dir)
    cfg = wait_for(lambda: (c := config()).get("generation") == 2 and c, "generation 2 after replacing the pack")
    if not any(p.startswith("team-fairness 1.0.1") for p in cfg["packs"]):
        fail(f"/config does not show 1.0.1: {cfg}")
    if metric(metrics(), 'kiln_config_reloads_total{result="ok"}') != 1:
        fail("reload not counted ok:\n" + metrics())

    # A pack signed by a key that is not trusted: refused whole, generation 2 keeps running.
    install(untrusted, packs_dir)
    wait_for(lambda: metric(metrics(), 'kiln_config_reloads_total{result="rejected"}') == 1,
             "the untrusted pack's reload rejected")
    wait_for(lambda: any("signed by unknown key" in l for l in log), "a log line naming the untrusted signer")
    cfg = config()
    if cfg["generation"] != 2 or not any(p.startswith("team-fairness 1.0.1") for p in cfg["packs"]):
        fail(f"an untrusted pack replaced the active configuration: {cfg}")
    sessions = metric(metrics(), "kiln_sessions_total")
    wait_for(lambda: metric(metrics(), "kiln_sessions_total") > sessions + 1,
             "sessions continuing after the refused pack")

    # Removing the pack the conf names: rejected too (unknown plugin), generation 2 stays.
    os.remove(os.path.join(packs_dir, "team-fairness.kpack"))
    wait_for(lambda: metric(metrics(), 'kiln_config_reloads_total{result="rejected"}') == 2,
             "the reload without the pack rejected")
    wait_for(lambda: any("team-fairness/team-share" in l and "unknown plugin" in l.lower() for l in log),
             "a log line naming the missing plugin")
    if config()["generation"] != 2:
        fail("removing a needed pack replaced the active configuration")

    # The good pack back: generation 3.
    install(v100, packs_dir)
    wait_for(lambda: config().get("generation") == 3, "generation 3 with the pack back")

    proc.terminate()
    if proc.wait(timeout=20) != 0:
        fail("kiln serve did not stop cleanly:\n" + "".join(log))
    proc = None
    print("PASS")
finally:
    if proc is not None:
        proc.kill()
    shutil.rmtree(tmp, ignore_errors=True)
