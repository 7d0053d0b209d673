#!/usr/bin/env python3
"""`kiln serve` as a process: endpoints over a real socket, promtool on /metrics, live reload,
a rejected reload, clean SIGTERM.

Usage: serve_endpoints_test.py KILN SOURCE_DIR. Serves examples/scenarios/training-cluster.yaml
(the simulated cluster) with a conf in a temp dir, so no API server is needed. Stdlib only.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from serve_fixtures import volcano_conf
from serve_util import fail, get, metric, start_serve, wait_for, write

KILN, SRC = sys.argv[1], sys.argv[2]
SCENARIO = os.path.join(SRC, "examples/scenarios/training-cluster.yaml")

CONF_A = volcano_conf("enqueue, allocate, preempt, reclaim, backfill", overcommit=True)
CONF_B = CONF_A.replace("  - name: nodeorder\n", "  - name: nodeorder\n  - name: binpack\n")
CONF_BROKEN = CONF_A.replace("  - name: nodeorder\n", "  - name: nodeordr\n")
# tests/cli/simulate/data/runaway: every node_order call runs past the loop budget.
CONF_RUNAWAY = CONF_A.replace("  - name: nodeorder\n", "  - name: nodeorder\n  - name: runaway\n")
RUNAWAY_DIR = os.path.join(SRC, "tests/cli/simulate/data/runaway")


tmp = tempfile.mkdtemp(prefix="kiln-serve-test-")
try:
    conf = os.path.join(tmp, "scheduler.conf")
    write(conf, CONF_A)
    proc, log, port = start_serve(
        [KILN, "serve", "--scenario", SCENARIO, "--conf", conf, "--listen", "127.0.0.1:0",
         "--schedule-period", "200ms", "--policy-dir", RUNAWAY_DIR])
    status, body = get(port, "/healthz")
    if status != 200:
        fail(f"/healthz: {status} {body}")
    status, body = get(port, "/readyz")
    if status != 200:
        fail(f"/readyz: {status} {body}")
    wait_for(lambda: (metric(get(port, "/metrics")[1], "kiln_sessions_total") or 0) >= 2,
             "two sessions")
    status, text = get(port, "/metrics")
    for needle in ["volcano_e2e_scheduling_latency_milliseconds_bucket",
                   'volcano_action_scheduling_latency_milliseconds_count{action="allocate"}',
                   'volcano_plugin_scheduling_latency_milliseconds_count{OnSession="OnSessionOpen",plugin="gang"}',
                   'volcano_schedule_attempts_total{result="scheduled"}',
                   'volcano_queue_allocated_milli_cpu{queue_name="prod"}',
                   'volcano_unschedule_task_count{job_id=',
                   "kiln_config_generation 1"]:
        if needle not in text:
            fail(f"/metrics lacks {needle}:\n{text}")
    # volcano_queue_deserved_* is what proportion computed at open (the scenario's queues have no
    # spec `deserved`, so exporting the spec gave 0): prod, weight 4 of 8, has jobs.
    deserved = metric(text, 'volcano_queue_deserved_milli_cpu{queue_name="prod"}') or 0
    if deserved <= 0:
        fail(f"expected proportion's computed deserved cpu for prod, got {deserved}:\n{text}")
    # The first session binds research/tokenize's three pods (the scenario's expect block).
    if (metric(text, 'volcano_schedule_attempts_total{result="scheduled"}') or 0) < 3:
        fail("expected at least 3 scheduled attempts:\n" + text)

    # promtool: the exposition must parse (exit 1 = parse error). Lint findings (exit 3) are
    # allowed only for Volcano's own names, which dashboards need as they are (milliseconds,
    # volcano_total_preemption_attempts without _total); Kiln's families must be lint-clean.
    mfile = os.path.join(tmp, "metrics.txt")
    with open(mfile, "w") as f:
        f.write(text)
    with open(mfile) as f:
        r = subprocess.run(["promtool", "check", "metrics"], stdin=f, capture_output=True, text=True)
    out = (r.stdout + r.stderr).strip()
    if r.returncode not in (0, 3):
        fail(f"promtool check metrics: exit {r.returncode}\n{out}")
    for line in out.splitlines():
        if not line.startswith("volcano_"):
            fail(f"promtool lint finding outside Volcano's names: {line}")
    print(f"promtool check metrics: exit {r.returncode}, {len(out.splitlines())} Volcano-name lint notes")

    status, body = get(port, "/config")
    cfg = json.loads(body)
    if cfg["generation"] != 1 or not cfg["hash"].startswith("sha256:") or conf not in cfg["sources"]:
        fail(f"/config: {body}")

    # A good rewrite: generation 2, reload counted.
    write(conf, CONF_B)
    wait_for(lambda: json.loads(get(port, "/config")[1])["generation"] == 2, "generation 2")
    text = get(port, "/metrics")[1]
    if metric(text, 'kiln_config_reloads_total{result="ok"}') != 1 or metric(text, "kiln_config_generation") != 2:
        fail("reload metrics after a good rewrite:\n" + text)
    if json.loads(get(port, "/config")[1])["tiers"][1][-1] != "binpack":
        fail("/config does not show the new tier")

    # A broken rewrite: rejected whole, generation 2 stays, the log names file:line.
    write(conf, CONF_BROKEN)
    wait_for(lambda: metric(get(port, "/metrics")[1], 'kiln_config_reloads_total{result="rejected"}') == 1,
             "a rejected reload")
    if json.loads(get(port, "/config")[1])["generation"] != 2:
        fail("a rejected conf replaced the active one")
    want = f"{conf}:12:"
    wait_for(lambda: any(want in l and "nodeordr" in l for l in log), f"a log line with {want}")
    sessions = metric(get(port, "/metrics")[1], "kiln_sessions_total")
    wait_for(lambda: metric(get(port, "/metrics")[1], "kiln_sessions_total") > sessions + 1,
             "sessions continuing after the rejected reload")

    # A policy that faults: each abandoned call is counted by plugin, handler and kind, and the
    # scheduler keeps going.
    write(conf, CONF_RUNAWAY)
    fault_re = re.compile(r'^kiln_policy_faults_total\{kind="budget",plugin="runaway",point="node_order"\} ([0-9.e+]+)$', re.M)
    wait_for(lambda: (m := fault_re.search(get(port, "/metrics")[1])) and float(m.group(1)) >= 3,
             "kiln_policy_faults_total for the runaway plugin")
    sessions = metric(get(port, "/metrics")[1], "kiln_sessions_total")
    wait_for(lambda: metric(get(port, "/metrics")[1], "kiln_sessions_total") > sessions,
             "sessions continuing with a faulting plugin")

    proc.send_signal(signal.SIGTERM)
    try:
        code = proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        fail("kiln serve did not stop within 20 s of SIGTERM")
    if code != 0:
        fail(f"exit code {code} after SIGTERM:\n" + "".join(log))
    time.sleep(0.2)
    if not any("stopped after" in l for l in log):
        fail("no clean-stop line in the log:\n" + "".join(log))
    print("PASS")
finally:
    shutil.rmtree(tmp, ignore_errors=True)
