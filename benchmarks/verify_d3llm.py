"""Compare `multi-block` (without a cache and with cache=delayed) with d3LLM's official routines.

d3LLM's code (hao-ai-lab/d3LLM) was written for transformers 4.49 and runs batch 1 only, so it
runs in a scratch virtual environment, in a subprocess:

  (a) a driver script, written by this tool, builds tiny random-weight LLaDA and Dream
      checkpoints in the published format with the official model classes (the Fast-dLLM copies
      d3LLM ships under baseline/Fast_dLLM_v1; the builders are verify_native.py's), zeroes the
      mask token's output row (as in the trained checkpoints, the mask is never the argmax), loads
      each one with d3LLM's own model classes (utils/utils_LLaDA, utils/utils_Dream: the ones its
      cache routines need) and runs, for every prompt alone and every setting,
      `generate_multi_block` / `generate_multi_block_kv_cache` (LLaDA) and the Dream mixin's
      `generate_multi_block` (`alg="entropy_threshold"`, `cache_delay_iter` < 10000 for the
      cache), recording the tokens, d3LLM's `nfe` counter and the model calls actually made;
  (b) here, the checkpoints' `.py` files are replaced with files that raise on import, and
      `load_model("hf:<dir>")` (with `cache=delayed cache_delay=N refresh_interval=M` for the cache
      routines) decodes the same prompts with `multi-block` (Dream: `commit_lowest=false`),
      batched (left-padded) and each alone; tokens and model calls are compared row by row.

After an EOS (settings with `early_stop=True`) the published loops do two things the stated
semantics do not (docs/strategies.md, "multi-block"): for one iteration they keep the masks read
before the EOS fill, so a slot they just set to EOS can be committed again, and they skip the
fill after their last step. Each official run is therefore made twice: as published, and with
the masks read again after the fill (a wrapper around their `handle_early_stop` that updates the
caller's mask tensor in place; nothing else changes); the final fill is applied to both outputs.
Ours must equal the second run in every row; the table also says in how many rows the first run
agrees as published. d3LLM's Dream cache routine can keep more keys/values than its own cache
length when two finished blocks wait at once (its refresh truncates the cache at the later
block); a watch on its cached calls counts those rows, which are set aside.

Setup (once):

    # the scratch venv of benchmarks/verify_native.py (transformers 4.49; its --help has the commands)
    # DIR: a copy of hao-ai-lab/d3LLM (d3llm/, utils/utils_LLaDA/, utils/utils_Dream/ and
    # baseline/Fast_dLLM_v1/ are used); keep it outside the repository

Run:

    PYTHONPATH=src python benchmarks/verify_d3llm.py --python /tmp/pb-tf449/bin/python --official DIR
    PYTHONPATH=src python benchmarks/verify_d3llm.py --python /tmp/pb-tf449/bin/python --official DIR --quick
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _verify_common as common  # noqa: E402
import verify_native as vn  # noqa: E402

OFFICIAL_FILES = ("d3llm/d3llm_LLaDA/d3llm_llada_generate_util.py", "d3llm/d3llm_DREAM/d3llm_dream_generate_util.py",
                  "utils/utils_LLaDA/model/modeling_llada.py", "utils/utils_Dream/model/modeling_dream.py",
                  *(f"baseline/Fast_dLLM_v1/{rel}" for rel in vn.OFFICIAL_FILES["llada"] + vn.OFFICIAL_FILES["dream"]))

# ----------------------------------------------------------------------------------------------
# The driver's records part (after verify_native's builders): runs in the scratch venv.
# ----------------------------------------------------------------------------------------------
DRIVER_RUNS = r'''
import importlib
import types

from safetensors.torch import load_file, save_file

d3 = Path(spec["d3llm"])
sys.path.insert(0, str(d3))
llada_gen = importlib.import_module("d3llm.d3llm_LLaDA.d3llm_llada_generate_util")
dream_gen = importlib.import_module("d3llm.d3llm_DREAM.d3llm_dream_generate_util")
from utils.utils_LLaDA.model.modeling_llada import LLaDAModelLM as D3LLaDA
from utils.utils_Dream.model.modeling_dream import DreamModel as D3Dream

FIX = [False]  # read the masks again after the EOS fill (see the harness's docstring)


def watched_early_stop(real):
    def early_stop(x, block_states, eos_token_id, prompt_length, mask_token_id=None, debug=False):
        out = real(x, block_states, eos_token_id, prompt_length, mask_token_id=mask_token_id, debug=debug)
        if FIX[0] and out[0]:
            caller = sys._getframe(1).f_locals.get("mask_index")
            if caller is not None:
                caller &= x == mask_token_id  # in place: the routine's own tensor
        return out
    return early_stop


for module in (llada_gen, dream_gen):
    module.handle_early_stop = watched_early_stop(module.handle_early_stop)


def zero_mask_row(folder, mask_id, names):
    """The mask token's output (and, tied, input) row zeroed in the saved weights: never the argmax."""
    for path in sorted(folder.glob("*.safetensors")):
        tensors = load_file(str(path))
        hit = [n for n in names if n in tensors]
        for n in hit:
            tensors[n][mask_id] = 0
        if hit:
            save_file(tensors, str(path), metadata={"format": "pt"})


