"""The pod family of the API: QoS class and priority admission, the pod update check,
binding, eviction under PodDisruptionBudgets, and the toy kubelet and job controller."""

import sys
import time

from .common import (
    ApiError, bad_request, conflict, deep, invalid, not_found, now_rfc3339, parse_go_duration,
    parse_time,
)
from .resources import BY_PATH, GROUP_ANNOTATION, NAMESPACE, PDB, POD, PODGROUP, PRIORITY_CLASS
from .selectors import selector_matches


class PodLifecycle:
    """The pod-specific half of Api (api.py), which mixes it in."""

    @staticmethod
    def _qos(spec):
        reqs, lims = [], []
        for c in spec.get("containers") or []:
            r = (c.get("resources") or {})
            reqs.append(r.get("requests") or {})
            lims.append(r.get("limits") or {})
        if not any(reqs) and not any(lims):
            return "BestEffort"
        guaranteed = all(l.get("cpu") and l.get("memory") and
                         (not r.get("cpu") or r.get("cpu") == l.get("cpu")) and
                         (not r.get("memory") or r.get("memory") == l.get("memory"))
                         for r, l in zip(reqs, lims))
        return "Guaranteed" if guaranteed and lims else "Burstable"

    def _admit_pod_priority(self, obj, strict):
        spec = obj.setdefault("spec", {})
        name = spec.get("priorityClassName") or ""
        classes = self.store.objects[PRIORITY_CLASS.key]
        if name:
            pc = classes.get(("", name))
            if pc is None:
                raise ApiError(403, "Forbidden",
                               f'pods "{obj["metadata"].get("name", "")}" is forbidden: no PriorityClass with name {name} was found')
            value, policy = pc.get("value", 0), pc.get("preemptionPolicy", "PreemptLowerPriority")
        else:
            default = next((pc for pc in classes.values() if pc.get("globalDefault")), None)
            value = default.get("value", 0) if default else 0
            policy = default.get("preemptionPolicy", "PreemptLowerPriority") if default else "PreemptLowerPriority"
            if default and strict:
                spec["priorityClassName"] = default["metadata"]["name"]
        if "priority" in spec and spec["priority"] is not None:
            if strict and spec["priority"] != value:
                raise ApiError(403, "Forbidden",
                               f'pods "{obj["metadata"].get("name", "")}" is forbidden: the integer value of priority '
                               f'({spec["priority"]}) must not be provided in pod spec; priority admission controller '
                               f'computed {value} from the given PriorityClass name')
            return
        spec["priority"] = value
        spec.setdefault("preemptionPolicy", policy)


    def _check_pod_update(self, old, new):
        def mutable_stripped(spec):
            s = deep(spec or {})
            for k in ("activeDeadlineSeconds", "tolerations", "schedulingGates"):
                s.pop(k, None)
            for c in s.get("containers") or []:
                c.pop("image", None)
            for c in s.get("initContainers") or []:
                c.pop("image", None)
            return s
        if mutable_stripped(old.get("spec")) != mutable_stripped(new.get("spec")):
            name = old["metadata"]["name"]
            raise invalid(POD, name, "spec",
                          "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
                          "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
                          "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
                          "(allow it to be set to 1 if it was previously negative)")


    # ----- binding, eviction

    def bind(self, ns, pod_name, body):
        key = f"{ns}/{pod_name}"
        if not isinstance(body, dict):
            raise bad_request("the body of the request was in an unknown format")
        target = body.get("target") or {}
        if target.get("kind") not in (None, "", "Node"):
            raise invalid(BY_PATH[("", "v1", "bindings")], pod_name, "target.kind",
                          f'Unsupported value: "{target.get("kind")}": supported values: "Node"')
        node = target.get("name") or ""
        if not node:
            raise invalid(BY_PATH[("", "v1", "bindings")], pod_name, "target.name", "Required value")
        rule = self.faults.take_bind_conflict(key)
        with self.store.cond:
            pod = self.store.get(POD, ns, pod_name)
            if pod is None:
                raise not_found(POD, pod_name)
            if rule is not None:
                if rule.get("node") and not (pod.get("spec") or {}).get("nodeName"):
                    self._bind_locked(pod, rule["node"], {})
                    pod = self.store.get(POD, ns, pod_name)
                assigned = (pod.get("spec") or {}).get("nodeName") or rule.get("node") or "elsewhere"
                raise conflict(POD, pod_name, f'pod {pod_name} is already assigned to node "{assigned}"')
            uid = (body.get("metadata") or {}).get("uid")
            if uid and uid != pod["metadata"].get("uid"):
                raise conflict(POD, pod_name, f'Precondition failed: UID in precondition: {uid}, UID in object meta: {pod["metadata"].get("uid")}')
            if pod["metadata"].get("deletionTimestamp"):
                raise conflict(POD, pod_name, f"pod {pod_name} is being deleted, cannot be assigned to a host")
            if (pod.get("spec") or {}).get("nodeName"):
                raise conflict(POD, pod_name, f'pod {pod_name} is already assigned to node "{pod["spec"]["nodeName"]}"')
            if (pod.get("spec") or {}).get("schedulingGates"):
                raise conflict(POD, pod_name, f"pod {pod_name} has non-empty .spec.schedulingGates")
            self._bind_locked(pod, node, (body.get("metadata") or {}).get("annotations") or {})
        self.stats.inc("bindsOk", key)
        self.stats.inc("bindsOkByUid", pod["metadata"].get("uid", ""))
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}

    def _bind_locked(self, pod, node, annotations):
        new = deep(pod)
        new["spec"]["nodeName"] = node
        if self.clears_nominated_at_bind:
            # Kubernetes 1.34 on (ClearingNominatedNodeNameAfterBinding): the binding clears it.
            new.setdefault("status", {}).pop("nominatedNodeName", None)
        if annotations:
            new["metadata"]["annotations"] = dict(new["metadata"].get("annotations") or {}, **annotations)
        conds = [c for c in (new.setdefault("status", {}).get("conditions") or []) if c.get("type") != "PodScheduled"]
        conds.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                      "lastTransitionTime": now_rfc3339()})
        new["status"]["conditions"] = conds
        self.store.commit(POD, "MODIFIED", new, pod)

    def evict(self, ns, pod_name, body):
        key = f"{ns}/{pod_name}"
        if not isinstance(body, dict):
            body = {}
        opts = body.get("deleteOptions") or {}
        with self.store.cond:
            pod = self.store.get(POD, ns, pod_name)
            if pod is None:
                raise not_found(POD, pod_name)
            name_in_body = (body.get("metadata") or {}).get("name")
            if name_in_body and name_in_body != pod_name:
                raise bad_request(f"name in URL does not match name in Eviction object")
            phase = (pod.get("status") or {}).get("phase")
            if phase in ("Pending", "Succeeded", "Failed") or pod["metadata"].get("deletionTimestamp"):
                self._delete_locked(POD, ns, pod_name, opts)
            else:
                pdbs = [p for p in self.store.objects[PDB.key].values()
                        if p["metadata"]["namespace"] == ns and
                        selector_matches((p.get("spec") or {}).get("selector"), pod["metadata"].get("labels"))]
                if len(pdbs) > 1:
                    raise ApiError(500, "InternalError",
                                   "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.")
                if pdbs:
                    self._charge_pdb_locked(pdbs[0], pod)
                self._delete_locked(POD, ns, pod_name, opts)
        self.stats.inc("evictionsOk", key)
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}

    def pdb_figures_locked(self, pdb):
        """What the disruption controller would compute: (expected, desired, healthy, allowed)."""
        spec = pdb.get("spec") or {}
        ns = pdb["metadata"]["namespace"]
        disrupted = (pdb.get("status") or {}).get("disruptedPods") or {}
        pods = [p for p in self.store.objects[POD.key].values()
                if p["metadata"]["namespace"] == ns and
                selector_matches(spec.get("selector"), p["metadata"].get("labels")) and
                (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
        expected = len(pods)

        def healthy(p):
            if p["metadata"].get("deletionTimestamp") or p["metadata"]["name"] in disrupted:
                return False
            st = p.get("status") or {}
            if st.get("phase") != "Running":
                return False
            ready = [c for c in st.get("conditions") or [] if c.get("type") == "Ready"]
            return not ready or ready[0].get("status") == "True"

        def scaled(v):
            if isinstance(v, str) and v.endswith("%"):
                return -(-int(v[:-1]) * expected // 100)
            return int(v)

        current = sum(1 for p in pods if healthy(p))
        if spec.get("minAvailable") is not None:
            desired = scaled(spec["minAvailable"])
        elif spec.get("maxUnavailable") is not None:
            desired = max(expected - scaled(spec["maxUnavailable"]), 0)
        else:
            desired = expected
        return expected, desired, current, max(current - desired, 0)

    def _charge_pdb_locked(self, pdb, pod):
        expected, desired, current, allowed = self.pdb_figures_locked(pdb)
        name = pdb["metadata"]["name"]
        if allowed <= 0:
            raise ApiError(429, "TooManyRequests",
                           "Cannot evict pod as it would violate the pod's disruption budget.",
                           {"causes": [{"reason": "DisruptionBudget",
                                        "message": f"The disruption budget {name} needs {desired} healthy pods and has {current} currently"}]},
                           headers={"Retry-After": "10"})
        new = deep(pdb)
        status = new.setdefault("status", {})
        status.setdefault("disruptedPods", {})[pod["metadata"]["name"]] = now_rfc3339()
        status.update({"disruptionsAllowed": allowed - 1, "currentHealthy": current,
                       "desiredHealthy": desired, "expectedPods": expected,
                       "observedGeneration": new["metadata"].get("generation", 1)})
        self.store.commit(PDB, "MODIFIED", new, pdb)

    # ----- kubelet

    def kubelet_tick(self):
        now = time.time()
        delay = self.opts.kubelet_delay
        with self.store.cond:
            pods = [self.store.objects[POD.key][k] for k in sorted(self.store.kubelet_work)]
            for pod in pods:
                md, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
                node = spec.get("nodeName")
                if not node:
                    continue
                key = (md["namespace"], md["name"], md.get("uid"))
                if md.get("deletionTimestamp"):
                    if md.get("finalizers"):
                        continue  # held by a finalizer: the kubelet has stopped it, it stays
                    seen = self.kubelet_bound_at.setdefault(("del",) + key, now)
                    deadline = parse_time(md["deletionTimestamp"]) or now
                    if now - seen >= delay or now >= deadline:
                        self.kubelet_bound_at.pop(("del",) + key, None)
                        self.kubelet_bound_at.pop(key, None)
                        cur = self.store.get(POD, md["namespace"], md["name"])
                        if cur is not None:
                            self.store.commit(POD, "DELETED", cur, cur)
                    continue
                phase = status.get("phase")
                if phase == "Pending":
                    seen = self.kubelet_bound_at.setdefault(key, now)
                    if now - seen >= delay:
                        self._kubelet_start_locked(pod)
                elif phase == "Running":
                    dur = parse_go_duration((md.get("annotations") or {}).get("kiln.sh/duration", ""))
                    # Pods loaded Running (a scenario's clock is in the past) run from the
                    # emulator's start on.
                    started = max(parse_time(status.get("startTime")) or now, self.started)
                    if dur is not None and now >= started + dur:
                        self._kubelet_finish_locked(pod)

    # ----- job controller

    def job_controller_tick(self):
        """Plays Volcano's job controller for pods of a PodGroup: a pod of a live PodGroup that was
        removed before it finished is created again, Pending and unbound, under the same name
        (with a new uid), as `kiln simulate` does between cycles for evicted pods."""
        with self.store.cond:
            removed, self.store.removed_pods = self.store.removed_pods, []
            for pod in removed:
                md, spec = pod["metadata"], pod.get("spec") or {}
                ns = md.get("namespace", "")
                if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                    continue
                group = (md.get("annotations") or {}).get(GROUP_ANNOTATION)
                pg = self.store.get(PODGROUP, ns, group) if group else None
                namespace = self.store.get(NAMESPACE, "", ns)
                if pg is None or pg["metadata"].get("deletionTimestamp") or namespace is None or \
                        namespace["metadata"].get("deletionTimestamp"):
                    continue
                if self.store.get(POD, ns, md["name"]) is not None:
                    continue
                fresh_spec = {k: v for k, v in spec.items() if k not in ("nodeName", "priority")}
                body = {"apiVersion": "v1", "kind": "Pod",
                        "metadata": {k: md[k] for k in ("name", "namespace", "labels", "annotations",
                                                        "ownerReferences") if k in md},
                        "spec": fresh_spec}
                try:
                    self._create_locked(POD, ns, body)
                    self.stats.inc("podsRecreated", f'{ns}/{md["name"]}')
                except ApiError as e:
                    print(f"job controller: cannot recreate {ns}/{md['name']}: {e.message}",
                          file=sys.stderr, flush=True)

    def _kubelet_start_locked(self, pod):
        new = deep(pod)
        st = new.setdefault("status", {})
        t = now_rfc3339()
        st["phase"] = "Running"
        st["startTime"] = t
        st["hostIP"] = "127.0.0.1"
        n = abs(hash(new["metadata"]["uid"])) % 65000 + 1
        st["podIP"] = f"10.{n // 256 % 256}.{n % 256}.{n % 200 + 2}"
        conds = {c.get("type"): c for c in st.get("conditions") or []}
        for ct in ("Initialized", "Ready", "ContainersReady", "PodScheduled"):
            c = conds.get(ct) or {"type": ct, "lastProbeTime": None}
            if c.get("status") != "True":
                c["status"] = "True"
                c["lastTransitionTime"] = t
            c.pop("reason", None)
            c.pop("message", None)
            conds[ct] = c
        st["conditions"] = list(conds.values())
        st["containerStatuses"] = [{"name": c.get("name", "main"), "image": c.get("image", ""),
                                    "imageID": "", "ready": True, "restartCount": 0, "started": True,
                                    "state": {"running": {"startedAt": t}}}
                                   for c in new["spec"].get("containers") or []]
        self.store.commit(POD, "MODIFIED", new, pod)

    def _kubelet_finish_locked(self, pod):
        new = deep(pod)
        st = new["status"]
        t = now_rfc3339()
        st["phase"] = "Succeeded"
        for c in st.get("conditions") or []:
            if c.get("type") in ("Ready", "ContainersReady"):
                c["status"] = "False"
                c["reason"] = "PodCompleted"
                c["lastTransitionTime"] = t
        for cs in st.get("containerStatuses") or []:
            cs["ready"] = False
            cs["started"] = False
            cs["state"] = {"terminated": {"exitCode": 0, "reason": "Completed",
                                          "startedAt": st.get("startTime"), "finishedAt": t}}
        self.store.commit(POD, "MODIFIED", new, pod)
