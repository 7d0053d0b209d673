#!/usr/bin/python3
"""The emulator's protocol, checked by raw HTTP: what a client library sees on the wire."""

import http.client
import os
import subprocess
import tempfile
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from emulator_fixture import Emulator, node_manifest, pod_manifest, wait_until  # noqa: E402

PODS = "/api/v1/namespaces/default/pods"


class Protocol(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.emu = Emulator("--bookmark-interval", "0.2")

    @classmethod
    def tearDownClass(cls):
        cls.emu.stop()

    def setUp(self):
        self.emu.control("clear-faults", {})
        # Each test works in its own namespace so they do not see each other's pods.
        self.ns = self.id().split(".")[-1].replace("_", "-").lower()
        code, out, _ = self.emu.post("/api/v1/namespaces", {"metadata": {"name": self.ns}})
        self.assertEqual(code, 201, out)
        self.pods = f"/api/v1/namespaces/{self.ns}/pods"

    def create_pod(self, name, **kw):
        code, out, _ = self.emu.post(self.pods, pod_manifest(name, ns=self.ns, **kw))
        self.assertEqual(code, 201, out)
        return out

    def bind(self, name, node, uid=None):
        body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name, "namespace": self.ns},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
        if uid:
            body["metadata"]["uid"] = uid
        return self.emu.post(f"{self.pods}/{name}/binding", body)

    def run_pod(self, name, labels=None):
        """A pod bound and Running with Ready=True, as a kubelet would report it."""
        self.create_pod(name, labels=labels)
        self.assertEqual(self.bind(name, "n1")[0], 201)
        code, pod, _ = self.emu.get(f"{self.pods}/{name}")
        pod["status"].update(phase="Running", conditions=pod["status"]["conditions"] + [
            {"type": "Ready", "status": "True"}])
        code, out, _ = self.emu.request("PUT", f"{self.pods}/{name}/status", pod)
        self.assertEqual(code, 200, out)
        return out

    # ----- discovery and auth

    def test_discovery(self):
        code, v, _ = self.emu.get("/version", token=False)
        self.assertEqual((code, v["major"]), (200, "1"))
        code, api, _ = self.emu.get("/api")
        self.assertEqual(api["versions"], ["v1"])
        code, core, _ = self.emu.get("/api/v1")
        names = {r["name"]: r for r in core["resources"]}
        for n in ("pods", "pods/binding", "pods/status", "pods/eviction", "nodes", "namespaces",
                  "events", "resourcequotas"):
            self.assertIn(n, names)
        self.assertEqual(names["pods/eviction"]["group"], "policy")
        code, groups, _ = self.emu.get("/apis")
        gv = {g["name"]: g["preferredVersion"]["groupVersion"] for g in groups["groups"]}
        self.assertEqual(gv["scheduling.volcano.sh"], "scheduling.volcano.sh/v1beta1")
        self.assertEqual(gv["coordination.k8s.io"], "coordination.k8s.io/v1")
        code, vc, _ = self.emu.get("/apis/scheduling.volcano.sh/v1beta1")
        res = {r["name"]: r for r in vc["resources"]}
        self.assertTrue(res["podgroups"]["namespaced"])
        self.assertFalse(res["queues"]["namespaced"])
        self.assertIn("queues/status", res)
        self.assertNotIn("podgroups/status", res)

    def test_token_is_checked(self):
        code, out, _ = self.emu.get(PODS, token=False)
        self.assertEqual((code, out["kind"], out["reason"]), (401, "Status", "Unauthorized"))
        code, out, _ = self.emu.get(PODS, token=False, headers={"Authorization": "Bearer wrong"})
        self.assertEqual(code, 401)

    # ----- CRUD

    def test_create_get_conflicts(self):
        pod = self.create_pod("a")
        md = pod["metadata"]
        self.assertEqual((pod["kind"], pod["apiVersion"]), ("Pod", "v1"))
        self.assertTrue(md["uid"] and md["creationTimestamp"].endswith("Z"))
        self.assertGreater(int(md["resourceVersion"]), 0)
        self.assertEqual(pod["status"]["phase"], "Pending")
        code, out, _ = self.emu.post(self.pods, pod_manifest("a", ns=self.ns))
        self.assertEqual((code, out["reason"]), (409, "AlreadyExists"))
        self.assertEqual(out["message"], 'pods "a" already exists')
        code, out, _ = self.emu.get(f"{self.pods}/nope")
        self.assertEqual((code, out["reason"], out["details"]), (404, "NotFound", {"name": "nope", "kind": "pods"}))
        gen = pod_manifest("", ns=self.ns)
        del gen["metadata"]["name"]
        gen["metadata"]["generateName"] = "gen-"
        code, out, _ = self.emu.post(self.pods, gen)
        self.assertEqual(code, 201)
        self.assertRegex(out["metadata"]["name"], r"^gen-[a-z0-9]{5}$")
        code, out, _ = self.emu.post("/api/v1/namespaces/missing/pods", pod_manifest("x", ns="missing"))
        self.assertEqual((code, out["reason"]), (404, "NotFound"))

    def test_update_preconditions(self):
        pod = self.create_pod("a", labels={"v": "1"})
        stale = dict(pod, metadata=dict(pod["metadata"]))
        pod["metadata"]["labels"] = {"v": "2"}
        code, upd, _ = self.emu.request("PUT", f"{self.pods}/a", pod)
        self.assertEqual(code, 200, upd)
        self.assertGreater(int(upd["metadata"]["resourceVersion"]), int(stale["metadata"]["resourceVersion"]))
        stale["metadata"]["labels"] = {"v": "3"}
        code, out, _ = self.emu.request("PUT", f"{self.pods}/a", stale)
        self.assertEqual((code, out["reason"]), (409, "Conflict"))
        self.assertIn("the object has been modified", out["message"])
        # Writing the same object again is a no-op: no new resourceVersion.
        code, same, _ = self.emu.request("PUT", f"{self.pods}/a", upd)
        self.assertEqual(same["metadata"]["resourceVersion"], upd["metadata"]["resourceVersion"])
        # The scheduler may not bind by update.
        upd["spec"]["nodeName"] = "n1"
        code, out, _ = self.emu.request("PUT", f"{self.pods}/a", upd)
        self.assertEqual((code, out["reason"]), (422, "Invalid"))

    def test_patches(self):
        self.create_pod("a", labels={"x": "1"})
        code, out, _ = self.emu.request("PATCH", f"{self.pods}/a", {"metadata": {"labels": {"x": None, "y": "2"}}},
                                        content_type="application/merge-patch+json")
        self.assertEqual((code, out["metadata"]["labels"]), (200, {"y": "2"}))
        code, out, _ = self.emu.request("PATCH", f"{self.pods}/a",
                                        [{"op": "add", "path": "/metadata/annotations", "value": {"k": "v"}}],
                                        content_type="application/json-patch+json")
        self.assertEqual(out["metadata"]["annotations"], {"k": "v"})
        # Strategic merge: containers merge by name, the requests survive an image change.
        code, out, _ = self.emu.request("PATCH", f"{self.pods}/a",
                                        {"spec": {"containers": [{"name": "main", "image": "busybox"}]}},
                                        content_type="application/strategic-merge-patch+json")
        self.assertEqual(code, 200, out)
        c = out["spec"]["containers"][0]
        self.assertEqual((c["image"], c["resources"]["requests"]["cpu"]), ("busybox", "100m"))
        code, out, _ = self.emu.request("PATCH", f"{self.pods}/a",
                                        {"metadata": {"resourceVersion": "1", "labels": {"z": "1"}}},
                                        content_type="application/merge-patch+json")
        self.assertEqual((code, out["reason"]), (409, "Conflict"))
        # pods/status: conditions merge by type; nominatedNodeName is kept.
        code, out, _ = self.emu.request("PATCH", f"{self.pods}/a/status",
                                        {"status": {"nominatedNodeName": "n2", "conditions": [
                                            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}},
                                        content_type="application/strategic-merge-patch+json")
        self.assertEqual(out["status"]["nominatedNodeName"], "n2")
        self.assertEqual(out["status"]["conditions"][0]["reason"], "Unschedulable")
        self.assertEqual(self.emu.stats()["podStatusWrites"][f"{self.ns}/a"], 1)

    def test_server_side_apply(self):
        doc = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: '1'\n"
        path = f"/api/v1/namespaces/{self.ns}/configmaps/cm"
        code, out, _ = self.emu.request("PATCH", path, doc, content_type="application/apply-patch+yaml")
        self.assertEqual((code, out["reason"]), (400, "BadRequest"))
        code, out, _ = self.emu.request("PATCH", f"{path}?fieldManager=test", doc,
                                        content_type="application/apply-patch+yaml")
        self.assertEqual((code, out["data"]), (201, {"a": "1"}))
        code, out, _ = self.emu.request("PATCH", f"{path}?fieldManager=test", doc.replace("'1'", "'2'"),
                                        content_type="application/apply-patch+yaml")
        self.assertEqual((code, out["data"]), (200, {"a": "2"}))

    # ----- LIST

    def test_list_paging_is_a_snapshot(self):
        for i in range(7):
            self.create_pod(f"p{i}")
        code, page, _ = self.emu.get(f"{self.pods}?limit=3")
        self.assertEqual([p["metadata"]["name"] for p in page["items"]], ["p0", "p1", "p2"])
        self.assertEqual(page["kind"], "PodList")
        self.assertEqual(page["metadata"]["remainingItemCount"], 4)
        rv = page["metadata"]["resourceVersion"]
        # Changes after the first page do not show in the later pages.
        self.emu.request("DELETE", f"{self.pods}/p5")
        self.create_pod("p9")
        names = [p["metadata"]["name"] for p in page["items"]]
        cont = page["metadata"]["continue"]
        while cont:
            code, page, _ = self.emu.get(f"{self.pods}?limit=3&continue={cont}")
            self.assertEqual((code, page["metadata"]["resourceVersion"]), (200, rv))
            names += [p["metadata"]["name"] for p in page["items"]]
            cont = page["metadata"].get("continue")
        self.assertEqual(names, [f"p{i}" for i in range(7)])
        code, page, _ = self.emu.get(f"{self.pods}")
        self.assertEqual([p["metadata"]["name"] for p in page["items"]], ["p0", "p1", "p2", "p3", "p4", "p6", "p9"])
        # An exact LIST at the old revision is the same snapshot; after compaction it is gone.
        code, old, _ = self.emu.get(f"{self.pods}?resourceVersion={rv}&resourceVersionMatch=Exact")
        self.assertEqual(len(old["items"]), 7)
        code, page, _ = self.emu.get(f"{self.pods}?limit=3")
        self.create_pod("p10")  # the compaction must pass the page's revision
        self.emu.control("compact", {})
        code, out, _ = self.emu.get(f"{self.pods}?limit=3&continue={page['metadata']['continue']}")
        self.assertEqual((code, out["reason"]), (410, "Expired"))
        code, out, _ = self.emu.get(f"{self.pods}?resourceVersion={rv}&resourceVersionMatch=Exact")
        self.assertEqual((code, out["reason"]), (410, "Expired"))

    def test_selectors(self):
        self.create_pod("a", labels={"app": "x", "tier": "web"})
        self.create_pod("b", labels={"app": "y"})
        self.create_pod("c", scheduler="default-scheduler")
        self.assertEqual(self.bind("a", "n1")[0], 201)

        def names(q):
            code, out, _ = self.emu.get(f"{self.pods}?{q}")
            self.assertEqual(code, 200, out)
            return [p["metadata"]["name"] for p in out["items"]]
        self.assertEqual(names("labelSelector=app%3Dx"), ["a"])
        self.assertEqual(names("labelSelector=app%20in%20(x,y)"), ["a", "b"])
        self.assertEqual(names("labelSelector=app,app!%3Dy"), ["a"])
        self.assertEqual(names("labelSelector=!app"), ["c"])
        self.assertEqual(names("fieldSelector=spec.nodeName%3Dn1"), ["a"])
        self.assertEqual(names("fieldSelector=spec.nodeName%3D"), ["b", "c"])
        self.assertEqual(names("fieldSelector=spec.schedulerName%3Dvolcano,status.phase!%3DRunning"), ["a", "b"])
        self.assertEqual(names("fieldSelector=metadata.name%3Db"), ["b"])
        code, out, _ = self.emu.get(f"{self.pods}?fieldSelector=spec.bogus%3Dx")
        self.assertEqual((code, out["reason"]), (400, "BadRequest"))
        # Cluster-wide list sees every namespace.
        code, out, _ = self.emu.get("/api/v1/pods?fieldSelector=spec.nodeName%3Dn1")
        self.assertIn(("a", self.ns), [(p["metadata"]["name"], p["metadata"]["namespace"]) for p in out["items"]])

    def test_delete_collection(self):
        self.create_pod("a", labels={"app": "x"})
        self.create_pod("b", labels={"app": "y"})
        self.create_pod("c", labels={"app": "y"})
        code, out, _ = self.emu.request("DELETE", f"{self.pods}?labelSelector=app%3Dy")
        self.assertEqual((code, out["kind"]), (200, "PodList"))
        self.assertEqual([p["metadata"]["name"] for p in out["items"]], ["b", "c"])
        code, out, _ = self.emu.get(self.pods)
        self.assertEqual([p["metadata"]["name"] for p in out["items"]], ["a"])

    # ----- WATCH

    def test_watch_events_and_bookmarks(self):
        self.create_pod("a")
        code, lst, _ = self.emu.get(self.pods)
        rv = lst["metadata"]["resourceVersion"]
        with self.emu.watch(f"{self.pods}?watch=1&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=5") as w:
            self.assertEqual(w.status, 200)
            self.assertEqual(w.headers.get("Transfer-Encoding"), "chunked")
            self.create_pod("b")
            self.assertEqual(self.bind("b", "n1")[0], 201)
            self.emu.request("DELETE", f"{self.pods}/a")
            evs = []
            while len(evs) < 3:
                ev = w.next()
                self.assertIsNotNone(ev)
                if ev["type"] != "BOOKMARK":
                    evs.append(ev)
            self.assertEqual([(e["type"], e["object"]["metadata"]["name"]) for e in evs],
                             [("ADDED", "b"), ("MODIFIED", "b"), ("DELETED", "a")])
            self.assertEqual(evs[1]["object"]["spec"]["nodeName"], "n1")
            rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in evs]
            self.assertEqual(rvs, sorted(rvs))
            self.assertGreater(rvs[0], int(rv))
            bm, _ = w.until(lambda e: e["type"] == "BOOKMARK")
            self.assertEqual(bm["object"]["kind"], "Pod")
            self.assertGreaterEqual(int(bm["object"]["metadata"]["resourceVersion"]), rvs[-1])
            # timeoutSeconds ends the stream cleanly.
            t0 = time.time()
            end, _ = w.until(lambda e: False)
            self.assertIsNone(end)
            self.assertLess(time.time() - t0, 6)

    def test_watch_without_resource_version_starts_with_the_state(self):
        self.create_pod("a")
        self.create_pod("b")
        with self.emu.watch(f"{self.pods}?watch=true&timeoutSeconds=2&labelSelector=") as w:
            evs = [w.next(), w.next()]
            self.assertEqual([(e["type"], e["object"]["metadata"]["name"]) for e in evs],
                             [("ADDED", "a"), ("ADDED", "b")])

    def test_watch_list_initial_events_end_bookmark(self):
        self.create_pod("a")
        with self.emu.watch(f"{self.pods}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
                            f"&allowWatchBookmarks=true&timeoutSeconds=2") as w:
            first, second = w.next(), w.next()
            self.assertEqual((first["type"], first["object"]["metadata"]["name"]), ("ADDED", "a"))
            self.assertEqual(second["type"], "BOOKMARK")
            self.assertEqual(second["object"]["metadata"]["annotations"], {"k8s.io/initial-events-end": "true"})

    def test_watch_selector_transitions(self):
        self.create_pod("a")
        code, lst, _ = self.emu.get(self.pods)
        with self.emu.watch(f"{self.pods}?watch=1&resourceVersion={lst['metadata']['resourceVersion']}"
                            f"&fieldSelector=spec.nodeName%3D&timeoutSeconds=5") as w:
            self.assertEqual(self.bind("a", "n1")[0], 201)
            ev = w.next()
            # The pod stopped matching spec.nodeName= : the watcher sees it go.
            self.assertEqual((ev["type"], ev["object"]["metadata"]["name"]), ("DELETED", "a"))

    def test_watch_after_compaction_is_410_in_band(self):
        self.create_pod("a")
        code, lst, _ = self.emu.get(self.pods)
        old_rv = lst["metadata"]["resourceVersion"]
        self.create_pod("b")
        out = self.emu.control("compact", {})
        self.assertGreater(out["compacted"], int(old_rv))
        with self.emu.watch(f"{self.pods}?watch=1&resourceVersion={old_rv}") as w:
            self.assertEqual(w.status, 200)
            ev = w.next()
            self.assertEqual(ev["type"], "ERROR")
            st = ev["object"]
            self.assertEqual((st["kind"], st["code"], st["reason"]), ("Status", 410, "Expired"))
            self.assertIn("too old resource version", st["message"])
            self.assertIsNone(w.next())
        # From the compacted revision on, watching works again.
        with self.emu.watch(f"{self.pods}?watch=1&resourceVersion={out['compacted']}&timeoutSeconds=3") as w:
            self.create_pod("c")
            ev, _ = w.until(lambda e: e["type"] == "ADDED")
            self.assertEqual(ev["object"]["metadata"]["name"], "c")

    def test_restore_goes_back_and_a_watch_from_the_future_is_504(self):
        code, lst, _ = self.emu.get(self.pods)
        backup = int(lst["metadata"]["resourceVersion"])
        self.create_pod("lost")
        code, lst, _ = self.emu.get(self.pods)
        newer = int(lst["metadata"]["resourceVersion"])
        self.assertGreater(newer, backup)
        w = self.emu.watch(f"{self.pods}?watch=1&resourceVersion={newer}")
        out = self.emu.control("restore", {"revision": backup})
        self.assertEqual(out["revision"], backup)
        self.assertGreaterEqual(out["droppedWatches"], 1)
        try:
            self.assertIsNone(w.next())  # the restart closed it
        finally:
            w.close()
        code, lst, _ = self.emu.get(self.pods)
        self.assertEqual(int(lst["metadata"]["resourceVersion"]), backup)
        self.assertNotIn("lost", [p["metadata"]["name"] for p in lst["items"]])
        t0 = time.time()
        code, st, _ = self.emu.get(f"{self.pods}?watch=1&resourceVersion={newer}")
        self.assertEqual((code, st["reason"]), (504, "Timeout"))
        self.assertIn("Too large resource version", st["message"])
        self.assertEqual(st["details"]["causes"][0]["reason"], "ResourceVersionTooLarge")
        self.assertGreaterEqual(time.time() - t0, 2.5)  # waited for the version first
        # A write after the restore reuses a version the old history had.
        self.create_pod("after")
        code, lst, _ = self.emu.get(self.pods)
        self.assertEqual(int(lst["metadata"]["resourceVersion"]), backup + 1)

    def test_open_watch_survives_compaction(self):
        code, lst, _ = self.emu.get(self.pods)
        with self.emu.watch(f"{self.pods}?watch=1&resourceVersion={lst['metadata']['resourceVersion']}&timeoutSeconds=5") as w:
            self.create_pod("before")  # once its event arrives, the watch is surely open
            self.assertEqual(w.next()["object"]["metadata"]["name"], "before")
            for i in range(3):  # other resources move the revision past the watch's
                self.emu.post("/api/v1/nodes", node_manifest(f"{self.ns}-n{i}"))
            self.emu.control("compact", {})
            self.create_pod("after")
            ev = w.next()
            self.assertEqual((ev["type"], ev["object"]["metadata"]["name"]), ("ADDED", "after"))

    def test_drop_watches(self):
        self.create_pod("a")
        for mode in ("close", "reset"):
            with self.emu.watch(f"{self.pods}?watch=1&resourceVersion=0") as w:
                self.assertEqual(w.next()["type"], "ADDED")  # the watch is open
                self.assertGreaterEqual(self.emu.control("drop-watches", {"mode": mode})["dropped"], 1)
                # close: a clean end of the chunked stream; reset: the connection is cut
                # before the final chunk, which a client sees as an incomplete response.
                if mode == "close":
                    self.assertEqual(w.resp.read(), b"")
                else:
                    with self.assertRaises(http.client.IncompleteRead):
                        w.resp.read()

    # ----- binding, eviction, delete

    def test_binding(self):
        pod = self.create_pod("a")
        code, out, _ = self.bind("a", "n1", uid=pod["metadata"]["uid"])
        self.assertEqual((code, out["kind"], out["status"], out["code"]), (201, "Status", "Success", 201))
        code, pod, _ = self.emu.get(f"{self.pods}/a")
        self.assertEqual(pod["spec"]["nodeName"], "n1")
        cond = [c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled"]
        self.assertEqual(cond[0]["status"], "True")
        code, out, _ = self.bind("a", "n2")
        self.assertEqual((code, out["reason"]), (409, "Conflict"))
        self.assertIn('already assigned to node "n1"', out["message"])
        code, out, _ = self.bind("gone", "n1")
        self.assertEqual((code, out["reason"]), (404, "NotFound"))
        self.create_pod("b")
        code, out, _ = self.bind("b", "n1", uid="another-uid")
        self.assertEqual((code, out["reason"]), (409, "Conflict"))
        self.assertIn("Precondition failed", out["message"])
        # A terminating pod (held by a finalizer) cannot be bound.
        fin = pod_manifest("c", ns=self.ns)
        fin["metadata"]["finalizers"] = ["example.com/hold"]
        self.assertEqual(self.emu.post(self.pods, fin)[0], 201)
        self.assertEqual(self.emu.request("DELETE", f"{self.pods}/c")[0], 200)
        code, out, _ = self.bind("c", "n1")
        self.assertEqual((code, out["reason"]), (409, "Conflict"))
        self.assertIn("being deleted", out["message"])
        # A pod with scheduling gates cannot be bound until they are removed.
        self.create_pod("gated", schedulingGates=[{"name": "example.com/quota"}])
        code, out, _ = self.bind("gated", "n1")
        self.assertEqual((code, out["reason"]), (409, "Conflict"))
        self.assertIn("schedulingGates", out["message"])
        # The legacy bindings collection binds too.
        self.create_pod("d")
        code, out, _ = self.emu.post(f"/api/v1/namespaces/{self.ns}/bindings",
                                     {"metadata": {"name": "d"}, "target": {"kind": "Node", "name": "n3"}})
        self.assertEqual(code, 201)
        s = self.emu.stats()
        self.assertEqual(s["binds"][f"{self.ns}/a"], 2)
        self.assertEqual(s["bindsOk"][f"{self.ns}/a"], 1)
        self.assertEqual(s["binds"][f"{self.ns}/b"], 1)
        self.assertNotIn(f"{self.ns}/b", s["bindsOk"])
        self.assertEqual(s["bindsOk"][f"{self.ns}/d"], 1)

    def test_delete_grace(self):
        self.create_pod("pending")
        code, out, _ = self.emu.request("DELETE", f"{self.pods}/pending")
        self.assertEqual(code, 200)
        self.assertEqual(self.emu.get(f"{self.pods}/pending")[0], 404)
        self.run_pod("running")
        code, out, _ = self.emu.request("DELETE", f"{self.pods}/running", {"gracePeriodSeconds": 30})
        self.assertEqual(code, 200)
        self.assertEqual(out["metadata"]["deletionGracePeriodSeconds"], 30)
        code, pod, _ = self.emu.get(f"{self.pods}/running")
        self.assertTrue(pod["metadata"]["deletionTimestamp"])
        self.assertEqual(self.emu.request("DELETE", f"{self.pods}/running?gracePeriodSeconds=0")[0], 200)
        self.assertEqual(self.emu.get(f"{self.pods}/running")[0], 404)
        self.assertEqual(self.emu.stats()["podDeletes"][f"{self.ns}/running"], 2)

    def test_eviction_honours_pdbs(self):
        for n in ("a", "b", "c"):
            self.run_pod(n, labels={"app": "db"})
        pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "db"},
               "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "db"}}}}
        self.assertEqual(self.emu.post(f"/apis/policy/v1/namespaces/{self.ns}/poddisruptionbudgets", pdb)[0], 201)

        def evict(name):
            return self.emu.post(f"{self.pods}/{name}/eviction",
                                 {"apiVersion": "policy/v1", "kind": "Eviction",
                                  "metadata": {"name": name, "namespace": self.ns}})
        code, out, _ = evict("a")
        self.assertEqual((code, out["status"]), (201, "Success"))
        code, pod, _ = self.emu.get(f"{self.pods}/a")
        self.assertTrue(pod["metadata"]["deletionTimestamp"])  # bound: graceful
        code, out, headers = evict("b")
        self.assertEqual((code, out["reason"]), (429, "TooManyRequests"))
        self.assertEqual(out["message"], "Cannot evict pod as it would violate the pod's disruption budget.")
        self.assertEqual(out["details"]["causes"][0]["reason"], "DisruptionBudget")
        self.assertIn("needs 2 healthy pods and has 2 currently", out["details"]["causes"][0]["message"])
        code, pdb, _ = self.emu.get(f"/apis/policy/v1/namespaces/{self.ns}/poddisruptionbudgets/db")
        self.assertIn("a", pdb["status"]["disruptedPods"])
        self.assertEqual(pdb["status"]["disruptionsAllowed"], 0)
        # A pending pod is evicted without a budget check.
        self.create_pod("p", labels={"app": "db"})
        self.assertEqual(evict("p")[0], 201)
        self.assertEqual(self.emu.get(f"{self.pods}/p")[0], 404)
        self.assertEqual(evict("gone")[0], 404)
        s = self.emu.stats()
        self.assertEqual((s["evictions"][f"{self.ns}/b"], s["evictionsOk"].get(f"{self.ns}/b")), (1, None))
        self.assertEqual(s["evictionsOk"][f"{self.ns}/a"], 1)

    # ----- faults

    def test_5xx_injection_and_latency(self):
        self.create_pod("a")
        self.emu.control("faults", {"verb": "create", "resource": "pods/binding", "count": 2, "code": 503})
        code, out, headers = self.bind("a", "n1")
        self.assertEqual((code, out["reason"], headers.get("Retry-After")), (503, "ServiceUnavailable", "1"))
        self.assertEqual(self.bind("a", "n1")[0], 503)
        self.assertEqual(self.bind("a", "n1")[0], 201)
        self.emu.control("faults", {"verb": "list", "resource": "pods", "count": 1, "code": 500})
        code, out, _ = self.emu.get(self.pods)
        self.assertEqual((code, out["reason"]), (500, "InternalError"))
        self.assertEqual(self.emu.get(self.pods)[0], 200)
        # One slow answer (count 1), then normal speed again; 1 s is far above a request's time
        # even on a loaded machine.
        self.emu.control("latency", {"seconds": 1.0, "verb": "get", "resource": "pods", "count": 1})
        t0 = time.time()
        self.assertEqual(self.emu.get(f"{self.pods}/a")[0], 200)
        self.assertGreaterEqual(time.time() - t0, 1.0)
        t0 = time.time()
        self.emu.get(f"{self.pods}/a")
        self.assertLess(time.time() - t0, 1.0)
        s = self.emu.stats()
        self.assertEqual(s["binds"][f"{self.ns}/a"], 3)
        self.assertEqual(s["bindsOk"][f"{self.ns}/a"], 1)
        self.assertGreaterEqual(s["requests"]["create pods/binding"], 3)

    def test_bind_conflict_injection(self):
        self.create_pod("a")
        self.create_pod("b")
        self.emu.control("bind-conflict", {"namespace": self.ns, "name": "a", "node": "n7"})
        code, out, _ = self.bind("a", "n1")
        self.assertEqual((code, out["reason"]), (409, "Conflict"))
        self.assertEqual(self.emu.get(f"{self.pods}/a")[1]["spec"]["nodeName"], "n7")
        self.emu.control("bind-conflict", {"namespace": self.ns, "name": "b"})
        self.assertEqual(self.bind("b", "n1")[0], 409)
        self.assertNotIn("nodeName", self.emu.get(f"{self.pods}/b")[1]["spec"])
        self.assertEqual(self.bind("b", "n1")[0], 201)

    # ----- other resources

    def test_priority_admission(self):
        pc = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": f"{self.ns}-hi"},
              "value": 1000}
        self.assertEqual(self.emu.post("/apis/scheduling.k8s.io/v1/priorityclasses", pc)[0], 201)
        pod = self.create_pod("a", priorityClassName=f"{self.ns}-hi")
        self.assertEqual((pod["spec"]["priority"], pod["spec"]["preemptionPolicy"]), (1000, "PreemptLowerPriority"))
        code, out, _ = self.emu.post(self.pods, pod_manifest("b", ns=self.ns, priorityClassName="nope"))
        self.assertEqual((code, out["reason"]), (403, "Forbidden"))

    def test_leases(self):
        path = f"/apis/coordination.k8s.io/v1/namespaces/{self.ns}/leases"
        lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "lock"},
                 "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}}
        code, a, _ = self.emu.post(path, lease)
        self.assertEqual(code, 201)
        a["spec"]["holderIdentity"] = "b"
        code, b, _ = self.emu.request("PUT", f"{path}/lock", a)
        self.assertEqual(code, 200)
        a["spec"]["holderIdentity"] = "c"
        code, out, _ = self.emu.request("PUT", f"{path}/lock", a)
        self.assertEqual((code, out["reason"]), (409, "Conflict"))
        self.assertEqual(out["message"], 'Operation cannot be fulfilled on leases.coordination.k8s.io "lock": '
                                         'the object has been modified; please apply your changes to the latest '
                                         'version and try again')

    def test_podgroup_and_queue_status(self):
        q = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": f"{self.ns}-q"},
             "spec": {"weight": 2}, "status": {"state": "Open"}}
        code, q, _ = self.emu.post("/apis/scheduling.volcano.sh/v1beta1/queues", q)
        self.assertEqual(code, 201)
        self.assertNotIn("status", q)  # a status subresource: create drops the status
        q["status"] = {"state": "Closed"}
        q["spec"]["weight"] = 3
        code, q2, _ = self.emu.request("PUT", f"/apis/scheduling.volcano.sh/v1beta1/queues/{self.ns}-q", q)
        self.assertEqual((q2["spec"]["weight"], q2.get("status")), (3, None))
        q2["status"] = {"state": "Open", "running": 1}
        code, q3, _ = self.emu.request("PUT", f"/apis/scheduling.volcano.sh/v1beta1/queues/{self.ns}-q/status", q2)
        self.assertEqual((code, q3["status"]["running"]), (200, 1))
        pgs = f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{self.ns}/podgroups"
        pg = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": "pg"},
              "spec": {"minMember": 2, "queue": f"{self.ns}-q"}, "status": {"phase": "Pending"}}
        code, pg, _ = self.emu.post(pgs, pg)
        self.assertEqual((code, pg["status"]["phase"]), (201, "Pending"))
        pg["status"] = {"phase": "Inqueue"}
        code, pg2, _ = self.emu.request("PUT", f"{pgs}/pg", pg)
        self.assertEqual(pg2["status"]["phase"], "Inqueue")  # no status subresource: PUT writes it
        code, out, _ = self.emu.request("PUT", f"{pgs}/pg", pg)  # stale resourceVersion
        self.assertEqual(code, 409)
        code, out, _ = self.emu.request("GET", f"{pgs}/pg/status")
        self.assertEqual(code, 404)
        s = self.emu.stats()
        self.assertEqual(s["podGroupStatusWrites"][f"{self.ns}/pg"], 1)
        self.assertEqual(s["podGroupWrites"][f"{self.ns}/pg"], 1)
        self.assertEqual(s["queueStatusWrites"][f"{self.ns}-q"], 1)

    def test_table_for_kubectl(self):
        self.create_pod("a")
        code, t, _ = self.emu.get(self.pods, headers={
            "Accept": "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"})
        self.assertEqual((t["kind"], t["apiVersion"]), ("Table", "meta.k8s.io/v1"))
        self.assertEqual(t["columnDefinitions"][0]["name"], "Name")
        self.assertEqual(t["rows"][0]["cells"][0], "a")
        self.assertEqual(t["rows"][0]["object"]["kind"], "PartialObjectMetadata")

    def test_events(self):
        ev = {"apiVersion": "v1", "kind": "Event", "metadata": {"generateName": "a."},
              "involvedObject": {"kind": "Pod", "namespace": self.ns, "name": "a"},
              "reason": "Scheduled", "type": "Normal", "message": "bound"}
        self.assertEqual(self.emu.post(f"/api/v1/namespaces/{self.ns}/events", ev)[0], 201)
        code, out, _ = self.emu.get(f"/api/v1/namespaces/{self.ns}/events?fieldSelector=involvedObject.name%3Da,reason%3DScheduled")
        self.assertEqual(len(out["items"]), 1)
        self.assertEqual(self.emu.stats()["events"][f"{self.ns}/a"], 1)


