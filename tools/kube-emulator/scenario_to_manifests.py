#!/usr/bin/python3
"""Converts a Kiln scenario (design/scenario-format.md) into Kubernetes manifests.

    scenario_to_manifests.py SCENARIO.yaml [-o OUT.yaml] [--conf-out scheduler.conf] [--json]

The output is one multi-document YAML stream (or a `kind: List` with --json) in dependency order:
Namespaces, PriorityClasses, Queues, Nodes, HyperNodes, Numatopologies, PodGroups, Pods,
PodDisruptionBudgets, ResourceQuotas. `kube_emulator.py --load OUT.yaml` stores them as they are (uid, timestamps and
status included), and `kubectl apply -f OUT.yaml` creates them on a real cluster (where the
apiserver then assigns its own uids, timestamps and statuses). --conf-out writes the scenario's
`conf` (scheduler.conf) text. `expect`, `notes`, `source` and `name` are not cluster objects and
are left out.

The mapping is exact so that a reader of the API (`kiln serve`) rebuilds the simulator's model:

scenario key                     Kubernetes object / field
-------------------------------  ------------------------------------------------------------------
now                              default metadata.creationTimestamp of every object (as the loader's
                                 default), the deletionTimestamp of `deleting` pods, the timestamp
                                 of `disruptedPods`
(namespaces)                     one v1 Namespace per namespace named by podGroups, pods, pdbs or
                                 resourceQuotas ("default" when omitted), sorted
priorityClasses[]                scheduling.k8s.io/v1 PriorityClass
  name / value / globalDefault   metadata.name / value / globalDefault
  preemptionPolicy / description preemptionPolicy (default PreemptLowerPriority) / description
queues[]                         scheduling.volcano.sh/v1beta1 Queue (cluster-scoped); queue `default`
                                 (weight 1) is added unless the scenario defines it, as Volcano
                                 creates it at startup and the loader assumes it
  name                           metadata.name, and metadata.uid = name (a queue's UID is its name)
  weight                         spec.weight (default 1)
  capability / deserved          spec.capability / spec.deserved (ResourceList)
  guarantee                      spec.guarantee.resource
  parent / priority              spec.parent / spec.priority
  reclaimable                    spec.reclaimable (omitted when the scenario omits it)
  affinity                       spec.affinity (nodeGroupAffinity / nodeGroupAntiAffinity with
                                 requiredDuringSchedulingIgnoredDuringExecution and
                                 preferredDuringSchedulingIgnoredDuringExecution name lists)
  state                          status.state (default Open)
  labels / annotations           metadata.labels / metadata.annotations
  creationTimestamp              metadata.creationTimestamp
nodes[]                          v1 Node
  name                           metadata.name
  allocatable                    status.allocatable (pods: "110" added when omitted)
  capacity                       status.capacity (default: allocatable; pods as allocatable's)
  labels / annotations           metadata.labels / metadata.annotations
  taints / unschedulable         spec.taints / spec.unschedulable (only when true)
  images                         status.images ([{names, sizeBytes}])
  usage                          metadata.annotations["kiln.sh/usage"] = JSON {"cpu", "memory",
                                 "metricsTime"} (Volcano reads usage from a metrics source, which
                                 has no Kubernetes object; this annotation carries it)
  creationTimestamp              metadata.creationTimestamp
  (always)                       status.conditions [Ready=True], status.nodeInfo.kubeletVersion
hyperNodes[]                     topology.volcano.sh/v1alpha1 HyperNode (cluster-scoped)
  name                           metadata.name
  tier / tierName / members      spec.tier / spec.tierName / spec.members (as the CRD spells them)
numatopologies[]                 nodeinfo.volcano.sh/v1alpha1 Numatopology (cluster-scoped)
  name                           metadata.name (the node's name)
  policies / resReserved         spec.policies / spec.resReserved
  numares / cpuDetail            spec.numares / spec.cpuDetail
podGroups[]                      scheduling.volcano.sh/v1beta1 PodGroup
  name / namespace               metadata.name / metadata.namespace (default "default")
  queue                          spec.queue (default "default")
  minMember / minTaskMember      spec.minMember (default 1) / spec.minTaskMember
  minResources                   spec.minResources
  priorityClassName              spec.priorityClassName
  networkTopology                spec.networkTopology ({mode, highestTierAllowed, highestTierName})
  subGroupPolicy                 spec.subGroupPolicy
  phase                          status.phase (default Pending)
  labels / annotations           metadata.labels / metadata.annotations
  creationTimestamp              metadata.creationTimestamp
pods[]                           v1 Pod with spec.schedulerName "volcano" and one container "main"
  name / namespace               metadata.name / metadata.namespace (default "default");
                                 metadata.uid = "<namespace>-<name>" (the scenario's pod UID, from
                                 which Volcano's implicit PodGroup name podgroup-<uid> derives)
  group                          metadata.annotations["scheduling.k8s.io/group-name"]; a pod
                                 without `group` gets no annotation (the reader makes its one-pod
                                 group, as Volcano's controller and the loader do)
  task                           metadata.annotations["volcano.sh/task-spec"]
  requests                       spec.containers[0].resources.requests (omitted when empty)
  limits                         spec.containers[0].resources.limits (omitted when empty)
  image                          spec.containers[0].image (default registry.k8s.io/pause:3.9:
                                 Kubernetes requires one; no scenario node lists it)
  hostPorts                      spec.containers[0].ports[] {containerPort, hostPort, protocol, hostIP}
  priorityClassName              spec.priorityClassName (kept empty when empty)
  priority                       spec.priority; when omitted, the class's value (or the
                                 globalDefault class's when no class is named), as the loader and
                                 the Priority admission plugin do; no class at all: omitted
  preemptionPolicy               spec.preemptionPolicy; when omitted, the class's (as above)
  phase                          status.phase (default Pending)
  node                           spec.nodeName
  nominatedNodeName              status.nominatedNodeName
  labels / annotations           metadata.labels / metadata.annotations
  nodeSelector / tolerations     spec.nodeSelector / spec.tolerations
  affinity                       spec.affinity
  topologySpreadConstraints      spec.topologySpreadConstraints
  schedulingGates                spec.schedulingGates
  creationTimestamp              metadata.creationTimestamp (default `now`)
  scheduledAt                    status.conditions PodScheduled=True with that lastTransitionTime
                                 (no PodScheduled condition without it)
  deleting: true                 metadata.deletionTimestamp = now, deletionGracePeriodSeconds 30
  duration                       metadata.annotations["kiln.sh/duration"] (the emulator's kubelet
                                 mode completes the pod that long after it starts)
  (phase Running)                status.startTime (scheduledAt or creationTimestamp) and
                                 Initialized/ContainersReady/Ready=True conditions
pdbs[]                           policy/v1 PodDisruptionBudget
  name / namespace               metadata.name / metadata.namespace (default "default")
  minAvailable / maxUnavailable  spec.minAvailable / spec.maxUnavailable (int, or "N%")
  selector                       spec.selector (the short form {k: v} becomes matchLabels)
  disruptionsAllowed             status.disruptionsAllowed (default 0)
  disruptedPods                  status.disruptedPods {name: now}
  (always)                       status.currentHealthy/desiredHealthy/expectedPods counted from
                                 the scenario's pods, status.observedGeneration 1
resourceQuotas[]                 v1 ResourceQuota
  name / namespace               metadata.name / metadata.namespace (default "default")
  hard / used                    spec.hard and status.hard / status.used
conf                             (--conf-out FILE) scheduler.conf text

Quantities are written as strings in the scenario's notation ("96", "1024Gi", "500m").
Bad input is reported as `FILE:LINE: what is wrong` and exit status 2.
"""

