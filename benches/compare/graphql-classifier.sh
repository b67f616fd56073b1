#!/usr/bin/env bash
# graphql-classifier against apollo-parser and cynic-parser on the same bytes
# (the kitchen-sink document and a 1 MiB generated query), in one criterion
# run; prints MiB/s per parser and our speed over the faster peer.
#
#   bash benches/compare/graphql-classifier.sh [measurement seconds, default 5]
#   SMOKE=1 bash benches/compare/graphql-classifier.sh   (10 samples, 0.5 s per case)
#
# Exits non-zero when a parser refused an input or a case measured nothing.
set -euo pipefail
cd "$(dirname "$0")/../.."
. benches/compare/support/common.sh
if smoke; then
    args=(--warm-up-time 0.2 --measurement-time 0.5 --sample-size 10)
else
    args=(--warm-up-time 1 --measurement-time "${1:-5}")
fi
BENCH=$(bench_helper asbx-graphql-classifier classify)
out="$(mktemp)"
err="$(mktemp)"
trap 'rm -f "$out" "$err"' EXIT
"$BENCH" --bench "${args[@]}" > "$out" 2> "$err" || { cat "$err" >&2; die "the classify bench failed"; }
# One "INPUT PARSER MiB/s" line per case criterion reported.
rates=$(awk '
  /^(kitchen-sink|generated-1MiB)\/[a-z-]+/ { name = $1; if ($0 !~ /thrpt:/) next }
  name != "" && /thrpt:/ {
    v = $(NF - 3); u = $(NF - 2)
    if (u ~ /^GiB/) v *= 1024; else if (u ~ /^KiB/) v /= 1024; else if (u ~ /^B\//) v /= 1048576
    split(name, p, "/"); print p[1], p[2], v; name = ""
  }' "$out")
rate() { echo "$rates" | awk -v g="$1" -v p="$2" '$1 == g && $2 == p { print $3 }'; }

printf '%-16s %12s %12s %12s %10s\n' input "ours MiB/s" apollo cynic ratio
for g in kitchen-sink generated-1MiB; do
    for p in graphql-classifier graphql-classifier-operations apollo-parser cynic-parser; do
        r=$(rate "$g" "$p")
        check "$g/$p" "${r:-0}" 0
    done
    awk -v g="$g" -v ours="$(rate "$g" graphql-classifier)" -v a="$(rate "$g" apollo-parser)" \
        -v c="$(rate "$g" cynic-parser)" 'BEGIN {
        best = (a > c) ? a : c
        printf "%-16s %12.1f %12.1f %12.1f %9.1fx\n", g, ours, a, c, (best > 0 ? ours / best : 0) }'
done
if [ -s "$err" ] && grep -q "refused\|apollo errors\|cannot build" "$err"; then
    fail classify "$(grep "refused\|apollo errors\|cannot build" "$err" | head -3 | tr '\n' ' ')"
fi
finish
