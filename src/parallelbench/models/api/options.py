"""The `--model-opt` options of `api:` models, their environment fallbacks and their checks."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, fields
from typing import Any, Sequence

from parallelbench.models.registry import ModelSpecError

BASE_ENV = ("PARALLELBENCH_API_BASE", "OPENAI_BASE_URL")
KEY_ENV = ("PARALLELBENCH_API_KEY", "OPENAI_API_KEY")


class APIError(ModelSpecError):
    """A configuration or request failure, said in one line (never holding the key)."""


@dataclass
class APIOptions:
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)  # never shown, not even in a repr
    concurrency: int = 4  # requests in flight at once
    timeout: float = 120.0  # deadline of one attempt (connect + send + every read), seconds
    # deadline of one request in all, every attempt and every wait between them included, seconds
    total_timeout: float = 300.0
    max_retries: int = 5
    backoff: float = 1.0  # first retry delay in seconds, doubled each retry (with jitter)
    max_backoff: float = 60.0
    max_retry_after: float = 60.0  # a server's Retry-After is obeyed up to this many seconds
    max_reply_bytes: int = 16 * 1024 * 1024  # a longer reply body is cut off and the sample fails
    temperature: float = 0.0
    stream: bool = False
    diffusing: bool = False  # Mercury: stream denoising steps (each chunk = the whole current text)


# Whether each option can change outputs (a row's provenance holds those that can): the endpoint,
# the model's sampling and the streaming mode can; limits, waits and the key cannot.
OPTIONS = {f.name: f.name in ("base_url", "temperature", "stream", "diffusing") for f in fields(APIOptions)}

_KINDS = {f.name: {"str | None": str, "int": int, "float": float, "bool": bool}[str(f.type)] for f in fields(APIOptions)}


def parse_options(options: dict[str, Any]) -> APIOptions:
    unknown = sorted(set(options) - set(_KINDS))
    if unknown:
        raise APIError(f"unknown api model option(s) {', '.join(unknown)}; valid: {', '.join(_KINDS)}")
    values: dict[str, Any] = {}
    for key, value in options.items():
        kind = _KINDS[key]
        shown = "***" if key == "api_key" else repr(value)
        try:
            if kind is bool:
                text = str(value).strip().lower()
                if text not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
                    raise ValueError
                values[key] = text in ("1", "true", "yes", "on")
            elif kind is str:
                values[key] = str(value)
            else:
                number = float(value)
                if not math.isfinite(number):
                    raise ValueError
                values[key] = int(number) if kind is int else number
        except (TypeError, ValueError, OverflowError):
            raise APIError(f"api model option {key}={shown} is invalid: use a finite {kind.__name__}") from None
    opts = APIOptions(**values)
    if (opts.concurrency < 1 or opts.max_retries < 0 or opts.timeout <= 0 or opts.total_timeout <= 0 or opts.backoff < 0
            or opts.max_backoff < 0 or opts.max_retry_after < 0 or opts.max_reply_bytes < 1):
        raise APIError(
            "api model options need concurrency >= 1, max_retries >= 0, timeout and total_timeout > 0, backoff, max_backoff and "
            "max_retry_after >= 0, and max_reply_bytes >= 1"
        )
    return opts


def env_value(names: Sequence[str]) -> str | None:
    for name in names:
        if os.environ.get(name):
            return os.environ[name]
    return None
