#!/usr/bin/env bash
# The gateway benchmark: added latency and throughput of `steadfast serve`, LiteLLM's
# proxy, Portkey's gateway and a plain forwarding proxy (the floor), all in one run,
# against the same loopback upstream with the same request. See README.md beside it.
#
# Usage: benches/gateway/run.sh
# Knobs (environment):
#   UPSTREAMS="mock fixed"   the upstreams measured against, one pass each: `steadfast
#                            mock --scenario ok` and/or the fixed-answer `upstream` bin
#   GATEWAYS="forward steadfast litellm portkey"
#   REQUESTS=2000 WARMUP=200 sequential requests per target (recorded / not recorded)
#   DURATION=10 WARMUP_SECONDS=2 CONCURRENCY="64 256"   the throughput runs
#   GATEWAY_THREADS=1        worker threads of the Rust gateways (LiteLLM and Portkey
#                            run one process, one event loop)
#   PIN=0                    1: gateway on CPU 1, upstream and load generator on CPU 0
#   PORTKEY_VERSION=1.15.2   the @portkey-ai/gateway version installed
#   LITELLM_SPEC='litellm[proxy]'   what pip installs into the venv (when missing)
# Everything it writes is under target/gateway-bench/; the table goes to stdout and to
# target/gateway-bench/results.md. It listens on and sends to 127.0.0.1 only.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=$ROOT/target/gateway-bench
BIN=$ROOT/target/release
LOGS=$OUT/logs

UPSTREAMS=${UPSTREAMS:-mock fixed}
GATEWAYS=${GATEWAYS:-forward steadfast litellm portkey}
REQUESTS=${REQUESTS:-2000}
WARMUP=${WARMUP:-200}
DURATION=${DURATION:-10}
WARMUP_SECONDS=${WARMUP_SECONDS:-2}
CONCURRENCY=${CONCURRENCY:-64 256}
GATEWAY_THREADS=${GATEWAY_THREADS:-1}
PIN=${PIN:-0}
PORTKEY_VERSION=${PORTKEY_VERSION:-1.15.2}
LITELLM_SPEC=${LITELLM_SPEC:-litellm[proxy]}

# shellcheck source=common.sh
. "$ROOT/benches/gateway/common.sh"
CHAT_PATH=/v1/chat/completions

mkdir -p "$OUT" "$LOGS"

# ---------------------------------------------------------------- processes

PIDS=()
stop_all() {
    local pid
    for pid in "${PIDS[@]}"; do
        kill -- "-$pid" 2>/dev/null || true
    done
}
trap stop_all EXIT
trap 'exit 130' INT TERM

# Where each side runs: CPU 1 for the gateway, CPU 0 for the upstream and the load.
GATEWAY_CPU=()
LOAD_CPU=()
if [[ $PIN == 1 ]] && command -v taskset >/dev/null && (($(nproc) >= 2)); then
    GATEWAY_CPU=(taskset -c 1)
    LOAD_CPU=(taskset -c 0)
fi

# start NAME CMD...: runs CMD in its own process group (so that stopping it stops its
# children too), stdout and stderr to logs/NAME.{out,err}; sets STARTED to its pid.
start() {
    local name=$1
    shift
    # Removed here, not by the redirection below: that runs in the child, after
    # first_line may already have read the last run's line.
    rm -f "$LOGS/$name.out" "$LOGS/$name.err"
    setsid "$@" >"$LOGS/$name.out" 2>"$LOGS/$name.err" </dev/null &
    STARTED=$!
    PIDS+=("$STARTED")
}

# stop PID: ends the process group PID and waits for it.
stop() {
    [[ -n $1 ]] || return 0
    kill -- "-$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
    local kept=() pid
    for pid in "${PIDS[@]}"; do
        [[ $pid == "$1" ]] || kept+=("$pid")
    done
    PIDS=("${kept[@]}")
}

