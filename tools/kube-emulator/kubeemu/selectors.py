"""Label and field selectors, parsed and matched as the API server does."""

import re

from .common import bad_request, get_path
from .resources import FIELD_SELECTORS


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
