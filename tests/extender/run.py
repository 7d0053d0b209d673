#!/usr/bin/env python3
"""Runs `kiln simulate --check` on an extender scenario against a real local extender.

usage: run.py KILN SCENARIO.yaml

The scenario's conf names the extender's URL as {{EXTENDER}}; this script starts the extender
below on an ephemeral port of 127.0.0.1, writes the scenario with the real URL to a temporary
file and checks it. The extender's rules read the labels Kiln sends (standard library only):
  predicate   a node labelled extender.test/reject fails with that label's value as reason
              (code 2, Unschedulable); a node labelled extender.test/unresolvable fails with
              code 3
  prioritize  a node's score is its label extender.test/score (0 when absent)
  preemptable/reclaimable
              victims are the evictees labelled extender.test/victim (status 1); none labelled:
              abstain (status 0)
  enqueueable rejects (-1) a job named in the scenario's ENQUEUE_REJECT list below, else 1
  broken      answers 500 (for a verb pointed at it)
  garbage     answers a body that is not JSON
"""
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading


class Extender(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def reply(self, status, body):
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        request = json.loads(self.rfile.read(length) or b"{}")
        verb = self.path.strip("/")
        if verb == "broken":
            return self.reply(500, "{}")
        if verb == "garbage":
            return self.reply(200, "{\"status\": oops")
        if verb == "predicate":
            labels = request["node"].get("Labels", {})
            if "extender.test/reject" in labels:
                return self.reply(200, {"status": labels["extender.test/reject"], "code": 2})
            if "extender.test/unresolvable" in labels:
                return self.reply(200, {"status": labels["extender.test/unresolvable"], "code": 3})
            return self.reply(200, {"status": "", "code": 0})
        if verb == "prioritize":
            scores = {n["Name"]: float(n.get("Labels", {}).get("extender.test/score", "0"))
                      for n in request["nodes"]}
            return self.reply(200, {"nodeScore": scores, "errorMessage": ""})
        if verb in ("preemptable", "reclaimable"):
            victims = [t for t in request["evictees"] if "extender.test/victim" in t.get("Labels", {})]
            return self.reply(200, {"status": 1 if victims else 0, "victims": victims})
        if verb == "enqueueable":
            return self.reply(200, {"status": -1 if request["job"]["Name"].startswith("reject") else 1})
        return self.reply(404, "{}")


def main():
    kiln, scenario = sys.argv[1], sys.argv[2]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Extender)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = "http://127.0.0.1:%d/" % server.server_address[1]
    with open(scenario) as f:
        text = f.read().replace("{{EXTENDER}}", url)
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as out:
        out.write(text)
    try:
        return subprocess.call([kiln, "simulate", "--check", out.name])
    finally:
        os.unlink(out.name)
        server.shutdown()


if __name__ == "__main__":
    sys.exit(main())
