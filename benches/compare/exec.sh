#!/usr/bin/env bash
# The cost of one command in a native session, against the host running the
# same command, in one run:
#   - host: the driver itself runs EXECS sequential `/bin/true`, then EXECS
#     `git status --short` (in a small repository made for the run) as its
#     own children: fork and exec through the standard library, output
#     piped and read, no shell between.
#   - ours, bubblewrap and Landlock: one session of each mechanism (the
#     repository mounted writable, the name guard on), the same commands
#     through `exec`, each timed from `exec` to its last event with its
#     output read. First with the default, one warm sandbox per session;
#     then with `CommandIsolation::FreshSandboxPerCommand` (a new sandbox
#     for every command, the cost before warm sessions), for scale.
# The driver is the facade's example `exec_bench`. Prints each figure's
# median over ROUNDS rounds and the ratios; targets: p50 of both commands at
# most 1.5x the host's, under bubblewrap and under Landlock. SMOKE=1: a dev
# build, one round of 20 execs, nothing timed asserted. Needs bubblewrap
# and git. Exits non-zero when a run fails.
set -euo pipefail
cd "$(dirname "$0")/../.."
. benches/compare/support/common.sh
if smoke; then
    EXECS=${EXECS:-20} ROUNDS=${ROUNDS:-1} profile=dev dir=debug
else
    EXECS=${EXECS:-1000} ROUNDS=${ROUNDS:-3} profile=release dir=release
fi
need bwrap git
cargo build --locked -q --profile "$profile" -p asbx-agent-sandbox --example exec_bench
DRIVER="$TARGET_DIR/$dir/examples/exec_bench"
[ -x "$DRIVER" ] || die "could not build the exec_bench example"

declare -A ALL
add() { # add WHO LINE: appends each name=value of LINE to ALL[WHO.name]
    local kv
    for kv in $2; do ALL[$1.${kv%%=*}]+="${kv#*=} "; done
}
runs=(
    "host|--host"
    "bwrap|--mechanism bubblewrap"
    "landlock|--mechanism landlock"
    "bwrap-fresh|--mechanism bubblewrap --per-command"
    "landlock-fresh|--mechanism landlock --per-command"
)
for round in $(seq "$ROUNDS"); do
    for r in "${runs[@]}"; do
        who=${r%%|*}
        # shellcheck disable=SC2086 # the flags split on purpose
        line=$("$DRIVER" ${r#*|} --execs "$EXECS") || { fail "$who" "the driver failed"; continue; }
        printf 'round %s %-15s %s\n' "$round" "$who:" "$line"
        add "$who" "$line"
    done
done

median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else print v[int((NR + 1) / 2)] }'; }
declare -A MED
for key in "${!ALL[@]}"; do MED[$key]=$(echo "${ALL[$key]}" | median); done

echo
echo "exec: median of $ROUNDS round(s), $EXECS execs of each command, milliseconds"
printf '  %-10s %9s %9s %9s %12s %15s\n' figure host bwrap landlock bwrap-fresh landlock-fresh
for f in true_p50 true_p99 git_p50 git_p99; do
    printf '  %-10s %9s %9s %9s %12s %15s\n' "$f" "${MED[host.$f]:--}" "${MED[bwrap.$f]:--}" \
        "${MED[landlock.$f]:--}" "${MED[bwrap-fresh.$f]:--}" "${MED[landlock-fresh.$f]:--}"
done
echo
for m in bwrap landlock; do
    target "/bin/true p50, $m session / host" "${MED[$m.true_p50]:-}" "${MED[host.true_p50]:-}" "<=" 1.5
    target "git status p50, $m session / host" "${MED[$m.git_p50]:-}" "${MED[host.git_p50]:-}" "<=" 1.5
done
# For scale, no target: a fresh sandbox per command against the host.
for m in bwrap-fresh landlock-fresh; do
    awk -v m="$m" -v a="${MED[$m.true_p50]:-0}" -v b="${MED[host.true_p50]:-0}" \
        'BEGIN { if (b > 0) printf "  /bin/true p50, %s / host: %.1fx (no target)\n", m, a / b }'
done
finish
