#!/usr/bin/env bash
# steadfast batch beside a plain reqwest loop (examples/plain_loop.rs): the same JSONL
# input, the same loopback mock (scenario ok, a fresh one per run), concurrency 64.
# Prints one line per run: kind, lines ok, wall µs, max RSS KiB, user s, system s.
#
#   bash adapters/cli/bench/batch_vs_plain.sh [PAIRS=15] [LINES=10000] [PIN=0]
#
# PIN=1 puts the mock on CPU 0 and the client on CPU 1 (needs taskset).
set -euo pipefail
PAIRS=${1:-15}; LINES=${2:-10000}; PIN=${3:-0}
cd "$(dirname "$0")/../../.."
cargo build --release -q -p steadfast-cli --bin steadfast --example plain_loop
S=target/release/steadfast
P=target/release/examples/plain_loop
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
for i in $(seq 1 "$LINES"); do
  printf '{"id":"b-%d","request":{"model":"gpt-4o-mini","max_tokens":32,"messages":[{"role":"user","content":"Say hello number %d."}]}}\n' "$i" "$i"
done > "$DIR/in.jsonl"
SP=(); CP=()
if [ "$PIN" = 1 ]; then SP=(taskset -c 0); CP=(taskset -c 1); fi
run() {
  "${SP[@]}" "$S" mock --scenario ok > "$DIR/url" 2>/dev/null &
  local mock=$!
  while [ ! -s "$DIR/url" ]; do sleep 0.05; done
  local url; url=$(head -1 "$DIR/url")
  rm -f "$DIR/url" "$DIR"/out*
  local start end n
  start=$(date +%s%N)
  if [ "$1" = batch ]; then
    OPENAI_API_KEY=sk-bench /usr/bin/time -f "%M %U %S" -o "$DIR/time" "${CP[@]}" \
      "$S" batch --input "$DIR/in.jsonl" --output "$DIR/out.jsonl" --base-url "$url" --concurrency 64 -q 2>/dev/null
  else
    OPENAI_API_KEY=sk-bench /usr/bin/time -f "%M %U %S" -o "$DIR/time" "${CP[@]}" \
      "$P" "$url" "$DIR/in.jsonl" "$DIR/out.jsonl" 64 2>/dev/null
  fi
  end=$(date +%s%N)
  n=$(grep -c '"ok":true' "$DIR/out.jsonl")
  echo "$1 $n $(( (end - start) / 1000 )) $(cat "$DIR/time")"
  kill -TERM "$mock"; wait "$mock" 2>/dev/null || true
}
for _ in $(seq 1 "$PAIRS"); do run batch; run plain; done | tee "$DIR/runs"
for kind in batch plain; do
  grep "^$kind " "$DIR/runs" | sort -k3,3n | awk -v lines="$LINES" '
    { wall[NR] = $3; if ($4 > rss) rss = $4 }
    END { m = wall[int((NR + 1) / 2)];
          printf "%s: median %.3f s = %.0f requests/s, max RSS %.1f MiB\n", $1, m / 1e6, lines / (m / 1e6), rss / 1024 }'
done