import argparse
import json
import sys

import yaml

GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
TASK_ANNOTATION = "volcano.sh/task-spec"
DURATION_ANNOTATION = "kiln.sh/duration"
USAGE_ANNOTATION = "kiln.sh/usage"
DEFAULT_NOW = "2025-01-01T00:00:00Z"
DEFAULT_IMAGE = "registry.k8s.io/pause:3.9"
VOLCANO = "scheduling.volcano.sh/v1beta1"


class ScenarioError(Exception):
    pass


class LineDict(dict):
    line = 0


class Loader(yaml.SafeLoader):
    """SafeLoader whose mappings remember their line, for error messages."""


def _construct_mapping(loader, node):
    d = LineDict(loader.construct_mapping(node, deep=True))
    d.line = node.start_mark.line + 1
    return d


Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
# Timestamps stay text (as the scenario loader reads them), not datetime objects.
Loader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()}


class Converter:
    def __init__(self, path, doc):
        self.path = path
        self.doc = doc
        self.now = str(doc.get("now") or DEFAULT_NOW)

    def fail(self, obj, msg):
        line = getattr(obj, "line", 0)
        raise ScenarioError(f"{self.path}:{line}: {msg}" if line else f"{self.path}: {msg}")

    def expect_map(self, obj, what):
        if obj is None:
            return LineDict()
        if not isinstance(obj, dict):
            self.fail(obj, f"{what} must be a map")
        return obj

    def expect_list(self, parent, key):
        v = parent.get(key)
        if v is None:
            return []
        if not isinstance(v, list):
            self.fail(parent, f"`{key}` must be a list")
        return v

    def named(self, obj, kind):
        if not isinstance(obj, dict):
            self.fail(obj, f"a {kind} must be a map")
        name = obj.get("name")
        if not name or not isinstance(name, str):
            self.fail(obj, f"a {kind} has no `name`")
        return name

    @staticmethod
    def quantity(v):
        if isinstance(v, bool):
            return str(v).lower()
        if isinstance(v, float) and v.is_integer():
            return str(int(v))
        return str(v)

    def resources(self, obj, key, parent):
        v = parent.get(key)
        if v is None:
            return None
        if not isinstance(v, dict):
            self.fail(parent, f"`{key}` of {obj} must be a map of quantities")
        return {str(k): self.quantity(q) for k, q in v.items()}

    @staticmethod
    def meta(name, namespace=None, labels=None, annotations=None, created=None, uid=None):
        md = {"name": name}
        if namespace is not None:
            md["namespace"] = namespace
        if uid:
            md["uid"] = uid
        if created:
            md["creationTimestamp"] = str(created)
        if labels:
            md["labels"] = {str(k): str(v) for k, v in labels.items()}
        if annotations:
            md["annotations"] = {str(k): str(v) for k, v in annotations.items()}
        return md

    @staticmethod
    def plain(v):
        """LineDicts back to plain JSON-able values."""
        return json.loads(json.dumps(v))

    def convert(self):
        doc = self.expect_map(self.doc, "a scenario")
        cluster = self.expect_map(doc.get("cluster"), "`cluster`")
        classes = self.expect_list(cluster, "priorityClasses")
        queues = self.expect_list(cluster, "queues")
        nodes = self.expect_list(cluster, "nodes")
        groups = self.expect_list(cluster, "podGroups")
        pods = self.expect_list(cluster, "pods")
        pdbs = self.expect_list(cluster, "pdbs")
        quotas = self.expect_list(cluster, "resourceQuotas")

        namespaces = sorted({str(o.get("namespace") or "default")
                             for o in groups + pods + pdbs + quotas if isinstance(o, dict)})
        out = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}} for ns in namespaces]
        out += [self.priority_class(pc) for pc in classes]
        out += [self.queue(q) for q in queues]
        if not any(isinstance(q, dict) and q.get("name") == "default" for q in queues):
            out.append({"apiVersion": VOLCANO, "kind": "Queue",
                        "metadata": self.meta("default", created=self.now, uid="default"),
                        "spec": {"weight": 1}, "status": {"state": "Open"}})
        out += [self.node(n) for n in nodes]
        out += [self.hyper_node(h) for h in self.expect_list(cluster, "hyperNodes")]
        out += [self.numatopology(n) for n in self.expect_list(cluster, "numatopologies")]
        out += [self.pod_group(g) for g in groups]
        out += [self.pod(p, classes) for p in pods]
        out += [self.pdb(d, pods) for d in pdbs]
        out += [self.quota(r) for r in quotas]
        return out

    def priority_class(self, pc):
        name = self.named(pc, "priority class")
        if "value" not in pc:
            self.fail(pc, f"priority class `{name}` has no `value`")
        o = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": self.meta(name),
             "value": int(pc["value"]), "preemptionPolicy": pc.get("preemptionPolicy") or "PreemptLowerPriority"}
        if pc.get("globalDefault"):
            o["globalDefault"] = True
        if pc.get("description"):
            o["description"] = str(pc["description"])
        return o

    def queue(self, q):
        name = self.named(q, "queue")
        spec = {"weight": int(q.get("weight", 1))}
        for key in ("capability", "deserved"):
            r = self.resources(f"queue `{name}`", key, q)
            if r is not None:
                spec[key] = r
        g = self.resources(f"queue `{name}`", "guarantee", q)
        if g is not None:
            spec["guarantee"] = {"resource": g}
        if q.get("parent"):
            spec["parent"] = str(q["parent"])
        if q.get("priority") is not None:
            spec["priority"] = int(q["priority"])
        if q.get("reclaimable") is not None:
            spec["reclaimable"] = bool(q["reclaimable"])
        if q.get("affinity"):
            spec["affinity"] = self.plain(q["affinity"])
        return {"apiVersion": VOLCANO, "kind": "Queue",
                "metadata": self.meta(name, labels=q.get("labels"), annotations=q.get("annotations"),
                                      created=q.get("creationTimestamp") or self.now, uid=name),
                "spec": spec, "status": {"state": q.get("state") or "Open"}}

    def node(self, n):
        name = self.named(n, "node")
        alloc = self.resources(f"node `{name}`", "allocatable", n)
        if alloc is None:
            self.fail(n, f"node `{name}` has no `allocatable`")
        alloc.setdefault("pods", "110")
        cap = self.resources(f"node `{name}`", "capacity", n)
        if cap is None:
            cap = dict(alloc)
        cap.setdefault("pods", alloc["pods"])
        annotations = dict(n.get("annotations") or {})
        if n.get("usage"):
            annotations[USAGE_ANNOTATION] = json.dumps(self.plain(n["usage"]), sort_keys=True)
        spec = {}
        if n.get("taints"):
            spec["taints"] = self.plain(n["taints"])
        if n.get("unschedulable"):
            spec["unschedulable"] = True
        status = {"capacity": cap, "allocatable": alloc,
                  "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                  "message": "kubelet is posting ready status",
                                  "lastHeartbeatTime": self.now, "lastTransitionTime": self.now}],
                  "nodeInfo": {"kubeletVersion": "v1.30.0", "architecture": "amd64", "operatingSystem": "linux"}}
        if n.get("images"):
            status["images"] = self.plain(n["images"])
        return {"apiVersion": "v1", "kind": "Node",
                "metadata": self.meta(name, labels=n.get("labels"), annotations=annotations,
                                      created=n.get("creationTimestamp") or self.now),
                "spec": spec, "status": status}

    def pod_group(self, g):
        name = self.named(g, "podGroup")
        ns = str(g.get("namespace") or "default")
        spec = {"minMember": int(g.get("minMember", 1)), "queue": str(g.get("queue") or "default")}
        if g.get("minTaskMember"):
            spec["minTaskMember"] = {str(k): int(v) for k, v in g["minTaskMember"].items()}
        r = self.resources(f"podGroup `{name}`", "minResources", g)
        if r is not None:
            spec["minResources"] = r
        if g.get("priorityClassName"):
            spec["priorityClassName"] = str(g["priorityClassName"])
        if g.get("networkTopology") is not None:
            spec["networkTopology"] = self.plain(g["networkTopology"])
        if g.get("subGroupPolicy"):
            spec["subGroupPolicy"] = self.plain(g["subGroupPolicy"])
        return {"apiVersion": VOLCANO, "kind": "PodGroup",
                "metadata": self.meta(name, ns, g.get("labels"), g.get("annotations"),
                                      g.get("creationTimestamp") or self.now),
                "spec": spec, "status": {"phase": g.get("phase") or "Pending"}}

    def hyper_node(self, h):
        name = self.named(h, "hyperNode")
        if "tier" not in h:
            self.fail(h, f"hyperNode `{name}` has no `tier`")
        spec = {"tier": int(h["tier"])}
        if h.get("tierName"):
            spec["tierName"] = str(h["tierName"])
        spec["members"] = self.plain(h.get("members") or [])
        return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
                "metadata": self.meta(name), "spec": spec}

    def numatopology(self, n):
        name = self.named(n, "numatopology")
        spec = {k: self.plain(n[k]) for k in ("policies", "resReserved", "numares", "cpuDetail") if n.get(k)}
        if "resReserved" in spec:
            spec["resReserved"] = {str(k): self.quantity(v) for k, v in spec["resReserved"].items()}
        return {"apiVersion": "nodeinfo.volcano.sh/v1alpha1", "kind": "Numatopology",
                "metadata": self.meta(name), "spec": spec}

    def pod(self, p, classes):
        name = self.named(p, "pod")
        ns = str(p.get("namespace") or "default")
        annotations = dict(p.get("annotations") or {})
        if p.get("group"):
            annotations[GROUP_ANNOTATION] = str(p["group"])
        if p.get("task"):
            annotations[TASK_ANNOTATION] = str(p["task"])
        if p.get("duration"):
            annotations[DURATION_ANNOTATION] = str(p["duration"])
        created = str(p.get("creationTimestamp") or self.now)
        md = self.meta(name, ns, p.get("labels"), annotations, created, uid=f"{ns}-{name}")
        if p.get("deleting"):
            md["deletionTimestamp"] = self.now
            md["deletionGracePeriodSeconds"] = 30
        container = {"name": "main", "image": str(p.get("image") or DEFAULT_IMAGE)}
        req = self.resources(f"pod `{ns}/{name}`", "requests", p)
        if req:
            container["resources"] = {"requests": req}
        lim = self.resources(f"pod `{ns}/{name}`", "limits", p)
        if lim:
            container.setdefault("resources", {})["limits"] = lim
        if p.get("hostPorts"):
            container["ports"] = self.plain(p["hostPorts"])
        spec = {"schedulerName": "volcano", "containers": [container]}
        for key in ("nodeSelector", "tolerations", "affinity", "topologySpreadConstraints"):
            if p.get(key):
                spec[key] = self.plain(p[key])
        if p.get("schedulingGates"):
            spec["schedulingGates"] = self.plain(p["schedulingGates"])
        cls_name = str(p.get("priorityClassName") or "")
        if cls_name:
            spec["priorityClassName"] = cls_name
            cls = next((c for c in classes if isinstance(c, dict) and c.get("name") == cls_name), None)
            # A class that does not exist is a fact about the cluster, not a broken file: the pod
            # keeps the name and gets no priority from it (volcano-semantics.md §7).
        else:
            cls = next((c for c in classes if isinstance(c, dict) and c.get("globalDefault")), None)
        if p.get("priority") is not None:
            spec["priority"] = int(p["priority"])
        elif cls is not None:
            spec["priority"] = int(cls["value"])
        if p.get("preemptionPolicy"):
            spec["preemptionPolicy"] = str(p["preemptionPolicy"])
        elif cls is not None:
            spec["preemptionPolicy"] = str(cls.get("preemptionPolicy") or "PreemptLowerPriority")
        phase = p.get("phase") or "Pending"
        node = p.get("node") or ""
        if node:
            spec["nodeName"] = str(node)
        elif phase == "Running":
            self.fail(p, f"pod `{ns}/{name}` is Running but has no `node`")
        # The one container's QoS class as the API server computes it (absent requests default to
        # the limits); quantities are compared as written.
        guaranteed = bool(lim) and all(lim.get(k) and (req or {}).get(k, lim[k]) == lim[k] for k in ("cpu", "memory"))
        status = {"phase": phase,
                  "qosClass": "Guaranteed" if guaranteed else "Burstable" if req or lim else "BestEffort"}
        conds = []
        if p.get("scheduledAt"):
            conds.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                          "lastTransitionTime": str(p["scheduledAt"])})
        if phase == "Running":
            start = str(p.get("scheduledAt") or created)
            status["startTime"] = start
            for t in ("Initialized", "ContainersReady", "Ready"):
                conds.append({"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": start})
            status["containerStatuses"] = [{"name": "main", "image": container["image"], "imageID": "",
                                            "ready": True, "restartCount": 0, "started": True,
                                            "state": {"running": {"startedAt": start}}}]
        if conds:
            status["conditions"] = conds
        if p.get("nominatedNodeName"):
            status["nominatedNodeName"] = str(p["nominatedNodeName"])
        return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec, "status": status}

    @staticmethod
    def int_or_string(v):
        s = str(v)
        return int(s) if s.lstrip("-").isdigit() else s

    def pdb(self, d, pods):
        name = self.named(d, "pdb")
        ns = str(d.get("namespace") or "default")
        sel = d.get("selector") or {}
        if not isinstance(sel, dict):
            self.fail(d, f"`selector` of pdb `{name}` must be a map")
        if "matchLabels" in sel or "matchExpressions" in sel:
            selector = self.plain(sel)
        else:
            selector = {"matchLabels": {str(k): str(v) for k, v in sel.items()}}
        spec = {"selector": selector}
        if d.get("minAvailable") is not None and d.get("maxUnavailable") is not None:
            self.fail(d, f"pdb `{name}` sets both `minAvailable` and `maxUnavailable`")
        if d.get("minAvailable") is not None:
            spec["minAvailable"] = self.int_or_string(d["minAvailable"])
        if d.get("maxUnavailable") is not None:
            spec["maxUnavailable"] = self.int_or_string(d["maxUnavailable"])
        match = [p for p in pods if isinstance(p, dict) and str(p.get("namespace") or "default") == ns
                 and all((p.get("labels") or {}).get(k) == v for k, v in (selector.get("matchLabels") or {}).items())
                 and (p.get("phase") or "Pending") not in ("Succeeded", "Failed")]
        expected = len(match)
        healthy = sum(1 for p in match if p.get("phase") == "Running" and not p.get("deleting"))

        def scaled(v):
            v = str(v)
            return -(-int(v[:-1]) * expected // 100) if v.endswith("%") else int(v)
        if "minAvailable" in spec:
            desired = scaled(spec["minAvailable"])
        elif "maxUnavailable" in spec:
            desired = max(expected - scaled(spec["maxUnavailable"]), 0)
        else:
            desired = expected
        status = {"disruptionsAllowed": int(d.get("disruptionsAllowed") or 0), "currentHealthy": healthy,
                  "desiredHealthy": desired, "expectedPods": expected, "observedGeneration": 1}
        if d.get("disruptedPods"):
            status["disruptedPods"] = {str(p): self.now for p in d["disruptedPods"]}
        return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                "metadata": dict(self.meta(name, ns, created=self.now), generation=1),
                "spec": spec, "status": status}

    def quota(self, r):
        name = self.named(r, "resource quota")
        ns = str(r.get("namespace") or "default")
        hard = self.resources(f"resource quota `{name}`", "hard", r) or {}
        used = self.resources(f"resource quota `{name}`", "used", r) or {}
        return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": self.meta(name, ns, created=self.now),
                "spec": {"hard": hard}, "status": {"hard": hard, "used": used}}


