"""HTTP: the threaded server, authentication, the control endpoints and the dispatch of
resource requests (GET/POST/PUT/PATCH/DELETE of one object)."""

import bisect
import json
import socket
import ssl
import sys
import time
import traceback
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .api import load_yaml_or_json
from .common import ApiError, bad_request, not_found, parse_bool
from .discovery import Discovery
from .resources import BY_PATH, GROUPS, NAMESPACE, POD, RESOURCES
from .selectors import fields_match, labels_match, parse_field_selector, parse_label_selector
from .tables import make_table, wants_table
from .watch import ListWatch


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


class Handler(Discovery, ListWatch, BaseHTTPRequestHandler):
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
