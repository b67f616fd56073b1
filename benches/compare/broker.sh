#!/usr/bin/env bash
# HTTPS through a credential-injecting proxy, side by side in one run:
#   direct to the origin | our proxy + broker | mitmproxy (mitmdump)
# for keep-alive connections and for a new connection per request.
# Prints requests/s, p50 and p99 latency, and the ratios.
#
# The origin, our proxy pair with the broker and the load client are in
# crates/agent-sandbox/benches/broker_load.rs. Needs mitmproxy (installs the
# Debian package when missing). CONNS and SECS tune the load.
set -euo pipefail
cd "$(dirname "$0")/../.."
CONNS=${CONNS:-8}
SECS=${SECS:-3}

if ! command -v mitmdump >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mitmproxy
fi
LOAD=$(cargo bench -p agent-sandbox --bench broker_load --no-run --message-format=json 2>/dev/null |
    sed -n 's/.*"executable":"\([^"]*broker_load[^"]*\)".*/\1/p' | tail -1)
[ -x "$LOAD" ] || { echo "could not build broker_load" >&2; exit 1; }

WORK=$(mktemp -d)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

mkfifo "$WORK/hold"
"$LOAD" serve "$WORK" < "$WORK/hold" > "$WORK/serve.json" &
PIDS+=($!)
exec 3> "$WORK/hold"
for _ in $(seq 100); do [ -s "$WORK/serve.json" ] && break; sleep 0.1; done
json() { python3 -c "import json,sys;print(json.load(open('$WORK/serve.json'))['$1'])"; }
ORIGIN=$(json origin); ORIGIN_CA=$(json origin_ca); PROXY=$(json proxy); SESSION_CA=$(json session_ca)

MITM_PORT=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
HOME="$WORK" mitmdump -q --listen-host 127.0.0.1 --listen-port "$MITM_PORT" \
    --set ssl_verify_upstream_trusted_ca="$ORIGIN_CA" --set confdir="$WORK/mitm" &
PIDS+=($!)
for _ in $(seq 200); do [ -s "$WORK/mitm/mitmproxy-ca-cert.pem" ] && break; sleep 0.1; done
sleep 1
MITM_CA="$WORK/mitm/mitmproxy-ca-cert.pem"

run() { "$LOAD" load --origin "$ORIGIN" --conns "$CONNS" --secs "$SECS" "$@"; }
declare -A R
for mode in keepalive new; do
    R[direct-$mode]=$(run --ca "$ORIGIN_CA" --mode $mode)
    R[ours-$mode]=$(run --ca "$SESSION_CA" --proxy "$PROXY" --mode $mode)
    R[mitm-$mode]=$(run --ca "$MITM_CA" --proxy "127.0.0.1:$MITM_PORT" --mode $mode)
done

echo "HTTPS GET, $CONNS connections, ${SECS}s each (req/s, p50 ms, p99 ms, errors)"
printf '%-22s %10s %9s %9s %7s\n' path req/s p50 p99 errors
for mode in keepalive new; do
    for who in direct ours mitm; do
        read -r rps p50 p99 err <<< "${R[$who-$mode]}"
        printf '%-22s %10s %9s %9s %7s\n' "$who ($mode)" "$rps" "$p50" "$p99" "$err"
    done
done
ratio() { python3 -c "a,b=float('$1'),float('$2');print('%.1fx'%(a/b) if b else 'n/a')"; }
added() { python3 -c "print('%.3f ms'%(float('$1')-float('$2')))"; }
for mode in keepalive new; do
    read -r o_rps o_p50 _ _ <<< "${R[ours-$mode]}"
    read -r m_rps _ _ _ <<< "${R[mitm-$mode]}"
    read -r d_rps d_p50 _ _ <<< "${R[direct-$mode]}"
    echo "$mode: ours / mitmproxy = $(ratio "$o_rps" "$m_rps") req/s (target >= 20x); added p50 over direct = $(added "$o_p50" "$d_p50") (target <= 1 ms)"
done
