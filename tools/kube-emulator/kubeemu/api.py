"""The API server's behaviour, independent of HTTP: create, update, patch and delete with
defaults and admission, watchers. Pods' binding, eviction and lifecycle are in pods.py."""

import json
import random
import re
import time
import uuid

try:
    import yaml
except ImportError:  # only --load of YAML and apply-patch+yaml need it
    yaml = None

from .common import ApiError, bad_request, conflict, deep, details, invalid, not_found, now_rfc3339
from .patch import json_patch, merge_patch, strategic_merge
from .pods import PodLifecycle
from .resources import (
    BY_KIND, DEFAULT_NAMESPACES, NAMESPACE, NODE, PDB, POD, PODGROUP, PRIORITY_CLASS, QUEUE,
    RESOURCES,
)
from .store import Faults, Stats, Store, Writes


# ---------------------------------------------------------------------------------------------
# The API server's behaviour, independent of HTTP


class Watcher:
    def __init__(self, res, pos):
        self.res = res
        self.pos = pos          # every event of res up to this revision has been taken
        self.expired = False    # a compaction dropped events it had not taken yet
        self.dropped = None     # None, "close" or "reset"


class Api(PodLifecycle):
    def __init__(self, opts):
        self.opts = opts
        self.store = Store(opts.history)
        self.stats = Stats()
        self.faults = Faults()
        self.watchers = self.store.watchers
        self.kubelet_bound_at = {}  # (ns, name) -> time the kubelet first saw it bound
        self.started = time.time()
        self.writes = Writes()
        major, minor = (opts.server_version.split(".") + ["0"])[:2]
        self.clears_nominated_at_bind = (int(major), int(minor)) >= (1, 34)
        self.store.track_removed_pods = opts.job_controller
        # token -> user name: the kubeconfig's token, plus --user NAME=TOKEN.
        self.users = {opts.token: "kiln-emulator"}
        for spec in opts.user:
            name, _, token = spec.partition("=")
            self.users[token] = name
        with self.store.cond:
            for ns in DEFAULT_NAMESPACES:
                self._create_locked(NAMESPACE, "", {"apiVersion": "v1", "kind": "Namespace",
                                                     "metadata": {"name": ns}}, admit=True)

    # ----- object preparation

    def _typed(self, res, obj):
        obj = dict(obj)
        obj["apiVersion"] = res.api_version
        obj["kind"] = res.kind
        return obj

    def _defaults(self, res, obj, created):
        """Defaulting the apiserver applies on create (and on --load)."""
        md = obj["metadata"]
        if res is POD:
            spec = obj.setdefault("spec", {})
            spec.setdefault("schedulerName", "default-scheduler")
            spec.setdefault("restartPolicy", "Always")
            spec.setdefault("terminationGracePeriodSeconds", 30)
            spec.setdefault("dnsPolicy", "ClusterFirst")
            spec.setdefault("containers", [])
            status = obj.setdefault("status", {})
            status.setdefault("phase", "Pending")
            status.setdefault("qosClass", self._qos(spec))
        elif res is NAMESPACE:
            md.setdefault("labels", {})
            md["labels"] = dict(md["labels"], **{"kubernetes.io/metadata.name": md["name"]})
            obj.setdefault("spec", {"finalizers": ["kubernetes"]})
            obj.setdefault("status", {"phase": "Active"})
        elif res is PRIORITY_CLASS:
            obj.setdefault("preemptionPolicy", "PreemptLowerPriority")
        if res.crd or res is PDB:
            md.setdefault("generation", 1)


    # ----- create

    def _create_locked(self, res, ns, body, admit=True, dry_run=False, loading=False):
        st = self.store
        obj = deep(body)
        if not isinstance(obj, dict):
            raise bad_request("the body of the request was in an unknown format")
        md = obj.get("metadata")
        if not isinstance(md, dict):
            md = obj["metadata"] = {}
        if obj.get("kind") and obj["kind"] != res.kind:
            raise bad_request(f'the kind in the data ({obj["kind"]}) does not match the expected kind ({res.kind})')
        if obj.get("apiVersion") and obj["apiVersion"] != res.api_version:
            raise bad_request(f'the API version in the data ({obj["apiVersion"]}) does not match the expected API version ({res.api_version})')
        obj = self._typed(res, obj)
        md = obj["metadata"] = dict(md)
        if res.namespaced:
            if md.get("namespace") and ns and md["namespace"] != ns:
                raise bad_request("the namespace of the provided object does not match the namespace sent on the request")
            ns = ns or md.get("namespace") or "default"
            md["namespace"] = ns
            if st.get(NAMESPACE, "", ns) is None:
                if loading:
                    self._create_locked(NAMESPACE, "", {"metadata": {"name": ns}})
                else:
                    raise ApiError(404, "NotFound", f'namespaces "{ns}" not found',
                                   {"name": ns, "kind": "namespaces"})
        else:
            md.pop("namespace", None)
        if not md.get("name"):
            if md.get("generateName"):
                for _ in range(100):
                    suffix = "".join(random.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))
                    cand = md["generateName"] + suffix
                    if st.get(res, ns, cand) is None:
                        md["name"] = cand
                        break
            else:
                raise invalid(res, "", "metadata.name", "Required value: name or generateName is required")
        name = md["name"]
        if not re.match(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", name) or len(name) > 253:
            if not (res is NODE or res is NAMESPACE) or not name:
                raise invalid(res, name, "metadata.name",
                              f'Invalid value: "{name}": a lowercase RFC 1123 subdomain must consist of lower case '
                              "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character")
        if st.get(res, ns, name) is not None:
            raise ApiError(409, "AlreadyExists", f'{res.qualified} "{name}" already exists', details(res, name))
        if not loading or not md.get("uid"):
            md["uid"] = str(uuid.uuid4())
        if not loading or not md.get("creationTimestamp"):
            md["creationTimestamp"] = now_rfc3339()
        md.pop("resourceVersion", None)
        if not loading:
            md.pop("deletionTimestamp", None)
            md.pop("deletionGracePeriodSeconds", None)
            # The create strategies reset what only controllers and kubelets write.
            if res is POD:
                obj["status"] = {}
            elif res is PDB:
                obj["status"] = {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0,
                                 "expectedPods": 0}
            elif res.plural == "resourcequotas":
                obj["status"] = {}
            elif "status" in res.subresources and res.crd:
                obj.pop("status", None)
        self._defaults(res, obj, True)
        if res is POD and not loading:
            # Loaded objects are taken as stored: a pod without spec.priority keeps none (Volcano
            # then reads priority 1, as Kiln's simulator does).
            self._admit_pod_priority(obj, strict=True)
        if dry_run:
            out = dict(obj)
            return out
        out = st.commit(res, "ADDED", obj, None)
        if res.plural == "events":
            self._count_event(out)
        return out

    def _count_event(self, ev):
        ref = ev.get("involvedObject") or ev.get("regarding") or {}
        key = f'{ref.get("namespace", "")}/{ref.get("name", "")}' if ref.get("namespace") else ref.get("name", "")
        self.stats.inc("events", key)

    def create(self, res, ns, body, dry_run=False):
        with self.store.cond:
            return self._create_locked(res, ns, body, dry_run=dry_run)

    def load(self, obj):
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        res = BY_KIND.get((api_version, kind))
        if res is None:
            raise ValueError(f"unsupported object kind {api_version}/{kind}")
        md = obj.get("metadata") or {}
        with self.store.cond:
            if res is NAMESPACE and self.store.get(NAMESPACE, "", md.get("name")) is not None:
                return  # the default namespaces exist already; a manifest may list them too
            self._create_locked(res, md.get("namespace", ""), obj, loading=True)

    # ----- update

    def _update_locked(self, res, ns, name, new, sub=None, expect_rv=None, dry_run=False,
                       allow_spec_change=False):
        st = self.store
        old = st.get(res, ns, name)
        if old is None:
            raise not_found(res, name)
        if not isinstance(new, dict):
            raise bad_request("the body of the request was in an unknown format")
        new = self._typed(res, new)
        nmd = new.get("metadata")
        nmd = new["metadata"] = dict(nmd) if isinstance(nmd, dict) else {}
        if nmd.get("name") and nmd["name"] != name:
            raise bad_request(f"the name of the object ({nmd['name']}) does not match the name on the URL ({name})")
        if res.namespaced and nmd.get("namespace") and nmd["namespace"] != ns:
            raise bad_request("the namespace of the provided object does not match the namespace sent on the request")
        rv = expect_rv if expect_rv is not None else nmd.get("resourceVersion")
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise conflict(res, name, "the object has been modified; please apply your changes to the latest version and try again")
        omd = old["metadata"]
        for k in ("name", "namespace", "uid", "creationTimestamp", "deletionTimestamp",
                  "deletionGracePeriodSeconds", "generation"):
            if k in omd:
                nmd[k] = omd[k]
            else:
                nmd.pop(k, None)
        if "status" in res.subresources:
            if sub == "status":
                keep = deep(old)
                keep["status"] = new.get("status")
                if keep["status"] is None:
                    keep.pop("status")
                new = keep
                nmd = new["metadata"]
            elif "status" in old:
                new["status"] = old["status"]
            else:
                new.pop("status", None)
        if res is POD and sub != "status" and not allow_spec_change:
            self._check_pod_update(old, new)
        # generation counts spec changes (CRDs and the types that have it).
        if "generation" in omd:
            strip = lambda o: {k: v for k, v in o.items() if k not in ("metadata", "status")}
            if strip(old) != strip(new):
                nmd["generation"] = omd["generation"] + 1
        nmd["resourceVersion"] = omd["resourceVersion"]
        if new == old:
            return old, False, False   # a no-op update writes nothing, as the real apiserver
        status_changed = new.get("status") != old.get("status")
        if dry_run:
            return new, True, status_changed
        if omd.get("deletionTimestamp") and not nmd.get("finalizers") and old["metadata"].get("finalizers"):
            # The last finalizer went: the object goes, unless a kubelet still has to stop the pod.
            if res is not POD or not (new.get("spec") or {}).get("nodeName"):
                return st.commit(res, "DELETED", new, old), True, status_changed
        return st.commit(res, "MODIFIED", new, old), True, status_changed


    def update(self, res, ns, name, body, sub=None, dry_run=False):
        with self.store.cond:
            out, changed, status_changed = self._update_locked(res, ns, name, deep(body), sub=sub,
                                                               dry_run=dry_run)
        self._count_write(res, ns, name, sub, status_changed)
        return out

    def _count_write(self, res, ns, name, sub, status_changed):
        key = f"{ns}/{name}" if res.namespaced else name
        if res is POD and sub == "status":
            self.stats.inc("podStatusWrites", key)
        elif res is PODGROUP:
            self.stats.inc("podGroupWrites", key)
            if status_changed:
                self.stats.inc("podGroupStatusWrites", key)
        elif res is QUEUE and sub == "status":
            self.stats.inc("queueStatusWrites", key)

    def patch(self, res, ns, name, ctype, body, sub=None, dry_run=False, field_manager=None):
        ctype = (ctype or "").split(";")[0].strip()
        with self.store.cond:
            old = self.store.get(res, ns, name)
            if ctype == "application/apply-patch+yaml":
                if not field_manager:
                    raise bad_request("PATCH, application/apply-patch+yaml requires fieldManager parameter")
                patch_doc = load_yaml_or_json(body)
                if old is None:
                    if sub:
                        raise not_found(res, name)
                    doc = dict(patch_doc)
                    doc.setdefault("metadata", {})["name"] = name
                    out = self._create_locked(res, ns, doc, dry_run=dry_run)
                    return out, 201
                new = strategic_merge(old, patch_doc)
            else:
                if old is None:
                    raise not_found(res, name)
                try:
                    patch_doc = json.loads(body or b"null")
                except ValueError as e:
                    raise bad_request(f"error decoding patch: {e}")
                if ctype == "application/merge-patch+json":
                    new = merge_patch(old, patch_doc)
                elif ctype == "application/strategic-merge-patch+json":
                    if res.crd:
                        raise ApiError(415, "UnsupportedMediaType",
                                       "the body of the request was in an unknown format - accepted media types include: "
                                       "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml")
                    new = strategic_merge(old, patch_doc)
                elif ctype == "application/json-patch+json":
                    new = json_patch(old, patch_doc)
                else:
                    raise ApiError(415, "UnsupportedMediaType",
                                   f'the body of the request was in an unknown format - accepted media types include: '
                                   f'application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml')
            expect_rv = None
            if isinstance(patch_doc, dict):
                expect_rv = (patch_doc.get("metadata") or {}).get("resourceVersion")
            if isinstance(new, dict):
                new.setdefault("metadata", {})
                new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
            out, changed, status_changed = self._update_locked(res, ns, name, new, sub=sub,
                                                               expect_rv=expect_rv, dry_run=dry_run)
        self._count_write(res, ns, name, sub, status_changed)
        return out, 200

    # ----- delete

    def delete(self, res, ns, name, opts, dry_run=False):
        with self.store.cond:
            return self._delete_locked(res, ns, name, opts, dry_run=dry_run)

    def _delete_locked(self, res, ns, name, opts, dry_run=False):
        st = self.store
        old = st.get(res, ns, name)
        if old is None:
            raise not_found(res, name)
        pre = (opts or {}).get("preconditions") or {}
        if pre.get("uid") and pre["uid"] != old["metadata"].get("uid"):
            raise conflict(res, name, f'Precondition failed: UID in precondition: {pre["uid"]}, UID in object meta: {old["metadata"].get("uid")}')
        if pre.get("resourceVersion") and pre["resourceVersion"] != old["metadata"]["resourceVersion"]:
            raise conflict(res, name, f'Precondition failed: ResourceVersion in precondition: {pre["resourceVersion"]}, ResourceVersion in object meta: {old["metadata"]["resourceVersion"]}')
        grace = (opts or {}).get("gracePeriodSeconds")
        md = old["metadata"]
        if res is POD:
            spec, status = old.get("spec") or {}, old.get("status") or {}
            if grace is None:
                grace = md.get("deletionGracePeriodSeconds", spec.get("terminationGracePeriodSeconds", 30))
            if not spec.get("nodeName") or status.get("phase") in ("Succeeded", "Failed"):
                grace = 0
            if grace > 0:
                if md.get("deletionTimestamp") and md.get("deletionGracePeriodSeconds", 0) <= grace:
                    return old  # already terminating with a shorter grace: nothing changes
                new = deep(old)
                new["metadata"]["deletionTimestamp"] = now_rfc3339(time.time() + grace)
                new["metadata"]["deletionGracePeriodSeconds"] = int(grace)
                if dry_run:
                    return new
                return st.commit(res, "MODIFIED", new, old)
        if md.get("finalizers"):
            if md.get("deletionTimestamp"):
                return old
            new = deep(old)
            new["metadata"]["deletionTimestamp"] = now_rfc3339()
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            if dry_run:
                return new
            return st.commit(res, "MODIFIED", new, old)
        if dry_run:
            return old
        out = st.commit(res, "DELETED", old, old)
        if res is NAMESPACE:
            # The namespace controller's work, done at once: everything in it goes.
            for r in RESOURCES:
                if r.namespaced:
                    for (ons, oname), o in list(st.objects[r.key].items()):
                        if ons == name:
                            st.commit(r, "DELETED", o, o)
        return out


def load_yaml_or_json(data):
    if isinstance(data, bytes):
        data = data.decode("utf-8")
    try:
        return json.loads(data)
    except ValueError:
        pass
    if yaml is None:
        raise bad_request("YAML bodies need PyYAML")
    try:
        return yaml.safe_load(data)
    except yaml.YAMLError as e:
        raise bad_request(f"error decoding YAML: {e}")
