"""JSON merge patch, strategic merge patch and JSON patch."""


from .common import ApiError, bad_request, deep


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

    def walk(parts, depth):
        """The value `depth` steps down `parts`; a missing step names the whole path."""
        cur = doc
        for p in parts[:depth]:
            if isinstance(cur, list):
                cur = cur[int(p)]
            elif isinstance(cur, dict) and p in cur:
                cur = cur[p]
            else:
                raise ApiError(422, "Invalid", f"doc is missing path: /{'/'.join(parts)}")
        return cur

    def parent(parts):
        return walk(parts, len(parts) - 1)

    def get(parts):
        return walk(parts, len(parts))

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
