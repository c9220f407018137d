"""Typed reads of config.json fields with one-line errors naming the file and the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from parallelbench.models.native.errors import NativeCheckpointError


class Fields:
    def __init__(self, config: dict[str, Any], path: Path | str):
        self.config = config
        self.path = path

    def bad(self, what: str) -> NativeCheckpointError:
        return NativeCheckpointError(f"{self.path}: {what}; fix config.json or use the checkpoint's published config")

    def int(self, *keys: str, default: int | None = None) -> int:
        for key in keys:
            value = self.config.get(key)
            if value is not None:
                if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                    raise self.bad(f"field {key!r} must be a positive integer, got {value!r}")
                return value
        if default is None:
            raise self.bad(f"field {' or '.join(repr(k) for k in keys)} is missing")
        return default

    def float(self, key: str, default: float) -> float:
        value = self.config.get(key, default)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise self.bad(f"field {key!r} must be a positive number, got {value!r}")
        return float(value)

    def bool(self, key: str, default: bool) -> bool:
        value = self.config.get(key, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.bad(f"field {key!r} must be true or false, got {value!r}")
        return value

    def divides(self, big: int, small: int, what: str) -> None:
        if big % small:
            raise self.bad(what)
