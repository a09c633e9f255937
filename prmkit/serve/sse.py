r"""Streaming (``"stream": true``) in OpenAI's server-sent-events wire format, cut from a finished response.

prmkit's generator is not incremental (a batch is one ``generate`` call), so a stream is the finished
response re-cut into chunks: per choice its text in one chunk, then one with its ``finish_reason`` and
no text. Chat chunks (``chat.completion.chunk``) carry a ``delta``: the role first, then the content.
Joining a choice's texts (or delta contents) gives the text of the response the stream was cut from,
so a streamed request reads what the same request unstreamed does. ``include_usage`` (OpenAI's
``stream_options``) adds a last chunk with no choices and the ``usage``; ``data: [DONE]`` ends the stream.

>>> r = {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "m",
...      "choices": [{"index": 0, "message": {"role": "assistant", "content": "4"}, "finish_reason": "stop"}],
...      "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}
>>> for c in chunks(r):
...     print(c["object"], c["choices"])
chat.completion.chunk [{'index': 0, 'delta': {'role': 'assistant', 'content': ''}, 'logprobs': None, 'finish_reason': None}]
chat.completion.chunk [{'index': 0, 'delta': {'content': '4'}, 'logprobs': None, 'finish_reason': None}]
chat.completion.chunk [{'index': 0, 'delta': {}, 'logprobs': None, 'finish_reason': 'stop'}]
>>> list(events([{"x": 1}]))
['data: {"x": 1}\n\n', 'data: [DONE]\n\n']
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator


def chunks(response: dict, include_usage: bool = False) -> list[dict]:
    """The stream of chunks of a finished ``text_completion`` or ``chat.completion`` response, in order."""
    chat = response["object"] == "chat.completion"
    head = {"id": response["id"], "object": "chat.completion.chunk" if chat else "text_completion",
            "created": response["created"], "model": response["model"]}
    out = []
    for choice in response["choices"]:
        parts = _chat_parts(choice) if chat else _completion_parts(choice)
        out += [{**head, "choices": [{"index": choice["index"], **part}]} for part in parts]
    if include_usage:
        out.append({**head, "choices": [], "usage": response["usage"]})
    return out


def _chat_parts(choice: dict) -> list[dict]:
    # OpenAI's order: a delta naming the role (empty content), the content, then the finish reason alone
    text = choice["message"]["content"]
    return [{"delta": {"role": "assistant", "content": ""}, "logprobs": None, "finish_reason": None},
            {"delta": {"content": text}, "logprobs": None, "finish_reason": None},
            {"delta": {}, "logprobs": None, "finish_reason": choice["finish_reason"]}]


def _completion_parts(choice: dict) -> list[dict]:
    return [{"text": choice["text"], "logprobs": None, "finish_reason": None},
            {"text": "", "logprobs": None, "finish_reason": choice["finish_reason"]}]


def events(items: Iterable[dict]) -> Iterator[str]:
    """Server-sent events: each chunk as ``data: <json>``, a blank line after each, then ``data: [DONE]``."""
    for item in items:
        yield f"data: {json.dumps(item)}\n\n"
    yield "data: [DONE]\n\n"