def convert_file(path):
    """The manifests for the scenario at path, and its conf text ('' when none)."""
    with open(path) as f:
        text = f.read()
    try:
        doc = yaml.load(text, Loader=Loader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else path
        raise ScenarioError(f"{where}: not valid YAML: {getattr(e, 'problem', e)}")
    if not isinstance(doc, dict):
        raise ScenarioError(f"{path}: a scenario is a YAML map")
    conv = Converter(path, doc)
    try:
        return conv.convert(), str(doc.get("conf") or "")
    except (TypeError, ValueError, AttributeError) as e:
        raise ScenarioError(f"{path}: {e}")


def main(argv=None):
    ap = argparse.ArgumentParser(description="Kiln scenario -> Kubernetes manifests (see the header of this file).")
    ap.add_argument("scenario")
    ap.add_argument("-o", "--output", help="write here instead of stdout")
    ap.add_argument("--conf-out", help="write the scenario's scheduler.conf text here")
    ap.add_argument("--json", action="store_true", help="one JSON `kind: List` instead of YAML documents")
    args = ap.parse_args(argv)
    try:
        objs, conf = convert_file(args.scenario)
    except (ScenarioError, OSError) as e:
        print(f"scenario_to_manifests: {e}", file=sys.stderr)
        return 2
    if args.json:
        text = json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}, indent=1) + "\n"
    else:
        text = yaml.safe_dump_all(objs, sort_keys=False, default_flow_style=False)
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    if args.conf_out:
        with open(args.conf_out, "w") as f:
            f.write(conf)
    return 0


if __name__ == "__main__":
    sys.exit(main())
