"""Helpers shared by the `kiln serve` process tests (stdlib only): HTTP GET on the endpoints,
reading a metric, waiting for a condition, and starting `kiln serve` with its log captured."""
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def get(port, path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def metric(text, name):
    m = re.search(r"^" + re.escape(name) + r" ([0-9.e+-]+)$", text, re.M)
    return float(m.group(1)) if m else None


def wait_for(pred, what, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.1)
    fail("timed out waiting for " + what)


def start_serve(args):
    """Starts `args` (a kiln serve command line with --listen 127.0.0.1:0); returns the process,
    its stderr lines as they arrive (a list that grows), and the port from its listen line."""
    proc = subprocess.Popen(args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    log = []

    def drain():
        for line in proc.stderr:
            log.append(line)

    threading.Thread(target=drain, daemon=True).start()

    def port_from_log():
        for line in log:
            m = re.search(r"on 127\.0\.0\.1:(\d+)", line)
            if m:
                return int(m.group(1))
        if proc.poll() is not None:
            fail("kiln serve exited early:\n" + "".join(log))
        return None

    return proc, log, wait_for(port_from_log, "the listen line")
