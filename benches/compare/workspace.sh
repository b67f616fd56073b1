#!/usr/bin/env bash
# A task's workspace (R-WORKSPACE) against what a host does without us, in
# one run, on a generated repository (FILES files in 100-file directories,
# about SIZE_MB in all, one commit):
#   - the first `git status` in the checkout itself (the floor);
#   - `git worktree add` of a new branch and its first `git status` (what
#     hosts do today, git's own way to a second working tree);
#   - `cp -a --reflink=auto` of the checkout and its first `git status` (a
#     plain copy; a reflink where the file system has one);
#   - ours, per backend: a session launched in a workspace, less one
#     launched without (what the workspace adds to a launch: "create"), its
#     first `git status` inside, a fork, and collecting 100 commits.
# The driver is the facade's example `workspace_bench`. Targets (meant for
# where the kernel gives a copy-on-write view): creation at most 50 ms
# whatever the size; the first status inside at most 2x the checkout's;
# creation plus first status at most 0.1x `git worktree add` plus its
# status. Printed as met / not met, never asserted. SMOKE=1: a dev build, a
# small repository, one run, 5 commits collected, bubblewrap, Landlock and
# gVisor; nothing timed asserted. Needs git and bubblewrap (runsc and QEMU for their backends).
set -euo pipefail
cd "$(dirname "$0")/../.."
. benches/compare/support/common.sh
if smoke; then
    FILES=${FILES:-400} SIZE_MB=${SIZE_MB:-4} RUNS=${RUNS:-1} COMMITS=${COMMITS:-5} profile=dev dir=debug
    BACKENDS=${BACKENDS:-bubblewrap landlock gvisor}
else
    FILES=${FILES:-50000} SIZE_MB=${SIZE_MB:-1024} RUNS=${RUNS:-3} COMMITS=${COMMITS:-100} profile=release dir=release
    BACKENDS=${BACKENDS:-bubblewrap landlock gvisor qemu}
fi
need bwrap git python3
cargo build --locked -q --profile "$profile" -p asbx-agent-sandbox --example workspace_bench
DRIVER="$TARGET_DIR/$dir/examples/workspace_bench"
[ -x "$DRIVER" ] || die "could not build the workspace_bench example"

# The repository goes where the sessions' temp dir is (the same file
# system, as a host's checkouts and its temp dir usually are).
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
repo=$work/repo
mkdir "$repo"
python3 - "$repo" "$FILES" "$SIZE_MB" <<'PY'
import os, random, sys
root, files, size_mb = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
each = size_mb * 1024 * 1024 // files
rnd = random.Random(7)
for i in range(files):
    d = os.path.join(root, "src", "d%04d" % (i // 100))
    if i % 100 == 0:
        os.makedirs(d)
    # Source-like text: words from a small vocabulary, so git's deltas and
    # zlib see what they see in a real tree.
    words = [rnd.choice(("fn", "let", "mut", "self", "impl", "match", "Some", "None", "x%d" % (i % 97)))
             for _ in range(each // 5 + 1)]
    with open(os.path.join(d, "f%05d.rs" % i), "w") as f:
        f.write(" ".join(words)[:each] + "\n")
PY
git -C "$repo" init -q -b main
git -C "$repo" add -A
git -C "$repo" -c user.name=b -c user.email=b@example.invalid -c gc.auto=0 -c maintenance.auto=false commit -qm tree
# Packed, as a repository that has lived is, and with no gc left to start
# on its own during the runs.
git -C "$repo" config gc.auto 0
git -C "$repo" config maintenance.auto false
git -C "$repo" gc -q
echo "repository: $FILES files, $(du -sm "$repo" --exclude=.git | cut -f1) MB of working tree, $(du -sm "$repo/.git" | cut -f1) MB of .git"

declare -A ALL
for backend in $BACKENDS; do
    case $backend in
    gvisor) command -v runsc >/dev/null || { fail "$backend" "runsc missing (apt-get install runsc)"; continue; } ;;
    qemu) command -v qemu-system-x86_64 >/dev/null || { fail "$backend" "QEMU missing (apt-get install qemu-system-x86)"; continue; } ;;
    esac
    if ! line=$(TMPDIR=$work "$DRIVER" --repo "$repo" --backend "$backend" --runs "$RUNS" --commits "$COMMITS" 2>"$work/err"); then
        tail -5 "$work/err" >&2
        fail "$backend" "the driver failed"
        continue
    fi
    echo "$backend: $line"
    for kv in $line; do ALL[$backend.${kv%%=*}]=${kv#*=}; done
done

echo
echo "medians in ms (create = a launch in a workspace less a launch without; fork likewise):"
printf '  %-11s %8s %9s %8s %8s %8s %10s %8s %8s %10s\n' backend host_st worktree copy plain create ws_status fork "" collect100
for backend in $BACKENDS; do
    [ -n "${ALL[$backend.plain]:-}" ] || continue
    printf '  %-11s %8s %9s %8s %8s %8s %10s %8s %8s %10s\n' "$backend" \
        "${ALL[$backend.host_status]}" "${ALL[$backend.worktree]}" "${ALL[$backend.copy]}" \
        "${ALL[$backend.plain]}" "${ALL[$backend.create]}" "${ALL[$backend.ws_status]}" \
        "${ALL[$backend.fork]}" "" "${ALL[$backend.collect100]}"
done
echo
echo "targets:"
for backend in $BACKENDS; do
    [ -n "${ALL[$backend.plain]:-}" ] || continue
    target "$backend: creation / 50 ms" "${ALL[$backend.create]}" 50 "<=" 1
    target "$backend: first status / the checkout's" "${ALL[$backend.ws_status]}" "${ALL[$backend.host_status]}" "<=" 2
    both=$(awk -v a="${ALL[$backend.create]}" -v b="${ALL[$backend.ws_status]}" 'BEGIN { print a + b }')
    target "$backend: creation+status / worktree add+status" "$both" "${ALL[$backend.worktree]}" "<=" 0.1
    target "$backend: creation+status / cp -a+status" "$both" "${ALL[$backend.copy]}" "<=" 1
    check "$backend" 1 0
done
finish
