#!/usr/bin/python3
"""A small Kubernetes API-server emulator for Kiln's tests (see README.md next to this file).

One process, everything in memory, one global lock. Objects are stored as immutable JSON dicts
(a write always stores a fresh dict), so readers may serialise them outside the lock. Every write
takes the next value of one global revision counter, as etcd does, and appends an event to the
history of its resource; watches and resourceVersion-exact LISTs are served from that history.
"""

import argparse
import base64
import bisect
import collections
import datetime
import json
import os
import random
import re
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

try:
    import yaml
except ImportError:  # only --load of YAML and apply-patch+yaml need it
    yaml = None


# ---------------------------------------------------------------------------------------------
# Resource registry


class Resource:
    def __init__(self, group, version, plural, kind, namespaced, short=(), subresources=(),
                 verbs=None, crd=False, categories=(), singular=None):
        self.group = group
        self.version = version
        self.plural = plural
        self.kind = kind
        self.namespaced = namespaced
        self.short = list(short)
        self.subresources = list(subresources)
        self.verbs = verbs or ["create", "delete", "deletecollection", "get", "list", "patch",
                               "update", "watch"]
        self.crd = crd
        self.categories = list(categories)
        self.singular = singular or kind.lower()

    @property
    def api_version(self):
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self):
        return f"{self.group}/{self.version}/{self.plural}"

    @property
    def qualified(self):
        # What error messages and Status details call the resource: "pods", "leases.coordination.k8s.io".
        return f"{self.plural}.{self.group}" if self.group else self.plural


RESOURCES = [
    Resource("", "v1", "pods", "Pod", True, ["po"], ["status", "binding", "eviction"],
             categories=["all"]),
    Resource("", "v1", "bindings", "Binding", True, verbs=["create"]),
    Resource("", "v1", "nodes", "Node", False, ["no"], ["status"]),
    Resource("", "v1", "namespaces", "Namespace", False, ["ns"], ["status"],
             verbs=["create", "delete", "get", "list", "patch", "update", "watch"]),
    Resource("", "v1", "events", "Event", True, ["ev"]),
    Resource("", "v1", "resourcequotas", "ResourceQuota", True, ["quota"], ["status"]),
    Resource("", "v1", "configmaps", "ConfigMap", True, ["cm"]),
    Resource("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, ["pc"]),
    Resource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, ["pdb"],
             ["status"]),
    Resource("coordination.k8s.io", "v1", "leases", "Lease", True),
    Resource("events.k8s.io", "v1", "events", "Event", True),
    Resource("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup", True,
             ["pg", "podgroup-v1beta1"], crd=True),
    Resource("scheduling.volcano.sh", "v1beta1", "queues", "Queue", False,
             ["q", "queue-v1beta1"], ["status"], crd=True),
    # Volcano's topology CRDs, cluster-scoped as Volcano installs them.
    Resource("topology.volcano.sh", "v1alpha1", "hypernodes", "HyperNode", False, ["hn"], ["status"],
             crd=True),
    Resource("nodeinfo.volcano.sh", "v1alpha1", "numatopologies", "Numatopology", False, ["numatopo"],
             crd=True),
]
BY_PATH = {(r.group, r.version, r.plural): r for r in RESOURCES}
BY_KIND = {(r.api_version, r.kind): r for r in RESOURCES if r.plural != "bindings"}
POD = BY_PATH[("", "v1", "pods")]
NODE = BY_PATH[("", "v1", "nodes")]
NAMESPACE = BY_PATH[("", "v1", "namespaces")]
PDB = BY_PATH[("policy", "v1", "poddisruptionbudgets")]
PRIORITY_CLASS = BY_PATH[("scheduling.k8s.io", "v1", "priorityclasses")]
PODGROUP = BY_PATH[("scheduling.volcano.sh", "v1beta1", "podgroups")]
QUEUE = BY_PATH[("scheduling.volcano.sh", "v1beta1", "queues")]
HYPERNODE = BY_PATH[("topology.volcano.sh", "v1alpha1", "hypernodes")]
NUMATOPOLOGY = BY_PATH[("nodeinfo.volcano.sh", "v1alpha1", "numatopologies")]
GROUPS = []  # (group, [versions]) in discovery order
for _r in RESOURCES:
    if _r.group and all(g != _r.group for g, _ in GROUPS):
        GROUPS.append((_r.group, [_r.version]))

FIELD_SELECTORS = {
    "pods": ["spec.nodeName", "spec.schedulerName", "status.phase", "status.nominatedNodeName",
             "spec.restartPolicy", "spec.serviceAccountName", "spec.hostNetwork", "status.podIP"],
    "events": ["involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
               "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
               "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type",
               "regarding.kind", "regarding.name", "regarding.namespace", "regarding.uid"],
    "nodes": ["spec.unschedulable"],
    "namespaces": ["status.phase"],
}
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
DEFAULT_NAMESPACES = ["default", "kube-system", "kube-public", "kube-node-lease"]


# ---------------------------------------------------------------------------------------------
# Small helpers


def now_rfc3339(t=None):
    t = time.time() if t is None else t
    return datetime.datetime.fromtimestamp(int(t), datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(s):
    if not s:
        return None
    try:
        s = s.replace("Z", "+00:00")
        return datetime.datetime.fromisoformat(s).timestamp()
    except ValueError:
        return None


_DUR = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")


def parse_go_duration(text):
    """Go's time.ParseDuration subset: "1h2m3s", "500ms", "30s"."""
    text = str(text).strip()
    if not text:
        return None
    total, pos = 0.0, 0
    units = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}
    while pos < len(text):
        m = _DUR.match(text, pos)
        if not m:
            return None
        total += float(m.group(1)) * units[m.group(2)]
        pos = m.end()
    return total


def deep(o):
    return json.loads(json.dumps(o))


def human_age(seconds):
    # kubectl's duration.HumanDuration, approximately.
    s = int(max(seconds, 0))
    if s < 120:
        return f"{s}s"
    m = s // 60
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if m < 180:
        return f"{m}m"
    h = s // 3600
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    d = h // 24
    return f"{d}d"


def get_path(obj, dotted):
    cur = obj
    for part in dotted.split("."):
        if not isinstance(cur, dict):
            return None
        cur = cur.get(part)
    return cur


def parse_bool(v):
    return str(v).lower() in ("1", "true", "yes")


def cpu_milli(q):
    q = str(q)
    if q.endswith("m"):
        return float(q[:-1])
    try:
        return float(q) * 1000
    except ValueError:
        return 0.0


class ApiError(Exception):
    def __init__(self, code, reason, message, details=None, headers=None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}

    def status(self):
        s = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
             "message": self.message, "reason": self.reason, "code": self.code}
        if self.details is not None:
            s["details"] = self.details
        return s


def details(res, name, causes=None):
    d = {"name": name, "kind": res.plural}
    if res.group:
        d["group"] = res.group
    if causes:
        d["causes"] = causes
    return d


def not_found(res, name):
    return ApiError(404, "NotFound", f'{res.qualified} "{name}" not found', details(res, name))


def conflict(res, name, why):
    return ApiError(409, "Conflict", f'Operation cannot be fulfilled on {res.qualified} "{name}": {why}',
                    details(res, name))


def invalid(res, name, field, why):
    return ApiError(422, "Invalid", f'{res.kind} "{name}" is invalid: {field}: {why}',
                    details(res, name, [{"reason": "FieldValueInvalid", "message": why, "field": field}]))


def bad_request(msg):
    return ApiError(400, "BadRequest", msg)


# ---------------------------------------------------------------------------------------------
# Selectors


