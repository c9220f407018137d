"""Compare `indel-threshold` with SGLang's `JointThresholdInDel.step` driven on the official LLaDA 2 code.

SGLang's insert/delete decoder (python/sglang/srt/dllm/algorithm/joint_threshold_indel.py) is the
readable implementation of LLaDA 2.2's editing. Its file runs here unchanged, without SGLang:

  (a) verify_block_native.py's driver builds a tiny random-weight LLaDA 2 checkpoint with the
      OFFICIAL model and config classes in a scratch venv (transformers 4.57);
  (b) a second driver, in the same venv, gives it DELETE and SPLIT tokens (`delete_token_id` /
      `split_token_id` in config.json: two byte tokens whose head rows it scales up, so that
      the random model writes them), then decodes with SGLang's `step`, imported from a scratch
      package in which every other module it imports is a stand-in written by this tool
      (`DllmAlgorithm`'s constructor, `DllmConfig`, `ForwardBatch`: attribute holders). The
      loop is shaped like SGLang's `_run_sync`: per `_run_sync` call the current block of every
      unfinished request, one forward, then `step` / forward until every row is done. Each
      forward is the official model on the row's prefix and block under the block-causal mask
      (positions from 0), float32. It records the tokens, the rounds (step calls on a row not
      yet finished: the forwards whose logits SGLang's step reads) and all forwards (also the
      one after a final round that changed the block, which only stores its keys and values),
      batched and each prompt alone;
  (c) here: the checkpoint's .py files are replaced with files that raise on import, the native
      net is loaded with `load_model("hf:<dir>")` (cache=none and cache=block) and decoded with
      the mapping `indel-threshold threshold=T edit_threshold=E post_steps=M block_length=B`
      (+ `stop_at_eos=true` where SGLang stops at EOS), batched and alone: tokens and NFE must
      equal SGLang's tokens and rounds, and the DELETE / SPLIT counts its own.

Setup (once; keep the official files outside the repository, never commit SGLang's file):

    python3.11 -m venv /tmp/native-tf457 && /tmp/native-tf457/bin/pip install torch==2.13.0 \\
        transformers==4.57.1 safetensors numpy tokenizers accelerate
    # DIR/llada2/: modeling_llada2_moe.py, configuration_llada2_moe.py (an LLaDA 2 checkpoint's files,
    #              e.g. the copy in ZHZisZZ/dllm dllm/pipelines/llada2/models/)
    # FILE: SGLang's python/sglang/srt/dllm/algorithm/joint_threshold_indel.py, saved under /tmp

Run:

    PYTHONPATH=src python benchmarks/verify_indel_sglang.py --official DIR --sglang FILE \\
        --llada2-python /tmp/native-tf457/bin/python [--quick]

(or set PARALLELBENCH_BLOCK_OFFICIAL_CODE, PARALLELBENCH_SGLANG_INDEL, PARALLELBENCH_LLADA2_VENV).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _verify_common as common  # noqa: E402
import verify_block_native as vb  # noqa: E402

# The stand-ins for the modules SGLang's file imports: only what its `step` touches.
STANDINS = {
    "sglang/__init__.py": "",
    "sglang/srt/__init__.py": "",
    "sglang/srt/dllm/__init__.py": "",
    "sglang/srt/dllm/algorithm/__init__.py": "",
    "sglang/srt/dllm/algorithm/base.py": (
        "class DllmAlgorithm:\n"
        "    \"\"\"Stand-in: what the algorithm's constructor reads from its base.\"\"\"\n"
        "    def __init__(self, config):\n"
        "        self.block_size = config.block_size\n"
        "        self.mask_id = config.mask_id\n"),
    "sglang/srt/dllm/config.py": (
        "class DllmConfig:\n"
        "    \"\"\"Stand-in: block_size, mask_id, algorithm_config, delete_token_id, split_token_id.\"\"\"\n"
        "    def __init__(self, **fields):\n"
        "        self.__dict__.update(fields)\n"),
    "sglang/srt/model_executor/__init__.py": "",
    "sglang/srt/model_executor/forward_batch_info.py": (
        "class ForwardBatch:\n"
        "    \"\"\"Stand-in: batch_size, input_ids (the blocks, flat) and dllm_prompt_mask.\"\"\"\n"
        "    def __init__(self, **fields):\n"
        "        self.__dict__.update(fields)\n"),
}
SGLANG_MODULE = "sglang/srt/dllm/algorithm/joint_threshold_indel.py"

# ----------------------------------------------------------------------------------------------
# Driver (b): runs in the scratch venv. This project's own code; SGLang's file is imported as is.
# ----------------------------------------------------------------------------------------------
DRIVER = r'''
import json, sys
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

spec = json.loads(Path(sys.argv[1]).read_text())
folder = Path(spec["folder"])
sys.path.insert(0, spec["package"])
from sglang.srt.dllm.algorithm.joint_threshold_indel import JointThresholdInDel
from sglang.srt.dllm.config import DllmConfig
from sglang.srt.model_executor.forward_batch_info import ForwardBatch
from transformers import AutoModelForCausalLM

mask_id, eos_id, delete_id, split_id = spec["mask_id"], spec["eos_id"], spec["delete_id"], spec["split_id"]

# DELETE and SPLIT: config.json states them; their head rows are scaled so the random model writes them
cfg = json.loads((folder / "config.json").read_text())
cfg.update(delete_token_id=delete_id, split_token_id=split_id)
(folder / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True))
index = folder / "model.safetensors.index.json"
shard = json.loads(index.read_text())["weight_map"]["lm_head.weight"] if index.is_file() else "model.safetensors"
tensors = load_file(str(folder / shard))
head = tensors["lm_head.weight"].clone()
head[[delete_id, split_id]] *= spec["head_scale"]
tensors["lm_head.weight"] = head.contiguous()
save_file(tensors, str(folder / shard), metadata={"format": "pt"})

torch.manual_seed(0)
model = AutoModelForCausalLM.from_pretrained(str(folder), trust_remote_code=True, torch_dtype=torch.float32).eval()


def official_block_logits(ids, block):
    """The official forward of one row (prompt, earlier blocks, this block) under the block-causal
    mask, positions from 0: the logits of its last `block` positions."""
    n = len(ids)
    blocks = torch.arange(n) // block
    bias = (blocks[None, :] <= blocks[:, None]).float().log()[None, None]
    out = model(torch.tensor([ids]), attention_mask=bias, position_ids=torch.arange(n)[None]).logits[0]
    return out[-block:].float()


def sglang_decode(prompts, run):
    B, gen = run["block_length"], run["gen_length"]
    algo = JointThresholdInDel(DllmConfig(
        block_size=B, mask_id=mask_id, delete_token_id=delete_id, split_token_id=split_id,
        first_done_first_out_mode=False,
        algorithm_config={"threshold": run["threshold"], "edit_threshold": run["edit_threshold"],
                          "max_post_edit_steps": run["post_steps"]}))
    ops = {"deletes": 0, "inserts": 0}
    apply = algo._apply_edit_operations

    def counted(block_tokens, old, marks, prompt_len):
        suffix = block_tokens[prompt_len:]
        ops["deletes"] += suffix.count(delete_id)
        ops["inserts"] += suffix.count(split_id)
        return apply(block_tokens, old, marks, prompt_len)

    algo._apply_edit_operations = counted
    rows = []
    for p in prompts:
        total = -(-(len(p) + gen) // B) * B
        rows.append({"x": list(p) + [mask_id] * (total - len(p)), "p": len(p), "block": len(p) // B,
                     "end": total // B, "rounds": 0, "forwards": 0, "repeats": 0, "stopped": False})
    while True:
        live = [r for r in rows if not r["stopped"] and r["block"] < r["end"]]
        if not live:
            break
        # one `_run_sync` call: the current block of every live row
        lo = [r["block"] * B for r in live]
        batch = ForwardBatch(
            batch_size=len(live),
            input_ids=torch.tensor([r["x"][a:a + B] for r, a in zip(live, lo)]).view(-1),
            dllm_prompt_mask=torch.tensor([[a + j < r["p"] for j in range(B)] for r, a in zip(live, lo)]))

        def forward():
            blocks = batch.input_ids.view(len(live), B).tolist()
            out = []
            for r, a, blk in zip(live, lo, blocks):
                r["forwards"] += 1
                out.append(official_block_logits(r["x"][:a] + blk, B))
            return torch.cat(out)

        states = algo.init_step_state(batch)
        logits = forward()
        for _ in range(algo.max_steps(B)):
            for r, st, blk in zip(live, states, batch.input_ids.view(len(live), B).tolist()):
                r["rounds"] += not st["finished"]
                r["repeats"] += not st["finished"] and tuple(blk) in st["seen_input_keys"]
            done = algo.step(batch, logits, states)
            if all(done):
                break
            logits = forward()
        for r, a, blk in zip(live, lo, batch.input_ids.view(len(live), B).tolist()):
            r["x"][a:a + B] = blk
            r["block"] += 1
            if run["stop"] and eos_id in r["x"][r["p"]:a + B]:
                r["stopped"] = True
    return {"tokens": [r["x"][r["p"]:r["p"] + gen] for r in rows], "rounds": [r["rounds"] for r in rows],
            "forwards": [r["forwards"] for r in rows], "repeats": sum(r["repeats"] for r in rows), **ops}


out = {"runs": []}
with torch.no_grad():
    for run in spec["settings"]:
        batched = sglang_decode(spec["prompts"], run)
        alone = [sglang_decode([p], run) for p in spec["prompts"]]
        out["runs"].append({**run, "batched": batched, "alone": {
            "tokens": [a["tokens"][0] for a in alone], "rounds": [a["rounds"][0] for a in alone],
            "forwards": [a["forwards"][0] for a in alone]}})
import transformers
out["versions"] = {"torch": torch.__version__, "transformers": transformers.__version__}
Path(spec["out"], "sglang.json").write_text(json.dumps(out))
print("driver: decoded", len(out["runs"]), "settings with SGLang's step")
'''


def make_spec(quick: bool, seed: int) -> dict[str, Any]:
    """verify_block_native's LLaDA 2 spec with one checkpoint and no generate() settings, plus ours:
    (threshold, edit_threshold, max_post_edit_steps, block_length, gen_length, stop at EOS)."""
    base = vb.make_spec("llada2", quick=True, seed=seed)
    base["checkpoints"] = {"llada2-indel": base["checkpoints"]["llada2"]}
    base["settings"] = []  # the official generate() is verify_block_native's business
    base["prompt_lengths"] = [3, 8, 13] if quick else [3, 8, 13, 16, 21]
    runs = [(0.5, 0.0, 16, 8, 16, False), (0.3, 0.2, 3, 8, 16, True), (0.7, 0.4, 0, 4, 12, False)]
    if not quick:
        runs += [(0.4, 0.1, 2, 8, 24, True), (0.9, 0.05, 1, 4, 16, False), (0.2, 0.3, 5, 16, 32, False)]
    base["indel"] = [dict(zip(("threshold", "edit_threshold", "post_steps", "block_length", "gen_length", "stop"), r))
                     for r in runs]
    return base


def indel_strategy(run: dict[str, Any]) -> Any:
    """SGLang's JointThresholdInDel settings as the preset (docs/strategies.md, "Mapping")."""
    from parallelbench.decoding import build_strategy

    return build_strategy("indel-threshold", threshold=run["threshold"], edit_threshold=run["edit_threshold"],
                          post_steps=run["post_steps"], block_length=run["block_length"],
                          stop_at_eos=bool(run["stop"]), temperature=0.0)


