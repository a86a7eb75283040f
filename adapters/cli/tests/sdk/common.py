"""What both SDK scripts share: the command line, the concurrent calls, the summary.

Each script makes COUNT calls per mode, CONCURRENCY at a time per mode, with the
official SDK's own retries off, and prints one JSON line per mode on stdout:

    {"sdk": ..., "mode": "plain" | "stream", "prefix": ..., "count": N, "ok": K,
     "errors": {"<ExceptionType> <status>": n, ...},
     "calls": [{"i": 1, "prompt": ..., "ok": true, "text": ..., "ended": true,
                "events": 7, "error": null}, ...]}

`--mode both` runs the plain and the streamed calls at the same time (one process, so
the SDK is imported once), with PREFIX-plain and PREFIX-stream as their prefixes.
`--go-on-stdin` holds the calls until a line comes on stdin (after `ready` on
stderr), so that several processes can start their calls at once.

A call is `ok` when the SDK returned (plain) or its stream ran to its end without
raising (stream). `text` is the reply's text as the client assembled it (for a stream
that raised: what it had received until then), `ended` whether the reply ended as its
API says it must (OpenAI: a `finish_reason`; Anthropic: a `stop_reason`, and for a
stream `message_stop`), `error` the exception's type, status and message when the
call raised.
"""

import argparse
import json
import sys
from concurrent.futures import ThreadPoolExecutor

# Many words, so that a streamed reply comes in many events (the mock cuts a reply
# into at most 16 pieces at word boundaries, and echoes the last user turn).
WORDS = "alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike"


def arguments(description):
    """Parses the command line both scripts take."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--base-url", required=True, help="the gateway (or mock) base URL")
    p.add_argument("--key", required=True, help="the API key the client sends")
    p.add_argument("--mode", choices=["plain", "stream", "both"], default="plain")
    p.add_argument("--count", type=int, default=10, help="calls per mode")
    p.add_argument("--concurrency", type=int, default=4, help="calls at once per mode")
    p.add_argument("--model", required=True)
    p.add_argument("--prefix", default="call", help="starts every prompt")
    p.add_argument(
        "--idempotency-keys",
        action="store_true",
        help="send `Idempotency-Key: PREFIX-I` with call I",
    )
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per call")
    p.add_argument(
        "--go-on-stdin",
        action="store_true",
        help="print `ready` on stderr once set up, then start on a line on stdin",
    )
    p.add_argument(
        "--x-api-key",
        action="store_true",
        help="(Anthropic) send the key as `x-api-key` as well",
    )
    return p.parse_args()


def describe(error):
    """`Type status` of an exception (status only for HTTP status errors)."""
    status = getattr(error, "status_code", None)
    name = type(error).__name__
    return name if status is None else f"{name} {status}"


class Record:
    """What one call saw, filled in as it goes (so a raising stream keeps its part)."""

    def __init__(self, mode, prefix, i, idempotency_key):
        self.mode = mode
        self.i = i
        self.prompt = f"{prefix} {i}: {WORDS}"
        self.headers = {} if idempotency_key is None else {"Idempotency-Key": idempotency_key}
        self.parts = []
        self.ended = False
        self.events = 0
        self.error = None

    def as_json(self):
        return {
            "i": self.i,
            "prompt": self.prompt,
            "ok": self.error is None,
            "text": "".join(self.parts),
            "ended": self.ended,
            "events": self.events,
            "error": self.error,
        }


def run(sdk, args, call):
    """Runs `call(record)` for calls 1..=count of each mode, `concurrency` at a time
    per mode, and prints the summaries. `call` fills the record and raises on
    failure."""
    modes = ["plain", "stream"] if args.mode == "both" else [args.mode]

    def prefix(mode):
        return args.prefix if args.mode != "both" else f"{args.prefix}-{mode}"

    def one(record):
        try:
            call(record)
        except Exception as e:  # every failure is data for the summary
            record.error = {"kind": describe(e), "message": str(e)[:300]}
        return record

    records = {
        mode: [
            Record(mode, prefix(mode), i, f"{prefix(mode)}-{i}" if args.idempotency_keys else None)
            for i in range(1, args.count + 1)
        ]
        for mode in modes
    }
    # Interleaved, so that the modes run at the same time.
    order = [r for group in zip(*records.values()) for r in group]
    if args.go_on_stdin:
        print("ready", file=sys.stderr, flush=True)
        sys.stdin.readline()
    with ThreadPoolExecutor(max_workers=max(1, args.concurrency) * len(modes)) as pool:
        list(pool.map(one, order))
    for mode in modes:
        done = records[mode]
        errors = {}
        for r in done:
            if r.error is not None:
                errors[r.error["kind"]] = errors.get(r.error["kind"], 0) + 1
        summary = {
            "sdk": sdk,
            "mode": mode,
            "prefix": prefix(mode),
            "count": args.count,
            "ok": sum(1 for r in done if r.error is None),
            "errors": errors,
            "calls": [r.as_json() for r in done],
        }
        print(json.dumps(summary), flush=True)
