#!/usr/bin/python3
"""A small Kubernetes API-server emulator for Kiln's tests (see README.md next to this file).

One process, everything in memory, one global lock. Objects are stored as immutable JSON dicts
(a write always stores a fresh dict), so readers may serialise them outside the lock. Every write
takes the next value of one global revision counter, as etcd does, and appends an event to the
history of its resource; watches and resourceVersion-exact LISTs are served from that history.
"""

import argparse
import base64
import json
import os
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import traceback

try:
    import yaml
except ImportError:  # only --load of YAML and apply-patch+yaml need it
    yaml = None

from kubeemu.api import Api  # also read by tests/emulator/test_scenario.py
from kubeemu.common import ApiError
from kubeemu.resources import POD  # noqa: F401  (read by tests/emulator/test_scenario.py)
from kubeemu.server import Handler, Server


# ---------------------------------------------------------------------------------------------
# Startup


def make_cert(tmpdir):
    cert, key = os.path.join(tmpdir, "tls.crt"), os.path.join(tmpdir, "tls.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-days", "7", "-subj", "/CN=kiln-kube-emulator",
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                    "-addext", "basicConstraints=critical,CA:TRUE",
                    "-addext", "keyUsage=critical,digitalSignature,keyCertSign",
                    "-addext", "extendedKeyUsage=serverAuth",
                    "-keyout", key, "-out", cert], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return cert, key


def write_kubeconfig(path, url, token, ca_file):
    cluster = {"server": url}
    if ca_file:
        with open(ca_file, "rb") as f:
            cluster["certificate-authority-data"] = base64.b64encode(f.read()).decode()
    doc = {"apiVersion": "v1", "kind": "Config", "preferences": {},
           "clusters": [{"name": "kiln-emulator", "cluster": cluster}],
           "contexts": [{"name": "kiln-emulator",
                         "context": {"cluster": "kiln-emulator", "user": "kiln-emulator", "namespace": "default"}}],
           "current-context": "kiln-emulator",
           "users": [{"name": "kiln-emulator", "user": {"token": token}}]}
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        if yaml is not None:
            yaml.safe_dump(doc, f, sort_keys=False)
        else:
            json.dump(doc, f, indent=2)
    os.replace(tmp, path)


def read_manifests(path):
    with open(path) as f:
        text = f.read()
    docs = []
    try:
        docs = [json.loads(text)]
    except ValueError:
        if yaml is None:
            raise SystemExit(f"{path}: YAML manifests need PyYAML (Debian python3-yaml)")
        try:
            docs = list(yaml.safe_load_all(text))
        except yaml.YAMLError as e:
            raise SystemExit(f"{path}: {e}")
    out = []

    def add(d):
        if not d:
            return
        if d.get("kind", "").endswith("List") and isinstance(d.get("items"), list):
            for i in d["items"]:
                add(i)
        else:
            out.append(d)
    for d in docs:
        add(d)
    return out


def make_parser():
    p = argparse.ArgumentParser(description="A Kubernetes API-server emulator for tests (see README.md).")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--url-file")
    p.add_argument("--tls", action="store_true")
    p.add_argument("--cert")
    p.add_argument("--key")
    p.add_argument("--token", default="kiln-emulator-token")
    p.add_argument("--require-token", action="store_true")
    p.add_argument("--user", action="append", default=[], metavar="NAME=TOKEN")
    p.add_argument("--client-ca")
    p.add_argument("--write-kubeconfig")
    p.add_argument("--load", nargs="+", action="extend", default=[])
    p.add_argument("--kubelet", action="store_true")
    p.add_argument("--kubelet-delay", type=float, default=0.2)
    p.add_argument("--job-controller", action="store_true")
    p.add_argument("--bookmark-interval", type=float, default=5.0)
    p.add_argument("--watch-timeout", type=float, default=1800.0)
    p.add_argument("--history", type=int, default=200000)
    p.add_argument("--too-large-wait", type=float, default=3.0)
    p.add_argument("--latency", type=float, default=0.0)
    p.add_argument("--fail-binds", type=int, default=0)
    p.add_argument("--fail-code", type=int, default=500)
    p.add_argument("--server-version", default="1.30.0")
    # A cluster that has not installed a CRD: its paths answer 404 and discovery leaves it out.
    p.add_argument("--without-crd", action="append", default=[], metavar="PLURAL.GROUP",
                   help="do not serve this custom resource (e.g. hypernodes.topology.volcano.sh)")
    p.add_argument("--log")
    return p


def main(argv=None):
    p = make_parser()
    opts = p.parse_args(argv)
    if opts.cert or opts.key:
        if not (opts.cert and opts.key):
            p.error("--cert and --key go together")
        opts.tls = True

    api = Api(opts)
    for path in opts.load:
        for i, obj in enumerate(read_manifests(path)):
            try:
                api.load(obj)
            except (ApiError, ValueError) as e:
                msg = e.message if isinstance(e, ApiError) else str(e)
                md = obj.get("metadata") or {}
                raise SystemExit(f"{path}: object {i + 1} ({obj.get('kind')} {md.get('namespace', '')}/{md.get('name', '')}): {msg}")
    if opts.fail_binds:
        api.faults.fail_rules.append({"verb": "create", "resource": "pods/binding", "namespace": None,
                                      "name": None, "count": opts.fail_binds, "code": opts.fail_code})

    ssl_ctx, ca_file, tmpdir = None, None, None
    if opts.tls:
        cert, key = opts.cert, opts.key
        if not cert:
            tmpdir = tempfile.mkdtemp(prefix="kube-emulator-")
            cert, key = make_cert(tmpdir)
        ssl_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ssl_ctx.load_cert_chain(cert, key)
        ssl_ctx.set_alpn_protocols(["http/1.1"])
        if opts.client_ca:
            # Client certificates are asked for and verified when sent; token clients send none.
            ssl_ctx.verify_mode = ssl.CERT_OPTIONAL
            ssl_ctx.load_verify_locations(opts.client_ca)
        ca_file = cert

    server = Server(("127.0.0.1", opts.port), Handler, api, ssl_ctx)
    server.log = None
    if opts.log:
        server.log = sys.stderr if opts.log == "-" else open(opts.log, "a")
    url = f"{'https' if opts.tls else 'http'}://127.0.0.1:{server.server_address[1]}"
    if opts.write_kubeconfig:
        write_kubeconfig(opts.write_kubeconfig, url, opts.token, ca_file)
    if opts.url_file:
        with open(opts.url_file + ".tmp", "w") as f:
            f.write(url + "\n")
        os.replace(opts.url_file + ".tmp", opts.url_file)
    print(url, flush=True)

    stop = threading.Event()

    def kubelet():
        while not stop.wait(0.05):
            try:
                if opts.kubelet:
                    api.kubelet_tick()
                if opts.job_controller:
                    api.job_controller_tick()
            except Exception:
                traceback.print_exc()
    if opts.kubelet or opts.job_controller:
        threading.Thread(target=kubelet, daemon=True).start()

    def on_signal(signum, frame):
        stop.set()
        threading.Thread(target=server.shutdown, daemon=True).start()
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        stop.set()
        with api.store.cond:
            for w in api.watchers:
                w.dropped = "close"
            api.store.cond.notify_all()
        if tmpdir:
            for f in os.listdir(tmpdir):
                os.unlink(os.path.join(tmpdir, f))
            os.rmdir(tmpdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
