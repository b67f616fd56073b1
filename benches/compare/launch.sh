#!/usr/bin/env bash
# Launch cost of one restricted `true`, side by side in one run:
#   - the npm sandbox-runtime (`srt -c true`, installed by install-peers.sh
#     into $SRT_PREFIX);
#   - bare bubblewrap (`bwrap --ro-bind / / --unshare-all -- /bin/true`);
#   - our `agent-run -- true` (proxies, bridges, full policy, the command under
#     the name guard) and `agent-run --no-filename-rules --no-name-guard --
#     true` (the same without the guard);
#   - our `agent-run --mechanism landlock -- true` (the Landlock mechanism,
#     for hosts where bubblewrap cannot make namespaces: no namespaces, the
#     command under the launcher's Landlock rules and supervisor);
#   - our `agent-run --workdir TREE -- true`, TREE a repository of 3,000
#     directories four deep (the walk for nested repositories at launch and
#     at exit reads each one; bubblewrap's work does not grow with it);
#   - the floor of our policy: bubblewrap with the very argv `agent-run --
#     true` gave it (its mounts, namespaces and the guard), started directly,
#     with no proxies, bridge or session around it. The argv is caught by a
#     `bwrap` earlier on PATH that records it and runs the real one.
# Prints median wall time (hyperfine) and peak RSS (GNU time, largest process)
# per tool and the ratios against srt. The tools take turns: ROUNDS=3 rounds
# of RUNS=10 runs each by default; SMOKE=1 runs each tool 3 times after one
# warm-up, in one round, with one memory run, nothing timed asserted. Needs
# bubblewrap, socat, ripgrep, hyperfine, GNU time and srt (see
# install-peers.sh). Exits non-zero when a tool fails or never ran.
set -euo pipefail
# The commands below are split on spaces unquoted; their patterns (`*.key`)
# are arguments, never globs.
set -f
cd "$(dirname "$0")/../.."
. benches/compare/support/common.sh
if smoke; then
    RUNS=${RUNS:-3} WARMUP=1 MEM_RUNS=1 ROUNDS=${ROUNDS:-1}
else
    RUNS=${RUNS:-10} WARMUP=2 MEM_RUNS=5 ROUNDS=${ROUNDS:-3}
fi

need bwrap socat rg hyperfine /usr/bin/time python3
SRT="$SRT_PREFIX/node_modules/.bin/srt"
[ -x "$SRT" ] || bash benches/compare/install-peers.sh >&2 || true
[ -x "$SRT" ] || die "missing peer: $SRT"

# Smoke mode times nothing: the dev build the tests made serves.
if smoke; then profile=dev dir=debug; else profile=release dir=release; fi
# name-guard-exec beside agent-run: agent-run starts it as the guard.
cargo build --locked -q --profile "$profile" -p agent-sandbox-examples -p asbx-name-guard \
    --bin agent-run --bin name-guard-exec
AGENT_RUN="$TARGET_DIR/$dir/agent-run"

work=$(mktemp -d)
# Outside $work, which is the other runs' working directory.
tree=$(mktemp -d)
trap 'rm -rf "$work" "$tree"' EXIT
cd "$work"

# A checkout-sized working directory: 20 x 15 x 10 directories, a file in
# each, a repository at its root.
python3 - "$tree" <<'PY'
import os, sys
root = sys.argv[1]
for a in range(20):
    for b in range(15):
        for c in range(10):
            d = os.path.join(root, "d%d" % a, "e%d" % b, "f%d" % c)
            os.makedirs(d)
            open(os.path.join(d, "x.rs"), "w").close()
os.makedirs(os.path.join(root, ".git"))
PY

declare -A CMD=(
    [srt]="$SRT -c true"
    [bwrap]="bwrap --ro-bind / / --unshare-all -- /bin/true"
    [agent-run]="$AGENT_RUN -- true"
    [agent-run-noguard]="$AGENT_RUN --no-filename-rules --no-name-guard -- true"
    [agent-run-landlock]="$AGENT_RUN --mechanism landlock -- true"
    [agent-run-tree]="$AGENT_RUN --workdir $tree -- true"
)
TOOLS="srt bwrap bwrap-policy agent-run agent-run-noguard agent-run-landlock agent-run-tree"

