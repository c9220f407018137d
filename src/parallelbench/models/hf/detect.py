"""Which adapter a checkpoint needs, read from its config.json (no model code is imported).

Detection works on the raw JSON: the model_type (and, for LLaDA, the OLMo-style
field set), then transformers' own causal-LM table. Names in `architectures` or
`auto_map` never select LLaDA or Dream: a checkpoint cannot opt itself into a family
(and so into running code) by naming a class "llada" or "dream".

Remote code policy (`remote_code_allowed`): a checkpoint's own Python runs only when
the user passed trust_remote_code=true explicitly, and never for a family that has a
native implementation.
"""

from __future__ import annotations

from typing import Any

FAMILIES = ("llada", "lladamoe", "dream", "sdar", "llada2", "diffusion_gemma", "masked_lm", "causal")
REMOTE_CODE_FAMILIES = ("llada", "dream")  # adapters over a checkpoint's own modeling code
FAMILY_NAMES = {"llada": "LLaDA", "lladamoe": "LLaDA-MoE", "dream": "Dream / DiffuCoder", "sdar": "SDAR / TraDo", "llada2": "LLaDA 2.x (MoE)",
                "diffusion_gemma": "DiffusionGemma", "masked_lm": "masked LM (BERT-style)", "causal": "causal LM"}
NATIVE_MODEL_TYPES = {"llada": "llada", "lladamoe": "lladamoe", "dream": "dream", "sdar": "sdar",
                      "llada2_moe": "llada2"}  # lower-cased

_BY_MODEL_TYPE = {"diffusion_gemma": "diffusion_gemma"}
_BY_NAME_PART = (("diffusiongemma", "diffusion_gemma"),)  # a transformers class: no remote code involved
_OLMO_FIELDS = ("d_model", "n_heads", "n_layers")  # LLaDA's OLMo-style config (Hugging Face names differ)


def native_family(config: dict[str, Any]) -> str | None:
    """The family with a native implementation the checkpoint belongs to, or None
    (`parallelbench.models.native` uses this same rule as its `family_of`): model_type "llada"
    (any case) or an OLMo-style LLaDA config without a model_type -> 'llada'; "lladamoe", or "llada"
    with LLaDA-MoE's expert fields (the published LLaDA-MoE configs keep "llada") -> 'lladamoe'; "Dream" (Dream 7B,
    DiffuCoder) -> 'dream'; "sdar" (SDAR, and TraDo, which keeps SDAR's config) -> 'sdar';
    "llada2_moe" (LLaDA 2.0 / 2.1 mini and flash) -> 'llada2'. Read from the JSON alone, so it
    works without that package."""
    model_type = str(config.get("model_type") or "").lower()
    if model_type == "llada" and "expert_intermediate_size" in config and "d_model" not in config:
        return "lladamoe"
    if model_type in NATIVE_MODEL_TYPES:
        return NATIVE_MODEL_TYPES[model_type]
    if not model_type and all(isinstance(config.get(k), int) for k in _OLMO_FIELDS) and "mask_token_id" in config:
        return "llada"
    return None


def remote_code_allowed(config: dict[str, Any], requested: bool | None) -> bool:
    """Run the checkpoint's own code? Only on an explicit opt-in, and only without a native implementation."""
    return requested is True and native_family(config) is None


def detect_family(config: dict[str, Any]) -> str | None:
    """'llada', 'dream', 'sdar', 'llada2', 'diffusion_gemma', 'masked_lm', 'causal', or None when nothing matches."""
    native = native_family(config)
    if native is not None:
        return native
    model_type = str(config.get("model_type", "")).lower()
    if model_type in _BY_MODEL_TYPE:
        return _BY_MODEL_TYPE[model_type]
    names = [str(a) for a in config.get("architectures") or []]
    for name in names:
        low = name.lower().replace("_", "")
        for part, family in _BY_NAME_PART:
            if part in low:
                return family
    if any(a.endswith("ForMaskedLM") for a in names):  # transformers' own class (BERT, RoBERTa, ModernBERT ...)
        return "masked_lm"
    if any(a.endswith("ForCausalLM") for a in names) or _is_known_causal(model_type):
        return "causal"
    return None


def _is_known_causal(model_type: str) -> bool:
    if not model_type:
        return False
    try:
        from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    except ImportError:  # pragma: no cover - transformers missing is reported by the loader
        return False
    return model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES


def estimate_parameters(config: dict[str, Any]) -> float:
    """Rough parameter count from the config's sizes (Llama/Qwen and OLMo/LLaDA field names).

    Used only to decide whether a CPU load is sensible, so a factor of two is fine.
    """
    cfg = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    hidden = _first(cfg, "hidden_size", "d_model", "n_embd") or 0
    layers = _first(cfg, "num_hidden_layers", "n_layers", "num_layers") or 0
    ffn = _first(cfg, "intermediate_size", "mlp_hidden_size", "ffn_dim") or 4 * hidden
    vocab = _first(cfg, "vocab_size", "embedding_size") or 0
    experts = _first(cfg, "num_experts", "num_local_experts") or 1
    if experts > 1:  # each expert is moe_intermediate_size wide where the config says so (LLaDA 2, LLaDA-MoE)
        ffn = _first(cfg, "moe_intermediate_size", "expert_intermediate_size") or ffn
    per_layer = 4 * hidden * hidden + 3 * hidden * ffn * max(1, experts)
    return float(layers * per_layer + 2 * vocab * hidden)


def _first(cfg: dict[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = cfg.get(key)
        if isinstance(value, (int, float)) and value:
            return int(value)
    return None