class Watch:
    """Counts the model calls, and cached calls whose cache is longer than the routine's own length."""

    def __init__(self, model):
        self.calls, self.desync = 0, 0
        model.register_forward_hook(self.after)
        model.register_forward_pre_hook(self.before, with_kwargs=True)

    def after(self, module, args, output):
        self.calls += 1

    def before(self, module, args, kwargs):
        past, pos = kwargs.get("past_key_values"), kwargs.get("cache_position")
        if past is not None and pos is not None and past.get_seq_length() != int(pos[0]):
            self.desync += 1


def run_official(family, model, watch, prompt, s, mask_id, eos_id):
    watch.calls, watch.desync = 0, 0
    ids = torch.tensor([prompt])
    g = spec["gen_length"]
    if family == "llada":
        common = dict(max_new_tokens=g, block_size=s["block"], temperature=0.0, mask_id=mask_id,
                      threshold=s["threshold"], block_add_threshold=s["add"], decoded_token_threshold=s["activate"],
                      eos_token_id=eos_id, early_stop=s["early_stop"])
        if s["cache"] is None:
            x, nfe = llada_gen.generate_multi_block(model, ids, **common)
        else:
            x, nfe = llada_gen.generate_multi_block_kv_cache(model, ids, cache_delay_iter=s["cache"][0],
                                                             refresh_interval=s["cache"][1], **common)
    else:
        delay, interval = s["cache"] or (10000, 10000)
        x, nfe = model.generate_multi_block(ids, max_new_tokens=g, mask_token_id=mask_id, eos_token_id=eos_id,
                                            alg="entropy_threshold", temperature=0.0, threshold=s["threshold"],
                                            block_size=s["block"], block_add_threshold=s["add"],
                                            decoded_token_threshold=s["activate"], cache_delay_iter=delay,
                                            refresh_interval=interval, early_stop=s["early_stop"])
    return {"tokens": x[0, len(prompt):].tolist(), "counter": int(nfe), "calls": watch.calls,
            "desync": watch.desync}


