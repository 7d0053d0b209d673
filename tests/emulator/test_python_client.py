#!/usr/bin/python3
"""Debian's python3-kubernetes client against the emulator, over HTTPS with the written kubeconfig."""

import json
import os
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from emulator_fixture import Emulator, pod_manifest  # noqa: E402

from kubernetes import client, config, watch  # noqa: E402
from kubernetes.client.rest import ApiException  # noqa: E402

VOLCANO = ("scheduling.volcano.sh", "v1beta1")


class PythonClient(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.emu = Emulator("--bookmark-interval", "0.3")
        cfg = client.Configuration()
        config.load_kube_config(config_file=cls.emu.kubeconfig, client_configuration=cfg)
        cls.api_client = client.ApiClient(cfg)
        cls.core = client.CoreV1Api(cls.api_client)
        cls.custom = client.CustomObjectsApi(cls.api_client)
        cls.coord = client.CoordinationV1Api(cls.api_client)

    @classmethod
    def tearDownClass(cls):
        cls.api_client.close()
        cls.emu.stop()

    def setUp(self):
        self.ns = self.id().split(".")[-1].replace("_", "-").lower()
        self.core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=self.ns)))

    def create_pod(self, name, **kw):
        return self.core.create_namespaced_pod(self.ns, pod_manifest(name, ns=self.ns, **kw))

    def test_list_paging(self):
        for i in range(10):
            self.create_pod(f"p{i:02d}")
        names, cont, rvs = [], None, set()
        while True:
            page = self.core.list_namespaced_pod(self.ns, limit=4, _continue=cont)
            names += [p.metadata.name for p in page.items]
            rvs.add(page.metadata.resource_version)
            cont = page.metadata._continue
            if not cont:
                break
            self.assertEqual(len(page.items), 4)
        self.assertEqual(names, [f"p{i:02d}" for i in range(10)])
        self.assertEqual(len(rvs), 1)  # every page is the same snapshot
        one = self.core.list_namespaced_pod(self.ns, field_selector="metadata.name=p03")
        self.assertEqual([p.metadata.name for p in one.items], ["p03"])

    def test_watch_and_binding(self):
        self.create_pod("a")
        rv = self.core.list_namespaced_pod(self.ns).metadata.resource_version
        events = []
        w = watch.Watch()

        def consume():
            for ev in w.stream(self.core.list_namespaced_pod, self.ns, resource_version=rv, timeout_seconds=10):
                events.append((ev["type"], ev["object"].metadata.name, ev["object"].spec.node_name))
                if ev["type"] == "DELETED":
                    w.stop()
        t = threading.Thread(target=consume)
        t.start()
        time.sleep(0.3)
        pod = self.create_pod("b")
        binding = client.V1Binding(metadata=client.V1ObjectMeta(name="b", uid=pod.metadata.uid),
                                   target=client.V1ObjectReference(kind="Node", name="n1"))
        # The client would decode the 201 answer (a Status) as a V1Binding, whose `target` is
        # required, and raise ValueError after the bind succeeded. Read the raw answer instead.
        resp = self.core.create_namespaced_binding(self.ns, binding, _preload_content=False)
        self.assertEqual(resp.status, 201)
        self.assertEqual(json.loads(resp.data)["status"], "Success")
        with self.assertRaises(ApiException) as again:
            self.core.create_namespaced_binding(self.ns, binding, _preload_content=False)
        self.assertEqual(again.exception.status, 409)
        self.core.delete_namespaced_pod("a", self.ns)
        t.join(15)
        self.assertFalse(t.is_alive())
        self.assertEqual(events, [("ADDED", "b", None), ("MODIFIED", "b", "n1"), ("DELETED", "a", None)])
        self.assertEqual(self.core.read_namespaced_pod("b", self.ns).spec.node_name, "n1")

    def test_watch_bookmarks_and_410(self):
        self.create_pod("a")
        rv = self.core.list_namespaced_pod(self.ns).metadata.resource_version
        types = []
        w = watch.Watch()
        for ev in w.stream(self.core.list_namespaced_pod, self.ns, resource_version=rv,
                           allow_watch_bookmarks=True, timeout_seconds=5):
            types.append(ev["type"])
            if ev["type"] == "BOOKMARK":
                w.stop()
        self.assertEqual(types, ["BOOKMARK"])
        self.create_pod("b")
        self.emu.control("compact", {})
        with self.assertRaises(ApiException) as gone:
            for _ in watch.Watch().stream(self.core.list_namespaced_pod, self.ns, resource_version=rv,
                                          timeout_seconds=5):
                pass
        self.assertEqual(gone.exception.status, 410)
        self.assertIn("Expired", gone.exception.reason)

    def test_custom_objects(self):
        queue = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                 "metadata": {"name": f"{self.ns}-q"}, "spec": {"weight": 3}}
        self.custom.create_cluster_custom_object(*VOLCANO, "queues", queue)
        pg = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
              "metadata": {"name": "job"}, "spec": {"minMember": 2, "queue": f"{self.ns}-q"},
              "status": {"phase": "Pending"}}
        self.custom.create_namespaced_custom_object(*VOLCANO, self.ns, "podgroups", pg)
        pgs = self.custom.list_namespaced_custom_object(*VOLCANO, self.ns, "podgroups")
        self.assertEqual([(p["metadata"]["name"], p["kind"]) for p in pgs["items"]], [("job", "PodGroup")])
        got = self.custom.get_namespaced_custom_object(*VOLCANO, self.ns, "podgroups", "job")
        got["status"] = {"phase": "Inqueue"}
        put = self.custom.replace_namespaced_custom_object(*VOLCANO, self.ns, "podgroups", "job", got)
        self.assertEqual(put["status"]["phase"], "Inqueue")
        with self.assertRaises(ApiException) as stale:
            self.custom.replace_namespaced_custom_object(*VOLCANO, self.ns, "podgroups", "job", got)
        self.assertEqual(stale.exception.status, 409)
        q = self.custom.patch_cluster_custom_object_status(*VOLCANO, "queues", f"{self.ns}-q",
                                                           {"status": {"state": "Open", "running": 2}})
        self.assertEqual(q["status"], {"state": "Open", "running": 2})
        q = self.custom.patch_cluster_custom_object(*VOLCANO, "queues", f"{self.ns}-q",
                                                    {"spec": {"weight": 4}, "status": {"state": "Closed"}})
        self.assertEqual((q["spec"]["weight"], q["status"]["state"]), (4, "Open"))
        s = self.emu.stats()
        self.assertEqual(s["podGroupStatusWrites"][f"{self.ns}/job"], 1)
        self.assertEqual(s["queueStatusWrites"][f"{self.ns}-q"], 1)

    def test_lease_conflict(self):
        lease = client.V1Lease(metadata=client.V1ObjectMeta(name="kiln-scheduler"),
                               spec=client.V1LeaseSpec(holder_identity="replica-a", lease_duration_seconds=15))
        created = self.coord.create_namespaced_lease(self.ns, lease)
        created.spec.holder_identity = "replica-b"
        renewed = self.coord.replace_namespaced_lease("kiln-scheduler", self.ns, created)
        self.assertEqual(renewed.spec.holder_identity, "replica-b")
        created.spec.holder_identity = "replica-c"  # still carries the old resourceVersion
        with self.assertRaises(ApiException) as err:
            self.coord.replace_namespaced_lease("kiln-scheduler", self.ns, created)
        self.assertEqual(err.exception.status, 409)
        self.assertEqual(json.loads(err.exception.body)["reason"], "Conflict")
        self.assertEqual(self.coord.read_namespaced_lease("kiln-scheduler", self.ns).spec.holder_identity,
                         "replica-b")

    def test_eviction_429(self):
        self.create_pod("a", labels={"app": "x"})
        self.core.create_namespaced_binding(self.ns, client.V1Binding(
            metadata=client.V1ObjectMeta(name="a"), target=client.V1ObjectReference(kind="Node", name="n1")),
            _preload_content=False)
        self.core.patch_namespaced_pod_status("a", self.ns, {"status": {"phase": "Running"}})
        client.PolicyV1Api(self.api_client).create_namespaced_pod_disruption_budget(self.ns, {
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "x"},
            "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "x"}}}})
        with self.assertRaises(ApiException) as err:
            self.core.create_namespaced_pod_eviction("a", self.ns, client.V1Eviction(
                metadata=client.V1ObjectMeta(name="a", namespace=self.ns)))
        self.assertEqual(err.exception.status, 429)
        self.assertEqual(self.core.read_namespaced_pod("a", self.ns).status.phase, "Running")


if __name__ == "__main__":
    unittest.main()
