#!/usr/bin/env python3
"""Issue 28's policy cases reloaded live into `kiln serve` against the API-server emulator: a
policy whose state grows past its budget, one that spends its host-work budget, and one that uses
`http` without a grant. Each reload is of the running scheduler's conf; the first two run
contained (faults counted by kind in kiln_policy_faults_total, the plugin disabled, sessions go
on), the third is refused and the running generation stays.

Run with Debian's python3 (PyYAML): serve_policy_budgets_test.py KILN
"""
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "emulator"))
from emulator_fixture import Emulator, wait_until  # noqa: E402
from serve_fixtures import ListeningServe, volcano_conf  # noqa: E402
from serve_util import kiln_from_argv, write  # noqa: E402

KILN = kiln_from_argv(ROOT)

STATE_HOG = os.path.join(ROOT, "tests/cli/simulate/data/state-hog/keep.policy")
SCAN = os.path.join(ROOT, "tests/cli/simulate/data/scan/scan.policy")
POSTER = """policy poster;
uses http;
on job_order(l: Job, r: Job) -> int {
  let reply = http_post("http://127.0.0.1:9/never", "{}", 50ms) ?? "";
  return len(reply) > 0 ? 1 : 0;
}
"""

CONF = volcano_conf()


def with_plugin(entry):
    return CONF.replace("  - name: priority\n", "  - name: priority\n" + entry, 1)


def scenario(path):
    """One 8-cpu node and six gangs of three 1-cpu pods: two gangs stay pending, so every session
    orders jobs (job_order runs)."""
    doc = {"name": "budgets",
           "cluster": {"nodes": [{"name": "n0", "allocatable": {"cpu": "8", "memory": "32Gi"}}],
                       "podGroups": [{"name": f"job{j}", "namespace": "c1", "minMember": 3}
                                     for j in range(6)],
                       "pods": [{"name": f"job{j}-{k}", "namespace": "c1", "group": f"job{j}",
                                 "requests": {"cpu": "1", "memory": "1Gi"}}
                                for j in range(6) for k in range(3)]}}
    with open(path, "w") as f:
        yaml.safe_dump(doc, f)


class Serve(ListeningServe):
    def __init__(self, emu, conf, *extra):
        super().__init__(KILN, emu, conf, *extra, period="300ms")

    def faults(self, kind, plugin):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as r:
            text = r.read().decode()
        total = 0.0
        for m in re.finditer(r'^kiln_policy_faults_total\{kind="%s",plugin="%s",point="[a-z_]+"\} '
                             r'([0-9.e+]+)$' % (kind, plugin), text, re.M):
            total += float(m.group(1))
        return total


class PolicyBudgets(unittest.TestCase):
    def test_reloaded_policies_run_contained_or_are_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            policies = os.path.join(tmp, "policies")
            os.mkdir(policies)
            for src in (STATE_HOG, SCAN):
                with open(src) as f, open(os.path.join(policies, os.path.basename(src)), "w") as g:
                    g.write(f.read())
            with open(os.path.join(policies, "poster.policy"), "w") as f:
                f.write(POSTER)
            confdir = os.path.join(tmp, "conf")
            os.mkdir(confdir)
            conf = os.path.join(confdir, "scheduler.conf")
            write(conf, CONF)
            s = os.path.join(tmp, "s.yaml")
            scenario(s)
            manifests = os.path.join(tmp, "m.yaml")
            subprocess.run([KILN, "export-manifests", s, "-o", manifests], check=True)
            with Emulator(load=[manifests]) as emu:
                # The scan policy is over the static step budget (its searches cost their
                # haystack): raised here so that the run-time budget is what stops it. State is
                # per session and this cluster's sessions order few jobs: a 64 MiB state budget
                # is reached by the second 32 MiB store.
                serve = Serve(emu, conf, "--policy-dir", policies, "--policy-max-cost", "1e15",
                              "--policy-state-memory-budget", str(64 << 20))
                try:
                    wait_until(lambda: serve.sessions() >= 1, timeout=60, what="a session")

                    # 1. State past its budget: a memory fault, the plugin disabled at once.
                    write(conf, with_plugin("  - name: keep\n"))
                    wait_until(lambda: serve.faults("memory", "keep") >= 1, timeout=60,
                               what="a memory fault of keep")
                    wait_until(lambda: "plugin keep disabled for the rest of session" in serve.text(),
                               timeout=30, what="keep disabled")
                    n = serve.sessions()
                    wait_until(lambda: serve.sessions() >= n + 2, timeout=60,
                               what="sessions going on after the fault")

                    # 2. Host work past its budget: budget faults, the watchdog disables it.
                    write(conf, with_plugin("  - name: scan\n"))
                    wait_until(lambda: serve.faults("budget", "scan") >= 3, timeout=90,
                               what="three budget faults of scan")
                    self.assertIn("bytes of host work", serve.text())
                    n = serve.sessions()
                    wait_until(lambda: serve.sessions() >= n + 2, timeout=60,
                               what="sessions going on with scan faulting")

                    # 3. `uses http` without a grant: the reload is refused, the running
                    #    generation stays; with the grant it loads.
                    write(conf, with_plugin("  - name: poster\n"))
                    wait_until(lambda: "does not grant" in serve.text(), timeout=30,
                               what="the refused reload")
                    n = serve.sessions()
                    wait_until(lambda: serve.sessions() >= n + 2, timeout=60,
                               what="sessions going on after the refused reload")
                    self.assertNotIn("poster", "".join(l for l in serve.log
                                                       if "policy fault" in l))
                    write(conf, with_plugin("  - name: poster\n    grants:\n"
                                            "      http: [\"http://127.0.0.1:9/\"]\n"))
                    wait_until(lambda: "generation 4 active" in serve.text(), timeout=60,
                               what="the granted conf loading")
                except AssertionError:
                    sys.stderr.write("kiln serve's log, last lines:\n" + "".join(serve.log[-60:]))
                    raise
                finally:
                    self.assertEqual(serve.stop(), 0, serve.text())


if __name__ == "__main__":
    unittest.main()
