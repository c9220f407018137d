"""`results --all-versions`: rows grouped by the decoding version that produced them.

A decoding version is what makes two decodes of one config comparable or not: the model (its
spec, `versions()` with the weights hash, its output-changing options) and the code (the
strategy's, a `py:` factory's). It is shown as `v:` and 8 hex characters, with one legend line
saying what it stands for; the task's data version (`versions.data`, the hash of its generator
settings and prompt) is a column of its own, 8 characters too, so one code version over
twelve tasks is one table, not twelve.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

#: How many hex characters of a hash are shown.
SHORT = 8
_HEX = re.compile(r"\b[0-9a-f]{12,}\b")
DATA_LEGEND = (f"data: the task's data version (first {SHORT} characters of versions.data, the hash of its generator "
               "settings and prompt)")


def _parse(versions_json: Any) -> dict:
    try:
        value = json.loads(versions_json or "{}") if isinstance(versions_json, str) else versions_json
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def short_hashes(text: str) -> str:
    """Every hex hash of 12 or more characters in `text` cut to `SHORT`."""
    return _HEX.sub(lambda m: m.group(0)[:SHORT], text)


def decoding_version(versions: dict) -> tuple[str, str]:
    """(`v:1a2b3c4d`, what it stands for in one line) for a row's `versions`."""
    model = versions.get("model") if isinstance(versions.get("model"), dict) else {}
    options = versions.get("model_options") if isinstance(versions.get("model_options"), dict) else {}
    code = versions.get("code") if isinstance(versions.get("code"), dict) else {}
    what = {"model_spec": str(versions.get("model_spec", "")),
            "model": {str(k): str(v) for k, v in model.items()},
            "options": {str(k): str(v) for k, v in options.items()},
            "code": {str(k): str(v) for k, v in code.items()}}
    label = "v:" + hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:SHORT]
    parts = [", ".join(f"{k}={v}" for k, v in sorted(what["model"].items())) or "no model versions recorded"]
    if what["model_spec"]:
        parts.insert(0, f"spec {what['model_spec']}")
    if what["options"]:
        parts.append("options " + ", ".join(f"{k}={v}" for k, v in sorted(what["options"].items())))
    if what["code"]:
        parts.append("code " + ", ".join(f"{k} {v}" for k, v in sorted(what["code"].items())))
    text = short_hashes("; ".join(parts))
    return label, text if len(text) <= 300 else text[:297] + "..."


def data_version(versions: dict) -> str:
    return str(versions.get("data") or "?")[:SHORT]


def by_version(frame: "pd.DataFrame") -> tuple["pd.DataFrame", dict[str, str], dict[str, str]]:
    """(frame with `model` = "MODEL v:HASH" and a `data` column, {model: title}, {v:HASH: legend})."""
    parsed = [_parse(v) for v in frame["versions"]]
    labels = [decoding_version(v) for v in parsed]
    out = frame.copy()
    out["model"] = [f"{m} {label}" for m, (label, _) in zip(frame["model"].astype(str), labels)]
    out["data"] = [data_version(v) for v in parsed]
    scoring = [short_hashes(f"{v.get('scorer_version', '?')}/{v.get('scoring', 'default')}") for v in parsed]
    if len(set(zip(out["model"], out["task"], out["data"], scoring))) > len(set(zip(out["model"], out["task"], out["data"]))):
        out["data"] = [f"{d} s:{s}" for d, s in zip(out["data"], scoring)]  # rows scored again under another version
    from parallelbench.analysis.terminal import full_label

    titles = {f"{m} {label}": f"{full_label(m)} {label}" for m, (label, _) in zip(frame["model"].astype(str), labels)}
    legend = dict(labels)
    return out, titles, legend
