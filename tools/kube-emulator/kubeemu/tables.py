"""Tables (kubectl asks for them: Accept: application/json;as=Table;v=v1;g=meta.k8s.io)."""

import time

from .common import human_age, parse_time
from .resources import HYPERNODE, NAMESPACE, NODE, PDB, POD, PODGROUP, PRIORITY_CLASS, QUEUE


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
