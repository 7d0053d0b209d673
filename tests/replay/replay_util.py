"""`kiln simulate` over several sessions, for the tests that check a sequence of sessions rather
than the first one a golden checks (Debian's python3, standard library only)."""
import json
import os
import subprocess


def simulate_sessions(kiln, path, cycles, *extra):
    """The sessions `kiln simulate --cycles CYCLES EXTRA --output json PATH` decides; an
    AssertionError with its stderr when it fails."""
    out = subprocess.run([kiln, "simulate", "--cycles", str(cycles), *extra, "--output", "json", path],
                         capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise AssertionError(f"kiln simulate {os.path.basename(path)} failed ({out.returncode}):\n{out.stderr}")
    return json.loads(out.stdout)["sessions"]
