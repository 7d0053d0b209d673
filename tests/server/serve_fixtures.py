"""What the `kiln serve` tests start from: confs, cluster inputs, a served process (stdlib + PyYAML).

scheduler_conf() spells a conf from its actions and its tiers' plugin names, so a test names the
plugins it runs instead of pasting Volcano's default conf again; volcano_conf() is that default
(overcommit optional). cluster_inputs() writes what a served cluster needs: a scenario exported
as manifests for the emulator, and the scenario's own conf (Volcano's default when it has none).
ListeningServe is a ServeProcess whose HTTP port is known once it is constructed.
"""
import os
import re
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "emulator"))
from emulator_fixture import wait_until  # noqa: E402
from serve_util import ServeProcess  # noqa: E402


def scheduler_conf(actions, *tiers):
    """A scheduler conf: `actions`, then one tier per list of plugin names."""
    lines = [f'actions: "{actions}"', "tiers:"]
    for plugins in tiers:
        lines.append("- plugins:")
        lines.extend(f"  - name: {p}" for p in plugins)
    return "\n".join(lines) + "\n"


def volcano_conf(actions="enqueue, allocate, backfill", overcommit=False):
    """Volcano's default tiers (runtime/conf.cc's, where overcommit is on) under `actions`."""
    second = (["overcommit"] if overcommit else []) + ["drf", "predicates", "proportion", "nodeorder"]
    return scheduler_conf(actions, ["priority", "gang", "conformance"], second)


def export_manifests(kiln, scenario, out):
    subprocess.run([kiln, "export-manifests", scenario, "-o", out], check=True)


def scenario_conf(scenario, out):
    """Writes the scenario's conf to `out`, or examples/conf/volcano-default.conf without one."""
    with open(scenario) as f:
        conf = yaml.safe_load(f).get("conf")
    if conf is None:
        with open(os.path.join(ROOT, "examples", "conf", "volcano-default.conf")) as f:
            conf = f.read()
    with open(out, "w") as f:
        f.write(conf)


def cluster_inputs(kiln, tmp, scenario, conf_dir=None):
    """`scenario` as tmp/m.yaml manifests and its conf as scheduler.conf: (manifests, conf)."""
    manifests = os.path.join(tmp, "m.yaml")
    export_manifests(kiln, scenario, manifests)
    conf = os.path.join(conf_dir or tmp, "scheduler.conf")
    scenario_conf(scenario, conf)
    return manifests, conf


def served_scenario(kiln, tmp, text):
    """Writes scenario `text` to tmp/scenario.yaml, its conf to scheduler.conf and its export to
    m.yaml: (conf, manifests)."""
    scenario = os.path.join(tmp, "scenario.yaml")
    with open(scenario, "w") as f:
        f.write(text)
    conf = os.path.join(tmp, "scheduler.conf")
    with open(conf, "w") as f:
        f.write(yaml.safe_load(text)["conf"])
    manifests = os.path.join(tmp, "m.yaml")
    export_manifests(kiln, scenario, manifests)
    return conf, manifests


class ListeningServe(ServeProcess):
    """A ServeProcess whose `port` is read off its listen line before the constructor returns
    (an AssertionError if it exits first)."""

    def __init__(self, kiln, emu, conf, *extra, period="1s"):
        super().__init__(kiln, emu, conf, *extra, period=period)
        self.port = wait_until(self._port, timeout=60, what="the listen line")

    def _port(self):
        for line in list(self.log):
            m = re.search(r"on 127\.0\.0\.1:(\d+)", line)
            if m:
                return int(m.group(1))
        if self.proc.poll() is not None:
            raise AssertionError("kiln serve exited early:\n" + self.text())
        return None
