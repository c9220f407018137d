"""`APIModel`: samples in, one request per sample (`concurrency` at a time), generations out.

A sample whose request fails for good comes back as a `Generation` with `error` set (its
one-line reason) instead of stopping the batch: the runner stores it as a failed row and
a re-run retries only those. A rejected key (401/403) stops the run, in one line.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Sequence

from parallelbench.models.api.client import Client, KeyRejected, RequestFailed, body_for, shown_url
from parallelbench.models.api.options import BASE_ENV, KEY_ENV, APIError, APIOptions, env_value, parse_options
from parallelbench.models.base import Generation

if TYPE_CHECKING:
    from parallelbench.tasks.base import Sample

ADAPTER_VERSION = "2"  # bump when what the adapter sends or how it reads replies changes


def load(arg: str, **options: Any) -> "APIModel":
    opts = parse_options(options)
    base = opts.base_url or env_value(BASE_ENV) or "https://api.openai.com/v1"
    key = opts.api_key or env_value(KEY_ENV)
    if not key:
        raise APIError(
            f"model 'api:{arg}' needs an API key: set PARALLELBENCH_API_KEY (or OPENAI_API_KEY) or pass "
            "--model-opt api_key=...; for a local server without auth pass --model-opt api_key=EMPTY"
        )
    if not base.lower().startswith(("http://", "https://")):
        raise APIError(f"model 'api:{arg}': base_url must start with http:// or https:// (got {shown_url(base)})")
    return APIModel(arg, dataclasses.replace(opts, base_url=base.rstrip("/"), api_key=key))


class APIModel:
    kind = "api"

    def __init__(self, model: str, options: APIOptions):
        self.model = model
        self.name = f"api:{model}"
        self.options = options
        self.client = Client(options, self.name)
        self.in_flight = 0
        self.max_in_flight = 0  # highest concurrency seen (tests check the limit)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"APIModel({self.name!r}, base_url={self.client.where!r})"

    def waiting(self) -> str | None:
        """What a pending request waits for (host, attempt i of n, seconds), for the progress display."""
        return self.client.waiting()

    def versions(self) -> dict[str, str]:
        return {"api_model": self.model, "api_base": self.client.where, "adapter": f"api/{ADAPTER_VERSION}"}

    def generate(self, samples: "Sequence[Sample]", strategy: Any = None, *, max_new_tokens: int,
                 seed: int = 0) -> list[Generation]:
        if strategy is not None:
            raise ValueError(f"model {self.name!r} is an API model: its decoding is the server's; give no strategy")
        return _run(self._generate([s.messages for s in samples], max_new_tokens, seed))

    def complete(self, messages: Sequence[dict], max_new_tokens: int, seed: int = 0) -> Generation:
        """One request; raises `APIError` (one line) when it fails for good."""
        gen = _run(self._generate([messages], max_new_tokens, seed))[0]
        if gen.error:
            raise APIError(f"{self.name}: {gen.error}")
        return gen

    async def _generate(self, batches: list, max_new_tokens: int, seed: int) -> list[Generation]:
        gate = asyncio.Semaphore(self.options.concurrency)
        async with self.client.session() as http:
            tasks = [asyncio.ensure_future(self._one(http, gate, m, max_new_tokens, seed)) for m in batches]
            try:
                return list(await asyncio.gather(*tasks))
            except BaseException:
                for t in tasks:
                    t.cancel()
                raise

    async def _one(self, http, gate: asyncio.Semaphore, messages, max_new_tokens: int, seed: int) -> Generation:
        streaming = self.options.stream or self.options.diffusing
        body = body_for(self.model, messages, max_new_tokens, self.options.temperature, seed,
                        streaming=streaming, diffusing=self.options.diffusing)
        async with gate:
            began = time.perf_counter()
            with self._lock:
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
            try:
                text, steps, tokens = await self.client.chat(http, body, streaming)
            except KeyRejected:
                raise
            except RequestFailed as exc:
                return failed_generation(str(exc), exc.category, time.perf_counter() - began)
            finally:
                with self._lock:
                    self.in_flight -= 1
        return _generation(text, steps, tokens, time.perf_counter() - began)


def _run(coro):
    """Run a coroutine to the end, also when the caller already has an event loop (a notebook)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


def failed_generation(reason: str, category: str, wall_time: float) -> Generation:
    return Generation(text="", nfe=0, tokens_per_step=[], order=[], token_texts=[], num_tokens=0,
                      wall_time=wall_time, extra={"failure": category}, error=reason)


def _generation(text: str, steps: int | None, tokens: int | None, wall_time: float) -> Generation:
    """Steps known (streamed) -> nfe = steps; otherwise one token per step is assumed."""
    num_tokens = int(tokens) if tokens is not None else len(text.split())
    nfe = int(steps) if steps else num_tokens
    per_step = _spread(num_tokens, nfe)
    return Generation(text=text.strip(), nfe=nfe, tokens_per_step=per_step, order=[], token_texts=[],
                      num_tokens=num_tokens, wall_time=wall_time,
                      extra={"nfe_source": "streamed-steps" if steps else "assumed-one-token-per-step"})


def _spread(total: int, steps: int) -> list[int]:
    """`steps` integers summing to `total`, as even as possible."""
    if steps <= 0:
        return []
    base, extra = divmod(total, steps)
    return [base + (1 if i < extra else 0) for i in range(steps)]
