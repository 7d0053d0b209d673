"""The object store (one revision counter, per-resource history for watches), request
statistics, the write log and injected faults."""

import bisect
import collections
import threading

from .common import deep
from .resources import RESOURCES


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
