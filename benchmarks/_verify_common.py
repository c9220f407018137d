"""What the official-code verifications share: the scratch-venv driver run, the poisoning of a
checkpoint's own code, the pass/fail table and the one-venv command line.

Imported by verify_native.py (LLaDA / Dream), verify_block_native.py (SDAR / LLaDA 2),
verify_d3llm.py (multi-block vs d3LLM) and verify_lladamoe.py (LLaDA-MoE), which hold the
specific checks.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable


def run_driver(python: str, official: Path, work: Path, spec: dict[str, Any], driver_source: str,
               env_extra: dict[str, str]) -> dict[str, Any]:
    """Step (a): the official code builds checkpoints and references in the scratch venv.

    The driver reads `spec.json` and writes `reference.json` in `work`; the project's own
    PYTHONPATH is kept out so only the venv's packages and the official files are seen."""
    spec = {**spec, "official": str(official), "out": str(work)}
    (work / "spec.json").write_text(json.dumps(spec))
    driver = work / "driver.py"
    driver.write_text(driver_source)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(env_extra)
    proc = subprocess.run([python, str(driver), str(work / "spec.json")], cwd=work, env=env,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
        raise RuntimeError(f"the driver failed in {python} (exit {proc.returncode}):\n{tail}")
    return json.loads((work / "reference.json").read_text())


def poison_code(folder: Path, raising_source: str) -> list[str]:
    """Replace every .py file of a checkpoint with one that raises on import, so a load that
    still reached for the checkpoint's own code would fail loudly."""
    names = []
    for py in sorted(folder.glob("*.py")):
        py.write_text(raising_source)
        names.append(py.name)
    return names


@dataclass
class Row:
    checkpoint: str
    check: str
    value: float | str
    limit: float | None = None
    note: str = ""

    @property
    def ok(self) -> bool:
        if self.limit is None:
            return True
        return isinstance(self.value, (int, float)) and math.isfinite(self.value) and self.value <= self.limit


@dataclass
class Report:
    rows: list[Row] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    widths: tuple[int, int] = (22, 66)  # checkpoint and check columns

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.rows)

    def table(self) -> str:
        a, b = self.widths
        out = [f"{'checkpoint':{a}} {'check':{b}} {'value':>12} {'limit':>8}  ok"]
        for r in self.rows:
            value = f"{r.value:.3g}" if isinstance(r.value, float) else str(r.value)
            limit = "" if r.limit is None else f"{r.limit:g}"
            out.append(f"{r.checkpoint:{a}} {r.check:{b}} {value:>12} {limit:>8}  {'yes' if r.ok else 'NO'}"
                       + (f"  ({r.note})" if r.note else ""))
        return "\n".join(out + [f"note: {n}" for n in self.notes])


def one_venv_main(argv: list[str] | None, *, doc: str, script: str, example_official: str, python_env: str,
                  code_env: str, code_help: str, quick_help: str, problem: Callable[[Path], "str | None"],
                  verify: Callable[[str, Path, Path, bool, int], Report]) -> int:
    """The command line of a verification whose official code runs in one scratch venv:
    --python, --official, --work, --quick, --seed, --json; exit 0 (all checks passed), 1 (some
    failed, or the driver did), 2 (setup missing), 77 with --quick when setup is missing (the
    benchmarks' "cannot run here", tests/test_benchmarks_quick.py)."""
    ap = argparse.ArgumentParser(
        description=doc, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=f"Example: PYTHONPATH=src python benchmarks/{script} --python /tmp/pb-tf449/bin/python "
               f"--official {example_official} --quick")
    ap.add_argument("--python", default=os.environ.get(python_env, "/tmp/pb-tf449/bin/python"),
                    help=f"python of a venv with transformers==4.49 (env {python_env})")
    ap.add_argument("--official", default=os.environ.get(code_env), help=f"{code_help} (env {code_env})")
    ap.add_argument("--work", default=None, help="where to build the checkpoints (default: a temporary folder)")
    ap.add_argument("--quick", action="store_true", help=quick_help)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None, help="also write the rows to this JSON file")
    args = ap.parse_args(argv)
    cannot = 77 if args.quick else 2
    if not args.official:
        print(f"error: give --official DIR (or set {code_env}); see --help", file=sys.stderr)
        return cannot
    official = Path(args.official)
    found = problem(official)
    if found:
        print(f"error: {found}", file=sys.stderr)
        return cannot
    if not Path(args.python).is_file():
        print(f"error: --python {args.python} does not exist; build the scratch venv (see --help)", file=sys.stderr)
        return cannot
    with tempfile.TemporaryDirectory(prefix=script.removesuffix(".py").replace("_", "-") + "-") as tmp:
        work = Path(args.work) if args.work else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        try:
            report = verify(args.python, official, work, args.quick, args.seed)
        except RuntimeError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    return finish(report, args.json)


def finish(report: Report, json_path: "str | None") -> int:
    """Print the table (and write --json), then the verdict; the exit status of a verification."""
    print(report.table())
    if json_path:
        Path(json_path).write_text(json.dumps({"versions": report.versions, "notes": report.notes, "rows": [
            {"checkpoint": r.checkpoint, "check": r.check, "value": r.value, "limit": r.limit, "ok": r.ok,
             "note": r.note} for r in report.rows]}, indent=2))
    print("all checks passed" if report.ok else "SOME CHECKS FAILED")
    return 0 if report.ok else 1


def missing_files(folder: Path, files: "tuple[str, ...] | list[str]", what: str) -> "str | None":
    """One line naming the official files `folder` lacks, or None."""
    missing = [rel for rel in files if not (folder / rel).is_file()]
    return f"--official {folder} lacks {', '.join(missing)} ({what})" if missing else None
