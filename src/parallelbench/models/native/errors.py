"""The one error type of the native loader: a checkpoint that cannot be read, named with its file."""

from __future__ import annotations

from parallelbench.models.registry import ModelSpecError


class NativeCheckpointError(ModelSpecError):
    """A config, shard, tensor or tokenizer problem; the message names the file and the fix (one line)."""
