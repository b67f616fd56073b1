# shellcheck shell=bash
# Sourced by benches/compare/*.sh (from the workspace root), not run: the
# smoke switch, peer checks, the release build of a bench helper, loopback
# waits, and the record of failed cases.
#
# SMOKE=1 selects smoke mode: about a second per case, no timing asserted.
# In both modes a case fails when it has errors or no successful operation,
# and `finish` then exits non-zero after the results are printed.

SMOKE=${SMOKE:-0}
# Where cargo puts what it builds (the scripts run from the workspace root).
TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
SRT_PREFIX=${SRT_PREFIX:-/tmp/srt-prefix}
FAILED=()

smoke() { [ "$SMOKE" = 1 ]; }

die() {
    echo "$(basename "$0"): $*" >&2
    exit 1
}

# need CMD...: every command must exist; when one is missing,
# install-peers.sh runs once, and a command still missing is an error.
need() {
    local c missing=()
    for c in "$@"; do command -v "$c" >/dev/null 2>&1 || missing+=("$c"); done
    [ "${#missing[@]}" -eq 0 ] && return 0
    echo "missing ${missing[*]}: running install-peers.sh" >&2
    bash benches/compare/install-peers.sh >&2 || true
    for c in "${missing[@]}"; do
        command -v "$c" >/dev/null 2>&1 || die "missing peer: $c"
    done
}

# bench_helper PACKAGE BENCH: builds the bench target (release profile,
# --locked; in smoke mode the dev profile, whose dependencies the tests have
# built already: nothing is timed there) and prints the path of its
# executable. BENCH_FEATURES, when set, is passed as --features (for
# example cred-broker/aws-lc-rs).
#
# In smoke mode without BENCH_FEATURES the bench is picked from the whole
# workspace (bench names are unique there): its dependencies then get the
# features `cargo test --workspace` gave them and are not built again, as
# they are with `-p PACKAGE`'s own feature resolution.
bench_helper() {
    local exe profile=() features=() select=(-p "$1")
    if smoke; then profile=(--profile dev); fi
    if [ -n "${BENCH_FEATURES:-}" ]; then
        features=(--features "$BENCH_FEATURES")
    elif smoke; then
        select=(--workspace)
    fi
    exe=$(cargo bench --locked -q "${profile[@]}" "${features[@]}" "${select[@]}" --bench "$2" --no-run --message-format=json-render-diagnostics |
        sed -n "s/.*\"executable\":\"\([^\"]*\/$2-[^\"]*\)\".*/\1/p" | tail -1)
    [ -x "$exe" ] || die "could not build the $2 bench of $1"
    echo "$exe"
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wait_port PORT [PID]: waits up to 20 s for 127.0.0.1:PORT to accept;
# fails early when PID (the process that should listen) has exited.
wait_port() {
    local _
    for _ in $(seq 200); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        if [ -n "${2:-}" ] && ! kill -0 "$2" 2>/dev/null; then
            die "the process meant to listen on port $1 exited"
        fi
        sleep 0.1
    done
    die "port $1 never opened"
}

# wait_file FILE [PID]: waits up to 20 s for FILE to be non-empty.
wait_file() {
    local _
    for _ in $(seq 200); do
        [ -s "$1" ] && return 0
        if [ -n "${2:-}" ] && ! kill -0 "$2" 2>/dev/null; then
            die "the process meant to write $1 exited"
        fi
        sleep 0.1
    done
    die "timed out waiting for $1"
}

# check CASE OPS ERRORS: the case passes with OPS > 0 and ERRORS = 0.
check() {
    if ! awk -v n="$2" 'BEGIN { exit !(n + 0 > 0) }'; then
        FAILED+=("$1: no successful operation (ops=$2, errors=$3)")
    elif [ "$3" != 0 ]; then
        FAILED+=("$1: $3 errors (ops=$2)")
    fi
}

# target LABEL OURS FLOOR OP LIMIT: prints the ratio OURS / FLOOR with its
# target (OP is <= or >=) and whether this run met it. Only printed, never
# asserted: timings drift on a shared machine, and smoke mode times nothing.
target() {
    local note=""
    if smoke; then note=" [smoke mode: a dev build, not a measurement]"; fi
    awk -v l="$1" -v a="$2" -v b="$3" -v op="$4" -v t="$5" -v note="$note" 'BEGIN {
        if (a == "" || a == "-" || b == "" || b == "-" || b + 0 <= 0) {
            printf "  %-46s n/a    (target %s %sx: not measured)%s\n", l, op, t, note
            exit
        }
        r = a / b
        met = (op == "<=") ? (r <= t + 0) : (r >= t + 0)
        # Three decimals below 10 (one above), so that a ratio just off
        # its target never prints as the target itself (1.004x, not 1x).
        shown = (r < 10) ? sprintf("%.3f", r) : sprintf("%.1f", r)
        printf "  %-46s %sx  (target %s %sx: %s)%s\n", l, shown, op, t, met ? "met" : "not met", note
    }'
}

# fail CASE REASON: records a failed case.
fail() { FAILED+=("$1: $2"); }

# finish: lists the failed cases and exits non-zero if there are any.
finish() {
    if [ "${#FAILED[@]}" -gt 0 ]; then
        printf 'FAILED: %s\n' "${FAILED[@]}" >&2
        exit 1
    fi
    if smoke; then echo "smoke: every case ok"; fi
}
