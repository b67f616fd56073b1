#!/usr/bin/env bash
# Smoke run of every comparison: installs the peers (install-peers.sh), then
# runs each benches/compare/*.sh with SMOKE=1, two at a time (about a
# second per case, nothing timed asserted; a case with errors or no
# successful operation, or
# a missing peer, fails the script) and prints one line per script. Exits
# non-zero if any failed; the tail of a failed script's output follows its
# line.
set -euo pipefail
cd "$(dirname "$0")/../.."
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

bash benches/compare/install-peers.sh > "$logs/install-peers.log" 2>&1 ||
    { tail -20 "$logs/install-peers.log" >&2; echo "install-peers FAILED" >&2; exit 1; }

# Two scripts at a time (SMOKE_JOBS): a smoke run times nothing, and most
# of a script's time is waiting on processes it starts, so a pair shares
# the machine's cores without either failing for it. The lines come out in
# the scripts' order once all have ended.
jobs_max=${SMOKE_JOBS:-2}
run_one() { # run_one NAME SCRIPT: its log, status and seconds, in $logs
    local start=$SECONDS status=ok
    SMOKE=1 bash "$2" >"$logs/$1.log" 2>&1 || status=FAILED
    echo "$status $((SECONDS - start))" >"$logs/$1.result"
}
names=()
for script in benches/compare/*.sh; do
    name=$(basename "$script" .sh)
    case $name in install-peers | smoke-all) continue ;; esac
    names+=("$name")
    while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n || true; done
    run_one "$name" "$script" &
done
wait
failed=0
for name in "${names[@]}"; do
    read -r status secs <"$logs/$name.result" || { status=FAILED secs=0; }
    printf '%-20s %-6s %4ss\n' "$name" "$status" "$secs"
    if [ "$status" = FAILED ]; then
        failed=1
        tail -15 "$logs/$name.log" | sed 's/^/    /'
    fi
done
exit "$failed"
