#!/usr/bin/env bash
# File-creation-heavy work under plain bubblewrap and under bubblewrap plus
# name-guard-exec (denying .env, *.key, *.pem), side by side in one run:
#   - create:  a shell loop creating, appending to and renaming 4000 files;
#   - tar:     extracting a tarball of 4000 small files in 40 directories;
#   - git:     git init + add + commit of 1000 files.
# and the Landlock mechanism beside them: the same launcher with
# `--landlock` on the host, no bubblewrap (writes only in the run directory,
# reads everywhere, the same names denied).
# Prints the median wall time of each side (runs alternate) and the guard's
# ratio per workload (target <= 1.3x), and Landlock's ratio to plain
# bubblewrap. Each workload runs twice: in a directory on the disk (the
# target's measure) and in one on tmpfs (/dev/shm), where no disk hides
# the guard's own cost.
#
#   bash benches/compare/name-guard.sh
#   NAME_GUARD_EXEC=/path/to/name-guard-exec RUNS=10 WORKLOADS="tar git" bash benches/compare/name-guard.sh
#   SMOKE=1 bash benches/compare/name-guard.sh   (200 files, one counted pair, nothing timed asserted)
#
# Without NAME_GUARD_EXEC the launcher is built with the release profile
# (the dev profile in smoke mode).
# Needs bubblewrap, tar and git. Exits non-zero when a run fails or leaves
# fewer files than it should, or when the guard lets a *.key file be created.
set -euo pipefail
cd "$(dirname "$0")/../.."
. benches/compare/support/common.sh
if smoke; then N=200 RUNS=${RUNS:-1}; else N=4000 RUNS=${RUNS:-10}; fi
need bwrap tar git
GUARD=${NAME_GUARD_EXEC:-}
if [ -z "$GUARD" ]; then
    # Smoke mode times nothing: the dev build the tests made serves.
    if smoke; then profile=dev dir=debug; else profile=release dir=release; fi
    cargo build --locked -q --profile "$profile" -p asbx-name-guard --bin name-guard-exec
    GUARD="$TARGET_DIR/$dir/name-guard-exec"
fi
GUARD=$(realpath "$GUARD")

# N files for create and tar (N/100 directories of 100), N/4 for git.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/stage" "$work/run"
for d in $(seq 1 $((N / 100))); do
    mkdir -p "$work/stage/t/d$d"
    for f in $(seq 1 100); do echo "$d $f" > "$work/stage/t/d$d/f$f.txt"; done
done
tar -cf "$work/files.tar" -C "$work/stage" t
mkdir -p "$work/stage/g"
for f in $(seq 1 $((N / 4))); do echo "$f" > "$work/stage/g/f$f.txt"; done

shm=$(mktemp -d -p /dev/shm)
trap 'rm -rf "$work" "$shm"' EXIT
guard=("$GUARD" --deny .env --deny '*.key' --deny '*.pem' --)
# use_run DIR: the workloads write in DIR from now on.
use_run() {
    run=$1
    mkdir -p "$run"
    box=(bwrap --ro-bind / / --dev /dev --proc /proc --bind "$run" "$run"
         --ro-bind "$work/stage" "$work/stage" --ro-bind "$work/files.tar" "$work/files.tar"
         --ro-bind "$GUARD" "$GUARD" --setenv HOME "$run"
         --unshare-pid --die-with-parent --new-session --chdir "$run" --)
    landlock=(env -C "$run" HOME="$run" "$GUARD" --landlock --write "$run"
              --deny .env --deny '*.key' --deny '*.pem' --)
}
# Each run writes in a directory of its own under BASE, made just before
# it; all of them are deleted at the end. Deleting a run's files before
# the next one (as this script first did) makes ext4 without a journal
# skip the inodes freed in the last seconds when it allocates new ones:
# `perf record` put two thirds of plain `tar`'s time in that scan
# (`recently_deleted`), which hid the guard's own cost.
base="$work/run"
runs=0
fresh_run() { runs=$((runs + 1)); use_run "$base/$runs"; }
fresh_run

