#!/usr/bin/python3
"""A load test of the emulator: a big cluster loaded, paged LIST, binds while watches follow.

    load_test.py [--nodes 1000] [--pods 10000] [--watchers 2] [--binders 4] [--tls]

Prints what it measured: the time to load the manifests, a full LIST of the pods in pages of 500,
the bind rate of --binders client threads (keep-alive connections), and how fast each watcher
saw the binds as MODIFIED events. It checks that every pod was bound exactly once.
"""

import argparse
import http.client
import json
import os
import select
import shutil
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))


def manifests(nodes, pods):
    items = []
    for i in range(nodes):
        items.append({"apiVersion": "v1", "kind": "Node",
                      "metadata": {"name": f"node-{i:04d}", "labels": {"kubernetes.io/hostname": f"node-{i:04d}"}},
                      "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110"},
                                 "capacity": {"cpu": "64", "memory": "256Gi", "pods": "110"},
                                 "conditions": [{"type": "Ready", "status": "True"}]}})
    for i in range(pods):
        ns = f"team-{i % 10}"
        items.append({"apiVersion": "v1", "kind": "Pod",
                      "metadata": {"name": f"pod-{i:05d}", "namespace": ns,
                                   "annotations": {"scheduling.k8s.io/group-name": f"job-{i // 10}"}},
                      "spec": {"schedulerName": "volcano",
                               "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.9",
                                               "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}})
    return {"apiVersion": "v1", "kind": "List", "items": items}


class Client:
    def __init__(self, url, token, ca):
        u = urllib.parse.urlsplit(url)
        self.host, self.port, self.tls = u.hostname, u.port, u.scheme == "https"
        self.token, self.ca = token, ca

    def connect(self, timeout=60):
        if self.tls:
            return http.client.HTTPSConnection(self.host, self.port, timeout=timeout,
                                               context=ssl.create_default_context(cafile=self.ca))
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def call(self, conn, method, path, body=None):
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        if body is not None:
            body = json.dumps(body)
            headers["Content-Type"] = "application/json"
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read() or b"null")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--pods", type=int, default=10000)
    ap.add_argument("--watchers", type=int, default=2)
    ap.add_argument("--binders", type=int, default=4)
    ap.add_argument("--tls", action="store_true")
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="emulator-load-")
    proc = None
    try:
        path = os.path.join(tmp, "cluster.json")
        with open(path, "w") as f:
            json.dump(manifests(args.nodes, args.pods), f)
        kubeconfig = os.path.join(tmp, "kubeconfig")
        cmd = ["/usr/bin/python3", os.path.join(HERE, "kube_emulator.py"), "--port", "0", "--load", path,
               "--write-kubeconfig", kubeconfig] + (["--tls"] if args.tls else [])
        t0 = time.time()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        r, _, _ = select.select([proc.stdout], [], [], 300)
        url = proc.stdout.readline().strip() if r else ""
        if not url:
            raise SystemExit("the emulator did not start")
        load_s = time.time() - t0
        ca = None
        if args.tls:
            import base64
            import yaml
            with open(kubeconfig) as f:
                kc = yaml.safe_load(f)
            ca = os.path.join(tmp, "ca.crt")
            with open(ca, "wb") as f:
                f.write(base64.b64decode(kc["clusters"][0]["cluster"]["certificate-authority-data"]))
        cl = Client(url, "kiln-emulator-token", ca)

        # Paged LIST.
        conn = cl.connect()
        t0 = time.time()
        pods, cont, pages, rv = [], "", 0, None
        while True:
            q = "/api/v1/pods?limit=500" + (f"&continue={cont}" if cont else "")
            code, out = cl.call(conn, "GET", q)
            assert code == 200, out
            pods += out["items"]
            pages += 1
            rv = out["metadata"]["resourceVersion"]
            cont = out["metadata"].get("continue")
            if not cont:
                break
        list_s = time.time() - t0
        assert len(pods) == args.pods, len(pods)

        # Watchers from the list's revision, counting MODIFIED pods.
        seen = [0] * args.watchers
        done_at = [None] * args.watchers

        def watch(i):
            c = cl.connect(timeout=600)
            c.request("GET", f"/api/v1/pods?watch=1&resourceVersion={rv}&allowWatchBookmarks=true",
                      headers={"Authorization": f"Bearer {cl.token}"})
            resp = c.getresponse()
            while seen[i] < args.pods:
                line = resp.readline()
                if not line:
                    break
                if b'"MODIFIED"' in line[:20]:
                    seen[i] += 1
            done_at[i] = time.time()
            c.close()
        watchers = [threading.Thread(target=watch, args=(i,), daemon=True) for i in range(args.watchers)]
        for w in watchers:
            w.start()
        time.sleep(0.5)

        # Binds from several client threads.
        names = [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in pods]
        failures = []

        def binder(part):
            c = cl.connect()
            for j, (ns, name) in enumerate(part):
                node = f"node-{hash(name) % args.nodes:04d}"
                code, out = cl.call(c, "POST", f"/api/v1/namespaces/{ns}/pods/{name}/binding",
                                    {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
                                     "target": {"kind": "Node", "name": node}})
                if code != 201:
                    failures.append((name, code))
            c.close()
        t0 = time.time()
        threads = [threading.Thread(target=binder, args=(names[k::args.binders],)) for k in range(args.binders)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        bind_s = time.time() - t0
        for w in watchers:
            w.join(300)
        code, stats = cl.call(conn, "GET", "/emulator/stats")
        once = sum(1 for v in stats["bindsOk"].values() if v == 1)
        print(f"cluster: {args.nodes} nodes, {args.pods} pods, {'HTTPS' if args.tls else 'HTTP'}")
        print(f"load at start: {load_s:.2f} s (process start to first stdout line)")
        print(f"paged LIST of all pods: {pages} pages of 500 in {list_s:.2f} s "
              f"({args.pods / list_s:.0f} pods/s)")
        print(f"binds: {args.pods} by {args.binders} threads in {bind_s:.2f} s ({args.pods / bind_s:.0f} binds/s), "
              f"failures {len(failures)}, pods bound exactly once {once}")
        for i in range(args.watchers):
            if done_at[i]:
                print(f"watcher {i}: {seen[i]} MODIFIED events, the last {done_at[i] - t0 - bind_s:+.2f} s "
                      f"after the last bind answer")
            else:
                print(f"watcher {i}: saw only {seen[i]} events")
        ok = not failures and once == args.pods and all(s == args.pods for s in seen)
        return 0 if ok else 1
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
