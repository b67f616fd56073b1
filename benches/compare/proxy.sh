#!/usr/bin/env bash
# Egress proxies side by side on loopback, in one run:
#   direct | ours (HTTP CONNECT) | ours (SOCKS5) | tinyproxy (CONNECT) | microsocks (SOCKS5)
#   and, for the download, the ceiling of any relay here: a minimal C
#   forwarder (benches/compare/support/fwd.c: no CONNECT, no policy, blocking
#   threads) copying through a buffer and with splice(2); for the connection
#   rate, a minimal single-threaded epoll forwarder (support/fwd_epoll.c).
# (a) a 1 GiB download with curl, (b) new connections per second for a 1 KiB
# page at 32 concurrent connections, with p50/p99 latency. Prints ratios.
#
# Usage: bash benches/compare/proxy.sh            (from the workspace root)
#   SECONDS_PER_RATE=3 CONCURRENCY=32 to tune; VARIANTS lists the copy
#   buffer sizes to run ours with; the first one (the crate's default) is
#   the one the ratios use.
# Needs curl, tinyproxy and microsocks; installs the Debian packages when
# missing (apt-get, root or sudo).
set -euo pipefail

cd "$(dirname "$0")/../.."
RATE_SECS=${SECONDS_PER_RATE:-3}
CONC=${CONCURRENCY:-32}
VARIANTS=${VARIANTS:-"262144 65536 8192"}

