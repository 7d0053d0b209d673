#!/usr/bin/env python3
"""`kiln serve` against the C++ bind sink (tools/bind-sink), real sockets, real processes: the
sink is faithful enough that kiln serve lists (in pages), watches and binds every pod exactly once,
writes PodGroup status and Events; the sink answers 409 to a second binding of a pod and counts
it; a watch delivers what the sink changes; the sink's own load client binds through it.

Run with Debian's python3 (PyYAML): serve_bind_sink_test.py KILN [TestCase.test_name], with the
sink binary in $KILN_BIND_SINK (default build/kiln_bind_sink).
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from serve_fixtures import volcano_conf  # noqa: E402
from serve_util import ServeProcess, kiln_from_argv, wait_for  # noqa: E402

KILN = kiln_from_argv(ROOT)
SINK = os.environ.get("KILN_BIND_SINK", os.path.join(ROOT, "build", "kiln_bind_sink"))
NODES, GANGS, GANG = 160, 120, 10  # 1,200 pods (three LIST pages of 500) on 8-cpu nodes

# serve_cluster_test's cluster where every pod fits (imported after KILN is taken off argv).
from serve_cluster_test import small_scenario  # noqa: E402


class Sink:
    """One kiln_bind_sink process serving `manifests` on a free port."""

    def __init__(self, tmp, manifests):
        self.url_file = os.path.join(tmp, "url")
        self.kubeconfig = os.path.join(tmp, "kubeconfig")
        self.proc = subprocess.Popen([SINK, "serve", "--manifests", manifests, "--url-file", self.url_file,
                                      "--write-kubeconfig", self.kubeconfig],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wait_for(lambda: os.path.exists(self.url_file) or self.proc.poll() is not None, "the sink's url")
        if self.proc.poll() is not None:
            raise AssertionError("kiln_bind_sink exited:\n" + self.proc.stderr.read())
        with open(self.url_file) as f:
            self.url = f.read().strip()

    def request(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def stats(self):
        return self.request("GET", "/sink/stats")[1]

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)
        self.proc.stderr.close()


class BindSink(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kiln-bind-sink-")
        path = os.path.join(self.tmp, "scenario.yaml")
        small_scenario(path, nodes=NODES, jobs=GANGS, per_job=GANG)
        self.manifests = os.path.join(self.tmp, "cluster.json")
        subprocess.run([KILN, "export-manifests", path, "--format", "json", "-o", self.manifests], check=True)
        self.conf = os.path.join(self.tmp, "scheduler.conf")
        with open(self.conf, "w") as f:
            f.write(volcano_conf())
        self.sink = Sink(self.tmp, self.manifests)
        self.addCleanup(self.sink.stop)

    def test_serve_binds_every_pod_exactly_once(self):
        pods = GANGS * GANG
        serve = ServeProcess(KILN, self.sink, self.conf)
        self.addCleanup(serve.stop)
        wait_for(lambda: self.sink.stats()["binds"] >= pods or serve.proc.poll() is not None,
                 "every pod bound", timeout=120)
        self.assertIsNone(serve.proc.poll(), serve.text())
        # Each PodGroup's status is written (once at least), behind the binds in the write queue.
        wait_for(lambda: self.sink.stats()["statusWrites"] >= GANGS, "the PodGroups' status", timeout=120)
        # Two more sessions: a pod kiln serve saw bound on its watch is never bound again.
        seen = serve.sessions()
        wait_for(lambda: serve.sessions() >= seen + 2, "two more sessions", timeout=60)
        stats = self.sink.stats()
        self.assertEqual(stats["binds"], pods, serve.text()[-3000:])
        self.assertEqual(stats["podsBound"], pods)
        self.assertEqual(stats["bindConflicts"], 0, "a pod was sent a second binding")
        # A Scheduled Event per bind, sent beside the binds by the Event sender (none dropped:
        # the Event queue holds more than this cluster's pods).
        wait_for(lambda: self.sink.stats()["events"] >= pods, "a Scheduled Event per bind", timeout=60)
        # kiln serve's own log: the initial LIST of the pods in three pages, and the snapshot's time.
        self.assertRegex(serve.text(), rf"initial LIST of pods: {pods} objects listed and decoded in \d+ ms")
        self.assertRegex(serve.text(), r"caches synced \d+ ms after start")
        self.assertRegex(serve.text(), r"kubernetes: snapshot [0-9.]+ ms \(copy of the cache [0-9.]+ ms: \d+ pods read, "
                                       r"the cache's lock held [0-9.]+ ms; model built [0-9.]+ ms; this thread's CPU "
                                       r"[0-9.]+ ms, [0-9.]+ of it in the kernel, \d+ page faults\)")
        # The first snapshot reads every pod; once the binds have landed, one reads none again.
        self.assertRegex(serve.text(), rf"copy of the cache [0-9.]+ ms: {pods} pods read")
        wait_for(lambda: re.search(r"copy of the cache [0-9.]+ ms: 0 pods read", serve.text()),
                 "a snapshot that reads no pod again", timeout=30)
        # The pods' watch delivers what the sink changes: every touched pod reaches kiln serve.
        code, _ = self.sink.request("POST", "/sink/touch?n=500")
        self.assertEqual(code, 200)
        wait_for(lambda: self.sink.stats()["touch"]["deliveredSeconds"] > 0, "the touched pods on the watch")
        # Its threads carry names (runtime/thread_name.h; scripts/bench-serve sums CPU by them):
        # the session on the main thread, the writers, the watches, the Event sender.
        names = set()
        for task in os.listdir(f"/proc/{serve.proc.pid}/task"):
            try:
                with open(f"/proc/{serve.proc.pid}/task/{task}/comm") as f:
                    names.add(f.read().strip())
            except FileNotFoundError:  # the thread ended
                pass
        for name in ("kiln", "kiln-write", "kiln-events", "watch-pods", "watch-nodes"):
            self.assertIn(name, names)

    def test_serve_runs_malloc_on_huge_pages_unless_turned_off(self):
        # kiln serve executes itself again (same pid) with glibc's malloc advising transparent
        # huge pages (cli/huge_page_malloc.h), where the kernel has THP and glibc takes the
        # tunable; KILN_MALLOC_HUGEPAGES=0 turns it off, and the user's own tunables are kept.
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            thp = "[never]" not in f.read()
        glibc = tuple(int(x) for x in os.confstr("CS_GNU_LIBC_VERSION").split()[1].split(".")[:2])
        expect = thp and glibc >= (2, 35)
        cases = [({}, "glibc.malloc.hugetlb=1" if expect else None),
                 ({"GLIBC_TUNABLES": "glibc.malloc.arena_max=8"},
                  "glibc.malloc.arena_max=8:glibc.malloc.hugetlb=1" if expect else "glibc.malloc.arena_max=8"),
                 ({"KILN_MALLOC_HUGEPAGES": "0"}, None)]
        for extra, tunables in cases:
            env = {k: v for k, v in os.environ.items() if k not in ("GLIBC_TUNABLES", "KILN_MALLOC_HUGEPAGES")}
            env.update(extra)
            serve = ServeProcess(KILN, self.sink, self.conf, env=env)
            try:
                wait_for(lambda: "kiln serve: API server" in serve.text() or serve.proc.poll() is not None,
                         "kiln serve's start")
                self.assertIsNone(serve.proc.poll(), serve.text())
                # The environment it started with (the last exec's). glibc cuts GLIBC_TUNABLES
                # there at each ':' as it parses it, so the words are looked for one by one; the
                # process's own view, whole, is in its log line.
                with open(f"/proc/{serve.proc.pid}/environ", "rb") as f:
                    environ = f.read().decode()
                for word in (tunables or "").split(":"):
                    self.assertIn(word, environ, extra)
                line = next(l for l in serve.log if "kiln serve: API server" in l)
                if tunables and "hugetlb" in tunables:
                    self.assertIn(f"malloc advises transparent huge pages (GLIBC_TUNABLES={tunables};", line)
                    self.assertIn("KILN_MALLOC_HUGEPAGES_SET=1", environ)
                else:
                    self.assertNotIn("hugetlb", environ, extra)
                    self.assertIn("malloc on 4 KiB pages", line)
                # It schedules as ever: the session runs and binds.
                wait_for(lambda: serve.sessions() >= 1 or serve.proc.poll() is not None, "a session", timeout=60)
                self.assertIsNone(serve.proc.poll(), serve.text())
            finally:
                serve.stop()

    def test_a_second_binding_is_a_conflict_and_counted(self):
        binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "job0-0", "namespace": "c1"},
                   "target": {"apiVersion": "v1", "kind": "Node", "name": "n0"}}
        path = "/api/v1/namespaces/c1/pods/job0-0/binding"
        self.assertEqual(self.sink.request("POST", path, binding)[0], 201)
        code, status = self.sink.request("POST", path, binding)
        self.assertEqual(code, 409)
        self.assertEqual(status["reason"], "Conflict")
        code, pod = self.sink.request("GET", "/api/v1/namespaces/c1/pods/job0-0")
        self.assertEqual((code, pod["spec"]["nodeName"]), (200, "n0"))
        # A binding whose uid is not the pod's is refused and binds nothing.
        stranger = dict(binding, metadata={"name": "job0-1", "namespace": "c1", "uid": "not-the-pod"})
        self.assertEqual(self.sink.request("POST", "/api/v1/namespaces/c1/pods/job0-1/binding",
                                           stranger)[0], 409)
        self.assertEqual(self.sink.request("POST", "/api/v1/namespaces/c1/pods/missing/binding", binding)[0], 404)
        stats = self.sink.stats()
        self.assertEqual((stats["binds"], stats["bindConflicts"], stats["podsBound"]), (1, 1, 1))

    def test_paged_list_and_the_load_client(self):
        code, page = self.sink.request("GET", "/api/v1/pods?limit=500")
        self.assertEqual((code, len(page["items"])), (200, 500))
        names = [p["metadata"]["name"] for p in page["items"]]
        code, rest = self.sink.request("GET", "/api/v1/pods?limit=1000&continue="
                                       + urllib.request.quote(page["metadata"]["continue"]))
        self.assertEqual(code, 200)
        self.assertNotIn("continue", rest["metadata"])
        names += [p["metadata"]["name"] for p in rest["items"]]
        self.assertEqual(len(set(names)), GANGS * GANG)
        out = subprocess.run([SINK, "load", self.sink.url, "--threads", "4", "--seconds", "30"],
                             capture_output=True, text=True, check=True).stdout
        self.assertRegex(out, r"^1200 binding POSTs in [0-9.]+ s from 4 connections: \d+ requests/s \(0 failed\)")
        stats = self.sink.stats()
        self.assertEqual((stats["binds"], stats["bindConflicts"], stats["podsBound"]), (1200, 0, 1200))


if __name__ == "__main__":
    unittest.main()
