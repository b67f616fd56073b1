#!/usr/bin/env bash
# The same sandbox-runtime settings files and commands under the npm
# sandbox-runtime (`srt --settings FILE -c CMD`, installed by
# install-peers.sh) and under `agent-run --settings FILE -- sh -c CMD`,
# side by side: each probe prints ALLOWED or DENIED, and the script prints
# the pair. A probe where agent-run allows what srt denies (looser) fails
# the script; one where agent-run denies what srt allows (stricter) must
# name its reason in the STRICTER table below, or it fails too. Not a
# timing: SMOKE=1 runs the same, minus the last file. Needs bubblewrap,
# socat, curl, python3 and srt.
set -euo pipefail
cd "$(dirname "$0")/../.."
. benches/compare/support/common.sh
need bwrap socat curl python3
SRT="$SRT_PREFIX/node_modules/.bin/srt"
[ -x "$SRT" ] || bash benches/compare/install-peers.sh >&2
[ -x "$SRT" ] || die "missing peer: $SRT"
cargo build --locked -q -p agent-sandbox-examples --bin agent-run
AGENT_RUN="$TARGET_DIR/debug/agent-run"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 - "$SRT" "$AGENT_RUN" "$work" "$SMOKE" <<'EOF'
import http.server, json, os, shutil, subprocess, sys, threading

srt, agent_run, work, smoke = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"

class Origin(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "6")
        self.end_headers()
        self.wfile.write(b"origin")
    def log_message(self, *a):
        pass

server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Origin)
port = server.server_address[1]
threading.Thread(target=server.serve_forever, daemon=True).start()

# name: (what it tries, a shell test that succeeds when it was allowed)
PROBES = {
    "net-listed": f"curl -s -m 5 http://localhost:{port}/ | grep -q origin",
    "net-unlisted": "curl -s -m 5 -o /dev/null -w '%{http_code}' http://unlisted.example.test/ | grep -q '^[23]'",
    "read-denied": "cat secrets/key.txt >/dev/null 2>&1",
    "read-again": "grep -q PUBLIC secrets/pub/readme 2>/dev/null",
    "read-cwd": "grep -q NOTES notes.txt",
    "read-home-file": "grep -q HOMEFILE \"$HOME/home.txt\" 2>/dev/null",
    "write-listed": "echo new > out/new.txt 2>/dev/null",
    "write-unlisted": "echo x > top.txt 2>/dev/null",
    "write-denied": "echo y >> out/keep 2>/dev/null",
    "write-git-hooks": "echo z > out/.git/hooks/pre-commit 2>/dev/null",
    "create-dotenv": "echo K=v > out/.env 2>/dev/null",
    "create-key": "echo k > out/id.key 2>/dev/null",
}

FILES = {
    "listed": {
        "network": {"allowedDomains": ["localhost"], "deniedDomains": []},
        "filesystem": {"denyRead": ["secrets"], "allowRead": ["secrets/pub"],
                       "allowWrite": ["out"], "denyWrite": ["out/keep"]},
    },
    "nothing": {
        "network": {"allowedDomains": [], "deniedDomains": []},
        "filesystem": {"denyRead": [], "allowWrite": [], "denyWrite": []},
    },
    "no-network-all-writes": {
        "network": {"allowedDomains": ["localhost"], "deniedDomains": ["*"]},
        "filesystem": {"denyRead": [], "allowWrite": ["."], "denyWrite": []},
    },
}
if smoke:
    FILES.pop("no-network-all-writes")

# Where agent-run is stricter on purpose: the probe and why.
STRICTER = {
    "read-home-file": "reads outside the mounts and the system directories see nothing, not the whole disk",
    "write-git-hooks": "the fixed write-deny set (.git/hooks, .git/config, shell rc files) holds for files created later too",
    "create-dotenv": "new .env files are refused at creation (the name guard)",
    "create-key": "new *.key files are refused at creation (the name guard)",
}

def prepare(d):
    shutil.rmtree(d, ignore_errors=True)
    for sub in ["secrets/pub", "out/.git/hooks", "home"]:
        os.makedirs(os.path.join(d, sub))
    for path, text in [("secrets/key.txt", "TOP-SECRET"), ("secrets/pub/readme", "PUBLIC"),
                       ("out/keep", "KEEP"), ("notes.txt", "NOTES"), ("home/home.txt", "HOMEFILE")]:
        with open(os.path.join(d, path), "w") as f:
            f.write(text)

def run(tool, settings, probe):
    d = os.path.join(work, "tree")
    prepare(d)
    with open(os.path.join(d, "home", "srt-settings.json"), "w") as f:
        json.dump(settings, f)
    cfg = os.path.join(d, "home", "srt-settings.json")
    script = f"if {probe}; then echo ALLOWED; else echo DENIED; fi"
    if tool == "srt":
        argv = [srt, "--settings", cfg, "-c", script]
    else:
        argv = [agent_run, "--settings", cfg, "--", "sh", "-c", script]
    env = dict(os.environ, HOME=os.path.join(d, "home"))
    env.pop("CC_SERVER_SANDBOX", None)
    p = subprocess.run(argv, cwd=d, env=env, capture_output=True, text=True, timeout=120)
    out = p.stdout.strip().splitlines()
    return out[-1] if out and out[-1] in ("ALLOWED", "DENIED") else f"ERROR({p.returncode}: {p.stderr.strip()[-200:]})"

failed = []
print(f"{'settings':<22} {'probe':<16} {'srt':<8} {'agent-run':<10} verdict")
for fname, settings in FILES.items():
    for pname, probe in PROBES.items():
        theirs, ours = run("srt", settings, probe), run("agent-run", settings, probe)
        if theirs == ours:
            verdict = "same"
        elif theirs == "DENIED" and ours == "ALLOWED":
            verdict = "LOOSER"
            failed.append(f"{fname}/{pname}: agent-run allows what srt denies")
        elif theirs == "ALLOWED" and ours == "DENIED":
            reason = STRICTER.get(pname)
            verdict = f"stricter: {reason}" if reason else "STRICTER WITHOUT A REASON"
            if not reason:
                failed.append(f"{fname}/{pname}: stricter, with no reason listed")
        else:
            verdict = "ERROR"
            failed.append(f"{fname}/{pname}: srt {theirs}, agent-run {ours}")
        print(f"{fname:<22} {pname:<16} {theirs:<8} {ours:<10} {verdict}")
if failed:
    print("failed:\n  " + "\n  ".join(failed))
    sys.exit(1)
print("nowhere looser; every stricter outcome has its reason")
EOF
