#!/usr/bin/env bash
# Runs cargo-fuzz targets for a fixed time each and prints libFuzzer's final figures.
#
#   bash fuzz/run.sh SECONDS [TARGET...]     (default: every target)
#
# New inputs go to a scratch corpus (the committed seeds under fuzz/corpus/ are read,
# never written). A crash, a timeout or an out-of-memory is a failure (exit 1) and its
# input is saved under fuzz/artifacts/TARGET/; anything else that goes wrong is reported
# as such. Needs a nightly toolchain; installs cargo-fuzz when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

secs="${1:?usage: fuzz/run.sh SECONDS [TARGET...]}"
shift
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(retry_after ratelimit_headers duration rfc3339 error_body config engine_ops request_body batch_jsonl chat)
fi

if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "fuzz: no nightly toolchain (cargo +nightly); cargo-fuzz needs one (rustup toolchain install nightly)" >&2
    exit 1
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "== installing cargo-fuzz"
    cargo install cargo-fuzz --locked
fi

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
echo "== building the fuzz targets (nightly, release, sanitizers on)"
if ! cargo +nightly fuzz build >"$scratch/build.log" 2>&1; then
    tail -40 "$scratch/build.log" >&2
    echo "fuzz: the targets do not build" >&2
    exit 1
fi
failed=()
# A fixed seed makes the smoke replayable: FUZZ_SEED=N picks another.
seed="${FUZZ_SEED:-1}"
echo "libFuzzer seed: $seed"
printf '%-18s %10s %8s %6s %6s %6s\n' target execs exec/s cov ft corpus
for t in "${targets[@]}"; do
    mkdir -p "$scratch/$t"
    log="$scratch/$t.log"
    set +e
    # -timeout: one input may take this long on a loaded machine before it is a hang.
    cargo +nightly fuzz run "$t" "$scratch/$t" "fuzz/corpus/$t" -- \
        -seed="$seed" -max_total_time="$secs" -timeout=60 -rss_limit_mb=4096 -print_final_stats=1 \
        >"$log" 2>&1
    rc=$?
    set -e
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
    corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")
    printf '%-18s %10s %8s %6s %6s %6s\n' "$t" "${execs:--}" "${rate:--}" "${cov:--}" "${ft:--}" "${corp:--}"
    if [ "$rc" -ne 0 ]; then
        if grep -qE 'ERROR: libFuzzer|panicked at|SUMMARY: (libFuzzer|AddressSanitizer)' "$log"; then
            echo "fuzz: $t FOUND A FAILURE (exit $rc); its input is under fuzz/artifacts/$t/:" >&2
        else
            echo "fuzz: $t did not run (exit $rc), not a finding:" >&2
        fi
        grep -E 'panicked at|ERROR:|SUMMARY|Test unit written|error(\[|:)' "$log" | head -20 >&2 || tail -20 "$log" >&2
        failed+=("$t")
    fi
done
if [ ${#failed[@]} -ne 0 ]; then
    echo "fuzz: failed: ${failed[*]}" >&2
    exit 1
fi
echo "fuzz: ${#targets[@]} targets, ${secs}s each, no failure"
