#!/usr/bin/env bash
# Launch cost of one restricted `true`, side by side in one run:
#   - the npm sandbox-runtime (`srt -c true`), installed into a private prefix;
#   - bare bubblewrap (`bwrap --ro-bind / / --unshare-all -- /bin/true`);
#   - our `agent-run -- true` (proxies, bridges, full policy, the command under
#     the name guard) and `agent-run --no-filename-rules -- true` (the same
#     without the guard).
# Prints median wall time (hyperfine) and peak RSS (GNU time, largest process)
# per tool and the ratios against srt. Needs: bubblewrap socat ripgrep hyperfine
# time, node/npm; installs the Debian ones with apt-get when missing.
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-30}

need=()
for t in bwrap:bubblewrap socat:socat rg:ripgrep hyperfine:hyperfine /usr/bin/time:time; do
    command -v "${t%%:*}" >/dev/null 2>&1 || need+=("${t##*:}")
done
if [ "${#need[@]}" -gt 0 ]; then apt-get update -qq && apt-get install -y -qq "${need[@]}"; fi

SRT_PREFIX=${SRT_PREFIX:-/tmp/srt-prefix}
if [ ! -x "$SRT_PREFIX/node_modules/.bin/srt" ]; then
    mkdir -p "$SRT_PREFIX"
    npm install --silent --prefix "$SRT_PREFIX" @anthropic-ai/sandbox-runtime >/dev/null
fi
SRT="$SRT_PREFIX/node_modules/.bin/srt"

cargo build --release --locked -q -p agent-sandbox-examples --bin agent-run
AGENT_RUN="$PWD/target/release/agent-run"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

declare -A CMD=(
    [srt]="$SRT -c true"
    [bwrap]="bwrap --ro-bind / / --unshare-all -- /bin/true"
    [agent-run]="$AGENT_RUN -- true"
    [agent-run-noguard]="$AGENT_RUN --no-filename-rules -- true"
)
declare -A MED MEM
for name in srt bwrap agent-run agent-run-noguard; do
    hyperfine -N -w 3 -r "$RUNS" --export-json "$work/$name.json" "${CMD[$name]}" >/dev/null 2>&1
    MED[$name]=$(python3 -c "import json,statistics;r=json.load(open('$work/$name.json'))['results'][0];print('%.1f'%(statistics.median(r['times'])*1000))")
    peak=0
    for _ in 1 2 3 4 5; do
        m=$(/usr/bin/time -f %M ${CMD[$name]} 2>&1 >/dev/null | tail -1)
        [ "$m" -gt "$peak" ] && peak=$m
    done
    MEM[$name]=$(python3 -c "print('%.1f'%($peak/1024))")
done

printf '%-18s %14s %14s %12s %12s\n' tool "median ms" "peak MiB" "wall vs srt" "mem vs srt"
for name in srt bwrap agent-run agent-run-noguard; do
    printf '%-18s %14s %14s %12s %12s\n' "$name" "${MED[$name]}" "${MEM[$name]}" \
        "$(python3 -c "print('%.2fx'%(${MED[$name]}/${MED[srt]}))")" \
        "$(python3 -c "print('%.2fx'%(${MEM[$name]}/${MEM[srt]}))")"
done
