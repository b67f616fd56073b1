#!/usr/bin/env bash
# graphql-classifier against apollo-parser and cynic-parser on the same bytes
# (the kitchen-sink document and a 1 MiB generated query), in one criterion
# run; prints MiB/s per parser and our speed over the faster peer.
#
#   bash benches/compare/graphql-classifier.sh [measurement seconds, default 5]
set -euo pipefail
cd "$(dirname "$0")/../.."
secs="${1:-5}"
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
cargo bench --locked -p graphql-classifier --bench classify -- \
  --warm-up-time 1 --measurement-time "$secs" 2>/dev/null | tee "$out" >/dev/null
awk '
  /^(kitchen-sink|generated-1MiB)\/[a-z-]+/ { name = $1; if ($0 !~ /thrpt:/) next }
  name != "" && /thrpt:/ {
    v = $4; u = $5
    if (u ~ /^GiB/) v *= 1024; else if (u ~ /^KiB/) v /= 1024
    split(name, p, "/"); rate[p[1], p[2]] = v; groups[p[1]] = 1; name = ""
  }
  END {
    printf "%-16s %12s %12s %12s %10s\n", "input", "ours MiB/s", "apollo", "cynic", "ratio"
    for (g in groups) {
      ours = rate[g, "graphql-classifier"]; a = rate[g, "apollo-parser"]; c = rate[g, "cynic-parser"]
      best = (a > c) ? a : c
      printf "%-16s %12.1f %12.1f %12.1f %9.1fx\n", g, ours, a, c, (best > 0 ? ours / best : 0)
    }
  }' "$out"
