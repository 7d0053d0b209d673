"""LIST with chunking (continue tokens) and WATCH with bookmarks, served from the store's history."""

import base64
import json
import socket
import time

from .api import Watcher
from .common import ApiError, bad_request, parse_bool
from .selectors import fields_match, labels_match, parse_field_selector, parse_label_selector
from .tables import make_table, wants_table


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


class ListWatch:
    """Mixed into the HTTP handler (server.py)."""

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