# The policy's floor: the argv agent-run gives bubblewrap, less what only
# works with agent-run around it (the descriptors it passes, the session
# directory it removes at the end, the session's init in place of the
# command).
REAL_BWRAP=$(command -v bwrap)
mkdir "$work/spy" "$work/gone"
printf '#!/bin/sh\nprintf "%%s\\n" "$@" > "%s/argv"\nexec %s "$@"\n' "$work" "$REAL_BWRAP" > "$work/spy/bwrap"
chmod +x "$work/spy/bwrap"
PATH="$work/spy:$PATH" "$AGENT_RUN" -- true > "$work/spy.out" 2>&1 || {
    sed "s/^/  spy: /" "$work/spy.out" >&2
    die "agent-run failed under the argv spy"
}
[ -s "$work/argv" ] || die "agent-run never started bubblewrap"
CMD[bwrap-policy]=$(python3 - "$work/argv" "$work/gone" "$REAL_BWRAP" <<'PY'
import os, sys
argv = open(sys.argv[1]).read().split("\n")[:-1]
gone, real = sys.argv[2], sys.argv[3]
# A warm session's sandbox runs our init (on a socket only agent-run
# holds); the floor runs the command itself in its place.
if "--session-init" in argv:
    last = len(argv) - 1 - argv[::-1].index("--")
    argv = argv[:last + 1] + ["/bin/true"]
out, i = [real], 0
while i < len(argv):
    a = argv[i]
    if any(c.isspace() for c in a):
        sys.exit("an argument holds white space: " + repr(a))
    if a in ("--info-fd", "--block-fd", "--sync-fd", "--userns-block-fd", "--report-fd",
             "--updates-fd", "--notify-fd"):
        i += 2
        continue
    if a in ("--bind", "--ro-bind") and not os.path.exists(argv[i + 1]):
        out += [a, gone, argv[i + 2]]
        i += 3
        continue
    out.append(a)
    i += 1
print(" ".join(out))
PY
)
declare -A MED MEM OK
for name in $TOOLS; do
    MED[$name]=0 MEM[$name]=0 OK[$name]=0
    # One plain run first, so that a failing tool shows its own error.
    if ! ${CMD[$name]} > "$work/$name.out" 2>&1; then
        sed "s/^/  $name: /" "$work/$name.out" >&2
        fail "$name" "the command failed"
        continue
    fi
    # Ours must really have sandboxed the command (and guarded it).
    case $name in
    agent-run*) grep -q "backend native" "$work/$name.out" || fail "$name" "not the native backend" ;;
    esac
    if [ "$name" = agent-run ] && ! grep -q "enforced at creation by name-guard" "$work/$name.out"; then
        fail "$name" "the name guard is not in force"
    fi
    if [ "$name" = agent-run-landlock ] && ! grep -q "backend native (landlock: " "$work/$name.out"; then
        fail "$name" "not the Landlock mechanism"
    fi
    OK[$name]=1
done
# The tools take turns, ROUNDS times RUNS each, so that the machine's drift
# (bare bwrap seen at 3.5 and 4.3 ms in two runs minutes apart) falls on
# all of them alike; each one's median is over all its rounds.
for round in $(seq "$ROUNDS"); do
    for name in $TOOLS; do
        [ "${OK[$name]}" = 1 ] || continue
        hyperfine -N -w "$WARMUP" -r "$RUNS" --export-json "$work/$name.$round.json" "${CMD[$name]}" \
            > "$work/$name.log" 2>&1 || sed "s/^/  $name: /" "$work/$name.log" >&2
    done
done
for name in $TOOLS; do
    [ "${OK[$name]}" = 1 ] || continue
    # median ms, runs, failed runs
    read -r med runs bad < <(python3 - "$work" "$name" "$ROUNDS" <<'PY'
import json, statistics, sys
work, name, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
times, bad = [], 0
for r in range(1, rounds + 1):
    try:
        res = json.load(open("%s/%s.%d.json" % (work, name, r)))["results"][0]
    except Exception:
        bad += 1
        continue
    times += res["times"]
    bad += sum(1 for c in (res.get("exit_codes") or []) if c)
print("%.1f" % (statistics.median(times) * 1000) if times else "0", len(times), bad)
PY
)
    check "$name" "$runs" "$bad"
    MED[$name]=$med
    peak=0
    for _ in $(seq "$MEM_RUNS"); do
        m=$(/usr/bin/time -f %M ${CMD[$name]} 2>&1 >/dev/null | tail -1)
        [ "$m" -gt "$peak" ] && peak=$m
    done
    MEM[$name]=$(python3 -c "print('%.1f'%($peak/1024))")
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "n/a" }'; }
printf '%-20s %12s %12s %12s %12s %12s\n' tool "median ms" "peak MiB" "wall vs srt" "mem vs srt" "vs bwrap"
for name in $TOOLS; do
    printf '%-20s %12s %12s %12s %12s %12s\n' "$name" "${MED[$name]}" "${MEM[$name]}" \
        "$(ratio "${MED[$name]}" "${MED[srt]}")" "$(ratio "${MEM[$name]}" "${MEM[srt]}")" \
        "$(ratio "${MED[$name]}" "${MED[bwrap]}")"
done
echo
echo "targets (this run)"
target "launch: agent-run -- true / bare bwrap" "${MED[agent-run]}" "${MED[bwrap]}" "<=" 2
target "launch: agent-run --mechanism landlock / bwrap" "${MED[agent-run-landlock]}" "${MED[bwrap]}" "<=" 2
echo "  what the policy itself costs in bubblewrap: bwrap-policy / bare bwrap = $(ratio "${MED[bwrap-policy]}" "${MED[bwrap]}")"
echo "  what agent-run adds around it: agent-run / bwrap-policy = $(ratio "${MED[agent-run]}" "${MED[bwrap-policy]}")"
echo "  what a working directory of 3,000 directories adds: agent-run-tree / agent-run = $(ratio "${MED[agent-run-tree]}" "${MED[agent-run]}")"
finish
