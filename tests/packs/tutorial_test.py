#!/usr/bin/env python3
"""docs/tutorial-policy.md, run as written: every ```LANG file=PATH block is written to PATH and
every ```sh block runs, in order, in one bash session (`set -euo pipefail`) in a scratch
directory, with `kiln` from the build on PATH and KILN_SRC set. The only change: the tutorial's
port 8080 becomes a free port, so the test can run beside others.

Usage: tutorial_test.py KILN SOURCE_DIR.
"""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile

KILN, SRC = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
doc = open(os.path.join(SRC, "docs/tutorial-policy.md")).read()

with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]

script = ["set -euo pipefail",
          "trap '[ -n \"${SERVE_PID:-}\" ] && kill $SERVE_PID 2>/dev/null || true' EXIT"]
files = []
for m in re.finditer(r"^```(\S*)([^\n]*)\n(.*?)^```$", doc, re.M | re.S):
    lang, info, body = m.group(1), m.group(2), m.group(3)
    f = re.search(r"file=(\S+)", info)
    if f:
        files.append(f.group(1))
        # Written when the script reaches it, so later sed edits apply to what is there.
        marker = "KILN_TUTORIAL_EOF"
        script.append(f"mkdir -p \"$(dirname '{f.group(1)}')\"\ncat > '{f.group(1)}' <<'{marker}'\n"
                      f"{body}{marker}")
    elif lang == "sh":
        script.append(f"echo '+ block {len(script)}'\n" + body.replace("8080", str(port)))

if len(files) != 4 or not any("kiln serve" in b for b in script):
    print(f"FAIL: the tutorial's blocks were not found (files: {files})")
    sys.exit(1)

work = tempfile.mkdtemp(prefix="kiln-tutorial-")
try:
    env = dict(os.environ, KILN_SRC=SRC, PATH=os.path.dirname(KILN) + ":" + os.environ["PATH"])
    r = subprocess.run(["bash", "-c", "\n".join(script)], cwd=work, env=env, capture_output=True,
                       text=True, timeout=280)
    out = r.stdout + r.stderr
    print(out)
    expected = ["PASS draining", "1 passed, 0 failed", "PASS drain-pack/tests/draining.yaml", "packs/drain.kpack: OK: drain 0.1.0",
                "policy drain/drain-aware", "unknown field `lables` on Node",
                "policies/drain-aware.policy: sha256 differs from the manifest",
                '"generation": 1', "drain 0.2.0", "the pack is not signed",
                "packs/drain.kpack: OK: drain 0.2.0"]
    missing = [e for e in expected if e not in out]
    if r.returncode != 0 or missing:
        print(f"FAIL: exit {r.returncode}; missing from the output: {missing}")
        sys.exit(1)
    print("PASS")
finally:
    shutil.rmtree(work, ignore_errors=True)
