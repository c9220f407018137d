"""One chat-completions request over httpx, with the guarantees a long benchmark needs.

- a deadline per attempt (`timeout`: connect, send and every read together), so a
  server that drips bytes cannot hold a run, and one per request (`total_timeout`, every
  attempt and every wait between them included: 5 minutes by default);
- retries with exponential backoff and jitter on 429, 5xx, timeouts, refused and dropped
  connections (a truncated body or stream counts as dropped); `Retry-After` is obeyed
  up to `max_retry_after` seconds;
- what a pending request waits for (host, attempt i of n, seconds) is readable at any time
  (`Client.waiting`), so a progress display can say it;
- the reply body is read in pieces and abandoned past `max_reply_bytes`;
- redirects are followed by hand (at most 5) and the key is never sent to another origin;
- the key is never part of a message: server text is cut to one line with the key removed.
"""

from __future__ import annotations

import asyncio
import email.utils
import itertools
import math
import random
import re
import threading
import time
from dataclasses import dataclass
from typing import Any, AsyncIterator

import httpx

from parallelbench.models.api.options import APIError, APIOptions
from parallelbench.models.api.replies import MalformedReply, StreamReader, TruncatedStream, parse_completion

RETRY_STATUS = (429, 500, 502, 503, 504)
REDIRECT_STATUS = (301, 302, 303, 307, 308)
MAX_REDIRECTS = 5
_DETAIL_BYTES = 2048  # of an error body, enough for a message


class KeyRejected(APIError):
    """401/403: every request would fail the same way, so the run stops (in one line)."""


class RequestFailed(APIError):
    """A request that failed for good; `category` is the short reason a run summary counts."""

    def __init__(self, category: str, message: str):
        super().__init__(message)
        self.category = category


class _Attempt(Exception):
    """One failed attempt: what happened, whether another try may help, how long to wait."""

    def __init__(self, category: str, detail: str, *, retry: bool, wait: float | None = None):
        super().__init__(detail)
        self.category, self.detail, self.retry, self.wait = category, detail, retry, wait


@dataclass
class _Pending:
    """One request in flight: which attempt, since when, and what it does now."""

    began: float  # time.monotonic() when the request started (its first attempt)
    attempt: int = 1
    doing: str = "request"  # "request", or the reason of a wait before the next attempt