def parse_label_selector(text):
    """Returns a list of requirements (key, op, values); raises ApiError on bad syntax."""
    reqs = []
    if not text:
        return reqs
    # Split on commas that are not inside parentheses.
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    for p in parts:
        p = p.strip()
        if not p:
            raise bad_request(f"unable to parse requirement: found '', expected: identifier")
        m = re.match(r"^([A-Za-z0-9_./-]+)\s+(in|notin)\s+\((.*)\)$", p)
        if m:
            vals = [v.strip() for v in m.group(3).split(",") if v.strip()]
            reqs.append((m.group(1), m.group(2), vals))
            continue
        m = re.match(r"^([A-Za-z0-9_./-]+)\s*(==|!=|=)\s*([A-Za-z0-9_.-]*)$", p)
        if m:
            op = "!=" if m.group(2) == "!=" else "="
            reqs.append((m.group(1), op, [m.group(3)]))
            continue
        m = re.match(r"^(!?)\s*([A-Za-z0-9_./-]+)$", p)
        if m:
            reqs.append((m.group(2), "!" if m.group(1) else "exists", []))
            continue
        raise bad_request(f"unable to parse requirement: {p}")
    return reqs


def labels_match(reqs, labels):
    labels = labels or {}
    for key, op, vals in reqs:
        has = key in labels
        v = labels.get(key)
        if op == "=" and (not has or v != vals[0]):
            return False
        if op == "!=" and has and v == vals[0]:
            return False
        if op == "in" and (not has or v not in vals):
            return False
        if op == "notin" and has and v in vals:
            return False
        if op == "exists" and not has:
            return False
        if op == "!" and has:
            return False
    return True