# first_line NAME PID: waits (30 s at most) for the first line of logs/NAME.out.
first_line() {
    local file=$LOGS/$1.out i
    for ((i = 0; i < 300; i++)); do
        if [[ -s $file ]] && IFS= read -r line <"$file"; then
            printf '%s\n' "$line"
            return 0
        fi
        kill -0 "$2" 2>/dev/null || break
        sleep 0.1
    done
    return 1
}

# wait_http URL PID SECONDS: waits until URL answers anything over HTTP.
wait_http() {
    local i
    for ((i = 0; i < $3 * 10; i++)); do
        curl -s -o /dev/null --max-time 1 "$1" && return 0
        kill -0 "$2" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

HZ=$(getconf CLK_TCK)

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# cpu_ticks PID: user+system clock ticks of PID and its children so far.
cpu_ticks() {
    local total=0 p f
    for p in $(pgrep -g "$1" 2>/dev/null || echo "$1"); do
        f=$(cut -d' ' -f14,15 "/proc/$p/stat" 2>/dev/null) || continue
        total=$((total + ${f% *} + ${f#* }))
    done
    echo "$total"
}

# ---------------------------------------------------------------- setup

echo "== building the release binaries"
(cd "$ROOT" && cargo build --release -q -p steadfast-cli -p steadfast-gateway-bench)

SKIPPED=()
skip() { # skip NAME WHY
    echo "!! skipping $1: $2" >&2
    SKIPPED+=("$1: $2")
}

setup_litellm() {
    local venv=$OUT/venv
    if [[ ! -x $venv/bin/litellm ]]; then
        echo "== installing $LITELLM_SPEC into $venv"
        python3 -m venv "$venv" || return 1
        "$venv/bin/pip" install -q "$LITELLM_SPEC" >"$LOGS/pip.log" 2>&1 || {
            tail -5 "$LOGS/pip.log" >&2
            return 1
        }
    fi
    LITELLM_VERSION=$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("litellm"))')
}

setup_portkey() {
    local dir=$OUT/node
    PORTKEY_ENTRY=$dir/node_modules/@portkey-ai/gateway/build/start-server.js
    if [[ ! -f $PORTKEY_ENTRY ]] || [[ $(node -p "require('$dir/node_modules/@portkey-ai/gateway/package.json').version") != "$PORTKEY_VERSION" ]]; then
        echo "== installing @portkey-ai/gateway@$PORTKEY_VERSION into $dir"
        command -v npm >/dev/null || {
            echo "npm not found" >&2
            return 1
        }
        mkdir -p "$dir"
        npm install --prefix "$dir" --no-audit --no-fund "@portkey-ai/gateway@$PORTKEY_VERSION" \
            >"$LOGS/npm.log" 2>&1 || {
            tail -5 "$LOGS/npm.log" >&2
            return 1
        }
    fi
}

LITELLM_VERSION=none
PORTKEY_ENTRY=
has() { [[ " $GATEWAYS " == *" $1 "* ]]; }
if has litellm && ! setup_litellm; then
    skip litellm "pip install '$LITELLM_SPEC' failed (see $LOGS/pip.log)"
    GATEWAYS=${GATEWAYS/litellm/}
fi
if has portkey && ! setup_portkey; then
    skip portkey "npm install @portkey-ai/gateway@$PORTKEY_VERSION failed (see $LOGS/npm.log)"
    GATEWAYS=${GATEWAYS/portkey/}
fi
if has steadfast && ! "$BIN/steadfast" serve --help >/dev/null 2>&1; then
    skip steadfast "this build's \`steadfast\` has no \`serve\` command"
    GATEWAYS=${GATEWAYS/steadfast/}
fi

# ---------------------------------------------------------------- upstreams

# start_upstream KIND: starts the upstream, sets UP_URL and UP_PID.
start_upstream() {
    case $1 in
    mock) start upstream-mock "${LOAD_CPU[@]}" "$BIN/steadfast" mock --scenario ok --addr 127.0.0.1:0 ;;
    fixed) start upstream-fixed "${LOAD_CPU[@]}" "$BIN/upstream" --addr 127.0.0.1:0 ;;
    *)
        echo "unknown upstream $1 (mock or fixed)" >&2
        return 1
        ;;
    esac
    UP_PID=$STARTED
    UP_URL=$(first_line "upstream-$1" "$UP_PID") || {
        cat "$LOGS/upstream-$1.err" >&2
        return 1
    }
}

