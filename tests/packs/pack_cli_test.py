#!/usr/bin/env python3
"""Policy packs end to end through the `kiln` binary: build the example pack signed with a
throwaway Ed25519 key, verify it, then tamper with it (a policy byte, the manifest, the signature,
an untrusted signer, an unsigned pack, an entry with `..`) and check each fails with its message;
`kiln simulate --pack` takes different decisions with the pack's team-share than without, in the
way the policy says; a failing pack test stops the build; inspect shows handlers and arguments.

Usage: pack_cli_test.py KILN SOURCE_DIR. Needs openssl and zstd on PATH. Stdlib only.
"""
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

KILN, SRC = sys.argv[1], sys.argv[2]
PACK_DIR = os.path.join(SRC, "examples/packs/team-fairness")
failures = []


def check(cond, what, detail=""):
    if cond:
        print(f"ok   {what}")
    else:
        print(f"FAIL {what}\n{detail}")
        failures.append(what)


def kiln(*args):
    r = subprocess.run([KILN, *args], capture_output=True, text=True, timeout=300)
    return r.returncode, r.stdout + r.stderr


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def unpack(path):
    """The .kpack's entries as {name: bytes} (zstd CLI + tarfile: Python 3.11 has no zstd)."""
    raw = subprocess.run(["zstd", "-d", "-c", path], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(raw)) as t:
        return {m.name: t.extractfile(m).read() for m in t.getmembers() if m.isfile()}


def repack(entries, path, extra_members=()):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for name, data in sorted(entries.items()):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
        for info, data in extra_members:
            t.addfile(info, io.BytesIO(data) if data is not None else None)
    z = subprocess.run(["zstd", "-q", "-c"], input=buf.getvalue(), check=True, capture_output=True)
    with open(path, "wb") as f:
        f.write(z.stdout)


def flip(data, needle):
    i = data.index(needle)
    return data[:i] + bytes([data[i] ^ 0x01]) + data[i + 1:]


