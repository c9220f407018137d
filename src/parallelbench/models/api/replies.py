"""Reading a chat-completions reply: one JSON body, or server-sent events chunk by chunk.

A reply that is not what the OpenAI format promises raises `MalformedReply` with a short
reason, never a KeyError or JSONDecodeError from deep inside.
"""

from __future__ import annotations

import json
from typing import Any


class MalformedReply(ValueError):
    """The server answered 200 with something that is not a chat completion."""


class TruncatedStream(ConnectionError):
    """A stream ended before its end marker: treated like a dropped connection (retried)."""


def _content(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise MalformedReply(f"message content is a {type(value).__name__}, not text")
    return value


def parse_completion(body: bytes) -> tuple[str, int | None]:
    """(text, completion tokens or None) of a whole JSON reply."""
    try:
        payload = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise MalformedReply("the reply is not JSON") from None
    if not isinstance(payload, dict):
        raise MalformedReply("the reply is not a JSON object")
    choices = payload.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise MalformedReply("the reply has no choices")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise MalformedReply("the reply's first choice has no message")
    return _content(message.get("content")), _tokens(payload.get("usage"))


def _tokens(usage: Any) -> int | None:
    if not isinstance(usage, dict):
        return None
    value = usage.get("completion_tokens")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or value != value:
        return None
    return int(value)


class StreamReader:
    """Feed it the body's lines; it counts content chunks (denoising steps) and rebuilds the text.

    With `replace` (Mercury's diffusing mode) each chunk is the whole current text;
    otherwise chunks are appended.
    """

    def __init__(self, *, replace: bool):
        self.replace = replace
        self.text = ""
        self.steps = 0
        self.tokens: int | None = None
        self.done = False
        self.finished = False  # a choice carried a finish_reason

    def line(self, raw: bytes) -> None:
        text = raw.decode("utf-8", "replace").strip()
        if self.done or not text.startswith("data:"):
            return
        data = text[5:].strip()
        if data == "[DONE]":
            self.done = True
            return
        try:
            chunk = json.loads(data)
        except ValueError:
            raise MalformedReply("a streamed chunk is not JSON") from None
        if not isinstance(chunk, dict):
            raise MalformedReply("a streamed chunk is not a JSON object")
        if chunk.get("error"):
            raise MalformedReply("the server sent an error event mid-stream")
        tokens = _tokens(chunk.get("usage"))
        if tokens is not None:
            self.tokens = tokens
        choices = chunk.get("choices") or []
        if not isinstance(choices, list):
            raise MalformedReply("a streamed chunk's choices is not a list")
        for choice in choices:
            if not isinstance(choice, dict):
                raise MalformedReply("a streamed choice is not an object")
            delta = choice.get("delta") or {}
            content = _content(delta.get("content") if isinstance(delta, dict) else None)
            if content:
                self.steps += 1
                self.text = content if self.replace else self.text + content
            if choice.get("finish_reason"):
                self.finished = True

    def result(self) -> tuple[str, int, int | None]:
        if not (self.done or self.finished):
            raise TruncatedStream("the stream ended before its end marker")
        return self.text, self.steps, self.tokens