# ---------------------------------------------------------------- gateways

# start_gateway NAME UPSTREAM_KIND: starts it pointed at UP_URL; sets GW_URL, GW_PID and
# GW_HEADERS (the headers its requests carry besides the shared ones). Returns non-zero
# (with GW_WHY set) when it cannot be started.
start_gateway() {
    local name=$1 log=gw-$1-$2 port
    GW_HEADERS=()
    GW_WHY=
    GW_PID=
    case $name in
    forward)
        start "$log" "${GATEWAY_CPU[@]}" "$BIN/forward" --upstream "$UP_URL" --threads "$GATEWAY_THREADS"
        GW_PID=$STARTED
        GW_URL=$(first_line "$log" "$GW_PID") || GW_WHY="did not print its URL"
        ;;
    steadfast)
        steadfast_config "$OUT/steadfast-$2.toml" "$UP_URL"
        start "$log" env "STEADFAST_BENCH_MOCK_KEY=$MOCK_KEY" "TOKIO_WORKER_THREADS=$GATEWAY_THREADS" \
            "${GATEWAY_CPU[@]}" "$BIN/steadfast" serve --config "$OUT/steadfast-$2.toml" --addr 127.0.0.1:0
        GW_PID=$STARTED
        GW_URL=$(first_line "$log" "$GW_PID") || GW_WHY="did not print its URL"
        ;;
    litellm)
        port=$(free_port)
        cat >"$OUT/litellm-$2.yaml" <<EOF
model_list:
  - model_name: gpt-4o-mini
    litellm_params:
      model: openai/gpt-4o-mini
      api_base: $UP_URL/v1
      api_key: $MOCK_KEY
litellm_settings:
  num_retries: 0
  set_verbose: false
  turn_off_message_logging: true
  callbacks: []
router_settings:
  num_retries: 0
general_settings:
  disable_spend_logs: true
EOF
        start "$log" env LITELLM_LOG=ERROR LITELLM_LOCAL_MODEL_COST_MAP=True \
            LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY=true \
            "${GATEWAY_CPU[@]}" "$OUT/venv/bin/litellm" --config "$OUT/litellm-$2.yaml" \
            --host 127.0.0.1 --port "$port" --num_workers 1
        GW_PID=$STARTED
        GW_URL=http://127.0.0.1:$port
        wait_http "$GW_URL/health/liveliness" "$GW_PID" 120 || GW_WHY="did not answer within 120 s"
        ;;
    portkey)
        port=$(free_port)
        start "$log" "${GATEWAY_CPU[@]}" node "$PORTKEY_ENTRY" "--port=$port" --headless
        GW_PID=$STARTED
        GW_URL=http://127.0.0.1:$port
        GW_HEADERS=(--url-header "x-portkey-provider: openai" --url-header "x-portkey-custom-host: $UP_URL/v1")
        wait_http "$GW_URL/" "$GW_PID" 60 || GW_WHY="did not answer within 60 s"
        ;;
    *) GW_WHY="unknown gateway" ;;
    esac
    if [[ -z $GW_WHY ]]; then
        check_gateway || true
    fi
    [[ -z $GW_WHY ]]
}

