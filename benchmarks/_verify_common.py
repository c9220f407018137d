"""What the two official-code verifications share: the scratch-venv driver run, the
poisoning of a checkpoint's own code, and the pass/fail table.

Imported by verify_native.py (LLaDA / Dream) and verify_block_native.py (SDAR / LLaDA 2),
which hold the family-specific checks.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


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