class Kubelet(unittest.TestCase):
    def test_kubelet_mode(self):
        with Emulator("--kubelet", "--kubelet-delay", "0.1", tls=False) as emu:
            self.assertEqual(emu.post("/api/v1/nodes", node_manifest("n1"))[0], 201)
            for name, ann in (("a", {}), ("b", {"kiln.sh/duration": "500ms"})):
                pod = pod_manifest(name)
                pod["metadata"]["annotations"] = ann
                self.assertEqual(emu.post(PODS, pod)[0], 201)
                self.assertEqual(emu.post(f"{PODS}/{name}/binding", {"target": {"kind": "Node", "name": "n1"}})[0], 201)
            running = wait_until(lambda: (lambda p: p if p["status"]["phase"] == "Running" else None)(
                emu.get(f"{PODS}/a")[1]), timeout=30, what="pod a Running")
            conds = {c["type"]: c["status"] for c in running["status"]["conditions"]}
            self.assertEqual(conds, {"PodScheduled": "True", "Initialized": "True", "Ready": "True",
                                     "ContainersReady": "True"})
            self.assertTrue(running["status"]["startTime"])
            wait_until(lambda: emu.get(f"{PODS}/b")[1]["status"]["phase"] == "Succeeded", timeout=30,
                       what="pod b Succeeded")
            self.assertEqual(emu.get(f"{PODS}/a")[1]["status"]["phase"], "Running")
            code, deleted, _ = emu.request("DELETE", f"{PODS}/a")
            self.assertEqual(code, 200)
            self.assertTrue(deleted["metadata"]["deletionTimestamp"])  # terminating first ...
            wait_until(lambda: emu.get(f"{PODS}/a")[0] == 404, timeout=30, what="pod a removed")  # ... then gone