def selector_matches(sel, labels):
    """A metav1.LabelSelector (matchLabels + matchExpressions) against labels."""
    if sel is None:
        return False
    labels = labels or {}
    for k, v in (sel.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in sel.get("matchExpressions") or []:
        k, op, vals = e.get("key"), e.get("operator"), e.get("values") or []
        if op == "In" and labels.get(k) not in vals:
            return False
        if op == "NotIn" and k in labels and labels[k] in vals:
            return False
        if op == "Exists" and k not in labels:
            return False
        if op == "DoesNotExist" and k in labels:
            return False
    return True


def parse_field_selector(res, text):
    reqs = []
    if not text:
        return reqs
    allowed = {"metadata.name", "metadata.namespace"} | set(FIELD_SELECTORS.get(res.plural, []))
    for p in text.split(","):
        p = p.strip()
        if not p:
            continue
        m = re.match(r"^([A-Za-z.]+)\s*(==|!=|=)\s*(.*)$", p)
        if not m:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{p}'")
        field = m.group(1)
        if field not in allowed:
            raise bad_request(f'field label not supported: {field}')
        reqs.append((field, m.group(2) == "!=", m.group(3)))
    return reqs


def fields_match(reqs, obj):
    for field, negate, want in reqs:
        v = get_path(obj, field)
        if v is None:
            v = ""
        if isinstance(v, bool):
            v = "true" if v else "false"
        v = str(v)
        if (v == want) == negate:
            return False
    return True


# ---------------------------------------------------------------------------------------------
# Patches


SMP_MERGE_KEYS = {
    "containers": "name", "initContainers": "name", "ephemeralContainers": "name",
    "volumes": "name", "env": "name", "ports": "containerPort", "volumeMounts": "mountPath",
    "conditions": "type", "imagePullSecrets": "name", "hostAliases": "ip",
    "ownerReferences": "uid", "taints": "key", "addresses": "type",
    "topologySpreadConstraints": "topologyKey", "resourceClaims": "name",
    "containerStatuses": "name", "initContainerStatuses": "name",
}
SMP_PRIMITIVE_MERGE = {"finalizers"}


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return deep(patch)
    if not isinstance(target, dict):
        target = {}
    out = dict(target)
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def strategic_merge(target, patch):
    """Strategic merge patch for the lists that matter to Kiln's objects; otherwise a merge patch."""
    if not isinstance(patch, dict):
        return deep(patch)
    if patch.get("$patch") == "replace":
        return {k: deep(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    if not isinstance(target, dict):
        target = {}
    out = dict(target)
    retain = patch.get("$retainKeys")
    for k, v in patch.items():
        if k.startswith("$setElementOrder/") or k in ("$retainKeys", "$patch"):
            continue
        if k.startswith("$deleteFromPrimitiveList/"):
            name = k.split("/", 1)[1]
            if isinstance(out.get(name), list):
                out[name] = [x for x in out[name] if x not in v]
            continue
        if v is None:
            out.pop(k, None)
        elif isinstance(v, list) and k in SMP_MERGE_KEYS and isinstance(out.get(k), list):
            key = SMP_MERGE_KEYS[k]
            cur = [deep(x) for x in out[k]]
            for item in v:
                if not isinstance(item, dict):
                    cur = deep(v)
                    break
                idx = next((i for i, x in enumerate(cur) if isinstance(x, dict) and x.get(key) == item.get(key)), None)
                if item.get("$patch") == "delete":
                    if idx is not None:
                        cur.pop(idx)
                elif idx is None:
                    cur.append({a: b for a, b in item.items() if not a.startswith("$")})
                else:
                    cur[idx] = strategic_merge(cur[idx], item)
            order = patch.get(f"$setElementOrder/{k}")
            if isinstance(order, list):
                keys = [o.get(key) for o in order if isinstance(o, dict)]
                cur.sort(key=lambda x: keys.index(x.get(key)) if x.get(key) in keys else len(keys))
            out[k] = cur
        elif isinstance(v, list) and k in SMP_PRIMITIVE_MERGE and isinstance(out.get(k), list):
            out[k] = out[k] + [x for x in v if x not in out[k]]
        else:
            r = strategic_merge(out.get(k), v) if isinstance(v, dict) else deep(v)
            if r is None:
                out.pop(k, None)
            else:
                out[k] = r
    if isinstance(retain, list):
        out = {k: v for k, v in out.items() if k in retain or k not in target}
    return out


def _pointer(path):
    if path == "":
        return []
    if not path.startswith("/"):
        raise bad_request(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def json_patch(doc, ops):
    """RFC 6902 JSON patch."""
    if not isinstance(ops, list):
        raise bad_request("json patch must be a list of operations")
    doc = deep(doc)

    def parent(parts):
        cur = doc
        for p in parts[:-1]:
            if isinstance(cur, list):
                cur = cur[int(p)]
            elif isinstance(cur, dict) and p in cur:
                cur = cur[p]
            else:
                raise ApiError(422, "Invalid", f"doc is missing path: /{'/'.join(parts)}")
        return cur

    def get(parts):
        cur = doc
        for p in parts:
            if isinstance(cur, list):
                cur = cur[int(p)]
            elif isinstance(cur, dict) and p in cur:
                cur = cur[p]
            else:
                raise ApiError(422, "Invalid", f"doc is missing path: /{'/'.join(parts)}")
        return cur

    def add(parts, value):
        nonlocal doc
        if not parts:
            doc = value
            return
        par, last = parent(parts), parts[-1]
        if isinstance(par, list):
            par.insert(len(par) if last == "-" else int(last), value)
        else:
            par[last] = value

    def remove(parts):
        par, last = parent(parts), parts[-1]
        if isinstance(par, list):
            return par.pop(int(last))
        if last not in par:
            raise ApiError(422, "Invalid", f"doc is missing key: /{'/'.join(parts)}")
        return par.pop(last)

    try:
        for op in ops:
            kind, parts = op.get("op"), _pointer(op.get("path", ""))
            if kind == "add":
                add(parts, deep(op.get("value")))
            elif kind == "remove":
                remove(parts)
            elif kind == "replace":
                remove(parts)
                add(parts, deep(op.get("value")))
            elif kind == "move":
                v = remove(_pointer(op.get("from", "")))
                add(parts, v)
            elif kind == "copy":
                add(parts, deep(get(_pointer(op.get("from", "")))))
            elif kind == "test":
                if get(parts) != op.get("value"):
                    raise ApiError(422, "Invalid", f"testing value {op.get('path')} failed")
            else:
                raise bad_request(f"Unexpected kind: {kind}")
    except (IndexError, ValueError, TypeError, KeyError) as e:
        raise ApiError(422, "Invalid", f"the server rejected our request due to an error in our request: {e}")
    return doc


# ---------------------------------------------------------------------------------------------
# The store


class Event:
    __slots__ = ("rv", "type", "obj", "prev", "line")

    def __init__(self, rv, type_, obj, prev):
        self.rv = rv
        self.type = type_
        self.obj = obj
        self.prev = prev
        self.line = None  # the serialised watch line, made once and shared by all watchers


class Store:
    def __init__(self, history_limit):
        self.cond = threading.Condition()
        self.rv = 0
        self.compacted = 0
        self.history_limit = history_limit
        self.history_len = 0
        self.objects = {r.key: {} for r in RESOURCES}
        self.history = {r.key: [] for r in RESOURCES}   # Event lists ordered by rv
        self.history_rvs = {r.key: [] for r in RESOURCES}
        # Pods the kubelet mode has work on (bound and Pending, terminating, or Running with a
        # duration), so its loop does not walk every pod of a large cluster.
        self.kubelet_work = set()
        self.watchers = set()
        # Pods removed from the store, for the job-controller mode (only kept when it is on).
        self.track_removed_pods = False
        self.removed_pods = []

    def key_of(self, res, obj):
        md = obj["metadata"]
        return (md.get("namespace", "") if res.namespaced else "", md["name"])

    def get(self, res, ns, name):
        return self.objects[res.key].get((ns if res.namespaced else "", name))

    def commit(self, res, type_, obj, prev):
        """Stores obj (ADDED/MODIFIED) or removes it (DELETED) at the next revision. Lock held."""
        self.rv += 1
        obj = dict(obj)
        obj["metadata"] = dict(obj["metadata"])
        obj["metadata"]["resourceVersion"] = str(self.rv)
        key = self.key_of(res, obj)
        if type_ == "DELETED":
            self.objects[res.key].pop(key, None)
            if self.track_removed_pods and res.plural == "pods" and res.group == "":
                self.removed_pods.append(obj)
        else:
            self.objects[res.key][key] = obj
        if res.plural == "pods" and res.group == "":
            md, spec, status = obj["metadata"], obj.get("spec") or {}, obj.get("status") or {}
            phase = status.get("phase")
            if type_ != "DELETED" and spec.get("nodeName") and (
                    md.get("deletionTimestamp") or phase == "Pending" or
                    (phase == "Running" and "kiln.sh/duration" in (md.get("annotations") or {}))):
                self.kubelet_work.add(key)
            else:
                self.kubelet_work.discard(key)
        self.history[res.key].append(Event(self.rv, type_, obj, prev))
        self.history_rvs[res.key].append(self.rv)
        self.history_len += 1
        if self.history_len > self.history_limit:
            # Keep the newest half, as an etcd compaction would.
            self.compact_locked(self.rv - self.history_limit // 2)
        self.cond.notify_all()
        return obj

    def compact_locked(self, revision):
        revision = min(max(revision, self.compacted), self.rv)
        self.compacted = revision
        # An open watch survives a compaction, as etcd's do, unless it had not yet taken events
        # the compaction drops (a slow watcher): that one ends with 410.
        for w in self.watchers:
            if w.pos < revision:
                rvs = self.history_rvs[w.res.key]
                i = bisect.bisect_right(rvs, w.pos)
                if i < len(rvs) and rvs[i] <= revision:
                    w.expired = True
                else:
                    w.pos = revision
        total = 0
        for k in self.history:
            i = bisect.bisect_right(self.history_rvs[k], revision)
            if i:
                del self.history[k][:i]
                del self.history_rvs[k][:i]
            total += len(self.history[k])
        self.history_len = total
        self.cond.notify_all()
        return revision

    def events_after(self, res, rv, limit=2000):
        rvs = self.history_rvs[res.key]
        i = bisect.bisect_right(rvs, rv)
        return self.history[res.key][i:i + limit]

    def snapshot(self, res, rv):
        """The objects of res as they were at revision rv. Lock held."""
        cur = self.objects[res.key]
        later = self.events_after(res, rv, limit=len(self.history[res.key]))
        if not later:
            return cur
        snap = dict(cur)
        for ev in reversed(later):
            key = self.key_of(res, ev.obj)
            if ev.prev is None:
                snap.pop(key, None)
            else:
                snap[key] = ev.prev
        return snap


# ---------------------------------------------------------------------------------------------
# Stats and faults


class Stats:
    FIELDS = ["binds", "bindsOk", "bindsOkByUid", "evictions", "evictionsOk", "podDeletes",
              "podStatusWrites", "podGroupWrites", "podGroupStatusWrites", "queueStatusWrites", "events",
              "requests", "podsRecreated"]

    def __init__(self):
        self.lock = threading.Lock()
        self.reset()

    def reset(self):
        with self.lock:
            self.c = {f: {} for f in self.FIELDS}

    def inc(self, field, key, n=1):
        with self.lock:
            d = self.c[field]
            d[key] = d.get(key, 0) + n

    def snapshot(self):
        with self.lock:
            return deep(self.c)


class Writes:
    """Every mutating API request, in arrival order: when, who (the authenticated user), what.
    Tests read it to prove who wrote (e.g. never two schedulers writing at once)."""

    def __init__(self, limit=200000):
        self.lock = threading.Lock()
        self.log = collections.deque(maxlen=limit)

    def record(self, t, user, verb, path, code, agent):
        with self.lock:
            self.log.append({"time": t, "user": user, "verb": verb, "path": path, "code": code,
                             "userAgent": agent})

    def since(self, t):
        with self.lock:
            return [w for w in self.log if w["time"] >= t]


class Faults:
    def __init__(self):
        self.lock = threading.Lock()
        self.fail_rules = []      # dicts: verb, resource, namespace, name, count, code
        self.latency_rules = []   # dicts: verb, resource, seconds, count (None = forever)
        self.bind_conflicts = {}  # "ns/name" -> {"count": n, "node": optional}

    @staticmethod
    def _match(rule, verb, resource, ns, name):
        if rule.get("verb", "*") not in ("*", verb):
            return False
        if rule.get("resource", "*") not in ("*", resource):
            return False
        if rule.get("namespace") not in (None, ns):
            return False
        if rule.get("name") not in (None, name):
            return False
        return True

    def take_failure(self, verb, resource, ns, name):
        with self.lock:
            for rule in self.fail_rules:
                if rule["count"] > 0 and self._match(rule, verb, resource, ns, name):
                    rule["count"] -= 1
                    code = rule.get("code", 500)
                    self.fail_rules = [r for r in self.fail_rules if r["count"] > 0]
                    return code
        return None

    def take_latency(self, verb, resource):
        total = 0.0
        with self.lock:
            for rule in self.latency_rules:
                if rule.get("count") is not None and rule["count"] <= 0:
                    continue
                if self._match(rule, verb, resource, None, None):
                    total += float(rule.get("seconds", 0))
                    if rule.get("count") is not None:
                        rule["count"] -= 1
            self.latency_rules = [r for r in self.latency_rules if r.get("count") is None or r["count"] > 0]
        return total

    def take_bind_conflict(self, key):
        with self.lock:
            rule = self.bind_conflicts.get(key)
            if not rule or rule["count"] <= 0:
                return None
            rule["count"] -= 1
            if rule["count"] <= 0:
                del self.bind_conflicts[key]
            return rule

    def clear(self):
        with self.lock:
            self.fail_rules, self.latency_rules, self.bind_conflicts = [], [], {}


# ---------------------------------------------------------------------------------------------
# The API server's behaviour, independent of HTTP


class Watcher:
    def __init__(self, res, pos):
        self.res = res
        self.pos = pos          # every event of res up to this revision has been taken
        self.expired = False    # a compaction dropped events it had not taken yet
        self.dropped = None     # None, "close" or "reset"


class Api:
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


# ---------------------------------------------------------------------------------------------
# Tables (kubectl asks for them: Accept: application/json;as=Table;v=v1;g=meta.k8s.io)


def _col(name, typ="string", fmt="", priority=0, desc=""):
    return {"name": name, "type": typ, "format": fmt, "description": desc or name, "priority": priority}


def table_columns(res):
    age = _col("Age", desc="CreationTimestamp is a timestamp representing the server time when this object was created.")
    name = _col("Name", fmt="name", desc="Name must be unique within a namespace.")
    if res is POD:
        return [name, _col("Ready"), _col("Status"), _col("Restarts", "string"), age,
                _col("IP", priority=1), _col("Node", priority=1), _col("Nominated Node", priority=1),
                _col("Readiness Gates", priority=1)]
    if res is NODE:
        return [name, _col("Status"), _col("Roles"), age, _col("Version")]
    if res is NAMESPACE:
        return [name, _col("Status"), age]
    if res is PODGROUP:
        return [name, _col("Status"), _col("minMember", "integer"), _col("Runnings", "integer"), age,
                _col("Queue", priority=1)]
    if res is QUEUE:
        return [name, _col("State"), _col("Weight", "integer"), age]
    if res is HYPERNODE:  # the CRD's additionalPrinterColumns
        return [name, _col("Tier"), _col("TierName"), _col("NodeCount", "integer"), age]
    if res is PRIORITY_CLASS:
        return [name, _col("Value", "integer"), _col("Global-Default", "boolean"), age,
                _col("PreemptionPolicy")]
    if res is PDB:
        return [name, _col("Min Available"), _col("Max Unavailable"), _col("Allowed Disruptions", "integer"), age]
    return [name, age]


def table_cells(res, obj, now):
    md = obj["metadata"]
    age = human_age(now - (parse_time(md.get("creationTimestamp")) or now))
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    if res is POD:
        cs = status.get("containerStatuses") or []
        ready = sum(1 for c in cs if c.get("ready"))
        phase = "Terminating" if md.get("deletionTimestamp") else status.get("phase", "Pending")
        restarts = sum(c.get("restartCount", 0) for c in cs)
        return [md["name"], f"{ready}/{len(spec.get('containers') or [])}", phase, str(restarts), age,
                status.get("podIP") or "<none>", spec.get("nodeName") or "<none>",
                status.get("nominatedNodeName") or "<none>", "<none>"]
    if res is NODE:
        ready = [c for c in status.get("conditions") or [] if c.get("type") == "Ready"]
        st = "Ready" if ready and ready[0].get("status") == "True" else ("NotReady" if ready else "Unknown")
        if spec.get("unschedulable"):
            st += ",SchedulingDisabled"
        roles = ",".join(sorted(k.split("/", 1)[1] for k in (md.get("labels") or {})
                                if k.startswith("node-role.kubernetes.io/"))) or "<none>"
        return [md["name"], st, roles, age, (status.get("nodeInfo") or {}).get("kubeletVersion", "")]
    if res is NAMESPACE:
        return [md["name"], status.get("phase", "Active"), age]
    if res is PODGROUP:
        return [md["name"], status.get("phase", ""), spec.get("minMember", 0), status.get("running", 0), age,
                spec.get("queue", "")]
    if res is QUEUE:
        return [md["name"], status.get("state", ""), spec.get("weight", 0), age]
    if res is HYPERNODE:
        return [md["name"], str(spec.get("tier", "")), spec.get("tierName", ""), status.get("nodeCount", 0), age]
    if res is PRIORITY_CLASS:
        return [md["name"], obj.get("value", 0), bool(obj.get("globalDefault")), age,
                obj.get("preemptionPolicy", "")]
    if res is PDB:
        return [md["name"], str(spec.get("minAvailable", "N/A")), str(spec.get("maxUnavailable", "N/A")),
                status.get("disruptionsAllowed", 0), age]
    return [md["name"], age]


def table_row(res, obj, include, now):
    row = {"cells": table_cells(res, obj, now)}
    if include == "Object":
        row["object"] = obj
    elif include != "None":
        row["object"] = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                         "metadata": obj["metadata"]}
    return row


def make_table(res, objs, include, table_version, meta, headers=True):
    now = time.time()
    t = {"kind": "Table", "apiVersion": f"meta.k8s.io/{table_version}", "metadata": meta,
         "columnDefinitions": table_columns(res) if headers else None,
         "rows": [table_row(res, o, include, now) for o in objs]}
    return t


def wants_table(accept):
    """(True, version) when the Accept header's first acceptable type is a meta.k8s.io Table."""
    if not accept:
        return False, None
    for part in accept.split(","):
        params = {}
        fields = [f.strip() for f in part.split(";")]
        for f in fields[1:]:
            if "=" in f:
                k, v = f.split("=", 1)
                params[k.strip()] = v.strip()
        if fields[0] in ("application/json", "*/*"):
            if params.get("as") == "Table" and params.get("g") == "meta.k8s.io" and params.get("v") in ("v1", "v1beta1"):
                return True, params["v"]
            if "as" not in params:
                return False, None
    return False, None


# ---------------------------------------------------------------------------------------------
# HTTP


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256

    def __init__(self, addr, handler, api, ssl_ctx):
        self.api = api
        self.ssl_ctx = ssl_ctx
        super().__init__(addr, handler)

    def handle_error(self, request, client_address):
        # Clients (Go's in particular) open spare connections and close them unused; a failed
        # TLS handshake or a reset is normal traffic, not an emulator error.
        if isinstance(sys.exc_info()[1], (OSError, ssl.SSLError)):
            return
        super().handle_error(request, client_address)


def continue_token(rv, start):
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start + "\u0000"}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_continue(tok):
    try:
        raw = base64.urlsafe_b64decode(tok + "=" * (-len(tok) % 4))
        d = json.loads(raw)
        return int(d["rv"]), d["start"].rstrip("\u0000")
    except Exception:
        raise bad_request(f'continue key is not valid: {tok}')


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "kiln-kube-emulator"
    sys_version = ""

    def setup(self):
        # Headers and body go out in separate writes: without TCP_NODELAY, Nagle's algorithm and
        # the client's delayed ACK would add ~40 ms to every response.
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # The TLS handshake happens here, in the connection's own thread, so one slow client
        # cannot hold up accept().
        if self.server.ssl_ctx is not None:
            self.request.settimeout(30)
            self.request = self.server.ssl_ctx.wrap_socket(self.request, server_side=True)
            self.request.settimeout(None)
        super().setup()

    def log_message(self, fmt, *args):
        pass

    # ----- plumbing

    @property
    def api(self):
        return self.server.api

    def _log(self, code, t0):
        log = self.server.log
        if log is not None:
            log.write(f"{self.command} {self.path} {code} {1000 * (time.time() - t0):.1f}ms\n")
            log.flush()

    def send_json(self, code, obj, headers=None):
        data = json.dumps(obj, separators=(",", ":")).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-cache, private")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        self._code = code

    def send_text(self, code, text, ctype="text/plain; charset=utf-8"):
        data = text.encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self._code = code

    def send_error_status(self, e):
        headers = dict(e.headers)
        if e.code == 503 and "Retry-After" not in headers:
            headers["Retry-After"] = "1"
        self.send_json(e.code, e.status(), headers)

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                line = self.rfile.readline().strip()
                size = int(line.split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    break
                data += self.rfile.read(size)
                self.rfile.readline()
            return data
        return self.rfile.read(n) if n else b""

    def json_body(self):
        raw = self.read_body()
        if not raw:
            return None
        ctype = (self.headers.get("Content-Type") or "application/json").split(";")[0].strip()
        if ctype in ("application/yaml", "application/apply-patch+yaml"):
            return load_yaml_or_json(raw)
        if ctype not in ("application/json", "", "*/*"):
            raise ApiError(415, "UnsupportedMediaType",
                           f'the body of the request was in an unknown format - accepted media types include: application/json, application/yaml')
        try:
            return json.loads(raw)
        except ValueError as e:
            raise bad_request(f"the body of the request could not be decoded: {e}")

    def do_GET(self):
        self.dispatch()

    def do_POST(self):
        self.dispatch()

    def do_PUT(self):
        self.dispatch()

    def do_PATCH(self):
        self.dispatch()

    def do_DELETE(self):
        self.dispatch()

    def do_HEAD(self):
        self.dispatch()

    def dispatch(self):
        t0 = time.time()
        self._code = 0
        self.user = None
        url = urllib.parse.urlsplit(self.path)
        self.query = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query, keep_blank_values=True).items()}
        path = url.path.rstrip("/") or "/"
        try:
            if path.startswith("/emulator/") or path == "/emulator":
                self.control(path)
            elif path in ("/healthz", "/livez", "/readyz"):
                self.read_body()
                self.send_text(200, "ok")
            else:
                if not self.authorized(path):
                    self.read_body()
                    raise ApiError(401, "Unauthorized", "Unauthorized")
                try:
                    self.kube(path)
                finally:
                    if self.command in ("POST", "PUT", "PATCH", "DELETE"):
                        self.api.writes.record(t0, self.user, self.command, path, self._code,
                                               self.headers.get("User-Agent", ""))
        except ApiError as e:
            self.send_error_status(e)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, socket.timeout):
            self.close_connection = True
        except Exception as e:  # a bug in the emulator: answer 500 so the client sees it
            traceback.print_exc()
            try:
                self.send_error_status(ApiError(500, "InternalError", f"emulator error: {e!r}"))
            except Exception:
                self.close_connection = True
        self._log(self._code, t0)

    def authenticate(self):
        """The user this request comes from: a bearer token's user, else the common name of a
        verified client certificate; None when neither is there."""
        opts = self.server.api.opts
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Bearer "):
            return self.server.api.users.get(auth[len("Bearer "):])
        if self.server.ssl_ctx is not None and opts.client_ca:
            cert = self.request.getpeercert()
            for rdn in (cert or {}).get("subject", ()):
                for k, v in rdn:
                    if k == "commonName":
                        return v
        return None

    def authorized(self, path):
        opts = self.server.api.opts
        self.user = self.authenticate()
        if path in ("/version",):
            return True
        if not (opts.tls or opts.require_token):
            return True
        return self.user is not None

    # ----- control API

    def control(self, path):
        api = self.api
        body = {}
        raw = self.read_body()
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                raise bad_request("control bodies are JSON")
        body = body or {}
        cmd = path[len("/emulator/"):]
        st = api.store
        if cmd == "stats" and self.command == "GET":
            out = api.stats.snapshot()
            with st.cond:
                out.update(revision=st.rv, compacted=st.compacted, watches=len(api.watchers))
            return self.send_json(200, out)
        if cmd == "writes" and self.command == "GET":
            self.read_body()
            return self.send_json(200, {"writes": api.writes.since(float(self.query.get("since", 0)))})
        if cmd == "revision":
            with st.cond:
                return self.send_json(200, {"revision": st.rv, "compacted": st.compacted,
                                            "watches": len(api.watchers)})
        if self.command != "POST":
            raise ApiError(405, "MethodNotAllowed", f"{self.command} is not supported on {path}")
        if cmd == "stats/reset":
            api.stats.reset()
            return self.send_json(200, {})
        if cmd == "drop-watches":
            mode = body.get("mode", "close")
            if mode not in ("close", "reset"):
                raise bad_request("mode is close or reset")
            n = 0
            with st.cond:
                for w in list(api.watchers):
                    if body.get("resource") in (None, w.res.plural):
                        w.dropped = mode
                        n += 1
                st.cond.notify_all()
            return self.send_json(200, {"dropped": n})
        if cmd == "compact":
            with st.cond:
                c = st.compact_locked(int(body.get("revision", st.rv)))
                return self.send_json(200, {"compacted": c, "revision": st.rv})
        if cmd == "restore":
            # An etcd restore from a backup taken at `revision`: every object as it was then, the
            # history after it gone, the revision counter back at it (so resourceVersions go
            # backwards), and every watch closed, as the API server restarting would.
            with st.cond:
                rev = int(body.get("revision", st.rv))
                if rev < st.compacted or rev > st.rv:
                    raise bad_request(f"revision {rev} is outside the history ({st.compacted}..{st.rv})")
                for r in RESOURCES:
                    st.objects[r.key] = dict(st.snapshot(r, rev))
                    i = bisect.bisect_right(st.history_rvs[r.key], rev)
                    del st.history[r.key][i:]
                    del st.history_rvs[r.key][i:]
                st.history_len = sum(len(h) for h in st.history.values())
                st.rv = rev
                st.kubelet_work = {k for k in st.kubelet_work if k in st.objects[POD.key]}
                n = 0
                for w in list(api.watchers):
                    w.dropped = "close"
                    n += 1
                st.cond.notify_all()
                return self.send_json(200, {"revision": st.rv, "droppedWatches": n})
        if cmd == "faults":
            rule = {"verb": body.get("verb", "*"), "resource": body.get("resource", "*"),
                    "namespace": body.get("namespace"), "name": body.get("name"),
                    "count": int(body.get("count", 1)), "code": int(body.get("code", 500))}
            with api.faults.lock:
                api.faults.fail_rules.append(rule)
            return self.send_json(200, rule)
        if cmd == "latency":
            rule = {"verb": body.get("verb", "*"), "resource": body.get("resource", "*"),
                    "seconds": float(body.get("seconds", 0)), "count": body.get("count")}
            with api.faults.lock:
                if rule["seconds"] <= 0:
                    api.faults.latency_rules = []
                else:
                    api.faults.latency_rules.append(rule)
            return self.send_json(200, rule)
        if cmd == "bind-conflict":
            key = f'{body.get("namespace", "default")}/{body["name"]}'
            with api.faults.lock:
                api.faults.bind_conflicts[key] = {"count": int(body.get("count", 1)), "node": body.get("node")}
            return self.send_json(200, {"pod": key})
        if cmd == "clear-faults":
            api.faults.clear()
            return self.send_json(200, {})
        raise ApiError(404, "NotFound", f"no control command {cmd}")

    # ----- Kubernetes paths

    def kube(self, path):
        parts = [p for p in path.split("/") if p]
        if path == "/version":
            self.read_body()
            v = self.api.opts.server_version.split(".")
            return self.send_json(200, {
                "major": v[0], "minor": v[1], "gitVersion": f"v{self.api.opts.server_version}",
                "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
                "buildDate": "2024-01-01T00:00:00Z", "goVersion": "go1.22.0", "compiler": "gc",
                "platform": "linux/amd64"})
        if path == "/api":
            self.read_body()
            return self.send_json(200, {"kind": "APIVersions", "versions": ["v1"],
                                        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                                                        "serverAddress": f"127.0.0.1:{self.server.server_address[1]}"}]})
        if path == "/apis":
            self.read_body()
            return self.send_json(200, {"kind": "APIGroupList", "apiVersion": "v1",
                                        "groups": [self.group_doc(g, vs) for g, vs in GROUPS]})
        if parts[0] == "openapi" and len(parts) >= 2 and parts[1] == "v3":
            self.read_body()
            return self.openapi_v3("/".join(parts[2:]))
        if path == "/openapi/v2":
            self.read_body()
            return self.openapi_v2()
        if parts[0] in ("openapi", "swagger.json", "swaggerapi"):
            self.read_body()
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if parts[0] == "api":
            if len(parts) < 2 or parts[1] != "v1":
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            group, version, rest = "", "v1", parts[2:]
        elif parts[0] == "apis":
            if len(parts) == 2:
                gv = next(((g, vs) for g, vs in GROUPS if g == parts[1]), None)
                if gv is None:
                    raise ApiError(404, "NotFound", "the server could not find the requested resource")
                self.read_body()
                doc = self.group_doc(*gv)
                doc["kind"], doc["apiVersion"] = "APIGroup", "v1"
                return self.send_json(200, doc)
            if len(parts) < 3:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if not rest:
            self.read_body()
            return self.resource_list(group, version)
        ns = ""
        if rest[0] == "namespaces" and len(rest) >= 3 and (group, version, rest[2]) in BY_PATH \
                and BY_PATH[(group, version, rest[2])].namespaced:
            ns, rest = rest[1], rest[2:]
        res = BY_PATH.get((group, version, rest[0]))
        if res is None or res.qualified in self.api.opts.without_crd:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if res.namespaced and not ns and len(rest) > 1:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if len(rest) > 3 or (sub and sub not in res.subresources):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        self.serve_resource(res, ns, name, sub)

    def openapi_v2(self):
        """An OpenAPI v2 document without paths or definitions. kubectl 1.27 and 1.28 must download
        one before `apply` (they ask for the protobuf form); finding no schema for a kind, kubectl
        skips client-side validation and computes patches from its built-in types."""
        accept = self.headers.get("Accept") or ""
        if "protobuf" in accept:
            def field(num, payload):  # a length-delimited protobuf field
                return bytes([num << 3 | 2, len(payload)]) + payload
            # openapi_v2.Document{swagger: "2.0" (1), info (2): Info{title (1), version (2)}}
            info = field(1, b"Kubernetes") + field(2, f"v{self.api.opts.server_version}".encode())
            data = field(1, b"2.0") + field(2, info)
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")  # Go cannot parse the "@v1.0" media type
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            self._code = 200
            return
        self.send_json(200, {"swagger": "2.0", "info": {"title": "Kubernetes",
                                                        "version": f"v{self.api.opts.server_version}"},
                             "paths": {}, "definitions": {}})

    def openapi_v3(self, gv_path):
        """Just enough OpenAPI v3 for kubectl: each group-version lists its paths, and the PATCH
        operations declare the `fieldValidation` query parameter, so kubectl leaves validation to
        the server (it would otherwise need the full schemas). No schemas are served: kubectl then
        computes apply patches from its built-in types (JSON merge patch for the CRDs)."""
        gvs = [("", "v1")] + [(g, v) for g, vs in GROUPS for v in vs]
        name_of = lambda g, v: f"apis/{g}/{v}" if g else "api/v1"
        if not gv_path:
            return self.send_json(200, {"paths": {name_of(g, v): {"serverRelativeURL": f"/openapi/v3/{name_of(g, v)}?hash=0"}
                                                  for g, v in gvs}})
        gv = next(((g, v) for g, v in gvs if name_of(g, v) == gv_path), None)
        if gv is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        params = [{"name": n, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
                  for n in ("dryRun", "fieldManager", "fieldValidation", "force")]
        paths = {}
        for r in RESOURCES:
            if (r.group, r.version) != gv or r.plural == "bindings":
                continue
            base = f"/{name_of(*gv)}/" + ("namespaces/{namespace}/" if r.namespaced else "") + r.plural
            gvk = {"group": r.group, "version": r.version, "kind": r.kind}
            paths[base + "/{name}"] = {
                "get": {"operationId": f"read{r.kind}", "x-kubernetes-action": "get", "x-kubernetes-group-version-kind": gvk},
                "patch": {"operationId": f"patch{r.kind}", "x-kubernetes-action": "patch",
                          "x-kubernetes-group-version-kind": gvk, "parameters": params},
            }
            paths[base] = {"post": {"operationId": f"create{r.kind}", "x-kubernetes-action": "post",
                                    "x-kubernetes-group-version-kind": gvk, "parameters": params}}
        return self.send_json(200, {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.30.0"},
                                    "paths": paths, "components": {"schemas": {}}})

    def group_doc(self, group, versions):
        gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {"name": group, "versions": gvs, "preferredVersion": gvs[0]}

    def resource_list(self, group, version):
        rs = [r for r in RESOURCES if r.group == group and r.version == version
              and r.qualified not in self.api.opts.without_crd]
        if not rs:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        out = []
        for r in rs:
            e = {"name": r.plural, "singularName": r.singular, "namespaced": r.namespaced,
                 "kind": r.kind, "verbs": r.verbs}
            if r.short:
                e["shortNames"] = r.short
            if r.categories:
                e["categories"] = r.categories
            out.append(e)
            for s in r.subresources:
                if s == "binding":
                    out.append({"name": f"{r.plural}/binding", "singularName": "", "namespaced": True,
                                "kind": "Binding", "verbs": ["create"]})
                elif s == "eviction":
                    out.append({"name": f"{r.plural}/eviction", "singularName": "", "namespaced": True,
                                "group": "policy", "version": "v1", "kind": "Eviction", "verbs": ["create"]})
                else:
                    out.append({"name": f"{r.plural}/{s}", "singularName": "", "namespaced": r.namespaced,
                                "kind": r.kind, "verbs": ["get", "patch", "update"]})
        gv = f"{group}/{version}" if group else version
        return self.send_json(200, {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
                                    "resources": out})

    def serve_resource(self, res, ns, name, sub):
        api, q, m = self.api, self.query, self.command
        watch = parse_bool(q.get("watch", "false"))
        if m in ("GET", "HEAD"):
            verb = "get" if name else ("watch" if watch else "list")
        else:
            verb = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}[m]
            if m == "DELETE" and not name:
                verb = "deletecollection"
        rname = f"{res.plural}/{sub}" if sub else res.plural
        api.stats.inc("requests", f"{verb} {rname}")
        if sub == "binding" and m == "POST":
            api.stats.inc("binds", f"{ns}/{name}")  # every call, injected failures included
        if sub == "eviction" and m == "POST":
            api.stats.inc("evictions", f"{ns}/{name}")
        delay = api.opts.latency + api.faults.take_latency(verb, rname)
        if delay > 0:
            time.sleep(delay)
        code = api.faults.take_failure(verb, rname, ns or None, name)
        if code is not None:
            self.read_body()
            reasons = {500: "InternalError", 503: "ServiceUnavailable", 504: "Timeout", 429: "TooManyRequests"}
            msg = {500: "Internal error occurred: injected by the emulator",
                   503: "the server is currently unable to handle the request (injected by the emulator)"}
            raise ApiError(code, reasons.get(code, "InternalError"), msg.get(code, "injected by the emulator"))
        dry = q.get("dryRun") == "All"
        if sub == "binding":
            if m != "POST":
                raise ApiError(405, "MethodNotAllowed", f"the server does not allow this method on the requested resource")
            body = self.json_body() or {}
            return self.send_json(201, api.bind(ns, name, body))
        if res.plural == "bindings":
            body = self.json_body() or {}
            pod = (body.get("metadata") or {}).get("name", "")
            api.stats.inc("binds", f"{ns}/{pod}")
            return self.send_json(201, api.bind(ns, pod, body))
        if sub == "eviction":
            if m != "POST":
                raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
            body = self.json_body() or {}
            return self.send_json(201, api.evict(ns, name, body))
        if verb == "list":
            self.read_body()
            return self.serve_list(res, ns)
        if verb == "watch":
            self.read_body()
            return self.serve_watch(res, ns, name)
        if verb == "get":
            self.read_body()
            with api.store.cond:
                obj = api.store.get(res, ns, name)
            if obj is None:
                raise not_found(res, name)
            return self.send_obj(200, res, obj)
        if verb == "create":
            if name:
                raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
            body = self.json_body()
            return self.send_obj(201, res, api.create(res, ns, body, dry_run=dry))
        if verb == "update":
            body = self.json_body()
            return self.send_obj(200, res, api.update(res, ns, name, body, sub=sub, dry_run=dry))
        if verb == "patch":
            raw = self.read_body()
            out, code = api.patch(res, ns, name, self.headers.get("Content-Type"), raw, sub=sub,
                                  dry_run=dry, field_manager=q.get("fieldManager"))
            return self.send_obj(code, res, out)
        if verb == "delete":
            body = self.json_body() or {}
            if "gracePeriodSeconds" in q:
                body["gracePeriodSeconds"] = int(q["gracePeriodSeconds"])
            if res is POD:
                api.stats.inc("podDeletes", f"{ns}/{name}")
            out = api.delete(res, ns, name, body, dry_run=dry)
            if res in (POD, NAMESPACE) or out["metadata"].get("deletionTimestamp"):
                return self.send_obj(200, res, out)
            return self.send_json(200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                                        "details": {"name": name, "group": res.group, "kind": res.plural,
                                                    "uid": out["metadata"].get("uid")}})
        if verb == "deletecollection" and "deletecollection" in res.verbs and not sub:
            body = self.json_body() or {}
            if "gracePeriodSeconds" in q:
                body["gracePeriodSeconds"] = int(q["gracePeriodSeconds"])
            lsel = parse_label_selector(q.get("labelSelector", ""))
            fsel = parse_field_selector(res, q.get("fieldSelector", ""))
            with api.store.cond:
                victims = [o for k, o in sorted(api.store.objects[res.key].items())
                           if (not ns or k[0] == ns) and labels_match(lsel, o["metadata"].get("labels"))
                           and fields_match(fsel, o)]
                out = [api._delete_locked(res, ns or o["metadata"].get("namespace", ""), o["metadata"]["name"],
                                          body, dry_run=dry) for o in victims]
                rv = api.store.rv
            return self.send_json(200, {"kind": f"{res.kind}List", "apiVersion": res.api_version,
                                        "metadata": {"resourceVersion": str(rv)}, "items": out})
        raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")

    def send_obj(self, code, res, obj):
        table, tv = wants_table(self.headers.get("Accept"))
        if table:
            obj = make_table(res, [obj], self.query.get("includeObject", "Metadata"), tv,
                             {"resourceVersion": obj["metadata"].get("resourceVersion", "")})
        self.send_json(code, obj)

    # ----- LIST

    def serve_list(self, res, ns):
        api, q, st = self.api, self.query, self.api.store
        lsel = parse_label_selector(q.get("labelSelector", ""))
        fsel = parse_field_selector(res, q.get("fieldSelector", ""))
        limit = int(q.get("limit") or 0)
        start = None
        rv_param = q.get("resourceVersion", "")
        match = q.get("resourceVersionMatch", "")
        with st.cond:
            if q.get("continue"):
                at, start = decode_continue(q["continue"])
                if at < st.compacted:
                    raise ApiError(410, "Expired",
                                   "The provided continue parameter is too old to display a consistent list result. "
                                   "You can start a new list without the continue parameter.")
                objs = st.snapshot(res, at)
            elif rv_param not in ("", "0") and (match == "Exact" or (limit and match != "NotOlderThan")):
                at = int(rv_param)
                if at > st.rv:
                    raise ApiError(504, "Timeout", f"Too large resource version: {at}, current: {st.rv}",
                                   {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                                    "retryAfterSeconds": 1})
                if at < st.compacted:
                    raise ApiError(410, "Expired", f"The resourceVersion for the provided list is too old.")
                objs = st.snapshot(res, at)
            else:
                at = st.rv
                objs = st.objects[res.key]
            keys = sorted(k for k in objs if (not ns or k[0] == ns))
        items = []
        if start is not None:
            skey = tuple(start.split("/", 1)) if res.namespaced else ("", start)
            keys = [k for k in keys if k > skey]
        cont, remaining = "", None
        for i, k in enumerate(keys):
            o = objs[k]
            if lsel and not labels_match(lsel, o["metadata"].get("labels")):
                continue
            if fsel and not fields_match(fsel, o):
                continue
            if limit and len(items) == limit:
                last = items[-1]["metadata"]
                cont = continue_token(at, f'{last.get("namespace", "")}/{last["name"]}' if res.namespaced else last["name"])
                if not lsel and not fsel:
                    remaining = len(keys) - i
                break
            items.append(o)
        meta = {"resourceVersion": str(at)}
        if cont:
            meta["continue"] = cont
            if remaining is not None:
                meta["remainingItemCount"] = remaining
        table, tv = wants_table(self.headers.get("Accept"))
        if table:
            return self.send_json(200, make_table(res, items, q.get("includeObject", "Metadata"), tv, meta))
        if not res.crd:
            items = [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")} for o in items]
        self.send_json(200, {"kind": f"{res.kind}List", "apiVersion": res.api_version, "metadata": meta,
                             "items": items})

    # ----- WATCH

    def write_chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def serve_watch(self, res, ns, name):
        api, q, st = self.api, self.query, self.api.store
        lsel = parse_label_selector(q.get("labelSelector", ""))
        fsel = parse_field_selector(res, q.get("fieldSelector", ""))
        if name:  # GET .../pods/NAME?watch=1, the legacy single-object watch
            fsel.append(("metadata.name", False, name))
        bookmarks = parse_bool(q.get("allowWatchBookmarks", "false"))
        timeout = float(q["timeoutSeconds"]) if q.get("timeoutSeconds") else api.opts.watch_timeout
        deadline = time.time() + timeout
        table, tv = wants_table(self.headers.get("Accept"))
        include = q.get("includeObject", "Metadata")
        send_initial = parse_bool(q.get("sendInitialEvents", "false"))
        rv_param = q.get("resourceVersion", "")

        def matches(o):
            if o is None:
                return False
            md = o["metadata"]
            if ns and md.get("namespace") != ns:
                return False
            return labels_match(lsel, md.get("labels")) and fields_match(fsel, o)

        first_table = [True]

        def line(type_, obj):
            if table and type_ not in ("ERROR", "BOOKMARK"):
                obj = make_table(res, [obj], include, tv, {"resourceVersion": obj["metadata"]["resourceVersion"]},
                                 headers=first_table[0])
                first_table[0] = False
            return json.dumps({"type": type_, "object": obj}, separators=(",", ":")).encode() + b"\n"

        def bookmark(rv, initial_end=False):
            md = {"resourceVersion": str(rv)}
            if initial_end:
                md["annotations"] = {"k8s.io/initial-events-end": "true"}
            return line("BOOKMARK", {"kind": res.kind, "apiVersion": res.api_version, "metadata": md})

        initial = []
        expired = None
        with st.cond:
            if rv_param in ("", "0") or send_initial:
                pos = st.rv
                initial = [o for k, o in sorted(st.objects[res.key].items()) if matches(o)]
            else:
                try:
                    pos = int(rv_param)
                except ValueError:
                    raise bad_request(f'invalid resource version: "{rv_param}"')
                if pos < st.compacted:
                    expired = pos
                # A version the store has not reached: the watch cache waits a little for it
                # (writes may be in flight), then answers 504 "Too large resource version" with a
                # ResourceVersionTooLarge cause, which client-go's reflector answers by listing.
                wait_until = time.time() + getattr(api.opts, "too_large_wait", 3.0)
                while pos > st.rv and time.time() < wait_until:
                    st.cond.wait(max(0.0, wait_until - time.time()))
                if pos > st.rv:
                    raise ApiError(504, "Timeout",
                                   f"Timeout: Too large resource version: {pos}, current: {st.rv}",
                                   {"causes": [{"reason": "ResourceVersionTooLarge",
                                                "message": "Too large resource version"}],
                                    "retryAfterSeconds": 1})
            watcher = Watcher(res, pos)
            api.watchers.add(watcher)
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Cache-Control", "no-cache, private")
            self.end_headers()
            self._code = 200
            if expired is not None:
                status = ApiError(410, "Expired", f"too old resource version: {expired} ({st.compacted})").status()
                self.write_chunk(line("ERROR", status))
                self.write_chunk(b"")
                return
            buf = b"".join(line("ADDED", o) for o in initial)
            if send_initial and bookmarks:
                buf += bookmark(pos, initial_end=True)
            if buf:
                self.write_chunk(buf)
                self.wfile.flush()
            last_bookmark = time.time()
            interval = api.opts.bookmark_interval
            while True:
                with st.cond:
                    while True:
                        now = time.time()
                        if watcher.dropped or watcher.expired or now >= deadline:
                            break
                        events = st.events_after(res, watcher.pos)
                        if events:
                            break
                        if bookmarks and now - last_bookmark >= interval:
                            break
                        wait = deadline - now
                        if bookmarks:
                            wait = min(wait, interval - (now - last_bookmark))
                        st.cond.wait(max(min(wait, 5.0), 0.001))
                    if watcher.dropped:
                        break
                    if watcher.expired:
                        status = ApiError(410, "Expired", f"too old resource version: {watcher.pos} ({st.compacted})").status()
                        self.write_chunk(line("ERROR", status))
                        break
                    events = st.events_after(res, watcher.pos)
                    # Taken now, under the lock: a compaction from here on cannot lose them.
                    # With none left, every event of this resource up to the current revision
                    # has been seen, which is what a bookmark may report.
                    watcher.pos = events[-1].rv if events else st.rv
                    pos = watcher.pos
                if not events and time.time() >= deadline:
                    break
                out = []
                for ev in events:
                    now_match = matches(ev.obj) if ev.type != "DELETED" else False
                    before = matches(ev.prev)
                    if ev.type == "DELETED":
                        t = "DELETED" if before else None
                    elif now_match and before:
                        t = "MODIFIED"
                    elif now_match:
                        t = "ADDED"
                    elif before:
                        t = "DELETED"
                    else:
                        t = None
                    if t is None:
                        continue
                    if t == ev.type and not table:
                        if ev.line is None:
                            ev.line = line(t, ev.obj)
                        out.append(ev.line)
                    else:
                        out.append(line(t, ev.obj))
                if bookmarks and time.time() - last_bookmark >= interval:
                    out.append(bookmark(pos))
                    last_bookmark = time.time()
                if out:
                    self.write_chunk(b"".join(out))
                    self.wfile.flush()
            if watcher.dropped == "reset":
                self.close_connection = True
                try:
                    self.request.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                return
            self.write_chunk(b"")
            self.wfile.flush()
        finally:
            with st.cond:
                api.watchers.discard(watcher)


# ---------------------------------------------------------------------------------------------
# Startup


def make_cert(tmpdir):
    cert, key = os.path.join(tmpdir, "tls.crt"), os.path.join(tmpdir, "tls.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-days", "7", "-subj", "/CN=kiln-kube-emulator",
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                    "-addext", "basicConstraints=critical,CA:TRUE",
                    "-addext", "keyUsage=critical,digitalSignature,keyCertSign",
                    "-addext", "extendedKeyUsage=serverAuth",
                    "-keyout", key, "-out", cert], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return cert, key


def write_kubeconfig(path, url, token, ca_file):
    cluster = {"server": url}
    if ca_file:
        with open(ca_file, "rb") as f:
            cluster["certificate-authority-data"] = base64.b64encode(f.read()).decode()
    doc = {"apiVersion": "v1", "kind": "Config", "preferences": {},
           "clusters": [{"name": "kiln-emulator", "cluster": cluster}],
           "contexts": [{"name": "kiln-emulator",
                         "context": {"cluster": "kiln-emulator", "user": "kiln-emulator", "namespace": "default"}}],
           "current-context": "kiln-emulator",
           "users": [{"name": "kiln-emulator", "user": {"token": token}}]}
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        if yaml is not None:
            yaml.safe_dump(doc, f, sort_keys=False)
        else:
            json.dump(doc, f, indent=2)
    os.replace(tmp, path)


def read_manifests(path):
    with open(path) as f:
        text = f.read()
    docs = []
    try:
        docs = [json.loads(text)]
    except ValueError:
        if yaml is None:
            raise SystemExit(f"{path}: YAML manifests need PyYAML (Debian python3-yaml)")
        try:
            docs = list(yaml.safe_load_all(text))
        except yaml.YAMLError as e:
            raise SystemExit(f"{path}: {e}")
    out = []

    def add(d):
        if not d:
            return
        if d.get("kind", "").endswith("List") and isinstance(d.get("items"), list):
            for i in d["items"]:
                add(i)
        else:
            out.append(d)
    for d in docs:
        add(d)
    return out


def make_parser():
    p = argparse.ArgumentParser(description="A Kubernetes API-server emulator for tests (see README.md).")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--url-file")
    p.add_argument("--tls", action="store_true")
    p.add_argument("--cert")
    p.add_argument("--key")
    p.add_argument("--token", default="kiln-emulator-token")
    p.add_argument("--require-token", action="store_true")
    p.add_argument("--user", action="append", default=[], metavar="NAME=TOKEN")
    p.add_argument("--client-ca")
    p.add_argument("--write-kubeconfig")
    p.add_argument("--load", nargs="+", action="extend", default=[])
    p.add_argument("--kubelet", action="store_true")
    p.add_argument("--kubelet-delay", type=float, default=0.2)
    p.add_argument("--job-controller", action="store_true")
    p.add_argument("--bookmark-interval", type=float, default=5.0)
    p.add_argument("--watch-timeout", type=float, default=1800.0)
    p.add_argument("--history", type=int, default=200000)
    p.add_argument("--too-large-wait", type=float, default=3.0)
    p.add_argument("--latency", type=float, default=0.0)
    p.add_argument("--fail-binds", type=int, default=0)
    p.add_argument("--fail-code", type=int, default=500)
    p.add_argument("--server-version", default="1.30.0")
    # A cluster that has not installed a CRD: its paths answer 404 and discovery leaves it out.
    p.add_argument("--without-crd", action="append", default=[], metavar="PLURAL.GROUP",
                   help="do not serve this custom resource (e.g. hypernodes.topology.volcano.sh)")
    p.add_argument("--log")
    return p


def main(argv=None):
    p = make_parser()
    opts = p.parse_args(argv)
    if opts.cert or opts.key:
        if not (opts.cert and opts.key):
            p.error("--cert and --key go together")
        opts.tls = True

    api = Api(opts)
    for path in opts.load:
        for i, obj in enumerate(read_manifests(path)):
            try:
                api.load(obj)
            except (ApiError, ValueError) as e:
                msg = e.message if isinstance(e, ApiError) else str(e)
                md = obj.get("metadata") or {}
                raise SystemExit(f"{path}: object {i + 1} ({obj.get('kind')} {md.get('namespace', '')}/{md.get('name', '')}): {msg}")
    if opts.fail_binds:
        api.faults.fail_rules.append({"verb": "create", "resource": "pods/binding", "namespace": None,
                                      "name": None, "count": opts.fail_binds, "code": opts.fail_code})

    ssl_ctx, ca_file, tmpdir = None, None, None
    if opts.tls:
        cert, key = opts.cert, opts.key
        if not cert:
            tmpdir = tempfile.mkdtemp(prefix="kube-emulator-")
            cert, key = make_cert(tmpdir)
        ssl_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ssl_ctx.load_cert_chain(cert, key)
        ssl_ctx.set_alpn_protocols(["http/1.1"])
        if opts.client_ca:
            # Client certificates are asked for and verified when sent; token clients send none.
            ssl_ctx.verify_mode = ssl.CERT_OPTIONAL
            ssl_ctx.load_verify_locations(opts.client_ca)
        ca_file = cert

    server = Server(("127.0.0.1", opts.port), Handler, api, ssl_ctx)
    server.log = None
    if opts.log:
        server.log = sys.stderr if opts.log == "-" else open(opts.log, "a")
    url = f"{'https' if opts.tls else 'http'}://127.0.0.1:{server.server_address[1]}"
    if opts.write_kubeconfig:
        write_kubeconfig(opts.write_kubeconfig, url, opts.token, ca_file)
    if opts.url_file:
        with open(opts.url_file + ".tmp", "w") as f:
            f.write(url + "\n")
        os.replace(opts.url_file + ".tmp", opts.url_file)
    print(url, flush=True)

    stop = threading.Event()

    def kubelet():
        while not stop.wait(0.05):
            try:
                if opts.kubelet:
                    api.kubelet_tick()
                if opts.job_controller:
                    api.job_controller_tick()
            except Exception:
                traceback.print_exc()
    if opts.kubelet or opts.job_controller:
        threading.Thread(target=kubelet, daemon=True).start()

    def on_signal(signum, frame):
        stop.set()
        threading.Thread(target=server.shutdown, daemon=True).start()
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        stop.set()
        with api.store.cond:
            for w in api.watchers:
                w.dropped = "close"
            api.store.cond.notify_all()
        if tmpdir:
            for f in os.listdir(tmpdir):
                os.unlink(os.path.join(tmpdir, f))
            os.rmdir(tmpdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
