#!/usr/bin/env bash
# A command's stdio through the sandbox, side by side in one run:
#   - a plain pipe (`head`/`cat` run directly: the floor);
#   - bare bubblewrap (`bwrap --ro-bind / / --dev /dev --unshare-all -- ...`);
#   - our `agent-run --no-filename-rules -- ...` (proxies, bridges, full
#     policy; stdout is passed from the manager's pipe into agent-run's
#     stdout, stdin goes through the command's controls).
# Two cases: stdout throughput (1 GiB of zeros out of `head -c`, counted on
# the reading side) and one-byte round trips through `cat` (10,000, one
# byte written, the same byte read back; p50 and p99). Prints each figure
# and the ratio against bare bubblewrap, each the median of REPEAT (5)
# alternating rounds. SMOKE=1 moves 64 MiB and 500 round trips, once. A case whose byte count is wrong, or that fails, fails the
# script. Needs bubblewrap, socat and python3.
set -euo pipefail
cd "$(dirname "$0")/../.."
. benches/compare/support/common.sh
if smoke; then
    BYTES=${BYTES:-$((64 << 20))} ROUNDS=${ROUNDS:-500} REPEAT=${REPEAT:-1}
else
    BYTES=${BYTES:-$((1 << 30))} ROUNDS=${ROUNDS:-10000} REPEAT=${REPEAT:-5}
fi
need bwrap socat python3
# Smoke mode times nothing: the dev build the tests made serves.
if smoke; then profile=dev dir=debug; else profile=release dir=release; fi
cargo build --locked -q --profile "$profile" -p agent-sandbox-examples --bin agent-run
AGENT_RUN="$TARGET_DIR/$dir/agent-run"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

python3 - "$AGENT_RUN" "$BYTES" "$ROUNDS" "$REPEAT" <<'EOF'
import os, statistics, subprocess, sys, time

agent_run, total, rounds, repeat = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
bwrap = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-all", "--"]
tools = {
    "pipe": [],
    "bwrap": bwrap,
    "agent-run": [agent_run, "--no-filename-rules", "--"],
}
failed = []

def throughput(prefix):
    cmd = prefix + ["head", "-c", str(total), "/dev/zero"]
    start = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    got = 0
    while True:
        chunk = p.stdout.read1(1 << 20)
        if not chunk:
            break
        got += len(chunk)
    code = p.wait()
    took = time.monotonic() - start
    if code != 0 or got != total:
        raise RuntimeError(f"exit {code}, {got} of {total} bytes")
    return total / took / 1e9

def round_trips(prefix):
    p = subprocess.Popen(prefix + ["cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0)
    out, inp = p.stdout, p.stdin
    lat = []
    for i in range(rounds):
        b = bytes([65 + i % 26])
        t = time.perf_counter()
        inp.write(b)
        r = out.read(1)
        lat.append(time.perf_counter() - t)
        if r != b:
            raise RuntimeError(f"round {i}: sent {b!r}, read {r!r}")
    inp.close()
    code = p.wait()
    if code != 0:
        raise RuntimeError(f"exit {code}")
    lat.sort()
    return lat[len(lat) // 2] * 1e6, lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1e6

# Rounds alternate the tools (pipe, bwrap, agent-run, pipe, ...) so that a
# slow stretch of the shared machine falls on all three; each figure is the
# median over the rounds.
runs = {name: [] for name in tools}
for _ in range(repeat):
    for name, prefix in tools.items():
        if name in failed:
            continue
        try:
            gbps = throughput(prefix)
            p50, p99 = round_trips(prefix)
            runs[name].append((gbps, p50, p99))
        except Exception as e:
            print(f"{name}: FAILED: {e}", file=sys.stderr)
            failed.append(name)
res = {}
for name, rs in runs.items():
    if rs and name not in failed:
        res[name] = tuple(statistics.median(r[i] for r in rs) for i in range(3))

print(f"stdout {total >> 20} MiB, {rounds} one-byte round trips, median of {repeat} alternating rounds")
print(f"{'tool':<10} {'GB/s':>8} {'vs bwrap':>9} {'p50 us':>9} {'p99 us':>9} {'p50 - bwrap':>12}")
base = res.get("bwrap")
for name, (gbps, p50, p99) in res.items():
    vs = f"{gbps / base[0]:.2f}x" if base else "n/a"
    over = f"{p50 - base[1]:+.1f} us" if base else "n/a"
    print(f"{name:<10} {gbps:>8.2f} {vs:>9} {p50:>9.1f} {p99:>9.1f} {over:>12}")
sys.exit(1 if failed else 0)
EOF