results = {"checkpoints": {}}
with torch.no_grad():
    for name, fam in spec["checkpoints"].items():
        family, shape = fam["family"], fam["shape"]
        folder, cfg, ids = (build_llada if family == "llada" else build_dream)(name, shape)
        mask_id = cfg["mask_token_id"]
        heads = ["model.transformer.ff_out.weight", "model.transformer.wte.weight"] if family == "llada" else \
            ["lm_head.weight", "model.embed_tokens.weight"]
        tied = shape.get("weight_tying") or shape.get("tie_word_embeddings")
        zero_mask_row(folder, mask_id, heads if tied else heads[:1])
        model = (D3LLaDA if family == "llada" else D3Dream).from_pretrained(str(folder), torch_dtype=torch.float32).eval()
        if family == "dream":  # d3LLM's chat script attaches its generation mixin to the model this way
            for attr, fn in vars(dream_gen.DreamGenerationMixin).items():
                if isinstance(fn, staticmethod):
                    setattr(model, attr, fn.__func__)
                elif callable(fn) and not attr.startswith("__"):
                    setattr(model, attr, types.MethodType(fn, model))
        watch = Watch(model)
        prompts = random_prompts(shape["vocab_size"], mask_id, spec["prompt_lengths"], spec["seed"] + 3)
        # the end token: the one the random net decodes most often (its first setting, no early stop), so
        # that rows with early_stop end at different places
        probe = {**spec["settings"][0], "early_stop": False, "cache": None}
        decoded = torch.tensor([t for p in prompts for t in run_official(family, model, watch, p, probe, mask_id, 0)["tokens"]])
        eos_id = int(torch.bincount(decoded[decoded != mask_id]).argmax())
        runs = []
        for s in spec["settings"]:
            rows = []
            for p in prompts:
                FIX[0] = False
                published = run_official(family, model, watch, p, s, mask_id, eos_id)
                FIX[0] = True
                fixed = run_official(family, model, watch, p, s, mask_id, eos_id) if s["early_stop"] else published
                rows.append({"published": published, "fixed": fixed})
            runs.append({"setting": s, "rows": rows})
        results["checkpoints"][name] = {"folder": str(folder), "family": family, "mask_id": mask_id,
                                        "eos_id": eos_id, "prompts": prompts, "runs": runs}
        del model