def _refused(exc: BaseException) -> bool:
    """Whether a connect error is the server refusing the connection (nothing listens there)."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, ConnectionRefusedError) or "refused" in str(cur).lower():
            return True
        cur = cur.__cause__ or cur.__context__
    return False


class Redactor:
    """Makes server or library text safe to show: one line, short, without the key."""

    def __init__(self, key: str | None):
        self.key = key or ""
        # fragments a server may echo back ("sk-abc...wxyz"): the key's head and tail
        self.fragments = [self.key[:8], self.key[-6:]] if len(self.key) >= 16 else []

    def __call__(self, text: str, limit: int = 200) -> str:
        if self.key:
            text = text.replace(self.key, "***")
        words = []
        for word in "".join(ch if ch.isprintable() else " " for ch in text).split():
            if any(f and f in word for f in self.fragments):
                word = "***"
            words.append(word)
        out = " ".join(words)
        return out if len(out) <= limit else out[: limit - 3] + "..."


def shown_url(url: str | httpx.URL) -> str:
    """The URL without user:password or query string (they can hold secrets)."""
    try:
        u = httpx.URL(str(url))
        return str(u.copy_with(userinfo=b"", query=None, fragment=None))
    except Exception:  # noqa: BLE001 - a URL we cannot parse is not shown at all
        return "(the configured base_url)"


def _host(url: str) -> str:
    """host[:port] of a URL, for "waiting for ..." lines (never user, password or path)."""
    try:
        u = httpx.URL(str(url))
        return f"{u.host}:{u.port}" if u.port else (u.host or "(the configured base_url)")
    except Exception:  # noqa: BLE001
        return "(the configured base_url)"


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    return url.scheme, url.host, url.port or {"http": 80, "https": 443}.get(url.scheme)


def retry_after_seconds(value: str | None, cap: float) -> float | None:
    """Seconds a `Retry-After` header asks for (number or HTTP date), capped; None if unusable."""
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when is None:
            return None
        seconds = when.timestamp() - time.time()
    if not math.isfinite(seconds):  # "inf", "nan": not a usable wait, the backoff applies
        return None
    return min(cap, max(0.0, seconds))


class Client:
    """Sends chat requests for one model with the retry, deadline and size rules above."""

    def __init__(self, options: APIOptions, name: str):
        self.options = options
        self.name = name
        self.redact = Redactor(options.api_key)
        self.url = httpx.URL(f"{options.base_url}/chat/completions")
        self.where = shown_url(options.base_url or "")
        self.host = _host(options.base_url or "")
        self._pending: dict[int, _Pending] = {}
        self._pending_lock = threading.Lock()
        self._ids = itertools.count()

    def waiting(self) -> str | None:
        """What the longest-pending request waits for, in one line, or None when none is pending:
        `waiting for api.example.com: attempt 2 of 6, 34 s (gives up at 300 s)`."""
        with self._pending_lock:
            pending = list(self._pending.values())
        if not pending:
            return None
        oldest = min(pending, key=lambda p: p.began)
        waited = time.monotonic() - oldest.began
        tries = self.options.max_retries + 1
        what = "" if oldest.doing == "request" else f", retrying after {oldest.doing}"
        more = f"; {len(pending) - 1} more pending" if len(pending) > 1 else ""
        return (f"waiting for {self.host}: attempt {oldest.attempt} of {tries}{what}, {waited:.0f} s "
                f"(gives up at {self.options.total_timeout:g} s){more}")

    def scrub(self, text: str) -> str:
        """A reply that echoes the key (a hostile server) must not carry it into the database."""
        key = self.options.api_key
        return text.replace(key, "***") if key and len(key) >= 8 and key in text else text

    def session(self) -> httpx.AsyncClient:
        # per-operation timeouts as a backstop; the total deadline is enforced around each attempt
        limits = httpx.Limits(max_connections=self.options.concurrency)
        return httpx.AsyncClient(timeout=httpx.Timeout(self.options.timeout), follow_redirects=False,
                                 limits=limits, trust_env=False)

    def delay(self, attempt: int) -> float:
        """Exponential backoff with jitter: between half and all of backoff * 2**attempt (capped)."""
        base = min(self.options.max_backoff, self.options.backoff * (2**attempt))
        return base * (0.5 + 0.5 * random.random())

    async def chat(self, http: httpx.AsyncClient, body: dict, streaming: bool) -> tuple[str, int | None, int | None]:
        """(text, streamed steps or None, completion tokens or None), or RequestFailed / KeyRejected."""
        began = time.monotonic()
        deadline = began + self.options.total_timeout
        me = next(self._ids)
        state = _Pending(began)
        with self._pending_lock:
            self._pending[me] = state
        try:
            return await self._attempts(http, body, streaming, state, deadline)
        finally:
            with self._pending_lock:
                self._pending.pop(me, None)

    async def _attempts(self, http, body: dict, streaming: bool, state: _Pending, deadline: float):
        attempt = 0
        while True:
            state.attempt, state.doing = attempt + 1, "request"
            left = deadline - time.monotonic()
            limit = min(self.options.timeout, left)
            try:
                try:
                    async with asyncio.timeout(limit):
                        return await self._once(http, body, streaming)
                except (TimeoutError, httpx.TimeoutException):
                    if limit < self.options.timeout:
                        raise _Attempt("timeout", f"no complete reply within the request's total_timeout of "
                                       f"{self.options.total_timeout:g} s (raise --model-opt total_timeout=...)",
                                       retry=False) from None
                    raise _Attempt("timeout", f"no complete reply within {self.options.timeout:g} s "
                                   "(raise --model-opt timeout=...)", retry=True) from None
                except httpx.ConnectError as exc:
                    if _refused(exc):
                        raise _Attempt("connection refused", f"nothing accepts connections at {self.host} "
                                       "(is the server running? check base_url)", retry=True) from None
                    raise _Attempt("cannot connect", self.redact(str(exc) or type(exc).__name__), retry=True) from None
                except (httpx.TransportError, TruncatedStream) as exc:
                    raise _Attempt("connection dropped", self.redact(str(exc) or type(exc).__name__),
                                   retry=True) from None
                except MalformedReply as exc:
                    raise _Attempt("malformed reply", str(exc), retry=False) from None
                except (httpx.HTTPError, httpx.InvalidURL, httpx.StreamError) as exc:  # e.g. a bad gzip body
                    raise _Attempt("bad reply", self.redact(str(exc) or type(exc).__name__), retry=False) from None
            except _Attempt as failed:
                n = attempt + 1
                tries = f" after {n} {'try' if n == 1 else 'tries'}" if failed.retry or n > 1 else ""
                wait = failed.wait if failed.wait is not None else self.delay(attempt)
                out_of_time = time.monotonic() + wait >= deadline
                if not failed.retry or attempt >= self.options.max_retries or out_of_time:
                    gave_up = (f"; gave up at the total_timeout of {self.options.total_timeout:g} s"
                               if failed.retry and out_of_time and attempt < self.options.max_retries else "")
                    raise RequestFailed(
                        failed.category, f"{failed.category}: {failed.detail} from {self.where}{tries}{gave_up}"
                    ) from None
                state.doing = failed.category
                await asyncio.sleep(wait)
                attempt += 1

    async def _once(self, http: httpx.AsyncClient, body: dict, streaming: bool):
        headers = {"Content-Type": "application/json", "Accept": "application/json",
                   "Authorization": f"Bearer {self.options.api_key}"}
        url = self.url
        for _hop in range(MAX_REDIRECTS + 1):
            request = http.build_request("POST", url, json=body, headers=headers)
            response = await http.send(request, stream=True)
            try:
                if response.status_code in REDIRECT_STATUS:
                    location = response.headers.get("location")
                    if not location:
                        raise _Attempt("bad redirect", f"HTTP {response.status_code} without a Location",
                                       retry=False)
                    try:
                        url = response.url.join(location)
                    except Exception:  # noqa: BLE001 - any unparsable Location
                        url = None
                    if url is None or url.scheme not in ("http", "https"):
                        raise _Attempt("bad redirect", "a redirect to an unusable Location", retry=False)
                    if _origin(url) != _origin(self.url):
                        headers.pop("Authorization", None)  # the key stays with the configured server
                    continue
                if response.status_code >= 400:
                    await self._status(response)
                json_reply = response.headers.get("content-type", "").startswith("application/json")
                if streaming and not json_reply:  # a server that ignores "stream" answers plain JSON
                    reader = StreamReader(replace=self.options.diffusing)
                    async for line in self._lines(response):
                        reader.line(line)
                    text, steps, tokens = reader.result()
                    return self.scrub(text), steps, tokens
                text, tokens = parse_completion(await self._read(response, self.options.max_reply_bytes))
                return self.scrub(text), None, tokens
            finally:
                await response.aclose()
        raise _Attempt("too many redirects", f"more than {MAX_REDIRECTS} redirects", retry=False)

    async def _status(self, response: httpx.Response) -> None:
        code = response.status_code
        try:
            detail = self.redact((await self._read(response, _DETAIL_BYTES, cut=True)).decode("utf-8", "replace"))
        except (httpx.HTTPError, _Attempt):
            detail = ""
        detail = f" ({detail})" if detail else ""
        if code in (401, 403):
            raise KeyRejected(
                f"{self.name}: the server {self.where} rejected the API key (HTTP {code}); "
                "check PARALLELBENCH_API_KEY or --model-opt api_key=..."
            )
        wait = retry_after_seconds(response.headers.get("retry-after"), self.options.max_retry_after)
        if code == 429:
            raise _Attempt("429 rate limited", f"HTTP 429{detail}", retry=True, wait=wait)
        if code in RETRY_STATUS or code >= 500:
            raise _Attempt(f"HTTP {code}", f"server error{detail}", retry=code in RETRY_STATUS, wait=wait)
        raise _Attempt(f"HTTP {code}", f"request refused{detail}", retry=False)

    def _too_large(self) -> _Attempt:
        return _Attempt("reply too large", f"the reply exceeds max_reply_bytes={self.options.max_reply_bytes}",
                        retry=False)

    async def _read(self, response: httpx.Response, cap: int, *, cut: bool = False) -> bytes:
        """The body, at most `cap` bytes: beyond that, fail (or with `cut`, stop reading)."""
        declared = response.headers.get("content-length", "")
        if not cut and declared.isdigit() and int(declared) > cap:
            raise self._too_large()
        data = bytearray()
        async for piece in response.aiter_bytes():
            data += piece
            if len(data) > cap:
                if cut:
                    return bytes(data[:cap])
                raise self._too_large()
        return bytes(data)

    async def _lines(self, response: httpx.Response) -> AsyncIterator[bytes]:
        """Lines of a streamed body as they arrive; the whole stream counts toward max_reply_bytes."""
        total = 0
        pending = b""
        async for piece in response.aiter_bytes():
            total += len(piece)
            if total > self.options.max_reply_bytes:
                raise self._too_large()
            pending += piece
            *lines, pending = pending.split(b"\n")
            for line in lines:
                yield line
        if pending:
            yield pending


def body_for(model: str, messages: Any, max_new_tokens: int, temperature: float, seed: int,
             *, streaming: bool, diffusing: bool) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
        "max_tokens": max_new_tokens,
        "temperature": temperature,
        "seed": seed,
    }
    if streaming:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    if diffusing:
        body["diffusing"] = True
    return body
