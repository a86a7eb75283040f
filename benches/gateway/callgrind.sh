#!/usr/bin/env bash
# Instructions a request: `steadfast serve` and the plain forwarder (the floor) under
# callgrind, one worker thread each, in front of the fixed-answer upstream. Each gets
# WARMUP sequential requests first (not counted), then REQUESTS counted ones; the count
# is the gateway process's instructions over those requests, divided by REQUESTS.
# Unlike the wall-clock figures of run.sh, it does not move with other work on the
# machine, so it compares builds. See README.md beside it.
#
# Usage: benches/gateway/callgrind.sh
# Knobs (environment):
#   GATEWAYS="forward steadfast"   REQUESTS=2000   WARMUP=300
#   STEADFAST=target/release/steadfast   the steadfast binary measured
# It listens on and sends to 127.0.0.1 only; everything it writes is under
# target/gateway-bench/callgrind/.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=$ROOT/target/gateway-bench/callgrind
BIN=$ROOT/target/release
GATEWAYS=${GATEWAYS:-forward steadfast}
REQUESTS=${REQUESTS:-2000}
WARMUP=${WARMUP:-300}
STEADFAST=${STEADFAST:-$BIN/steadfast}

# shellcheck source=common.sh
. "$ROOT/benches/gateway/common.sh"

command -v valgrind >/dev/null || {
    echo "callgrind.sh: needs valgrind (apt-get install valgrind)" >&2
    exit 1
}
mkdir -p "$OUT"

PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT


requests() { # requests URL COUNT
    "$BIN/loadgen" latency --url "$1" --body "$BODY" \
        --header 'content-type: application/json' \
        --header "authorization: Bearer $MOCK_KEY" \
        --warmup 0 --requests "$2" >/dev/null
}

(cd "$ROOT" && cargo build --release -q -p steadfast-cli -p steadfast-gateway-bench)

start_server "$OUT" upstream 120 "$BIN/upstream"
UP_URL=$URL

steadfast_config "$OUT/steadfast.toml" "$UP_URL"

printf '| gateway | instructions a request |\n| --- | ---: |\n'
for gw in $GATEWAYS; do
    case $gw in
    forward) cmd=("$BIN/forward" --upstream "$UP_URL") ;;
    steadfast) cmd=("$STEADFAST" serve --config "$OUT/steadfast.toml" --addr 127.0.0.1:0) ;;
    *)
        echo "callgrind.sh: unknown gateway $gw" >&2
        exit 1
        ;;
    esac
    rm -f "$OUT/$gw.callgrind".*
    # The variables go before valgrind: it does not follow an `env` it runs.
    start_server "$OUT" "$gw" 120 env TOKIO_WORKER_THREADS=1 "STEADFAST_BENCH_MOCK_KEY=$MOCK_KEY" valgrind --tool=callgrind --instr-atstart=no \
        --callgrind-out-file="$OUT/$gw.callgrind.%p" "${cmd[@]}"
    gw_pid=$STARTED
    requests "$URL" "$WARMUP"
    callgrind_control -i on "$gw_pid" >/dev/null 2>&1
    requests "$URL" "$REQUESTS"
    callgrind_control -i off "$gw_pid" >/dev/null 2>&1
    callgrind_control -d "$gw_pid" >/dev/null 2>&1
    kill -TERM "$gw_pid"
    wait "$gw_pid" 2>/dev/null || true
    total=$(grep -h '^totals:' "$OUT/$gw.callgrind".* | awk '{s += $2} END {print s}')
    awk -v gw="$gw" -v t="$total" -v n="$REQUESTS" \
        'BEGIN {printf "| %s | %.1f k |\n", gw, t / n / 1000}'
done
