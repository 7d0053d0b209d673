"""Starts tools/kube-emulator/kube_emulator.py for a test and talks to it over raw HTTP(S).

Every emulator runs on a port the kernel picks (--port 0; the URL is its first stdout line), so
tests run in parallel without clashes, and is always killed when the test class ends.
"""

import base64
import http.client
import json
import os
import select
import shutil
import ssl
import subprocess
import tempfile
import time
import urllib.parse

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EMULATOR = os.path.join(ROOT, "tools", "kube-emulator", "kube_emulator.py")
PYTHON = "/usr/bin/python3"
KUBECTL_DIR = "/usr/lib/google-cloud-sdk/bin"
KUBECTL_VERSIONS = ["1.27", "1.28", "1.29", "1.30", "1.31", "1.32", "1.33"]


def kubectl_path(version):
    return os.path.join(KUBECTL_DIR, f"kubectl.{version}")


class Emulator:
    """One running emulator process. Use as a context manager or call stop()."""

    def __init__(self, *args, tls=True, load=(), start_timeout=20):
        self.dir = tempfile.mkdtemp(prefix="emulator-test-")
        self.kubeconfig = os.path.join(self.dir, "kubeconfig")
        cmd = [PYTHON, EMULATOR, "--port", "0", "--write-kubeconfig", self.kubeconfig]
        if tls:
            cmd.append("--tls")
        for f in load:
            cmd += ["--load", f]
        cmd += list(args)
        self.stderr_path = os.path.join(self.dir, "stderr")
        self.stderr = open(self.stderr_path, "w")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.stderr, text=True)
        deadline = time.time() + start_timeout
        line = ""
        while time.time() < deadline:
            r, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if r:
                line = self.proc.stdout.readline().strip()
                break
            if self.proc.poll() is not None:
                break
        if not line:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait(5)
            err = self.read_stderr()
            self.stop()
            raise RuntimeError(f"emulator did not start: {err}")
        self.url = line
        u = urllib.parse.urlsplit(line)
        self.host, self.port, self.tls = u.hostname, u.port, u.scheme == "https"
        with open(self.kubeconfig) as f:
            kc = yaml.safe_load(f)
        self.token = kc["users"][0]["user"]["token"]
        self.ca_file = None
        ca = kc["clusters"][0]["cluster"].get("certificate-authority-data")
        if ca:
            self.ca_file = os.path.join(self.dir, "ca.crt")
            with open(self.ca_file, "wb") as f:
                f.write(base64.b64decode(ca))

    def read_stderr(self):
        try:
            with open(self.stderr_path) as f:
                return f.read()
        except OSError:
            return ""

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.stderr.close()
        if self.proc.stdout:
            self.proc.stdout.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    # ----- raw HTTP

    def connection(self, timeout=10):
        if self.tls:
            ctx = ssl.create_default_context(cafile=self.ca_file)
            return http.client.HTTPSConnection(self.host, self.port, timeout=timeout, context=ctx)
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def request(self, method, path, body=None, content_type="application/json", headers=None,
                token=True, timeout=10):
        """(status, decoded JSON or text, response headers)."""
        conn = self.connection(timeout)
        h = {"Accept": "application/json"}
        if token:
            h["Authorization"] = f"Bearer {self.token}"
        if body is not None:
            if not isinstance(body, (bytes, str)):
                body = json.dumps(body)
            h["Content-Type"] = content_type
        h.update(headers or {})
        try:
            conn.request(method, path, body=body, headers=h)
            resp = conn.getresponse()
            data = resp.read()
            try:
                out = json.loads(data) if data else None
            except ValueError:
                out = data.decode()
            return resp.status, out, dict(resp.getheaders())
        finally:
            conn.close()

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, body=None, **kw):
        return self.request("POST", path, body if body is not None else {}, **kw)

    def control(self, cmd, body=None):
        code, out, _ = self.request("POST" if body is not None else "GET", f"/emulator/{cmd}", body)
        assert code == 200, (cmd, code, out)
        return out

    def stats(self):
        return self.control("stats")

    def watch(self, path, timeout=10):
        """Opens a watch; returns a WatchStream that yields decoded events."""
        return WatchStream(self, path, timeout)


class WatchStream:
    """A raw watch response read line by line (http.client undoes the chunked framing); as a
    context manager, closed when the block ends."""

    def __init__(self, emu, path, timeout):
        self.conn = emu.connection(timeout)
        self.conn.request("GET", path, headers={"Authorization": f"Bearer {emu.token}",
                                                "Accept": "application/json"})
        self.resp = self.conn.getresponse()
        self.status = self.resp.status
        self.headers = dict(self.resp.getheaders())

    def next(self):
        """The next event, or None at the end of the stream."""
        line = self.resp.readline()
        if not line:
            return None
        return json.loads(line)

    def until(self, pred, limit=1000):
        """Reads events until pred(event) holds; returns (matching event, events read before)."""
        seen = []
        for _ in range(limit):
            ev = self.next()
            if ev is None:
                return None, seen
            if pred(ev):
                return ev, seen
            seen.append(ev)
        return None, seen

    def close(self):
        self.conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def pod_manifest(name, ns="default", cpu="100m", labels=None, scheduler="volcano", **spec):
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": ns, "labels": labels or {}},
           "spec": {"schedulerName": scheduler,
                    "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.9",
                                    "resources": {"requests": {"cpu": cpu}}}]}}
    pod["spec"].update(spec)
    return pod


def node_manifest(name, cpu="8", memory="16Gi", labels=None):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels or {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
                       "capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def wait_until(pred, timeout=10, interval=0.05, what="condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")
