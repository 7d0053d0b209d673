"""`kiln test` outputs checked by what reads them: the JUnit XML parsed as XML the way CI tools do,
the JSON document parsed as JSON, parallel runs against a serial one, and `--compare --out`
whose written scenario must reproduce the difference under `kiln simulate`.

Usage: test_outputs.py KILN [unittest args]; run from the source tree (ctest does).
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

KILN = None


def kiln(*args):
    return subprocess.run([KILN, *args], capture_output=True, text=True, timeout=300)


class JunitOutput(unittest.TestCase):
    def test_well_formed_with_counts_and_the_diff(self):
        r = kiln("test", "-o", "junit", "tests/kiln-test")
        self.assertEqual(r.returncode, 1, r.stderr)
        root = ET.fromstring(r.stdout)  # raises on malformed XML
        self.assertEqual(root.tag, "testsuites")
        self.assertEqual((root.get("tests"), root.get("failures"), root.get("errors")), ("4", "1", "1"))
        cases = root.findall("./testsuite/testcase")
        self.assertEqual(len(cases), 4)
        for c in cases:
            self.assertGreaterEqual(float(c.get("time")), 0.0)
        by_name = {c.get("name"): c for c in cases}
        failure = by_name["tests/kiln-test/failing/wrong-node.yaml"].find("failure")
        self.assertIsNotNone(failure)
        self.assertIn("binds: c1/p1: expected n2, got n1", failure.text)
        self.assertIn("expected 50, got 25", failure.text)
        error = by_name["tests/kiln-test/broken/bad-quantity.yaml"].find("error")
        self.assertIsNotNone(error)
        self.assertIn("bad-quantity.yaml:4:35", error.text)
        self.assertIsNone(by_name["tests/kiln-test/gang/all-or-nothing.yaml"].find("failure"))


class JsonOutput(unittest.TestCase):
    def test_parses_and_summarises(self):
        r = kiln("test", "-o", "json", "tests/kiln-test")
        self.assertEqual(r.returncode, 1, r.stderr)
        doc = json.loads(r.stdout)
        self.assertEqual(doc["summary"], {"passed": 2, "failed": 2, "total": 4})
        statuses = {c["name"]: c["status"] for c in doc["cases"]}
        self.assertEqual(statuses["tests/kiln-test/broken/bad-quantity.yaml"], "error")
        self.assertEqual(statuses["tests/kiln-test/failing/wrong-node.yaml"], "fail")
        self.assertTrue(all(c["ms"] >= 0 for c in doc["cases"]))


class Parallel(unittest.TestCase):
    def test_output_order_does_not_depend_on_jobs(self):
        serial = kiln("test", "--no-times", "-j", "1", "tests/kiln-test")
        for jobs in ("2", "4"):
            parallel = kiln("test", "--no-times", "-j", jobs, "tests/kiln-test")
            self.assertEqual(parallel.stdout, serial.stdout)
            self.assertEqual(parallel.returncode, serial.returncode)


class Compare(unittest.TestCase):
    def test_written_scenario_reproduces_the_difference(self):
        policy_dir = "tests/kiln-test/compare"
        with tempfile.TemporaryDirectory() as out:
            r = kiln("test", "--compare", "binpack", f"{policy_dir}/binpack_full_is_overflow.policy",
                     "--seed", "2", "--out", out)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            files = os.listdir(out)
            self.assertEqual(len(files), 1)
            path = os.path.join(out, files[0])
            self.assertIn(f"wrote {path}", r.stdout)
            diff_lines = [l.strip() for l in r.stdout.splitlines() if l.startswith("  ")]
            self.assertTrue(diff_lines, r.stdout)
            with open(path) as f:
                text = f.read()
            # Shrunk to a few objects: one line per node, queue, group and pod in the cluster.
            objects = sum(1 for l in text.splitlines() if l.startswith("  - {name: "))
            self.assertLessEqual(objects, 8, text)
            # The candidate conf disagrees with the reference decisions in `expect`...
            sim = kiln("simulate", "--check", path, "--policy-dir", policy_dir)
            self.assertEqual(sim.returncode, 1, sim.stdout + sim.stderr)
            for d in diff_lines:
                self.assertIn(d, sim.stdout)
            # ...and the same scenario with the reference plugin back in place agrees with them.
            with open(os.path.join(out, "reference.yaml"), "w") as f:
                f.write(text.replace("- name: binpack_full_is_overflow\n", "- name: binpack\n"))
            ref = kiln("simulate", "--check", os.path.join(out, "reference.yaml"))
            self.assertEqual(ref.returncode, 0, ref.stdout + ref.stderr)

    def test_same_seed_same_result(self):
        args = ("test", "--no-times", "--compare", "binpack",
                "tests/kiln-test/compare/binpack_full_is_overflow.policy", "--seed", "3")
        self.assertEqual(kiln(*args).stdout, kiln(*args).stdout)

    def test_equivalent_policy_over_many_seeds(self):
        for seed in ("1", "2", "3"):
            r = kiln("test", "--compare", "binpack", "tests/kiln-test/compare/binpack_copy.policy",
                     "--seed", seed, "--cases", "30")
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("SAME: binpack_copy decides like binpack on 30 random clusters", r.stdout)


if __name__ == "__main__":
    KILN = os.path.abspath(sys.argv.pop(1))
    unittest.main()
