#!/usr/bin/env bash
# Smoke run of every comparison: installs the peers (install-peers.sh), then
# runs each benches/compare/*.sh with SMOKE=1 (about a second per case,
# nothing timed asserted; a case with errors or no successful operation, or
# a missing peer, fails the script) and prints one line per script. Exits
# non-zero if any failed; the tail of a failed script's output follows its
# line.
set -euo pipefail
cd "$(dirname "$0")/../.."
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

bash benches/compare/install-peers.sh > "$logs/install-peers.log" 2>&1 ||
    { tail -20 "$logs/install-peers.log" >&2; echo "install-peers FAILED" >&2; exit 1; }

failed=0
for script in benches/compare/*.sh; do
    name=$(basename "$script" .sh)
    case $name in install-peers | smoke-all) continue ;; esac
    start=$SECONDS
    if SMOKE=1 bash "$script" > "$logs/$name.log" 2>&1; then status=ok; else status=FAILED; failed=1; fi
    printf '%-20s %-6s %4ss\n' "$name" "$status" $((SECONDS - start))
    if [ "$status" = FAILED ]; then tail -15 "$logs/$name.log" | sed 's/^/    /'; fi
done
exit "$failed"
