"""Reaching the Hugging Face Hub for an `hf:<owner/name>` id: fast, quiet, one line on failure.

The hub client retries a dead network for about half a minute, printing each retry, and
then reports the file as "not found". Before asking it anything we therefore check, with a
short bounded probe, that the endpoint answers at all. When it does not (or HF_HUB_OFFLINE
is set) a config already in the local cache is used and the load continues offline
(`local_files_only`); otherwise the user gets one line saying the hub cannot be reached.
"""

from __future__ import annotations

import threading
from pathlib import Path

from parallelbench.models.hf.errors import HFModelError

PROBE_TIMEOUT_S = 5.0  # a hub that has not answered a HEAD request by then counts as unreachable


def short(text: str, limit: int = 160) -> str:
    """One line of at most about `limit` characters, cut at a word boundary."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0] + " ..."


def probe(endpoint: str, timeout: float = PROBE_TIMEOUT_S) -> str | None:
    """None when `endpoint` answers an HTTP request (any status), else why not, in a few words.

    Runs in a daemon thread with a hard deadline, because name resolution ignores socket
    timeouts on some systems.
    """
    import httpx

    outcome: list[str | None] = []

    def attempt() -> None:
        try:
            httpx.head(endpoint, timeout=timeout, follow_redirects=False)
            outcome.append(None)
        except httpx.TimeoutException:
            outcome.append(f"no answer within {timeout:g} s")
        except httpx.HTTPError as exc:  # connect, DNS, proxy, TLS errors
            outcome.append(short(f"{type(exc).__name__}: {exc}", 100))
        except Exception as exc:  # noqa: BLE001 - e.g. a malformed HF_ENDPOINT
            outcome.append(short(f"{type(exc).__name__}: {exc}", 100))

    worker = threading.Thread(target=attempt, name="hf-hub-probe", daemon=True)
    worker.start()
    worker.join(timeout + 1.0)
    return outcome[0] if outcome else f"no answer within {timeout + 1.0:g} s"


def _cached(repo_id: str, filename: str, revision: str | None) -> Path | None:
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(repo_id, filename, revision=revision)
    return Path(found) if isinstance(found, str) else None


def hub_file(repo_id: str, filename: str, revision: str | None = None) -> tuple[Path, bool]:
    """(local path of `filename` in hub repo `repo_id`, offline?) or one `HFModelError` line.

    `offline` is True when the hub is switched off or unreachable and the file came from
    the local cache: later downloads of the same checkpoint must then stay local too.
    """
    try:
        from huggingface_hub import constants, hf_hub_download
        from huggingface_hub import errors as hub_errors
    except ImportError:  # pragma: no cover
        raise HFModelError("hf: models need transformers and huggingface_hub: pip install 'transformers>=4.46'") from None
    label = f"'hf:{repo_id}'"
    if constants.HF_HUB_OFFLINE:
        cached = _cached(repo_id, filename, revision)
        if cached is not None:
            return cached, True
        raise HFModelError(
            f"model {label}: the Hugging Face Hub is switched off (HF_HUB_OFFLINE=1) and the model is not in the "
            "local cache; unset HF_HUB_OFFLINE to download it, or give a local folder"
        )
    problem = probe(constants.ENDPOINT)
    if problem is not None:
        cached = _cached(repo_id, filename, revision)
        if cached is not None:
            return cached, True
        raise HFModelError(
            f"model {label}: the Hugging Face Hub ({constants.ENDPOINT}) cannot be reached ({problem}) and the model "
            "is not in the local cache; check your network or proxy (or HF_ENDPOINT), or give a local folder"
        )
    try:
        return Path(hf_hub_download(repo_id, filename, revision=revision)), False
    except hub_errors.GatedRepoError:
        raise HFModelError(
            f"model {label} is gated on the Hugging Face Hub: accept its licence on the model page and set HF_TOKEN"
        ) from None
    except hub_errors.RepositoryNotFoundError:
        raise HFModelError(
            f"model {label} not found on the Hugging Face Hub (or private: set HF_TOKEN); check the id or give a local folder"
        ) from None
    except hub_errors.RevisionNotFoundError:
        raise HFModelError(f"model {label}: revision {revision!r} not found on the Hugging Face Hub; check --model-opt revision") from None
    except hub_errors.EntryNotFoundError:
        raise HFModelError(f"model {label} has no {filename} on the Hugging Face Hub; it is not a transformers checkpoint") from None
    except Exception as exc:  # noqa: BLE001 - anything else the hub client raises
        raise HFModelError(
            f"model {label}: the Hugging Face Hub did not give its {filename} ({short(f'{type(exc).__name__}: {exc}')}); "
            "check the id, your network or HF_TOKEN, or give a local folder"
        ) from None
