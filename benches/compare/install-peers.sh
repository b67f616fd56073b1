#!/usr/bin/env bash
# Installs every peer tool benches/compare/*.sh needs, when it is missing:
# Debian packages with apt-get (tinyproxy, microsocks, mitmproxy, hyperfine,
# bubblewrap, socat, ripgrep, GNU time, curl, gcc with libc6-dev, git, tar,
# python3, npm) and the npm sandbox-runtime (`srt`) into $SRT_PREFIX
# (default /tmp/srt-prefix). Idempotent: when everything is there it
# installs nothing. apt-get needs root or sudo.
set -euo pipefail
cd "$(dirname "$0")/../.."
. benches/compare/support/common.sh

# command:Debian package
PEERS="curl:curl tinyproxy:tinyproxy microsocks:microsocks mitmdump:mitmproxy
hyperfine:hyperfine bwrap:bubblewrap socat:socat rg:ripgrep /usr/bin/time:time
cc:gcc git:git tar:tar python3:python3 npm:npm"

missing=()
for p in $PEERS; do
    command -v "${p%%:*}" >/dev/null 2>&1 || missing+=("${p##*:}")
done
# The C relays of proxy.sh need the C library headers too.
[ -e /usr/include/stdio.h ] || missing+=(libc6-dev)
if [ "${#missing[@]}" -gt 0 ]; then
    sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    echo "installing: ${missing[*]}" >&2
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ ! -x "$SRT_PREFIX/node_modules/.bin/srt" ]; then
    echo "installing: @anthropic-ai/sandbox-runtime into $SRT_PREFIX" >&2
    mkdir -p "$SRT_PREFIX"
    npm install --silent --no-audit --no-fund --prefix "$SRT_PREFIX" @anthropic-ai/sandbox-runtime >&2
fi

bad=()
for p in $PEERS; do command -v "${p%%:*}" >/dev/null 2>&1 || bad+=("${p%%:*}"); done
[ -x "$SRT_PREFIX/node_modules/.bin/srt" ] || bad+=("$SRT_PREFIX/node_modules/.bin/srt")
[ "${#bad[@]}" -eq 0 ] || die "still missing: ${bad[*]}"
echo "peers: all present"