# check_gateway: one request through the gateway must come back 200 with a completion.
check_gateway() {
    local args=() i status
    for ((i = 1; i < ${#GW_HEADERS[@]}; i += 2)); do
        args+=(-H "${GW_HEADERS[i]}")
    done
    status=$(curl -s -o "$LOGS/check.json" -w '%{http_code}' --max-time 30 -X POST "$GW_URL$CHAT_PATH" \
        -H 'content-type: application/json' -H "authorization: Bearer $MOCK_KEY" "${args[@]}" -d "$BODY") || true
    if [[ $status != 200 ]] || ! grep -q '"choices"' "$LOGS/check.json"; then
        GW_WHY="a test request got status $status: $(head -c 300 "$LOGS/check.json")"
        return 1
    fi
}

# ---------------------------------------------------------------- load

loadgen() {
    send_load "$@" --path "$CHAT_PATH"
}

# field LINE KEY: the value of KEY=value in LINE.
field() { sed -n "s/.*\b$2=\([^ ]*\).*/\1/p" <<<"$1"; }

# join SEP ITEMS...
join() {
    local sep=$1 out=$2
    shift 2
    for item; do out+=$sep$item; done
    printf '%s' "$out"
}

sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a - b }'; }

ROWS=()    # the summary table's rows
DETAILS=() # the raw figures

# measure NAME UPSTREAM_KIND URL PID [loadgen header args...]: latency (interleaved with
# direct requests unless NAME is direct) and throughput; appends the rows.
measure() {
    local name=$1 kind=$2 url=$3 pid=$4 lat gw direct c t rps=() errors=0 cpu=() t0 t1 w0 w1 e pct
    shift 4
    if [[ $name == direct ]]; then
        lat=$(loadgen latency --url "$url" --warmup "$WARMUP" --requests "$REQUESTS" "$@")
        gw=$(grep '^url ' <<<"$lat")
        direct=$gw
    else
        lat=$(loadgen latency --url "$url" --direct "$UP_URL" --warmup "$WARMUP" --requests "$REQUESTS" "$@")
        gw=$(grep '^url ' <<<"$lat")
        direct=$(grep '^direct ' <<<"$lat")
    fi
    errors=$(($(field "$gw" errors) + $(field "$direct" errors)))
    for c in $CONCURRENCY; do
        t0=$(cpu_ticks "$pid")
        w0=$(date +%s%N)
        t=$(loadgen throughput --url "$url" --concurrency "$c" --seconds "$DURATION" \
            --warmup-seconds "$WARMUP_SECONDS" "$@")
        w1=$(date +%s%N)
        t1=$(cpu_ticks "$pid")
        e=$(field "$t" errors)
        errors=$((errors + e))
        rps+=("$(field "$t" rps)")
        # CPU time of the measured process group over the whole run (connecting, warm-up,
        # window, closing): in % of one core, and shared out over the run's successes.
        pct=$(awk -v d=$((t1 - t0)) -v hz="$HZ" -v ns=$((w1 - w0)) 'BEGIN { printf "%.0f", 100 * d / hz / (ns / 1e9) }')
        cpu+=("$(awk -v d=$((t1 - t0)) -v hz="$HZ" -v n="$(field "$t" all_ok)" 'BEGIN { printf "%.0f", n ? 1e6 * d / hz / n : 0 }')")
        DETAILS+=("| $name | $kind | throughput | c=$c: $(field "$t" ok) ok, $e errors in $(field "$t" seconds) s; CPU $pct % of a core over the run, ${cpu[-1]} µs per success |")
    done
    local p50 p99 added50 added99
    p50=$(field "$gw" p50_us)
    p99=$(field "$gw" p99_us)
    if [[ $name == direct ]]; then
        added50=— added99=—
    else
        added50=$(sub "$p50" "$(field "$direct" p50_us)")
        added99=$(sub "$p99" "$(field "$direct" p99_us)")
    fi
    ROWS+=("| $name | $kind | $p50 | $p99 | $added50 | $added99 | $(join ' | ' "${rps[@]}") | $(join ' / ' "${cpu[@]}") | $errors |")
    DETAILS+=("| $name | $kind | latency | $gw |")
    [[ $name == direct ]] || DETAILS+=("| $name | $kind | latency (its direct) | $direct |")
    echo "   $name: p50 $p50 µs, p99 $p99 µs (added $added50 / $added99), rps ${rps[*]}, CPU ${cpu[*]} µs/req, errors $errors"
}

# ---------------------------------------------------------------- run

STARTED_AT=$(date -u +%Y-%m-%dT%H:%M:%SZ)
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
for kind in $UPSTREAMS; do
    echo "== upstream: $kind"
    start_upstream "$kind"
    echo "   at $UP_URL"
    measure direct "$kind" "$UP_URL" "$UP_PID"
    for gw in $GATEWAYS; do
        echo "== $gw → $kind"
        if ! start_gateway "$gw" "$kind"; then
            skip "$gw ($kind)" "$GW_WHY (log: $LOGS/gw-$gw-$kind.err: $(tail -c 400 "$LOGS/gw-$gw-$kind.err" 2>/dev/null | tr '\n' ' '))"
            stop "$GW_PID"
            continue
        fi
        echo "   at $GW_URL"
        measure "$gw" "$kind" "$GW_URL" "$GW_PID" "${GW_HEADERS[@]}"
        stop "$GW_PID"
    done
    stop "$UP_PID"
done

# ---------------------------------------------------------------- report

c_heads=$(for c in $CONCURRENCY; do printf ' req/s c=%s |' "$c"; done)
c_rule=$(for c in $CONCURRENCY; do printf ' ---: |'; done)
{
    echo "## Gateway benchmark ($STARTED_AT)"
    echo
    echo "Sequential: $REQUESTS requests after $WARMUP warm-up, one keep-alive connection, each gateway's"
    echo "requests interleaved with direct ones; added = gateway − direct of the same run."
    echo "Throughput: $DURATION s after ${WARMUP_SECONDS} s warm-up, one request in flight per connection."
    echo
    echo "| gateway | upstream | p50 µs | p99 µs | added p50 µs | added p99 µs |$c_heads CPU µs/req ($(echo "$CONCURRENCY" | sed 's/ / \/ /g')) | errors |"
    echo "| --- | --- | ---: | ---: | ---: | ---: |$c_rule ---: | ---: |"
    printf '%s\n' "${ROWS[@]}"
    echo
    echo "Machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), load average $LOAD_BEFORE at the start."
    if ((${#GATEWAY_CPU[@]})); then
        echo "Pinned: the gateway on CPU 1; the upstream and the load generator (one thread) on CPU 0."
    else
        echo "Not pinned; the load generator runs one thread."
    fi
    echo "Rust gateways (forward, steadfast serve): $GATEWAY_THREADS tokio worker thread(s)."
    has litellm && echo "LiteLLM $LITELLM_VERSION: \`litellm --num_workers 1\` (uvicorn), LITELLM_LOG=ERROR, num_retries 0, no master key."
    has portkey && echo "Portkey gateway $PORTKEY_VERSION: \`node build/start-server.js --headless\` on Node $(node --version)."
    echo "Upstreams: mock = \`steadfast mock --scenario ok\` (2 worker threads); fixed = \`upstream\` (one thread, a fixed answer)."
    echo "CPU µs/req: the measured process group's user+system time over each throughput run, divided by the run's successes (warm-up included): what one request costs it, whatever share of the machine it got."
    if ((${#SKIPPED[@]})); then
        echo
        echo "Not measured:"
        printf -- '- %s\n' "${SKIPPED[@]}"
    fi
    echo
    echo "<details><summary>Raw figures</summary>"
    echo
    echo "| gateway | upstream | what | figures |"
    echo "| --- | --- | --- | --- |"
    printf '%s\n' "${DETAILS[@]}"
    echo
    echo "</details>"
} | tee "$OUT/results.md"
