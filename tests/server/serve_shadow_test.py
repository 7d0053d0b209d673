#!/usr/bin/env python3
"""`kiln serve --shadow` against the API-server emulator (server/shadow.h).

The live scheduler runs with --dry-run, so the cluster holds still and every session decides the
same: the pending pod c1/p goes to the emptier node (nodeorder's leastrequested, spread). A binpack
candidate puts it on the fuller node: kiln_shadow_decisions_differ_total{kind="bind"} counts it
and /shadow shows the pod with both sides' decision and explanation. A candidate identical to the
live conf never differs while kiln_shadow_sessions_total grows. The candidate is added, replaced
and removed by writing and deleting its file, and one that does not load leaves the live
scheduler alone. A runaway candidate (host work past its budget in every job_order call) is
faulted and counted in the shadow's families only, and the live loop keeps its period.

Run with Debian's python3 (PyYAML): serve_shadow_test.py KILN [TestCase.test_name]
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "emulator"))
from emulator_fixture import Emulator, wait_until  # noqa: E402
from serve_fixtures import ListeningServe, volcano_conf  # noqa: E402
from serve_util import get, kiln_from_argv, metric, write  # noqa: E402

KILN = kiln_from_argv(ROOT)
SCAN = os.path.join(ROOT, "tests/cli/simulate/data/scan/scan.policy")

SPREAD = volcano_conf()
BINPACK = SPREAD + """  - name: binpack
    arguments:
      binpack.weight: 10