def write_package(work: Path, sglang_file: Path) -> Path:
    """The scratch package: SGLang's file unchanged beside the stand-ins of what it imports."""
    root = work / "sglang_pkg"
    for rel, text in STANDINS.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    shutil.copy(sglang_file, root / SGLANG_MODULE)
    return root


def compare(entry: dict[str, Any], result: dict[str, Any], report: common.Report) -> None:
    from parallelbench.decoding import decode
    from parallelbench.models.registry import load_model

    name, prompts = "llada2-indel", entry["prompts"]
    nets = {cache: load_model(f"hf:{entry['folder']}", device="cpu", dtype="float32", cache=cache).net
            for cache in ("none", "block")}
    for run in result["runs"]:
        label = ", ".join(f"{k}={run[k]}" for k in ("threshold", "edit_threshold", "post_steps", "block_length",
                                                    "gen_length", "stop"))
        ref = run["batched"]
        same_alone = ref["tokens"] == run["alone"]["tokens"] and ref["rounds"] == run["alone"]["rounds"]
        report.rows.append(common.Row(name, f"SGLang alone == SGLang batched ({label})", "yes" if same_alone else "no",
                                      None if same_alone else 0.0))
        report.rows.append(common.Row(name, f"SGLang deletes / inserts ({label})",
                                      f"{ref['deletes']} / {ref['inserts']}",
                                      note=f"forwards {sum(ref['forwards'])}, rounds {sum(ref['rounds'])}, rounds "
                                           f"on a block state seen before {ref['repeats']}"))
        stops = {int(entry["eos_id"])}
        for cache, net in nets.items():
            strategy = indel_strategy(run)
            batched = decode(net, prompts, gen_length=run["gen_length"], strategy=strategy)
            alone = [decode(net, [p], gen_length=run["gen_length"], strategy=strategy)[0] for p in prompts]
            for how, results in (("batched", batched), ("alone", alone)):
                cut = (lambda t: vb._upto_stop(list(t), stops)) if run["stop"] else list
                same = sum(int(cut(r.tokens) == cut(t)) for r, t in zip(results, ref["tokens"]))
                nfe = [r.nfe for r in results]
                ops = (sum(r.extra["deletes"] for r in results), sum(r.extra["inserts"] for r in results))
                ok = same == len(prompts) and nfe == ref["rounds"] and ops == (ref["deletes"], ref["inserts"])
                row = common.Row(name, f"cache={cache} {how}: tokens & NFE = SGLang ({label})",
                                 f"{same}/{len(prompts)} rows", None if ok else 0.0,
                                 note=f"rounds SGLang {ref['rounds']}, NFE ours {nfe}; deletes/inserts ours "
                                      f"{ops[0]}/{ops[1]}" + ("" if ok else "; MISMATCH"))
                report.rows.append(row)


