#!/usr/bin/env bash
# HTTPS through a credential-injecting proxy, side by side in one run:
#   direct to the origin | our proxy + broker | mitmproxy (mitmdump)
# for keep-alive connections and for a new connection per request.
# Prints requests/s, p50 and p99 latency, and the ratios.
#
#   bash benches/compare/broker.sh            CONNS=8 SECS=3 ROUNDS=5 tune the load
#   SMOKE=1 bash benches/compare/broker.sh    1 s per case, one round, nothing timed asserted
#
# Each round runs the three paths in turn, so a slow minute of the machine
# falls on all of them alike; the ratios use each path's median over the
# rounds, and every round's own keep-alive ratio is printed too. Five
# rounds by default: mitmproxy's own rate moves by a third from one round
# to the next (592 to 861 req/s within one run), so a median of three
# still swings across the keep-alive target.
#
# The origin, our proxy pair with the broker and the load client are in
# crates/agent-sandbox/benches/broker_load.rs. Needs mitmproxy (see
# install-peers.sh). Exits non-zero when a case has errors or no request.
set -euo pipefail
cd "$(dirname "$0")/../.."
. benches/compare/support/common.sh
CONNS=${CONNS:-8}
SECS=${SECS:-$(smoke && echo 1 || echo 3)}
ROUNDS=${ROUNDS:-$(smoke && echo 1 || echo 5)}

need mitmdump python3
LOAD=$(bench_helper asbx-agent-sandbox broker_load)

WORK=$(mktemp -d)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

mkfifo "$WORK/hold"
"$LOAD" serve "$WORK" < "$WORK/hold" > "$WORK/serve.json" &
PIDS+=($!)
exec 3> "$WORK/hold"
wait_file "$WORK/serve.json" "$!"
json() { python3 -c "import json;print(json.load(open('$WORK/serve.json'))['$1'])"; }
ORIGIN=$(json origin); ORIGIN_CA=$(json origin_ca); PROXY=$(json proxy); SESSION_CA=$(json session_ca)

MITM_PORT=$(free_port)
HOME="$WORK" mitmdump -q --listen-host 127.0.0.1 --listen-port "$MITM_PORT" \
    --set ssl_verify_upstream_trusted_ca="$ORIGIN_CA" --set confdir="$WORK/mitm" &
PIDS+=($!)
wait_port "$MITM_PORT" "$!"
MITM_CA="$WORK/mitm/mitmproxy-ca-cert.pem"
wait_file "$MITM_CA"

run() { # label load-args... -> "REQ/S P50 P99 ERRORS", the last error on stderr
    "$LOAD" load --origin "$ORIGIN" --conns "$CONNS" --secs "$SECS" "${@:2}" 2>> "$WORK/$1.err"
}
declare -A R
for r in $(seq "$ROUNDS"); do
    for mode in keepalive new; do
        R[direct-$mode#$r]=$(run "direct-$mode" --ca "$ORIGIN_CA" --mode $mode)
        R[ours-$mode#$r]=$(run "ours-$mode" --ca "$SESSION_CA" --proxy "$PROXY" --mode $mode)
        R[mitm-$mode#$r]=$(run "mitm-$mode" --ca "$MITM_CA" --proxy "127.0.0.1:$MITM_PORT" --mode $mode)
    done
done
# key: the median of each of the first three columns over the rounds, and
# the errors of all rounds added up.
median() {
    local c r
    for c in 1 2 3; do
        for r in $(seq "$ROUNDS"); do echo "${R[$1#$r]}" | awk -v c=$c '{ print $c }'; done |
            sort -g | awk '{ v[NR] = $1 } END { printf "%s ", v[int((NR + 1) / 2)] }'
    done
    for r in $(seq "$ROUNDS"); do echo "${R[$1#$r]}"; done | awk '{ e += $4 } END { print e + 0 }'
}
for mode in keepalive new; do
    for who in direct ours mitm; do R[$who-$mode]=$(median "$who-$mode"); done
done

echo "HTTPS GET, $CONNS connections, ${SECS}s each, median of $ROUNDS rounds (req/s, p50 ms, p99 ms, errors in all rounds)"
printf '%-22s %10s %9s %9s %7s\n' path req/s p50 p99 errors
for mode in keepalive new; do
    for who in direct ours mitm; do
        read -r rps p50 p99 err <<< "${R[$who-$mode]}"
        printf '%-22s %10s %9s %9s %7s\n' "$who ($mode)" "$rps" "$p50" "$p99" "$err"
        check "$who ($mode)" "$rps" "$err"
        if [ -s "$WORK/$who-$mode.err" ]; then sed "s/^/  $who ($mode): /" "$WORK/$who-$mode.err" >&2; fi
    done
done
ratio() { python3 -c "a,b=float('$1'),float('$2');print('%.2fx'%(a/b) if b else 'n/a')"; }
if [ "$ROUNDS" -gt 1 ]; then
    for r in $(seq "$ROUNDS"); do
        read -r o _ _ _ <<< "${R[ours-keepalive#$r]}"
        read -r m _ _ _ <<< "${R[mitm-keepalive#$r]}"
        echo "round $r keep-alive: ours $o req/s, mitmproxy $m req/s, ours / mitmproxy = $(ratio "$o" "$m")"
    done
fi
added() { python3 -c "print('%.3f ms'%(float('$1')-float('$2')))"; }
for mode in keepalive new; do
    read -r o_rps o_p50 _ _ <<< "${R[ours-$mode]}"
    read -r m_rps _ _ _ <<< "${R[mitm-$mode]}"
    read -r d_rps d_p50 _ _ <<< "${R[direct-$mode]}"
    want=$([ "$mode" = keepalive ] && echo 50 || echo 20)
    echo "$mode: ours / mitmproxy = $(ratio "$o_rps" "$m_rps") req/s (target >= ${want}x); ours / direct = $(ratio "$o_rps" "$d_rps"); added p50 over direct = $(added "$o_p50" "$d_p50") (target <= 1 ms)"
done
read -r on _ _ _ <<< "${R[ours-new]}"
read -r mn _ _ _ <<< "${R[mitm-new]}"
read -r dn _ _ _ <<< "${R[direct-new]}"
read -r ok _ _ _ <<< "${R[ours-keepalive]}"
read -r mk _ _ _ <<< "${R[mitm-keepalive]}"
echo
echo "targets (this run)"
target "new connection per request: ours / direct" "$on" "$dn" ">=" 0.45
target "new connection per request: ours / mitmproxy" "$on" "$mn" ">=" 20
target "keep-alive: ours / mitmproxy" "$ok" "$mk" ">=" 50
finish
