#!/usr/bin/env bash
# Instructions a request: `steadfast serve` and the plain forwarder (the floor) under
# callgrind, one worker thread each, in front of the fixed-answer upstream. Each gets
# WARMUP sequential requests first (not counted), then REQUESTS counted ones; the count
# is the gateway process's instructions over those requests, divided by REQUESTS.
# Unlike the wall-clock figures of run.sh, it does not move with other work on the
# machine, so it compares builds. See README.md beside it.
#
# With CONCURRENCY=N it measures under load instead: N connections send for LOAD_SECONDS
# after as many seconds of warm-up, with callgrind's cache model (level 1 as this CPU's,
# the last level as its 2 MB level-2 cache), and prints instructions and misses a
# request over every request answered while it counted.
#
# Usage: benches/gateway/callgrind.sh
# Knobs (environment):
#   GATEWAYS="forward steadfast"   REQUESTS=2000   WARMUP=300
#   CONCURRENCY= (sequential)   LOAD_SECONDS=10
#   CACHE="--I1=32768,8,64 --D1=49152,12,64 --LL=2097152,16,64"
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
CONCURRENCY=${CONCURRENCY:-}
LOAD_SECONDS=${LOAD_SECONDS:-10}
CACHE=${CACHE:---I1=32768,8,64 --D1=49152,12,64 --LL=2097152,16,64}

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
    send_load latency --url "$1" --warmup 0 --requests "$2" >/dev/null
}

# load URL SECONDS: CONCURRENCY connections for SECONDS; prints the answers counted.
load() {
    local line
    line=$(send_load throughput --url "$1" --concurrency "$CONCURRENCY" \
        --seconds "$2" --warmup-seconds 0)
    line=${line#* all_ok=}
    echo "${line%% *}"
}

(cd "$ROOT" && cargo build --release -q -p steadfast-cli -p steadfast-gateway-bench)

start_server "$OUT" upstream 120 "$BIN/upstream"
UP_URL=$URL

steadfast_config "$OUT/steadfast.toml" "$UP_URL"

TOOL=(--tool=callgrind)
if [[ -n $CONCURRENCY ]]; then
    read -r -a cache <<<"$CACHE"
    TOOL+=(--cache-sim=yes "${cache[@]}")
    printf '| gateway | instructions | L1 data misses | last-level misses | a request, %s connections |\n' "$CONCURRENCY"
    printf '| --- | ---: | ---: | ---: | --- |\n'
else
    printf '| gateway | instructions a request |\n| --- | ---: |\n'
fi
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
    start_server "$OUT" "$gw" 120 env TOKIO_WORKER_THREADS=1 "STEADFAST_BENCH_MOCK_KEY=$MOCK_KEY" valgrind "${TOOL[@]}" --instr-atstart=no \
        --callgrind-out-file="$OUT/$gw.callgrind.%p" "${cmd[@]}"
    gw_pid=$STARTED
    if [[ -n $CONCURRENCY ]]; then
        load "$URL" "$LOAD_SECONDS" >/dev/null
        callgrind_control -i on "$gw_pid" >/dev/null 2>&1
        counted=$(load "$URL" "$LOAD_SECONDS")
    else
        requests "$URL" "$WARMUP"
        callgrind_control -i on "$gw_pid" >/dev/null 2>&1
        requests "$URL" "$REQUESTS"
        counted=$REQUESTS
    fi
    callgrind_control -i off "$gw_pid" >/dev/null 2>&1
    callgrind_control -d "$gw_pid" >/dev/null 2>&1
    kill -TERM "$gw_pid"
    wait "$gw_pid" 2>/dev/null || true
    # totals: Ir, and with the cache model Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw.
    grep -h '^totals:' "$OUT/$gw.callgrind".* | awk -v gw="$gw" -v n="$counted" -v load="$CONCURRENCY" '
        {for (i = 2; i <= NF; i++) t[i] += $i}
        END {
            if (load == "") printf "| %s | %.1f k |\n", gw, t[2] / n / 1000
            else printf "| %s | %.1f k | %.0f | %.1f | %d answers |\n", gw, t[2] / n / 1000,
                (t[6] + t[7]) / n, (t[9] + t[10]) / n, n
        }'
done