need=()
command -v curl >/dev/null || need+=(curl)
command -v tinyproxy >/dev/null || need+=(tinyproxy)
command -v microsocks >/dev/null || need+=(microsocks)
if ((${#need[@]})); then
    echo "installing ${need[*]}" >&2
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}"
fi

echo "building the load helper (release)" >&2
LOAD=$(cargo bench -p connect-proxy --bench proxy_load --no-run --message-format=json 2>/dev/null |
    sed -n 's/.*"executable":"\([^"]*proxy_load[^"]*\)".*/\1/p' | tail -1)
[ -x "$LOAD" ] || { echo "could not build the proxy_load helper" >&2; exit 1; }

WORK=$(mktemp -d)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

wait_line() { # file -> first line, waiting up to 10 s
    for _ in $(seq 100); do
        [ -s "$1" ] && { head -1 "$1"; return; }
        sleep 0.1
    done
    echo "timed out waiting for $1" >&2
    exit 1
}

wait_port() {
    for _ in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return
        sleep 0.1
    done
    echo "port $1 never opened" >&2
    exit 1
}

# The origin.
"$LOAD" origin >"$WORK/origin" &
PIDS+=($!)
ORIGIN_PORT=$(wait_line "$WORK/origin")
ORIGIN="127.0.0.1:$ORIGIN_PORT"

# Ours, once per copy variant.
declare -A OURS_HTTP OURS_SOCKS OURS_PID
for v in $VARIANTS; do
    "$LOAD" proxy --copy-buffer "$v" >"$WORK/ours-$v" &
    PIDS+=($!)
    OURS_PID[$v]=$!
    read -r h s < <(wait_line "$WORK/ours-$v")
    OURS_HTTP[$v]=$h
    OURS_SOCKS[$v]=$s
done
BEST_BUF=${VARIANTS%% *}

# tinyproxy.
TP_PORT=$(free_port)
{
    echo "Port $TP_PORT"
    echo "Listen 127.0.0.1"
    echo "Timeout 600"
    echo "MaxClients 1024"
    echo "Allow 127.0.0.1"
    echo "LogLevel Critical"
    echo "DisableViaHeader Yes"
    if [ "$(id -u)" -eq 0 ]; then echo "User nobody"; echo "Group nogroup"; fi
} >"$WORK/tinyproxy.conf"
tinyproxy -d -c "$WORK/tinyproxy.conf" >"$WORK/tinyproxy.log" 2>&1 &
PIDS+=($!)
TP_PID=$!

# microsocks.
MS_PORT=$(free_port)
microsocks -i 127.0.0.1 -p "$MS_PORT" >"$WORK/microsocks.log" 2>&1 &
PIDS+=($!)
MS_PID=$!
wait_port "$TP_PORT"
wait_port "$MS_PORT"

# The minimal C forwarders.
FWD_COPY_PORT="" FWD_SPLICE_PORT="" FWD_EPOLL_PORT="" FWD_EPOLL_PID=0
if command -v cc >/dev/null && cc -O2 -pthread -o "$WORK/fwd" benches/compare/support/fwd.c &&
    cc -O2 -o "$WORK/fwd_epoll" benches/compare/support/fwd_epoll.c; then
    FWD_COPY_PORT=$(free_port)
    "$WORK/fwd" copy "$FWD_COPY_PORT" "$ORIGIN_PORT" &
    PIDS+=($!)
    FWD_SPLICE_PORT=$(free_port)
    "$WORK/fwd" splice "$FWD_SPLICE_PORT" "$ORIGIN_PORT" &
    PIDS+=($!)
    FWD_EPOLL_PORT=$(free_port)
    "$WORK/fwd_epoll" "$FWD_EPOLL_PORT" "$ORIGIN_PORT" &
    PIDS+=($!)
    FWD_EPOLL_PID=$!
    wait_port "$FWD_COPY_PORT"
    wait_port "$FWD_SPLICE_PORT"
    wait_port "$FWD_EPOLL_PORT"
else
    echo "no C compiler: the forwarder ceiling rows are skipped" >&2
fi

download() { # curl args... -> bytes per second
    curl -sS --noproxy '' -o /dev/null -w '%{speed_download}' "$@" "http://$ORIGIN/1g"
}
download_at() { # port -> bytes per second, straight to a forwarder
    curl -sS --noproxy '' -o /dev/null -w '%{speed_download}' "http://127.0.0.1:$1/1g"
}

gbps() { awk -v b="$1" 'BEGIN { printf "%.2f", b / 1e9 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "n/a" }'; }

echo
echo "(a) 1 GiB download with curl, loopback"
printf '%-32s %10s %10s\n' "path" "GB/s" "vs direct"
D_DIRECT=$(download)
printf '%-32s %10s %10s\n' "direct" "$(gbps "$D_DIRECT")" "1.00x"
declare -A D_OURS_HTTP D_OURS_SOCKS
for buf in $VARIANTS; do
    D_OURS_HTTP[$buf]=$(download -p -x "http://${OURS_HTTP[$buf]}")
    printf '%-32s %10s %10s\n' "ours CONNECT (buf $buf)" "$(gbps "${D_OURS_HTTP[$buf]}")" "$(ratio "${D_OURS_HTTP[$buf]}" "$D_DIRECT")"
    D_OURS_SOCKS[$buf]=$(download --socks5 "${OURS_SOCKS[$buf]}")
    printf '%-32s %10s %10s\n' "ours SOCKS5 (buf $buf)" "$(gbps "${D_OURS_SOCKS[$buf]}")" "$(ratio "${D_OURS_SOCKS[$buf]}" "$D_DIRECT")"
done
D_TP=$(download -p -x "http://127.0.0.1:$TP_PORT")
printf '%-32s %10s %10s\n' "tinyproxy CONNECT" "$(gbps "$D_TP")" "$(ratio "$D_TP" "$D_DIRECT")"
D_MS=$(download --socks5 "127.0.0.1:$MS_PORT")
printf '%-32s %10s %10s\n' "microsocks SOCKS5" "$(gbps "$D_MS")" "$(ratio "$D_MS" "$D_DIRECT")"
D_FWD=0
if [ -n "$FWD_COPY_PORT" ]; then
    D_FC=$(download_at "$FWD_COPY_PORT")
    printf '%-32s %10s %10s\n' "C forwarder, copy (ceiling)" "$(gbps "$D_FC")" "$(ratio "$D_FC" "$D_DIRECT")"
    D_FS=$(download_at "$FWD_SPLICE_PORT")
    printf '%-32s %10s %10s\n' "C forwarder, splice (ceiling)" "$(gbps "$D_FS")" "$(ratio "$D_FS" "$D_DIRECT")"
    D_FWD=$(awk -v a="$D_FC" -v b="$D_FS" 'BEGIN { print (a > b) ? a : b }')
fi

echo
echo "(b) new connections/s, 1 KiB page, $CONC concurrent, ${RATE_SECS}s each"
echo "(the client and the origin share the 2 cores; the last column is the"
echo " proxy's own CPU time per connection, user + system, from /proc)"
printf '%-32s %10s %9s %9s %7s %12s\n' "path" "conn/s" "p50 ms" "p99 ms" "errors" "proxy us/conn"
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
HZ=$(getconf CLK_TCK)
rate() { # pid-or-0 rate-args... -> "conn/s p50 p99 errors us/conn"
    rate_to "$ORIGIN" "$@"
}
rate_to() { # origin pid-or-0 rate-args... -> as rate
    local origin=$1 pid=$2 before after out
    shift 2
    before=$([ "$pid" = 0 ] && echo 0 || ticks "$pid")
    out=$("$LOAD" rate --origin "$origin" --concurrency "$CONC" --seconds "$RATE_SECS" "$@")
    after=$([ "$pid" = 0 ] && echo 0 || ticks "$pid")
    echo "$out" | awk -v t=$((after - before)) -v hz="$HZ" -v s="$RATE_SECS" \
        '{ c = $1 * s; printf "%s %s %s %s %s", $1, $2, $3, $4, (t > 0 && c > 0) ? sprintf("%.1f", t * 1e6 / hz / c) : "-" }'
}
row() { printf '%-32s %10s %9s %9s %7s %12s\n' "$1" $2; }
R_DIRECT=$(rate 0 --via direct); row "direct" "$R_DIRECT"
R_OURS_HTTP=$(rate "${OURS_PID[$BEST_BUF]}" --via connect --proxy "${OURS_HTTP[$BEST_BUF]}"); row "ours CONNECT" "$R_OURS_HTTP"
R_OURS_SOCKS=$(rate "${OURS_PID[$BEST_BUF]}" --via socks --proxy "${OURS_SOCKS[$BEST_BUF]}"); row "ours SOCKS5" "$R_OURS_SOCKS"
R_TP=$(rate "$TP_PID" --via connect --proxy "127.0.0.1:$TP_PORT"); row "tinyproxy CONNECT" "$R_TP"
R_MS=$(rate "$MS_PID" --via socks --proxy "127.0.0.1:$MS_PORT"); row "microsocks SOCKS5" "$R_MS"
R_FWD="0 0 0 0 -"
if [ -n "$FWD_EPOLL_PORT" ]; then
    R_FWD=$(rate_to "127.0.0.1:$FWD_EPOLL_PORT" "$FWD_EPOLL_PID" --via direct); row "C epoll forwarder (ceiling)" "$R_FWD"
fi

f() { echo "$1" | awk -v i="$2" '{ print $i }'; }
echo
echo "ratios (ours with buffer $BEST_BUF)"
echo "  throughput  ours CONNECT / direct      = $(ratio "${D_OURS_HTTP[$BEST_BUF]}" "$D_DIRECT")   (target >= 0.6x)"
echo "  throughput  ours CONNECT / tinyproxy   = $(ratio "${D_OURS_HTTP[$BEST_BUF]}" "$D_TP")   (target >= 3x)"
echo "  throughput  C forwarder   / direct      = $(ratio "$D_FWD" "$D_DIRECT")   (the ceiling of any relay here)"
echo "  throughput  ours CONNECT / C forwarder = $(ratio "${D_OURS_HTTP[$BEST_BUF]}" "$D_FWD")"
echo "  throughput  ours SOCKS5  / microsocks  = $(ratio "${D_OURS_SOCKS[$BEST_BUF]}" "$D_MS")"
echo "  conn/s      ours CONNECT / tinyproxy   = $(ratio "$(f "$R_OURS_HTTP" 1)" "$(f "$R_TP" 1)")   (target >= 1.5x)"
echo "  conn/s      C forwarder  / tinyproxy   = $(ratio "$(f "$R_FWD" 1)" "$(f "$R_TP" 1)")   (the ceiling of any relay here)"
echo "  conn/s      ours CONNECT / C forwarder = $(ratio "$(f "$R_OURS_HTTP" 1)" "$(f "$R_FWD" 1)")"
echo "  conn/s      ours SOCKS5  / microsocks  = $(ratio "$(f "$R_OURS_SOCKS" 1)" "$(f "$R_MS" 1)")"
echo "  p99         ours CONNECT / tinyproxy   = $(ratio "$(f "$R_OURS_HTTP" 3)" "$(f "$R_TP" 3)")   (target <= 1.00x)"
echo "  p99         ours SOCKS5  / microsocks  = $(ratio "$(f "$R_OURS_SOCKS" 3)" "$(f "$R_MS" 3)")"
echo "  CPU/conn    ours CONNECT / tinyproxy   = $(ratio "$(f "$R_OURS_HTTP" 5)" "$(f "$R_TP" 5)")   (lower is better)"
echo "  CPU/conn    ours SOCKS5  / microsocks  = $(ratio "$(f "$R_OURS_SOCKS" 5)" "$(f "$R_MS" 5)")"
