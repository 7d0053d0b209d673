"""Time and quantity helpers, and the API errors every layer raises (a Status body)."""

import datetime
import json
import re
import time


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