tmp = tempfile.mkdtemp(prefix="kiln-pack-test-")
try:
    key, pub = os.path.join(tmp, "key.pem"), os.path.join(tmp, "pub.pem")
    other, other_pub = os.path.join(tmp, "other.pem"), os.path.join(tmp, "other-pub.pem")
    for k, p in [(key, pub), (other, other_pub)]:
        openssl("genpkey", "-algorithm", "ed25519", "-out", k)
        openssl("pkey", "-in", k, "-pubout", "-out", p)

    kpack = os.path.join(tmp, "team-fairness.kpack")
    code, out = kiln("pack", "build", PACK_DIR, "-o", kpack, "--sign", key)
    check(code == 0 and "3 passed, 0 failed" in out and "signed by ed25519:" in out,
          "build: the example pack's 3 tests pass and it is signed", out)
    for t in ["team-share-order", "team-share-weights", "team-nodes-score"]:
        check(f"PASS tests/{t}.yaml ({t})" in out, f"build: test {t} reported", out)
    entries = unpack(kpack)
    check(sorted(entries) == ["README.md", "kiln-pack.sig", "kiln-pack.yaml",
                              "policies/team-nodes.policy", "policies/team-share.policy",
                              "scheduler.conf", "tests/team-nodes-score.yaml",
                              "tests/team-share-order.yaml", "tests/team-share-weights.yaml"],
          "build: the archive holds the manifest, signature and every referenced file",
          str(sorted(entries)))
    manifest = entries["kiln-pack.yaml"].decode()
    src_policy = open(os.path.join(PACK_DIR, "policies/team-share.policy"), "rb").read()
    check(f'"policies/team-share.policy": "sha256:{hashlib.sha256(src_policy).hexdigest()}"'
          in manifest, "build: the manifest carries each file's sha256", manifest)
    again = os.path.join(tmp, "again.kpack")
    kiln("pack", "build", PACK_DIR, "-o", again)
    unsigned_entries = unpack(again)
    check(unsigned_entries["kiln-pack.yaml"] == entries["kiln-pack.yaml"]
          and "kiln-pack.sig" not in unsigned_entries,
          "build: the manifest bytes are reproducible (signed or not)")

    code, out = kiln("pack", "verify", kpack, "--trust", pub)
    check(code == 0 and "OK: team-fairness 1.0.0" in out and "(trusted)" in out
          and "7 files match" in out,
          "verify: a trusted signed pack passes (7 files checked)", out)
    code, out = kiln("pack", "verify", kpack)
    check(code == 0 and "signer not checked" in out, "verify without --trust: integrity only", out)

    # Tampering, one thing at a time.
    bad = os.path.join(tmp, "bad.kpack")
    e = dict(entries)
    e["policies/team-share.policy"] = flip(e["policies/team-share.policy"], b"if ls < rs")
    repack(e, bad)
    code, out = kiln("pack", "verify", bad, "--trust", pub)
    check(code == 1 and "policies/team-share.policy: sha256 differs from the manifest" in out,
          "verify: a changed policy byte names the file", out)

    e = dict(entries)
    e["kiln-pack.yaml"] = e["kiln-pack.yaml"].replace(b"Fair turns", b"Fair-ish turns")
    repack(e, bad)
    code, out = kiln("pack", "verify", bad, "--trust", pub)
    check(code == 1 and "kiln-pack.sig: the signature by ed25519:" in out
          and "does not match kiln-pack.yaml" in out,
          "verify: a changed manifest no longer matches its signature", out)

    e = dict(entries)
    sig = e["kiln-pack.sig"]
    i = sig.index(b"\nsignature: ") + len(b"\nsignature: ") + 5
    e["kiln-pack.sig"] = sig[:i] + (b"B" if sig[i:i + 1] != b"B" else b"C") + sig[i + 1:]
    repack(e, bad)
    code, out = kiln("pack", "verify", bad, "--trust", pub)
    check(code == 1 and "kiln-pack.sig:" in out and "does not match kiln-pack.yaml" in out,
          "verify: a changed signature fails", out)

    code, out = kiln("pack", "verify", kpack, "--trust", other_pub)
    check(code == 1 and "signed by unknown key ed25519:" in out,
          "verify: a signer outside --trust is refused", out)
    code, out = kiln("pack", "verify", again, "--trust", pub)
    check(code == 1 and "the pack is not signed" in out,
          "verify: an unsigned pack is refused when keys are trusted", out)

    e = dict(entries)
    e["policies/../../evil.policy"] = b"policy evil;\n"
    repack(e, bad)
    code, out = kiln("pack", "verify", bad)
    check(code == 1 and "entry `policies/../../evil.policy` refused" in out,
          "verify: an entry with `..` is refused", out)
    link = tarfile.TarInfo("policies/link.policy")
    link.type = tarfile.SYMTYPE
    link.linkname = "/etc/passwd"
    repack(dict(entries), bad, [(link, None)])
    code, out = kiln("pack", "verify", bad)
    check(code == 1 and "symbolic link" in out, "verify: a symlink entry is refused", out)

    # kiln simulate --pack: team-share changes who gets the last cpu, as the policy says.
    scenario = os.path.join(PACK_DIR, "tests/team-share-order.yaml")
    conf = os.path.join(PACK_DIR, "scheduler.conf")
    without = os.path.join(tmp, "without-team-share.conf")
    text = open(conf).read()
    stripped = re.sub(r"  - name: team-fairness/team-share\n    arguments:\n.*\n", "", text)
    check(stripped != text and "team-fairness/team-nodes" in stripped, "a conf without team-share")
    with open(without, "w") as f:
        f.write(stripped)
    code, out = kiln("simulate", scenario, "--conf", conf, "--pack", kpack, "--trust", pub,
                     "--output", "json")
    with_binds = json.loads(out)["sessions"][0]["binds"] if code == 0 else None
    code2, out2 = kiln("simulate", scenario, "--conf", without, "--pack", kpack, "--output", "json")
    without_binds = json.loads(out2)["sessions"][0]["binds"] if code2 == 0 else None
    check(with_binds == {"beta/b-next-0": "n1"} and without_binds == {"alpha/a-next-0": "n1"},
          "simulate --pack: with team-share beta (share 0) gets the cpu, without it alpha's older job",
          f"{out}\n{out2}")
    code, out = kiln("simulate", scenario, "--conf", conf, "--pack", kpack, "--trust", other_pub)
    check(code == 2 and "signed by unknown key" in out, "simulate --pack: an untrusted pack is refused", out)
    code, out = kiln("simulate", scenario, "--conf", conf)
    check(code == 2 and "team-fairness/team-share" in out, "simulate without --pack: unknown plugin", out)
    code, out = kiln("simulate", scenario, "--conf", conf, "--pack", PACK_DIR, "--check")
    check(code == 0 and "PASS team-share-order" in out,
          "simulate --pack DIR --check: a pack directory works while it is written", out)

    code, out = kiln("pack", "inspect", kpack)
    for needle in ["pack:        team-fairness 1.0.0", "policy team-fairness/team-share",
                   "on job_order  (scheduler.conf flag enableJobOrder)", "on allocate",
                   "arg weights: map<string, float>  (arguments team-share.weight.*)",
                   "policy team-fairness/team-nodes", "on node_order",
                   "arg home_weight: float = 50.0  (arguments team-nodes.home-weight)"]:
        check(code == 0 and needle in out, f"inspect shows `{needle}`", out)
    code, out = kiln("pack", "inspect", kpack, "--output", "json")
    doc = json.loads(out) if code == 0 else {}
    check(doc.get("policies", [{}])[0].get("plugin") == "team-fairness/team-share"
          and any(a["key"] == "team-share.label" for a in doc["policies"][0]["arguments"]),
          "inspect --output json", out)

    # kiln pack conf --into: the pack's plugins merged into Volcano's default conf, beside the
    # plugins they sit next to in the pack's example; the result runs like the pack's conf.
    merged = os.path.join(tmp, "merged.conf")
    code, out = kiln("pack", "conf", kpack, "--into",
                     os.path.join(SRC, "examples/conf/volcano-default.conf"), "-o", merged)
    check(code == 0 and "added team-fairness/team-share (tier 2, before drf)" in out
          and "added team-fairness/team-nodes (tier 2, after nodeorder)" in out,
          "pack conf --into: both plugins placed", out)
    code, out = kiln("simulate", scenario, "--conf", merged, "--pack", kpack, "--output", "json")
    check(code == 0 and json.loads(out)["sessions"][0]["binds"] == {"beta/b-next-0": "n1"},
          "pack conf --into: the merged conf takes team-share's decision", out)
    code, out = kiln("pack", "conf", kpack)
    check(code == 0 and out == open(conf).read(), "pack conf: prints the pack's example conf", out)

    # A failing pack test stops the build; a bad manifest is reported at its line.
    broken = os.path.join(tmp, "broken")
    shutil.copytree(PACK_DIR, broken)
    t = os.path.join(broken, "tests/team-share-order.yaml")
    with open(t) as f:
        body = f.read()
    with open(t, "w") as f:
        f.write(body.replace("binds: {beta/b-next-0: n1}", "binds: {alpha/a-next-0: n1}"))
    out_kpack = os.path.join(tmp, "broken.kpack")
    code, out = kiln("pack", "build", broken, "-o", out_kpack)
    check(code == 1 and "FAIL tests/team-share-order.yaml" in out and "2 passed, 1 failed" in out
          and not os.path.exists(out_kpack), "build: a failing test stops it, with the diff", out)
    # kiln test: the built archive's cases pass; the broken directory's case fails with its diff.
    code, out = kiln("test", kpack, "--no-times")
    check(code == 0 and re.search(r"PASS \S*team-fairness\.kpack:tests/team-share-order\.yaml", out)
          and "3 passed, 0 failed" in out, "kiln test on the .kpack passes", out)
    code, out = kiln("test", broken, "--no-times")
    check(code == 1 and "FAIL " in out and "tests/team-share-order.yaml" in out
          and "alpha/a-next-0" in out and "2 passed, 1 failed" in out,
          "kiln test on the broken pack fails with the difference", out)
    m = os.path.join(broken, "kiln-pack.yaml")
    with open(m) as f:
        body = f.read()
    with open(m, "w") as f:
        f.write(body.replace("conf: scheduler.conf", "conf: scheduler.conf\nauthor: me"))
    code, out = kiln("pack", "build", broken, "-o", out_kpack)
    check(code == 2 and re.search(r"kiln-pack\.yaml:\d+:\d+: error: .*author", out),
          "build: an unknown manifest key is reported at file:line", out)

    # Capabilities (issue 28): a pack whose policy uses http records it in the signed manifest,
    # inspect shows it, a conf must grant it, and a built manifest that leaves it out is refused.
    hook = os.path.join(tmp, "http-hook")
    os.makedirs(os.path.join(hook, "policies"))
    with open(os.path.join(hook, "kiln-pack.yaml"), "w") as f:
        f.write('name: http-hook\nversion: 0.1.0\nlanguage: ">=0.1.0 <0.2.0"\npolicies:\n'
                '- file: policies/ask.policy\n  plugin: ask\n')
    with open(os.path.join(hook, "policies/ask.policy"), "w") as f:
        f.write('policy ask;\nuses http;\non job_ready(job: Job) -> bool {\n'
                '  let r = http_post("http://127.0.0.1:9/ready", "{}", 50ms) ?? "";\n'
                '  return len(r) >= 0;\n}\n')
    hook_kpack = os.path.join(tmp, "http-hook.kpack")
    code, out = kiln("pack", "build", hook, "-o", hook_kpack)
    check(code == 0, "build: a pack whose policy uses http", out)
    manifest = unpack(hook_kpack)["kiln-pack.yaml"].decode() if code == 0 else ""
    check('  plugin: "ask"\n  uses:\n  - "http"\n' in manifest,
          "build: the manifest lists the capability", manifest)
    code, out = kiln("pack", "inspect", hook_kpack)
    check(code == 0 and "capability http" in out, "inspect shows the capability", out)
    code, out = kiln("pack", "inspect", hook_kpack, "--output", "json")
    check(code == 0 and json.loads(out)["policies"][0]["uses"] == ["http"],
          "inspect --output json: uses", out)
    hook_scenario = os.path.join(tmp, "hook.yaml")
    with open(hook_scenario, "w") as f:
        f.write("name: hook\ncluster:\n  nodes:\n  - {name: n1, allocatable: {cpu: \"4\"}}\n"
                "  podGroups:\n  - {name: g, namespace: c1, minMember: 1, phase: Inqueue}\n"
                "  pods:\n  - {name: g-0, namespace: c1, group: g, requests: {cpu: \"1\"}}\n")
    base = 'actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n  - name: http-hook/ask\n'
    ungranted, granted = os.path.join(tmp, "ungranted.conf"), os.path.join(tmp, "granted.conf")
    with open(ungranted, "w") as f:
        f.write(base)
    with open(granted, "w") as f:
        f.write(base + '    grants: {http: ["http://127.0.0.1:9/"]}\n')
    code, out = kiln("simulate", hook_scenario, "--conf", ungranted, "--pack", hook_kpack)
    check(code == 2 and "does not grant" in out and "ungranted.conf:5" in out,
          "simulate: a pack policy without the grant is refused at its conf line", out)
    code, out = kiln("simulate", hook_scenario, "--conf", granted, "--pack", hook_kpack)
    check(code == 0, "simulate: with the grant it runs", out)
    entries = unpack(hook_kpack)
    entries["kiln-pack.yaml"] = entries["kiln-pack.yaml"].replace(b'  uses:\n  - "http"\n', b"")
    stripped_kpack = os.path.join(tmp, "http-hook-stripped.kpack")
    repack(entries, stripped_kpack)
    code, out = kiln("simulate", hook_scenario, "--conf", granted, "--pack", stripped_kpack)
    check(code == 2 and "manifest does not list" in out,
          "simulate: a built manifest hiding the capability is refused", out)
finally:
    shutil.rmtree(tmp, ignore_errors=True)

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("PASS")
