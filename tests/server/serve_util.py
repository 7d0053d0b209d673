"""Helpers shared by the `kiln serve` process tests (stdlib only): HTTP GET on the endpoints,
reading a metric, waiting for a condition, starting `kiln serve` with its log captured, finding
the kiln binary, and one `kiln serve` process against the API-server emulator."""
import os
import re
import signal
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


def write(path, text):
    """Writes `text` to `path` whole (aside, then renamed over it), as editors and ConfigMap
    updates do: kiln serve's watcher never reads half a file."""
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def kiln_from_argv(root):
    """The kiln binary: argv[1] when it names a file (ctest passes it; it is taken off argv, so the
    rest goes to unittest), else $KILN, else build/kiln of the checkout at `root`."""
    if len(sys.argv) > 1 and os.path.isfile(sys.argv[1]):
        return os.path.abspath(sys.argv.pop(1))
    return os.environ.get("KILN", os.path.join(root, "build", "kiln"))


class ServeProcess:
    """One `kiln serve` process against an emulator (tests/emulator/emulator_fixture.py), its
    stderr kept line by line as it arrives."""

    def __init__(self, kiln, emu, conf, *extra, period="1s", kubeconfig=None, env=None):
        self.log = []
        # Each snapshot that reads only the changed pods is checked against a whole reading;
        # stop() fails on a difference.
        env = dict(os.environ if env is None else env, KILN_CHECK_SNAPSHOTS="1")
        self.proc = subprocess.Popen(
            [kiln, "serve", "--kubeconfig", kubeconfig or emu.kubeconfig, "--conf", conf, "--listen",
             "127.0.0.1:0", "--schedule-period", period, "-v", "2", *extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self):
        for line in self.proc.stderr:
            self.log.append(line)

    def text(self):
        return "".join(self.log)

    def sessions(self):
        return sum(1 for l in self.log if re.search(r"session \d+ \(generation", l))

    def stop(self, sig=signal.SIGTERM, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("kiln serve did not stop:\n" + self.text())
        if "differs from a whole reading" in self.text():
            raise AssertionError("a snapshot read from the changed pods was wrong:\n" + self.text())
        return self.proc.returncode


class DryRunServe(ServeProcess):
    """One `kiln serve --dry-run` process on `args` (its cluster and conf), listening on a free
    port: `port` is read off its listen line before the constructor returns."""

    def __init__(self, kiln, args, timeout=60):  # pylint: disable=super-init-not-called
        self.log = []
        self.port = None
        self.proc = subprocess.Popen(
            [kiln, "serve", "--listen", "127.0.0.1:0", "--dry-run", "-v", "2", *args],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        threading.Thread(target=self._drain, daemon=True).start()
        wait_for(lambda: self.port is not None or self.proc.poll() is not None, "the listen line",
                 timeout=timeout)
        if self.port is None:
            raise AssertionError("kiln serve exited:\n" + self.text())

    def _drain(self):
        for line in self.proc.stderr:
            self.log.append(line)
            m = re.search(r"on 127\.0\.0\.1:(\d+)", line)
            if m and self.port is None:
                self.port = int(m.group(1))

