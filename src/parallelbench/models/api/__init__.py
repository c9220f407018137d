"""`api:<model>`: any OpenAI-compatible chat endpoint (Mercury, vLLM, SGLang, OpenAI...).

    parallelbench run --model api:mercury-coder --model-opt base_url=https://api.inceptionlabs.ai/v1 \
        --model-opt diffusing=true --tasks waiting_line/copy

Base URL, key and limits come from options (`--model-opt KEY=VALUE`) or the environment
(PARALLELBENCH_API_BASE or OPENAI_BASE_URL; PARALLELBENCH_API_KEY or OPENAI_API_KEY).
The package is three ideas: `options` (what can be set), `client` (one request over httpx:
deadline, retries, size cap, redirects, redaction), `replies` (reading JSON and streamed
replies) and `model` (samples in, generations out; a failed sample is a failed generation).
With `diffusing=true` (Mercury) or `stream=true` each streamed content chunk counts as one
denoising step, so `nfe` is the number of steps the server streamed; with `diffusing` each
chunk is the whole current text, otherwise chunks are appended. Without streaming one
token per step is assumed. See docs/models.md for the failure behaviour.
"""

from parallelbench.models.api.client import RETRY_STATUS, Client, KeyRejected, RequestFailed
from parallelbench.models.api.model import ADAPTER_VERSION, APIModel, load
from parallelbench.models.api.options import BASE_ENV, KEY_ENV, APIError, APIOptions, parse_options

__all__ = ["ADAPTER_VERSION", "APIError", "APIModel", "APIOptions", "BASE_ENV", "Client", "KEY_ENV",
           "KeyRejected", "RETRY_STATUS", "RequestFailed", "load", "parse_options"]