write_results(results)
'''


def make_spec(quick: bool, seed: int) -> dict[str, Any]:
    base = vn.make_spec(quick, seed)
    checkpoints = base["checkpoints"]
    for entry in checkpoints.values():
        entry.pop("generate", None)
    # (block, threshold, add, activate, early_stop, cache (cache_delay, refresh_interval) or None)
    raw = [(8, 0.5, 0.1, 0.95, False, None), (8, 0.9, 0.5, 0.5, True, None), (8, 0.7, 0.25, 0.75, True, (1, 10000)),
           (4, 0.6, 1.0, 1.0, True, (2, 3))]
    if not quick:
        raw += [(16, 0.3, 0.0, 1.0, False, None), (4, 0.95, 0.1, 0.95, True, None), (8, 0.5, 0.1, 0.95, False, (0, 10000)),
                (8, 0.8, 0.5, 0.5, True, (3, 4)), (16, 0.6, 0.25, 0.5, True, (2, 10000)), (4, 0.4, 0.0, 0.0, False, (1, 2))]
    settings = [{"block": b, "threshold": t, "add": a, "activate": d, "early_stop": e, "cache": c}
                for b, t, a, d, e, c in raw]
    return {**base, "checkpoints": checkpoints, "settings": settings, "gen_length": 32,
            "prompt_lengths": [3, 8, 13] if quick else [3, 6, 9, 13, 21]}


def final_fill(tokens: list[int], eos_id: int | None) -> list[int]:
    """Every slot after the first EOS set to EOS (the fill the published loops skip at their end)."""
    if eos_id is None or eos_id not in tokens:
        return list(tokens)
    i = tokens.index(eos_id)
    return tokens[: i + 1] + [eos_id] * (len(tokens) - i - 1)


def compare(name: str, entry: dict[str, Any], report: common.Report) -> None:
    from parallelbench.decoding import build_strategy, decode
    from parallelbench.models.registry import load_model

    family = entry["family"]
    prompts = entry["prompts"]
    for run in entry["runs"]:
        s = run["setting"]
        eos = entry["eos_id"] if s["early_stop"] else None  # without early_stop nothing is filled
        options: dict[str, Any] = {}
        if s["cache"] is not None:
            options = {"cache": "delayed", "cache_delay": s["cache"][0], "refresh_interval": s["cache"][1]}
        net = load_model(f"hf:{entry['folder']}", device="cpu", dtype="float32", **options).net
        net.eos_id = entry["eos_id"]  # the end token the driver chose (both sides decode with it)
        strategy = build_strategy("multi-block", block_length=s["block"], threshold=s["threshold"],
                                  add_block_threshold=s["add"], activate_threshold=s["activate"],
                                  stop_at_eos=s["early_stop"], commit_lowest=family == "llada")
        label = (f"B={s['block']} T={s['threshold']} A={s['add']} D={s['activate']} E={int(s['early_stop'])}"
                 + (f" cache={s['cache'][0]}/{s['cache'][1]}" if s["cache"] else ""))
        usable = [i for i, r in enumerate(run["rows"]) if r["fixed"]["desync"] == 0 and r["published"]["desync"] == 0]
        set_aside = len(prompts) - len(usable)
        for how, results in (("batched", decode(net, prompts, gen_length=32, strategy=strategy)),
                             ("alone", [decode(net, [p], gen_length=32, strategy=strategy)[0] for p in prompts])):
            fixed = sum(int(results[i].tokens == final_fill(run["rows"][i]["fixed"]["tokens"], eos)
                            and results[i].nfe == run["rows"][i]["fixed"]["calls"]) for i in usable)
            row = common.Row(name, f"tokens & calls = official, {how}, {label}", f"{fixed}/{len(usable)}",
                             note=("" if fixed == len(usable) else "MISMATCH")
                             + (f"; {set_aside} set aside (official cache desync)" if set_aside else ""))
            if fixed != len(usable) or not usable:
                row.limit = 0.0
            report.rows.append(row)
        same = [i for i in usable if final_fill(run["rows"][i]["published"]["tokens"], eos)
                == final_fill(run["rows"][i]["fixed"]["tokens"], eos)
                and run["rows"][i]["published"]["calls"] == run["rows"][i]["fixed"]["calls"]]
        extra = [run["rows"][i]["fixed"]["counter"] - run["rows"][i]["fixed"]["calls"] for i in usable]
        filled = sum(int(run["rows"][i]["published"]["tokens"] != final_fill(run["rows"][i]["published"]["tokens"], eos))
                     for i in usable)
        report.rows.append(common.Row(
            name, f"  as published = masks re-read after the fill, {label}", f"{len(same)}/{len(usable)}",
            note=f"d3LLM counter - calls: {sorted(set(extra))}; published outputs needing the final fill: {filled}"))
        if any(e not in (0, 1) for e in extra) or (not s["early_stop"] and any(extra)):
            report.rows[-1].limit = 0.0
            report.rows[-1].value = -1.0


def verify(python: str, official: Path, work: Path, quick: bool, seed: int = 0) -> common.Report:
    spec = make_spec(quick, seed)
    spec["d3llm"] = str(official)
    refs = common.run_driver(python, official / "baseline" / "Fast_dLLM_v1", work, spec,
                             vn.DRIVER_BUILD + DRIVER_RUNS, {"TORCHDYNAMO_DISABLE": "1", "TOKENIZERS_PARALLELISM": "false"})
    report = common.Report(versions=refs["versions"], widths=(16, 78))
    report.notes.append(f"references from {python}: torch {refs['versions']['torch']}, transformers "
                        f"{refs['versions']['transformers']}; d3LLM at {official}")
    report.notes.append("LLaDA: generate_multi_block / generate_multi_block_kv_cache vs multi-block; Dream: the mixin's "
                        "generate_multi_block vs multi-block commit_lowest=false; gen_length 32, each official prompt alone")
    for name, entry in refs["checkpoints"].items():
        poisoned = vn.poison_code(Path(entry["folder"]))
        report.notes.append(f"{name}: {', '.join(poisoned)} replaced with files that raise on import; end token "
                            f"{entry['eos_id']} (the token the random net decodes most often)")
        compare(name, entry, report)
    return report


def main(argv: list[str] | None = None) -> int:
    return common.one_venv_main(
        argv, doc=__doc__, script="verify_d3llm.py", example_official="/tmp/d3LLM", python_env="PARALLELBENCH_D3LLM_VENV",
        code_env="PARALLELBENCH_D3LLM_CODE", code_help="a copy of hao-ai-lab/d3LLM", quick_help="two checkpoints, three prompts, four settings",
        problem=lambda folder: common.missing_files(folder, OFFICIAL_FILES, "a copy of hao-ai-lab/d3LLM is needed"), verify=verify)


if __name__ == "__main__":
    sys.exit(main())
