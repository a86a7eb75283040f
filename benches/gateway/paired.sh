#!/usr/bin/env bash
# Throughput of `steadfast serve` as a share of the plain forwarder's (the floor), in
# pairs: both run side by side for the whole script, in front of one upstream (the
# fixed answer, or the mock), and each round measures one right after the other (the
# order alternating round by round), so that both halves of a pair see the machine in
# the same state.
# On a machine whose speed drifts from minute to minute, the median of the pairs'
# ratios is steadier than two figures taken minutes apart. See README.md beside it.
#
# Usage: benches/gateway/paired.sh
# Knobs (environment):
#   ROUNDS=10  SECONDS_EACH=2  WARMUP_SECONDS=0.5  CONCURRENCY="64 256"
#   GATEWAY_THREADS=1   STEADFAST=target/release/steadfast   the binary measured
#   UPSTREAM=fixed   or mock: `steadfast mock --scenario ok` (two worker threads)
# It listens on and sends to 127.0.0.1 only; logs go to target/gateway-bench/paired/.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=$ROOT/target/gateway-bench/paired
BIN=$ROOT/target/release
ROUNDS=${ROUNDS:-10}
SECONDS_EACH=${SECONDS_EACH:-2}
WARMUP_SECONDS=${WARMUP_SECONDS:-0.5}
CONCURRENCY=${CONCURRENCY:-64 256}
GATEWAY_THREADS=${GATEWAY_THREADS:-1}
STEADFAST=${STEADFAST:-$BIN/steadfast}
UPSTREAM=${UPSTREAM:-fixed}

# shellcheck source=common.sh
. "$ROOT/benches/gateway/common.sh"

mkdir -p "$OUT"
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT


# rps URL CONCURRENCY: requests a second of 2xx answers (any error fails the script).
rps() {
    local line
    line=$(send_load throughput --url "$1" --concurrency "$2" \
        --seconds "$SECONDS_EACH" --warmup-seconds "$WARMUP_SECONDS")
    if [[ $line != *" errors=0 "* ]]; then
        echo "paired.sh: errors against $1: $line" >&2
        exit 1
    fi
    line=${line#* rps=}
    echo "${line%% *}"
}

(cd "$ROOT" && cargo build --release -q -p steadfast-cli -p steadfast-gateway-bench)

case $UPSTREAM in
fixed) start_server "$OUT" upstream 30 "$BIN/upstream" ;;
mock) start_server "$OUT" upstream 30 "$BIN/steadfast" mock --scenario ok --addr 127.0.0.1:0 ;;
*)
    echo "paired.sh: UPSTREAM is fixed or mock, not $UPSTREAM" >&2
    exit 1
    ;;
esac
UP_URL=$URL
steadfast_config "$OUT/steadfast.toml" "$UP_URL"
start_server "$OUT" forward 30 env "TOKIO_WORKER_THREADS=$GATEWAY_THREADS" "$BIN/forward" --upstream "$UP_URL" \
    --threads "$GATEWAY_THREADS"
FORWARD=$URL
start_server "$OUT" steadfast 30 env "TOKIO_WORKER_THREADS=$GATEWAY_THREADS" "STEADFAST_BENCH_MOCK_KEY=$MOCK_KEY" \
    "$STEADFAST" serve --config "$OUT/steadfast.toml" --addr 127.0.0.1:0
GATEWAY=$URL

echo "| concurrency | round | forward req/s | steadfast req/s | ratio |"
echo "| ---: | ---: | ---: | ---: | ---: |"
SUMMARY=()
for c in $CONCURRENCY; do
    ratios=()
    for ((r = 1; r <= ROUNDS; r++)); do
        if ((r % 2)); then
            f=$(rps "$FORWARD" "$c")
            s=$(rps "$GATEWAY" "$c")
        else
            s=$(rps "$GATEWAY" "$c")
            f=$(rps "$FORWARD" "$c")
        fi
        ratio=$(awk -v s="$s" -v f="$f" 'BEGIN {printf "%.3f", s / f}')
        ratios+=("$ratio")
        echo "| $c | $r | $f | $s | $ratio |"
    done
    SUMMARY+=("$(printf '%s\n' "${ratios[@]}" | sort -n | awk -v c="$c" '
        {v[NR] = $1}
        END {
            m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
            printf "c=%s: median ratio %.3f (lowest %.3f, highest %.3f, %d pairs)", c, m, v[1], v[NR], NR
        }')")
done
echo
printf '%s\n' "${SUMMARY[@]}"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
