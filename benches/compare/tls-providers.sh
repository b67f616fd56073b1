#!/usr/bin/env bash
# rustls's two crypto providers, ring (the broker's default) and aws-lc-rs
# (cred-broker's `aws-lc-rs` feature), side by side in one run on the
# broker's per-connection crypto: an ECDSA P-256 signature, a P-256 key
# pair, and whole TLS 1.3 handshakes in memory, new and resumed.
# Prints microseconds per operation and the ratio aws-lc-rs / ring.
#
#   bash benches/compare/tls-providers.sh          ROUNDS=11 ITERATIONS=200
#   SMOKE=1 bash benches/compare/tls-providers.sh  one short round, nothing timed
#
# The program is benches/tls-providers, a package of its own so that
# aws-lc-rs is no dependency of the project's crates.
set -euo pipefail
cd "$(dirname "$0")/../.."
. benches/compare/support/common.sh
if smoke; then
    echo "smoke mode: a debug build and five operations, not a measurement"
    args=(1 5) profile=()
else
    args=("${ROUNDS:-11}" "${ITERATIONS:-200}") profile=(--release)
fi
# The workspace's target directory: aws-lc's C, built there for cred-broker's
# aws-lc-rs feature, is built once for both (the two lock files pin the same
# aws-lc-rs).
cargo run --locked -q "${profile[@]}" --manifest-path benches/tls-providers/Cargo.toml \
    --target-dir "$TARGET_DIR" -- "${args[@]}"
