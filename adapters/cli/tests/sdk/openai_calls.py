"""Chat Completions calls through the official `openai` SDK (its retries off).

    python openai_calls.py --base-url URL --key KEY --model M [--mode plain|stream|both]
        [--count N] [--concurrency C] [--prefix P] [--idempotency-keys]

URL is the server's root (`http://127.0.0.1:PORT`); the SDK is pointed at URL/v1.
Prints one JSON summary line (see common.py).
"""

import openai

import common


def main():
    args = common.arguments(__doc__)
    client = openai.OpenAI(
        base_url=args.base_url.rstrip("/") + "/v1",
        api_key=args.key,
        max_retries=0,
        timeout=args.timeout,
    )

    def call(record):
        request = dict(
            model=args.model,
            messages=[{"role": "user", "content": record.prompt}],
            extra_headers=record.headers,
        )
        if record.mode == "plain":
            completion = client.chat.completions.create(**request)
            choice = completion.choices[0]
            record.parts.append(choice.message.content or "")
            record.ended = choice.finish_reason is not None
            return
        stream = client.chat.completions.create(stream=True, **request)
        with stream:
            for chunk in stream:
                record.events += 1
                for choice in chunk.choices:
                    if choice.delta is not None and choice.delta.content:
                        record.parts.append(choice.delta.content)
                    if choice.finish_reason is not None:
                        record.ended = True

    common.run("openai", args, call)


if __name__ == "__main__":
    main()
