# What the gateway bench scripts share (sourced by run.sh, callgrind.sh and paired.sh):
# the request they send, the key it carries, sending it under load, steadfast's config,
# and starting a server that prints its base URL first.

# The mock's key (steadfast_mock::MOCK_KEY): a fixed test value, not a secret.
MOCK_KEY=sk-steadfast-mock-not-a-secret
BODY='{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hi"}]}'

# send_load ARGS...: the load generator (`loadgen` MODE --url URL ...) sending the
# benchmark's request, its body and headers; under the command prefix LOAD_CPU (for
# example `taskset -c 0`) when that array is set.
send_load() {
    ${LOAD_CPU[@]+"${LOAD_CPU[@]}"} "$BIN/loadgen" "$@" --body "$BODY" \
        --header 'content-type: application/json' \
        --header "authorization: Bearer $MOCK_KEY"
}

# steadfast_config FILE UPSTREAM_URL: writes `steadfast serve`'s config, one OpenAI
# endpoint at the upstream, its key from STEADFAST_BENCH_MOCK_KEY.
steadfast_config() {
    cat >"$1" <<TOML
[[endpoint]]
name = "openai"
provider = "openai"
base_url = "$2"
keys_env = ["STEADFAST_BENCH_MOCK_KEY"]
model = "gpt-4o-mini"
TOML
}

# start_server DIR NAME SECONDS CMD...: runs CMD in the background with its output in
# DIR/NAME.{out,err}, adds its pid to PIDS and sets STARTED to it, and URL to the first
# line it prints (SECONDS at most); exits when none comes.
start_server() {
    local dir=$1 name=$2 seconds=$3 i
    shift 3
    rm -f "$dir/$name.out" "$dir/$name.err"
    "$@" >"$dir/$name.out" 2>"$dir/$name.err" </dev/null &
    STARTED=$!
    PIDS+=("$STARTED")
    for ((i = 0; i < seconds * 10; i++)); do
        if [[ -s $dir/$name.out ]] && IFS= read -r URL <"$dir/$name.out"; then
            return 0
        fi
        kill -0 "$STARTED" 2>/dev/null || break
        sleep 0.1
    done
    echo "$(basename "$0"): $name did not print its URL; see $dir/$name.err" >&2
    exit 1
}