class Startup(unittest.TestCase):
    def test_url_file_plain_http_and_required_token(self):
        with tempfile.TemporaryDirectory() as d:
            url_file = os.path.join(d, "url")
            with Emulator("--url-file", url_file, "--require-token", "--token", "s3cret", tls=False) as emu:
                with open(url_file) as f:
                    self.assertEqual(f.read().strip(), emu.url)
                self.assertTrue(emu.url.startswith("http://127.0.0.1:"))
                self.assertEqual(emu.token, "s3cret")
                self.assertEqual(emu.get(PODS, token=False)[0], 401)
                self.assertEqual(emu.get(PODS)[0], 200)

    def test_given_certificate(self):
        with tempfile.TemporaryDirectory() as d:
            cert, key = os.path.join(d, "c.pem"), os.path.join(d, "k.pem")
            subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                            "-nodes", "-days", "1", "-subj", "/CN=test", "-addext", "subjectAltName=IP:127.0.0.1",
                            "-keyout", key, "-out", cert], check=True, capture_output=True)
            with Emulator("--cert", cert, "--key", key, tls=False) as emu:
                self.assertTrue(emu.url.startswith("https://"))
                with open(cert, "rb") as f, open(emu.ca_file, "rb") as g:
                    self.assertEqual(f.read(), g.read())  # the kubeconfig carries it as the CA
                self.assertEqual(emu.get(PODS)[0], 200)

    def test_bad_manifest_stops_the_start(self):
        with tempfile.TemporaryDirectory() as d:
            bad = os.path.join(d, "bad.yaml")
            with open(bad, "w") as f:
                f.write("apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n---\napiVersion: v9\nkind: Gizmo\nmetadata: {name: b}\n")
            with self.assertRaises(RuntimeError) as err:
                Emulator(load=[bad])
            self.assertIn(f"{bad}: object 2 (Gizmo /b): unsupported object kind v9/Gizmo", str(err.exception))


if __name__ == "__main__":
    unittest.main()