"""
RUNAWAY = SPREAD.replace("  - name: priority\n", "  - name: priority\n  - name: scan\n", 1)


def scenario(path):
    """n1 runs a 2-cpu pod, n2 is empty; c1/p (1 cpu) is pending. Spread picks n2, binpack n1.
    Three more gangs keep job_order busy (the runaway candidate's handler)."""
    doc = {"name": "shadow",
           "cluster": {"nodes": [{"name": "n1", "allocatable": {"cpu": "4", "memory": "8Gi"}},
                                 {"name": "n2", "allocatable": {"cpu": "4", "memory": "8Gi"}}],
                       "podGroups": [{"name": "busy", "namespace": "c1", "minMember": 1},
                                     {"name": "pg", "namespace": "c1", "minMember": 1}]
                       + [{"name": f"big{j}", "namespace": "c1", "minMember": 2} for j in range(3)],
                       "pods": [{"name": "r", "namespace": "c1", "group": "busy",
                                 "requests": {"cpu": "2", "memory": "1Gi"}, "phase": "Running",
                                 "node": "n1"},
                                {"name": "p", "namespace": "c1", "group": "pg",
                                 "requests": {"cpu": "1", "memory": "1Gi"}}]
                       + [{"name": f"big{j}-{k}", "namespace": "c1", "group": f"big{j}",
                           "requests": {"cpu": "8", "memory": "1Gi"}}
                          for j in range(3) for k in range(2)]}}
    with open(path, "w") as f:
        yaml.safe_dump(doc, f)


class Serve(ListeningServe):
    def __init__(self, emu, conf, *extra, period="300ms"):
        super().__init__(KILN, emu, conf, "--dry-run", *extra, period=period)

    def metrics(self):
        return get(self.port, "/metrics")[1]

    def m(self, name):
        return metric(self.metrics(), name) or 0.0

    def shadow(self):
        status, body = get(self.port, "/shadow")
        if status != 200:
            raise AssertionError(f"/shadow answered {status}: {body}")
        return json.loads(body)

    def binds(self):
        """The live session's dry-run binds of c1/p, in order."""
        return [m.group(1) for l in list(self.log)
                if (m := re.search(r"dry-run: would bind c1/p to (\S+)", l))]


class Shadow(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        t = self.tmp.name
        self.live = os.path.join(t, "live", "scheduler.conf")
        self.cand = os.path.join(t, "candidate", "scheduler.conf")
        self.policies = os.path.join(t, "policies")
        for d in (os.path.dirname(self.live), os.path.dirname(self.cand), self.policies):
            os.mkdir(d)
        write(self.live, SPREAD)
        s = os.path.join(t, "s.yaml")
        scenario(s)
        self.manifests = os.path.join(t, "m.yaml")
        subprocess.run([KILN, "export-manifests", s, "-o", self.manifests], check=True)

    def tearDown(self):
        self.tmp.cleanup()

    def serve(self, emu, *extra, period="300ms"):
        return Serve(emu, self.live, "--shadow", self.cand, *extra, period=period)

    def run_serve(self, body, *extra, period="300ms"):
        with Emulator(load=[self.manifests]) as emu:
            serve = self.serve(emu, *extra, period=period)
            try:
                body(serve)
            except AssertionError:
                sys.stderr.write("kiln serve's log, last lines:\n" + "".join(serve.log[-60:]))
                raise
            finally:
                self.assertEqual(serve.stop(), 0, serve.text())

    def test_binpack_candidate_differs(self):
        write(self.cand, BINPACK)

        def body(serve):
            wait_until(lambda: serve.m('kiln_shadow_decisions_differ_total{kind="bind"}') >= 2,
                       timeout=60, what="two differing binds")
            self.assertGreaterEqual(serve.m("kiln_shadow_sessions_total"), 2)
            self.assertEqual(set(serve.binds()), {"n2"}, "the live side must keep spreading")
            st = serve.shadow()
            self.assertTrue(st["active"])
            d = next(d for d in st["decisions"] if d["pod"] == "c1/p")
            self.assertEqual(d["kind"], "bind")
            self.assertEqual(d["live"]["bind"], "n2")
            self.assertEqual(d["shadow"]["bind"], "n1")
            self.assertEqual(d["liveExplain"]["result"], {"bound": "n2"}, d)
            self.assertEqual(d["shadowExplain"]["result"], {"bound": "n1"}, d)
            self.assertIn("binpack", d["shadowExplain"]["nodes"]["n1"]["scores"], d)
            self.assertNotIn("binpack", d["liveExplain"]["nodes"]["n2"]["scores"], d)
            # Nothing the shadow did shows in the live families.
            self.assertNotIn("kiln_policy_faults_total{", serve.metrics())

        self.run_serve(body)

    def test_identical_candidate_never_differs(self):
        write(self.cand, SPREAD)

        def body(serve):
            wait_until(lambda: serve.m("kiln_shadow_sessions_total") >= 4, timeout=60,
                       what="four shadow sessions")
            for kind in ("bind", "evict", "pipeline"):
                self.assertEqual(serve.m(f'kiln_shadow_decisions_differ_total{{kind="{kind}"}}'), 0)
            self.assertEqual(serve.shadow()["decisions"], [])

        self.run_serve(body)

    def test_reload_adds_replaces_and_removes_the_shadow(self):
        def body(serve):
            wait_until(lambda: len(serve.binds()) >= 2, timeout=60, what="live sessions")
            st = serve.shadow()
            self.assertFalse(st["active"])
            self.assertIn("does not exist", st["loadError"])
            self.assertEqual(serve.m("kiln_shadow_sessions_total"), 0)

            write(self.cand, SPREAD)  # added
            wait_until(lambda: serve.m("kiln_shadow_sessions_total") >= 2, timeout=60,
                       what="the added shadow running")
            self.assertEqual(serve.m("kiln_shadow_active"), 1)
            self.assertEqual(serve.m('kiln_shadow_decisions_differ_total{kind="bind"}'), 0)

            write(self.cand, BINPACK)  # replaced
            wait_until(lambda: serve.m('kiln_shadow_decisions_differ_total{kind="bind"}') >= 1,
                       timeout=60, what="the replaced shadow differing")
            self.assertEqual(serve.shadow()["generation"], 2)

            write(self.cand, "actions: \"allocate\"\ntiers:\n- plugins:\n  - name: nosuch\n")
            wait_until(lambda: serve.m('kiln_shadow_config_reloads_total{result="rejected"}') >= 1,
                       timeout=60, what="the broken candidate rejected")
            self.assertIn("nosuch", serve.shadow()["loadError"])
            self.assertEqual(serve.shadow()["generation"], 2)  # the last good candidate runs on

            os.remove(self.cand)  # removed
            wait_until(lambda: serve.m("kiln_shadow_active") == 0, timeout=60,
                       what="the shadow removed")
            time.sleep(0.5)
            n = serve.m("kiln_shadow_sessions_total")
            live = len(serve.binds())
            wait_until(lambda: len(serve.binds()) >= live + 3, timeout=60,
                       what="live sessions after the removal")
            self.assertEqual(serve.m("kiln_shadow_sessions_total"), n)
            self.assertEqual(serve.m("kiln_config_generation"), 1)  # the live conf never moved

        self.run_serve(body)

    def test_pack_candidate_runs_with_its_own_conf(self):
        """A pack directory as the candidate: its `conf` and its policies, the live conf's
        plugins untouched (the live conf names none of the pack's)."""
        self.cand = os.path.join(ROOT, "examples", "packs", "team-fairness")

        def body(serve):
            wait_until(lambda: serve.m("kiln_shadow_sessions_total") >= 2, timeout=60,
                       what="shadow sessions of the pack")
            st = serve.shadow()
            self.assertTrue(st["active"])
            self.assertTrue(st["packs"][0].startswith("team-fairness 1.0.0"), st["packs"])
            self.assertIn(os.path.join(self.cand, "scheduler.conf"), st["sources"])
            self.assertEqual(serve.m("kiln_config_generation"), 1)

        self.run_serve(body)

    def test_runaway_candidate_is_contained(self):
        with open(SCAN) as f:
            write(os.path.join(self.policies, "scan.policy"), f.read())
        write(self.cand, RUNAWAY)
        period = 0.3

        def body(serve):
            wait_until(lambda: serve.m("kiln_shadow_sessions_total") >= 1, timeout=120,
                       what="a shadow session of the runaway candidate")
            faults = sum(float(m.group(1)) for m in re.finditer(
                r'^kiln_shadow_policy_faults_total\{kind="budget",plugin="scan",point="[a-z_]+"\} '
                r'([0-9.e+]+)$', serve.metrics(), re.M))
            self.assertGreaterEqual(faults, 1)
            self.assertNotIn("kiln_policy_faults_total{", serve.metrics())
            # The live loop keeps its period while the candidate burns its budgets: over 6 s,
            # at least two thirds of the sessions a 300 ms period gives (a loaded CI machine
            # has noise; a live loop waiting for the shadow would run a handful).
            start, n0 = time.time(), len(serve.binds())
            time.sleep(6)
            ran = len(serve.binds()) - n0
            expected = (time.time() - start) / period
            self.assertGreaterEqual(ran, expected * 2 / 3, f"{ran} live sessions in 6 s")
            self.assertEqual(set(serve.binds()), {"n2"})

        self.run_serve(body, "--policy-dir", self.policies, "--policy-max-cost", "1e15")


if __name__ == "__main__":
    unittest.main()
