#!/usr/bin/env bash
# File-creation-heavy work under plain bubblewrap and under bubblewrap plus
# name-guard-exec (denying .env, *.key, *.pem), side by side in one run:
#   - create:  a shell loop creating, appending to and renaming 4000 files;
#   - tar:     extracting a tarball of 4000 small files in 40 directories;
#   - git:     git init + add + commit of 1000 files.
# Prints the median wall time of each side (runs alternate) and the guard's
# ratio per workload (target <= 1.5x).
#
#   bash benches/compare/name-guard.sh
#   NAME_GUARD_EXEC=/path/to/name-guard-exec RUNS=10 WORKLOADS="tar git" bash benches/compare/name-guard.sh
#
# Without NAME_GUARD_EXEC the launcher is built with the release profile.
# Needs bubblewrap, tar and git.
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-10}
for t in bwrap tar git; do
    command -v "$t" >/dev/null || { echo "missing: $t" >&2; exit 1; }
done
GUARD=${NAME_GUARD_EXEC:-}
if [ -z "$GUARD" ]; then
    cargo build --release --locked -q -p name-guard --bin name-guard-exec
    GUARD="$PWD/target/release/name-guard-exec"
fi
GUARD=$(realpath "$GUARD")

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/stage" "$work/run"
for d in $(seq 1 40); do
    mkdir -p "$work/stage/t/d$d"
    for f in $(seq 1 100); do echo "$d $f" > "$work/stage/t/d$d/f$f.txt"; done
done
tar -cf "$work/files.tar" -C "$work/stage" t
mkdir -p "$work/stage/g"
for f in $(seq 1 1000); do echo "$f" > "$work/stage/g/f$f.txt"; done

box=(bwrap --ro-bind / / --dev /dev --proc /proc --bind "$work/run" "$work/run"
     --ro-bind "$work/stage" "$work/stage" --ro-bind "$work/files.tar" "$work/files.tar"
     --ro-bind "$GUARD" "$GUARD" --setenv HOME "$work/run"
     --unshare-pid --die-with-parent --new-session --chdir "$work/run" --)
guard=("$GUARD" --deny .env --deny '*.key' --deny '*.pem' --)

declare -A script
script[create]='for i in $(seq 1 4000); do : > c$i.txt; echo x >> c$i.txt; mv c$i.txt r$i.txt; done'
script[tar]="tar -xf $work/files.tar"
script[git]="git init -q g && cp -r $work/stage/g/. g/ && cd g && git add -A && git -c user.name=b -c user.email=b@example.invalid commit -qm b"

# Plain and guarded runs alternate, each on an emptied directory, so that
# the file system's state (journal, caches) weighs on both columns alike.
clear_run() { find "$work/run" -mindepth 1 -delete; sync; }
ms() { local s e; s=$(date +%s%N); "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; exit 1; }; e=$(date +%s%N); echo $(( (e - s) / 1000000 )); }
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
printf '%-8s %14s %14s %8s\n' workload "bwrap ms" "bwrap+guard ms" ratio
for w in ${WORKLOADS:-create tar git}; do
    : > "$work/plain" ; : > "$work/guarded"
    for k in $(seq 1 $((RUNS + 1))); do
        clear_run; p=$(ms "${box[@]}" sh -c "${script[$w]}")
        clear_run; g=$(ms "${box[@]}" "${guard[@]}" sh -c "${script[$w]}")
        # The first pair warms caches and is not counted.
        if [ "$k" -gt 1 ]; then echo "$p" >> "$work/plain"; echo "$g" >> "$work/guarded"; fi
    done
    a=$(median < "$work/plain"); b=$(median < "$work/guarded")
    awk -v w="$w" -v a="$a" -v b="$b" 'BEGIN { printf "%-8s %14.1f %14.1f %7.2fx\n", w, a, b, b / a }'
done