def verify(python: str, official: Path, sglang_file: Path, work: Path, quick: bool, seed: int = 0) -> common.Report:
    spec = make_spec(quick, seed)
    refs = vb.run_driver(python, official, work, spec)
    entry = refs["checkpoints"]["llada2-indel"]
    vocab = max(entry["ids"].values()) + 1
    entry["eos_id"] = entry["ids"]["<|endoftext|>"]
    delete_id, split_id = vocab - 40, vocab - 41  # two byte tokens (ids below the specials)
    package = write_package(work, sglang_file)
    second = {"folder": entry["folder"], "package": str(package), "mask_id": entry["mask_id"],
              "eos_id": entry["eos_id"], "delete_id": delete_id, "split_id": split_id, "head_scale": 2.5,
              "settings": spec["indel"], "prompts": entry["prompts"]}
    common.run_driver(python, official, work, second, DRIVER, {"TORCHDYNAMO_DISABLE": "1", "HF_HUB_OFFLINE": "1",
                                                               "TOKENIZERS_PARALLELISM": "false",
                                                               "HF_MODULES_CACHE": str(work / "hf_modules")})
    result = json.loads((work / "sglang.json").read_text())
    report = vb.Report()
    v = result["versions"]
    report.notes.append(f"SGLang's step from {sglang_file}; official LLaDA 2 code under torch {v['torch']}, "
                        f"transformers {v['transformers']} ({python})")
    poisoned = vb.poison_code(Path(entry["folder"]))
    report.notes.append(f"{', '.join(poisoned)} replaced with files that raise on import")
    compare(entry, result, report)
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Example: PYTHONPATH=src python benchmarks/verify_indel_sglang.py --official /tmp/native-official "
               "--sglang /tmp/sglang-ref/joint_threshold_indel.py --llada2-python /tmp/native-tf457/bin/python --quick")
    ap.add_argument("--official", default=os.environ.get("PARALLELBENCH_BLOCK_OFFICIAL_CODE"),
                    help="folder with llada2/ official files (env PARALLELBENCH_BLOCK_OFFICIAL_CODE)")
    ap.add_argument("--sglang", default=os.environ.get("PARALLELBENCH_SGLANG_INDEL"),
                    help="SGLang's joint_threshold_indel.py (env PARALLELBENCH_SGLANG_INDEL)")
    ap.add_argument("--llada2-python", default=os.environ.get("PARALLELBENCH_LLADA2_VENV",
                                                              "/tmp/native-tf457/bin/python"),
                    help="python of a venv with transformers==4.57 (env PARALLELBENCH_LLADA2_VENV)")
    ap.add_argument("--work", default=None, help="where to build the checkpoint (default: a temporary folder)")
    ap.add_argument("--quick", action="store_true", help="three prompts and three settings")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None, help="also write the rows to this JSON file")
    args = ap.parse_args(argv)
    cannot = 77 if args.quick else 2  # a --quick smoke test without the reference files: "skipped"
    problems = []
    if not args.official:
        problems.append("give --official DIR (or set PARALLELBENCH_BLOCK_OFFICIAL_CODE)")
    elif vb.official_dir_problem(Path(args.official), ["llada2"]):
        problems.append(vb.official_dir_problem(Path(args.official), ["llada2"]))
    if not args.sglang or not Path(args.sglang).is_file():
        problems.append(f"give --sglang FILE, SGLang's joint_threshold_indel.py (got {args.sglang!r})")
    if not Path(args.llada2_python).is_file():
        problems.append(f"--llada2-python {args.llada2_python} does not exist; build the scratch venv (see --help)")
    if problems:
        print(f"error: {'; '.join(problems)}", file=sys.stderr)
        return cannot
    with tempfile.TemporaryDirectory(prefix="verify-indel-sglang-") as tmp:
        work = Path(args.work) if args.work else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        try:
            report = verify(args.llada2_python, Path(args.official), Path(args.sglang), work, args.quick, args.seed)
        except RuntimeError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    return common.finish(report, args.json)


if __name__ == "__main__":
    sys.exit(main())
