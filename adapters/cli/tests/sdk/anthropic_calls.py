"""Messages calls through the official `anthropic` SDK (its retries off).

    python anthropic_calls.py --base-url URL --key KEY --model M [--mode plain|stream|both]
        [--count N] [--concurrency C] [--prefix P] [--idempotency-keys] [--x-api-key]

URL is the server's root (`http://127.0.0.1:PORT`; the SDK adds /v1/messages). The SDK
sends its key as `Authorization: Bearer KEY`; `--x-api-key` sends it as `x-api-key` too
(a server that reads only that header, as the mock does).
Prints one JSON summary line (see common.py).
"""

import anthropic

import common

# Far more than any prompt's reply, so no reply is cut at max_tokens.
MAX_TOKENS = 1024


def main():
    args = common.arguments(__doc__)
    client = anthropic.Anthropic(
        base_url=args.base_url.rstrip("/"),
        api_key=args.key,
        max_retries=0,
        timeout=args.timeout,
        default_headers={"x-api-key": args.key} if args.x_api_key else None,
    )

    def call(record):
        request = dict(
            model=args.model,
            max_tokens=MAX_TOKENS,
            messages=[{"role": "user", "content": record.prompt}],
            extra_headers=record.headers,
        )
        if record.mode == "plain":
            message = client.messages.create(**request)
            for block in message.content:
                if block.type == "text":
                    record.parts.append(block.text)
            record.ended = message.stop_reason is not None
            return
        stream = client.messages.create(stream=True, **request)
        with stream:
            for event in stream:
                record.events += 1
                if event.type == "content_block_delta" and event.delta.type == "text_delta":
                    record.parts.append(event.delta.text)
                elif event.type == "message_stop":
                    record.ended = True

    common.run("anthropic", args, call)


if __name__ == "__main__":
    main()
