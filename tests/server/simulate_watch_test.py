#!/usr/bin/env python3
"""`kiln simulate --cycles N --watch`: the conf is rewritten between cycles (as a ConfigMap
update does, by swapping the `..data` symlink); the next cycle decides with the new conf, a
broken rewrite is rejected with file:line and changes nothing.

Usage: simulate_watch_test.py KILN. Stdlib only.

The scenario: four pending one-pod jobs that fit. Conf `enqueue` alone binds nothing; conf
`enqueue, allocate` binds them. Cycles: 0 enqueue-only (0 binds); then a broken conf (an
action typo) is written: cycle 1 still enqueue-only (0 binds); then the allocate conf: cycle 2
binds all four.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading

KILN = sys.argv[1]

SCENARIO = """name: watch
cluster:
  nodes:
  - {name: n1, allocatable: {cpu: "8", memory: 16Gi}}
  podGroups:
  - {name: a, namespace: c1, minMember: 1}
  - {name: b, namespace: c1, minMember: 1}
  pods:
  - {name: a-0, namespace: c1, group: a, requests: {cpu: "1", memory: 1Gi}}
  - {name: b-0, namespace: c1, group: b, requests: {cpu: "1", memory: 1Gi}}
  - {name: c-0, namespace: c1, requests: {cpu: "1", memory: 1Gi}}
  - {name: d-0, namespace: c1, requests: {cpu: "1", memory: 1Gi}}
"""
ENQUEUE_ONLY = 'actions: "enqueue"\ntiers: []\n'
BROKEN = 'actions: "enqueue, allocat"\ntiers: []\n'
ALLOCATE = 'actions: "enqueue, allocate"\ntiers: []\n'


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


tmp = tempfile.mkdtemp(prefix="kiln-watch-test-")
try:
    scenario = os.path.join(tmp, "scenario.yaml")
    with open(scenario, "w") as f:
        f.write(SCENARIO)
    # A ConfigMap mount: scheduler.conf -> ..data/scheduler.conf, ..data -> ..v0
    mount = os.path.join(tmp, "mount")
    os.makedirs(mount)
    version = [0]

    def publish(text):
        v = version[0]
        version[0] += 1
        d = os.path.join(mount, f"..v{v}")
        os.makedirs(d)
        with open(os.path.join(d, "scheduler.conf"), "w") as f:
            f.write(text)
        link = os.path.join(mount, "..data_tmp")
        os.symlink(f"..v{v}", link)
        os.rename(link, os.path.join(mount, "..data"))
        if v > 0:
            shutil.rmtree(os.path.join(mount, f"..v{v - 1}"))

    publish(ENQUEUE_ONLY)
    conf = os.path.join(mount, "scheduler.conf")
    os.symlink("..data/scheduler.conf", conf)

    proc = subprocess.Popen([KILN, "simulate", scenario, "--conf", conf, "--watch", "--cycles", "3",
                             "--period", "2s", "-o", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    log = []
    # Rewrite right after a cycle ends: the next starts two seconds later and waits for the
    # watcher to settle, so the change is in effect for it.
    for line in proc.stderr:
        log.append(line)
        if line.startswith("cycle 0:"):
            publish(BROKEN)
        elif line.startswith("cycle 1:"):
            publish(ALLOCATE)
    out = proc.stdout.read()
    code = proc.wait(timeout=60)
    text = "".join(log)
    if code != 0:
        fail(f"exit {code}\n{text}")
    cycles = [l for l in log if l.startswith("cycle ")]
    expect = ["cycle 0: generation 1: 0 binds", "cycle 1: generation 1: 0 binds",
              "cycle 2: generation 2: 4 binds"]
    for got, want in zip(cycles, expect):
        if not got.startswith(want):
            fail(f"expected `{want}...`, got `{got.strip()}`\n{text}")
    if len(cycles) != 3:
        fail(f"expected 3 cycle lines\n{text}")
    # The broken conf was reported with its file and line, and the action it does not know.
    if not any("scheduler.conf:1:" in l and "allocat" in l and "rejected" in l for l in log):
        fail("no rejection with file:line in the log\n" + text)
    result = json.loads(out)
    sessions = result["sessions"]
    if len(sessions) != 3 or sessions[0]["binds"] or sessions[1]["binds"] or len(sessions[2]["binds"]) != 4:
        fail("json sessions do not match the cycle lines:\n" + out)
    print("PASS")
finally:
    shutil.rmtree(tmp, ignore_errors=True)