declare -A script expect
script[create]="for i in \$(seq 1 $N); do : > c\$i.txt; echo x >> c\$i.txt; mv c\$i.txt r\$i.txt; done"
script[tar]="tar -xf $work/files.tar"
script[git]="git init -q g && cp -r $work/stage/g/. g/ && cd g && git add -A && git -c user.name=b -c user.email=b@example.invalid commit -qm b"
# What a run leaves behind, counted on the host: it must equal expect[w].
done_count() {
    case $1 in
    create) find "$run" -maxdepth 1 -name 'r*.txt' | wc -l ;;
    tar) find "$run/t" -type f 2>/dev/null | wc -l ;;
    git) git -C "$run/g" ls-tree -r --name-only HEAD 2>/dev/null | wc -l ;;
    esac
}
expect[create]=$N expect[tar]=$((N / 100 * 100)) expect[git]=$((N / 4))

# Plain and guarded runs alternate, each in a fresh directory after a
# sync, so that the file system's state weighs on both columns alike.
clear_run() { sync; fresh_run; }
ms() { # command... -> wall ms; the command's output goes to $work/last.log
    local s e
    s=$(date +%s%N)
    "$@" > "$work/last.log" 2>&1 || { sed 's/^/  /' "$work/last.log" >&2; die "failed: ${*: -1}"; }
    e=$(date +%s%N)
    echo $(( (e - s) / 1000000 ))
}
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# The guard must be in force, or the guarded column measures nothing.
clear_run
if "${box[@]}" "${guard[@]}" sh -c ': > probe.key' 2>/dev/null || [ -e "$run/probe.key" ]; then
    fail guard "creating probe.key was not refused"
fi
clear_run
if "${landlock[@]}" sh -c ': > probe.key' 2>/dev/null || [ -e "$run/probe.key" ]; then
    fail landlock "creating probe.key was not refused"
fi
if "${landlock[@]}" sh -c ": > $work/outside" 2>/dev/null || [ -e "$work/outside" ]; then
    fail landlock "writing outside the run directory was not refused"
fi

TARGETS=()
printf '%-8s %-5s %14s %14s %8s %14s %8s\n' workload on "bwrap ms" "bwrap+guard ms" ratio "landlock ms" ratio
measure() { # PLACE: each workload, in the current run directory
    local place=$1 w k p g l a b c ok bad
    for w in ${WORKLOADS:-create tar git}; do
        : > "$work/plain" ; : > "$work/guarded" ; : > "$work/landlock"
        ok=0 bad=0
        for k in $(seq 1 $((RUNS + 1))); do
            clear_run; p=$(ms "${box[@]}" sh -c "${script[$w]}")
            if [ "$(done_count "$w")" -eq "${expect[$w]}" ]; then ok=$((ok + 1)); else bad=$((bad + 1)); fi
            clear_run; g=$(ms "${box[@]}" "${guard[@]}" sh -c "${script[$w]}")
            if [ "$(done_count "$w")" -eq "${expect[$w]}" ]; then ok=$((ok + 1)); else bad=$((bad + 1)); fi
            clear_run; l=$(ms "${landlock[@]}" sh -c "${script[$w]}")
            if [ "$(done_count "$w")" -eq "${expect[$w]}" ]; then ok=$((ok + 1)); else bad=$((bad + 1)); fi
            # The first round warms caches and is not counted.
            if [ "$k" -gt 1 ]; then
                echo "$p" >> "$work/plain"; echo "$g" >> "$work/guarded"; echo "$l" >> "$work/landlock"
            fi
        done
        check "$w on $place" "$ok" "$bad"
        a=$(median < "$work/plain"); b=$(median < "$work/guarded"); c=$(median < "$work/landlock")
        awk -v w="$w" -v p="$place" -v a="$a" -v b="$b" -v c="$c" 'BEGIN { printf "%-8s %-5s %14.1f %14.1f %7.2fx %14.1f %7.2fx\n", w, p, a, b, (a > 0) ? b / a : 0, c, (a > 0) ? c / a : 0 }'
        if [ "$place" = disk ]; then TARGETS+=("$w $a $b"); fi
    done
}
measure disk
base="$shm"
fresh_run
measure tmpfs
echo "(tmpfs: the guard's own cost per creation, which the disk's cost hides; the target is on the disk)"
echo
echo "targets (this run)"
for t in "${TARGETS[@]}"; do
    read -r w a b <<< "$t"
    target "name guard, $w: bwrap + guard / bwrap" "$b" "$a" "<=" 1.3
done
finish
