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

    def qwen_style(self, family: str, attention: str) -> None:
        """The Qwen-lineage options the shared layers do not implement, refused by name.

        `attention` says, for the message, what the family attends to instead of a window."""
        act = str(self.config.get("hidden_act", "silu")).lower()
        if act != "silu":
            raise self.bad(f"hidden_act {act!r} is not supported natively ({family} uses 'silu')")
        scaling = self.config.get("rope_scaling")
        if scaling and str(scaling.get("rope_type", scaling.get("type", "default"))) != "default":
            raise self.bad(f"rope_scaling {scaling!r} is not supported natively ({family} uses none)")
        if self.config.get("use_sliding_window"):
            raise self.bad(f"use_sliding_window=true is not supported natively ({family} attends to {attention})")

    def optional_int(self, key: str) -> int | None:
        """A positive integer when the config states one, else None."""
        return None if self.config.get(key) is None else self.int(key)

    def rotary_dims(self, head_dim: int, default: float | None) -> int:
        """Rotated dimensions per head: head_dim * partial_rotary_factor (`default` when the config has
        none; None: the field is required), a positive even number."""
        factor = self.config.get("partial_rotary_factor", default)
        if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not 0 < factor <= 1:
            raise self.bad(f"field 'partial_rotary_factor' must be a number in (0, 1], got {factor!r}")
        dims = int(head_dim * factor)
        if dims % 2 or dims < 2:
            raise self.bad(f"partial_rotary_factor={factor} gives {dims} rotary dimensions of head_dim={head_dim}; "
                           "RoPE needs an even number")
        return dims
