"""The metric names a PromQL expression reads, by a small tokenizer (stdlib only).

    metric_names('histogram_quantile(0.9, sum by (le) (rate(x_bucket{a="b"}[5m])))') == {"x_bucket"}

An identifier is a metric name unless it calls something (`rate(`), is an aggregation or
binary keyword (`sum`, `by`, `and`, `offset`, ...), or is a label inside a `by (...)`,
`without (...)`, `on (...)`, `ignoring (...)`, `group_left (...)` or `group_right (...)` list.
Label matchers `{...}`, ranges `[...]`, strings, numbers, durations and Grafana variables
(`$__rate_interval`, `${x}`) are skipped. Grafana's `label_values(METRIC, label)` (a template
variable's query, not PromQL) names METRIC.
"""
import re

AGGREGATIONS = {"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
                "bottomk", "topk", "quantile", "limitk", "limit_ratio"}
LABEL_LIST_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right"}
KEYWORDS = {"and", "or", "unless", "bool", "offset", "atan2", "inf", "nan", "start", "end"}

_IDENT = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_NUMBER = re.compile(r"(0x[0-9a-fA-F]+|[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?)([smhdwy]|ms)?")


class PromQLError(ValueError):
    pass


def _skip_until(expr, i, close):
    """Index past the `close` that ends the bracket opened just before `i` (strings honoured)."""
    depth = 1
    opener = {"}": "{", "]": "["}[close]
    while i < len(expr):
        c = expr[i]
        if c in "\"'`":
            i = _skip_string(expr, i)
            continue
        if c == opener:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise PromQLError(f"unclosed {opener} in {expr!r}")


def _skip_string(expr, i):
    quote = expr[i]
    j = i + 1
    while j < len(expr):
        if expr[j] == "\\" and quote != "`":
            j += 2
            continue
        if expr[j] == quote:
            return j + 1
        j += 1
    raise PromQLError(f"unclosed string in {expr!r}")


def _next_nonspace(expr, i):
    while i < len(expr) and expr[i].isspace():
        i += 1
    return i


def metric_names(expr):
    m = re.fullmatch(r"\s*label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{[^}]*\})?\s*,\s*\w+\s*\)\s*", expr)
    if m:
        return {m.group(1)}
    names = set()
    i = 0
    while i < len(expr):
        c = expr[i]
        if c.isspace() or c in "(),+-*/%^=!<>~":
            i += 1
        elif c in "\"'`":
            i = _skip_string(expr, i)
        elif c == "{":
            i = _skip_until(expr, i + 1, "}")
        elif c == "[":
            i = _skip_until(expr, i + 1, "]")
        elif c == "$":
            v = re.compile(r"\$(\{[^}]*\}|\w+)").match(expr, i)
            if not v:
                raise PromQLError(f"bad variable at {i} in {expr!r}")
            i = v.end()
        elif c.isdigit() or (c == "." and i + 1 < len(expr) and expr[i + 1].isdigit()):
            i = _NUMBER.match(expr, i).end()
        elif _IDENT.match(expr, i):
            word = _IDENT.match(expr, i).group(0)
            i += len(word)
            after = _next_nonspace(expr, i)
            if word in LABEL_LIST_KEYWORDS:
                if after < len(expr) and expr[after] == "(":
                    close = expr.find(")", after)
                    if close < 0:
                        raise PromQLError(f"unclosed label list after {word} in {expr!r}")
                    i = close + 1
            elif word in AGGREGATIONS or word in KEYWORDS:
                pass
            elif after < len(expr) and expr[after] == "(":
                pass  # a function call
            else:
                names.add(word)
        else:
            raise PromQLError(f"unexpected {c!r} at {i} in {expr!r}")
    return names


def exposition_names(text):
    """Sample names and the histogram families of a Prometheus text exposition."""
    samples, histograms = set(), set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            parts = line.split()
            if len(parts) >= 4 and parts[3] == "histogram":
                histograms.add(parts[2])
        elif line and not line.startswith("#"):
            samples.add(re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line).group(0))
    return samples, histograms
