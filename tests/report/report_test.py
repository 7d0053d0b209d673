#!/usr/bin/env python3
"""Trace replay end to end, through the `kiln` binary (Debian's python3, standard library only).

    report_test.py KILN SOURCE_DIR

  * scripts/gen-trace: the same arguments write the same bytes, another seed another trace;
  * skipping idle periods decides exactly what running every period decides, on a generated
    trace with the real policies;
  * a cluster with HyperNodes: gangsByTier per session, waitingByTopology in the summary, and
    both in the --report page's data;
  * `--report` on a scenario whose names try to break out of the page: the page is rendered by
    headless Chromium, which must run its script to the end with no error and paint every chart
    canvas; no name from the scenario may end a script element;
  * `--compare-conf A B --report` (spread against binpack on one trace): the comparison page is
    rendered by headless Chromium the same way, with its three charts painted.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

KILN = SOURCE = None
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=kw.pop("timeout", 300), **kw)


class Trace(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="kiln-report-test-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def gen(self, name, *args):
        out = os.path.join(self.tmp, name)
        r = run([sys.executable, os.path.join(SOURCE, "scripts/gen-trace"), *args, "-o", out])
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out, "rb") as f:
            return out, f.read()

    def test_generator_is_seeded(self):
        args = ["--nodes", "20", "--hours", "0.2", "--rate", "5"]
        _, a = self.gen("a.yaml", "--seed", "7", *args)
        _, b = self.gen("b.yaml", "--seed", "7", *args)
        _, c = self.gen("c.yaml", "--seed", "8", *args)
        self.assertEqual(a, b)
        self.assertNotEqual(a, c)
        text = a.decode()
        self.assertIn("nvidia.com/gpu", text)
        self.assertIn("minMember: 4", text)  # gangs of several sizes
        self.assertRegex(text, r"duration: \d+s")

    def test_skipping_decides_like_every_period(self):
        path, _ = self.gen("skip.yaml", "--seed", "3", "--nodes", "30", "--hours", "0.25",
                           "--rate", "4")
        outs = []
        for extra in ([], ["--every-period"]):
            r = run([KILN, "simulate", path, "--until", "20m", "--period", "5s", "--output",
                     "json", *extra])
            self.assertEqual(r.returncode, 0, r.stderr)
            outs.append(json.loads(r.stdout))
        fast, slow = outs
        self.assertGreater(fast["summary"]["sessionsSkipped"], 0)
        self.assertEqual(slow["summary"]["sessionsSkipped"], 0)
        by_time = {s["metrics"]["time"]: s for s in fast["sessions"]}
        decided = 0
        for s in slow["sessions"]:
            t = s["metrics"]["time"]
            if t in by_time:
                f = by_time[t]
                self.assertEqual(f["binds"], s["binds"], t)
                self.assertEqual(f["evictions"], s["evictions"], t)
                self.assertEqual(f["podGroupPhases"], s["podGroupPhases"], t)
                self.assertEqual(f["metrics"], s["metrics"], t)
                decided += 1
            else:
                self.assertEqual(s["binds"], {}, t)
                self.assertEqual(s["evictions"], [], t)
        self.assertEqual(decided, len(fast["sessions"]))
        self.assertEqual(fast["summary"]["jobs"], slow["summary"]["jobs"])
        self.assertEqual(fast["summary"]["queues"], slow["summary"]["queues"])

    def test_topology_figures(self):
        # tests/report/data/topology-trace.yaml's notes derive these.
        html = os.path.join(self.tmp, "topology.html")
        r = run([KILN, "simulate", "--until", "3m", "--period", "30s", "--output", "json",
                 "--report", html, os.path.join(SOURCE, "tests/report/data/topology-trace.yaml")])
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout)
        tiers = [s["metrics"].get("gangsByTier") for s in out["sessions"]]
        self.assertEqual(tiers, [{"1": 1, "2": 1}] * len(tiers))
        by = out["summary"]["waitingByTopology"]["q1"]
        self.assertEqual(sorted(by), ["hard", "none", "soft"])
        self.assertEqual(by["hard"]["waitingSeconds"]["max"], 0.0)
        self.assertEqual(by["none"]["waitingSeconds"]["max"], 0.0)
        self.assertEqual(by["soft"]["jobs"], 1)
        self.assertEqual(by["soft"]["waitingSeconds"]["mean"], 30.0)
        with open(html) as f:
            page = f.read()
        self.assertIn('"gangTiers":{"1":[1,1,1,1,1,1],"2":[1,1,1,1,1,1]}', page)
        self.assertIn("waitingByTopology", page)
        self.assertIn("Gangs by the tier they span", page)

    def chromium_dom(self, page):
        profile = os.path.join(self.tmp, "profile-" + os.path.basename(page))
        r = run([CHROMIUM, "--headless", "--disable-gpu", "--no-sandbox",
                 f"--user-data-dir={profile}", "--virtual-time-budget=10000",
                 "--enable-logging=stderr", "--v=0", "--dump-dom", "file://" + page], timeout=400)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        m = re.search(r'<div id="kiln-rendered"([^>]*)>', r.stdout)
        self.assertIsNotNone(m, "the page's script did not finish:\n" + r.stderr[-2000:])
        self.assertNotRegex(r.stderr, r"Uncaught|CONSOLE\(\d+\)\].*[Ee]rror")
        return r.stdout, dict(re.findall(r'data-([a-z]+)="([^"]*)"', m.group(1)))

    def test_compare_report_renders_in_chromium(self):
        data = os.path.join(SOURCE, "tests/cli/simulate/data/compare")
        page = os.path.join(self.tmp, "compare.html")
        r = run([KILN, "simulate", "--compare-conf", os.path.join(data, "spread.conf"),
                 os.path.join(data, "binpack.conf"), os.path.join(data, "trace.yaml"),
                 "--until", "10m", "--period", "30s", "--report", page])
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(page, encoding="utf-8") as f:
            html = f.read()
        self.assertEqual(len(re.findall(r"<script\b", html)), 3)
        self.assertNotRegex(html, r"https?://[^\s\"']*\.(js|css)")
        dom, attrs = self.chromium_dom(page)
        self.assertEqual(attrs.get("done"), "yes", attrs)
        self.assertEqual(attrs.get("errors"), "0", attrs)
        self.assertEqual(attrs.get("charts"), "3", attrs)
        self.assertEqual(attrs.get("painted"), "3", attrs)
        self.assertIn("c1/wide-0", dom)  # a differing decision in the table

    def test_report_renders_in_chromium(self):
        scenario = os.path.join(SOURCE, "tests/report/data/hostile-names.yaml")
        page = os.path.join(self.tmp, "report.html")
        r = run([KILN, "simulate", scenario, "--until", "10m", "--period", "10s", "--report", page])
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(page, encoding="utf-8") as f:
            html = f.read()
        # Chart.js, the data and the page's script: three script elements, and nothing from the
        # scenario closes one early.
        self.assertEqual(len(re.findall(r"<script\b", html)), 3)
        self.assertEqual(html.count("</script>"), 3)
        self.assertIn("\\u003c/script>", html)
        self.assertNotRegex(html, r"https?://[^\s\"']*\.(js|css)")  # nothing to fetch

        profile = os.path.join(self.tmp, "profile")
        r = run([CHROMIUM, "--headless", "--disable-gpu", "--no-sandbox",
                 f"--user-data-dir={profile}", "--virtual-time-budget=10000",
                 "--enable-logging=stderr", "--v=0", "--dump-dom", "file://" + page], timeout=400)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        dom = r.stdout
        m = re.search(r'<div id="kiln-rendered"([^>]*)>', dom)
        self.assertIsNotNone(m, "the page's script did not finish:\n" + r.stderr[-2000:])
        attrs = dict(re.findall(r'data-([a-z]+)="([^"]*)"', m.group(1)))
        self.assertEqual(attrs.get("done"), "yes", attrs)
        self.assertEqual(attrs.get("errors"), "0", attrs)
        self.assertEqual(attrs.get("charts"), "5", attrs)
        self.assertEqual(attrs.get("canvases"), "5", attrs)
        self.assertEqual(attrs.get("painted"), "5", attrs)  # every chart drew something
        # Console errors Chromium logged (script errors, blocked loads).
        self.assertNotRegex(r.stderr, r"Uncaught|CONSOLE\(\d+\)\].*[Ee]rror")
        # The hostile names are shown as text: no element came out of them.
        self.assertEqual(len(re.findall(r"<script\b", dom)), 3)
        self.assertNotIn("<b>bold</b>", dom)
        self.assertIn("&lt;b&gt;bold&lt;/b&gt;", dom)
        self.assertIn("<td>&lt;/script&gt;&lt;script&gt;document.title='pwned'&lt;/script&gt;</td>",
                      dom)
        title = re.search(r"<title>(.*?)</title>", dom, re.S).group(1)
        self.assertTrue(title.startswith("Kiln simulation: report &lt;/script&gt;"), title)


if __name__ == "__main__":
    KILN, SOURCE = sys.argv[1], sys.argv[2]
    unittest.main(argv=[sys.argv[0]] + sys.argv[3:], verbosity=2)
