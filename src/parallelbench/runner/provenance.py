"""Fingerprints of everything that can change a result row, split in two parts.

A row is reused only when its provenance matches the run's. The provenance has two halves:

- **decoding** — the model (spec, `versions()`, the options that can change outputs, the
  source of a `py:` factory's module), the strategy (name, every option, its code: the
  package's `decoding/` sources, plus the defining module of a `module:Class`), the task's
  generator settings and the sample itself (prompt, messages, answer, scorer data);
- **scoring** — the scorer's version (its code, plus an explicit version given to
  `register_scorer`) and the scoring mode (`--scoring`).

When only the scoring half differs, the stored output is scored again without decoding.

Fingerprints hash file contents, never paths or times, so they agree across machines. They
are cheap: a package's sources are hashed once per process. A fingerprint that cannot be
computed (a class typed into an interactive session, a factory from a compiled module) is
replaced by a value unique to the run, so those rows are recomputed on every run,
never silently reused; `notes` says so in one line each.
"""

from __future__ import annotations

import hashlib
import inspect
import sys
import uuid
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from parallelbench.runner.store import canonical_json

if TYPE_CHECKING:
    from parallelbench.tasks.base import Sample

PACKAGE_ROOT = Path(__file__).resolve().parents[1]  # src/parallelbench


def _digest(data: bytes, n: int = 16) -> str:
    return hashlib.sha256(data).hexdigest()[:n]


def _text_digest(data: bytes) -> str:
    """Line endings do not count (a checkout on another system is the same code)."""
    return _digest(data.replace(b"\r\n", b"\n"))


@lru_cache(maxsize=None)
def package_fingerprint(subpackage: str) -> str:
    """Hash of every .py file under `parallelbench/<subpackage>/` (names relative, contents), once per process."""
    root = PACKAGE_ROOT / subpackage
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(path.relative_to(root).as_posix().encode() + b"\0")
        h.update(path.read_bytes().replace(b"\r\n", b"\n") + b"\0")
    return h.hexdigest()[:16]


def source_fingerprint(obj: Any) -> str | None:
    """Hash of the Python source file that defines `obj` (a class, a function), or None when
    there is none to read (typed into an interactive session, compiled, built in)."""
    try:
        path = inspect.getsourcefile(inspect.unwrap(obj))  # a user scorer sits behind a functools.wraps guard
    except (TypeError, OSError):
        return None
    if not path or not path.endswith(".py"):
        return None
    try:
        return _text_digest(Path(path).read_bytes())
    except OSError:
        return None


def _in_package(obj: Any) -> bool:
    module = getattr(obj, "__module__", "") or ""
    return module == "parallelbench" or module.startswith("parallelbench.")


def code_fingerprint(obj: Any, package: str) -> str | None:
    """The code behind `obj`: for the package's own code, its `package` sources (plus the defining
    module when that lies elsewhere in the package); for user code, its module's source plus the
    `package` sources it runs on. None when the user's source cannot be read."""
    base = package_fingerprint(package)
    if _in_package(obj):
        module = sys.modules.get(getattr(obj, "__module__", ""))
        inside = module is not None and Path(getattr(module, "__file__", "") or "").resolve().is_relative_to(
            PACKAGE_ROOT / package)
        if inside:
            return base
        own = source_fingerprint(obj)
        return f"{base}+{own}" if own else base
    own = source_fingerprint(obj)
    return f"{base}+{own}" if own else None


def sample_fingerprint(sample: "Sample") -> str:
    """Hash of the sample's content: prompt, messages, answer, scorer, scorer data, layout."""
    return _digest(canonical_json(sample.to_dict()).encode())


class Provenance:
    """The fingerprints of one run, computed once and reused for every row (see the module doc).

    `notes` collects one line per fingerprint that could not be computed.
    """

    def __init__(self, scoring_mode: str = "default"):
        self.scoring_mode = scoring_mode
        self.notes: list[str] = []
        self._unknown = "unknown-" + uuid.uuid4().hex[:12]  # equals no stored value: recompute, never reuse
        self._strategies: dict[str, str] = {}
        self._scorers: dict[str, str] = {}
        self._samples: dict[int, tuple[Any, str]] = {}

    def _note(self, line: str) -> None:
        if line not in self.notes:
            self.notes.append(line)

    # -- parts --------------------------------------------------------------------------
    def strategy_code(self, name: str) -> str:
        """The code of a strategy: the engine's sources, plus a `module:Class`'s module."""
        if name not in self._strategies:
            fp: str | None
            try:
                from parallelbench.decoding import strategy_class

                fp = code_fingerprint(strategy_class(name), "decoding")
            except Exception:  # noqa: BLE001 - autoregressive rows, a strategy that vanished: engine only
                fp = package_fingerprint("decoding") if ":" not in name else None
            if fp is None:
                self._note(f"the code of strategy {name!r} cannot be fingerprinted (no source file: defined in an "
                           "interactive session or compiled); its rows are recomputed on every run")
                fp = self._unknown
            self._strategies[name] = fp
        return self._strategies[name]

    def factory_code(self, spec: str, factory: Callable | None) -> str:
        """The source of a `py:` factory's module ("" for the built-in kinds)."""
        if not spec.startswith("py:"):
            return ""
        fp = source_fingerprint(factory) if factory is not None else None
        if fp is None:
            self._note(f"the model factory {spec!r} cannot be fingerprinted (no Python source: compiled or defined "
                       "in an interactive session); its rows are recomputed on every run")
            return self._unknown
        return fp

    def scorer_version(self, name: str) -> str:
        """The scorer's code (the package's scoring sources for built-ins, else its module) and any
        explicit version it was registered with."""
        if name not in self._scorers:
            fp: str | None
            explicit = None
            try:
                import parallelbench.scoring as scoring

                fn = scoring.get_scorer(name)
                version_of = getattr(scoring, "scorer_version", None)
                explicit = version_of(name) if callable(version_of) else None
                fp = code_fingerprint(fn, "scoring") if _in_package(fn) else source_fingerprint(fn)
            except Exception:  # noqa: BLE001 - an unknown scorer scores 0 later; nothing to reuse
                fp = None
            if fp is None:
                self._note(f"scorer {name!r} cannot be fingerprinted (no source file); its rows are rescored on "
                           "every run")
                fp = self._unknown
            self._scorers[name] = fp + (f"+v={explicit}" if explicit not in (None, "") else "")
        return self._scorers[name]

    def sample(self, sample: "Sample") -> str:
        key = id(sample)
        held = self._samples.get(key)
        if held is None or held[0] is not sample:  # the object itself is kept, so its id stays its own
            held = (sample, sample_fingerprint(sample))
            self._samples[key] = held
        return held[1]

    # -- the two halves -----------------------------------------------------------------
    @staticmethod
    def decoding_prefix(model: dict[str, Any], strategy: str, params: str, code: str, data: str) -> str:
        """What a unit's rows share: model identity, strategy, its options and code, task settings."""
        return _digest(canonical_json({"model": model, "strategy": strategy, "params": params, "code": code,
                                       "data": data}).encode())

    @staticmethod
    def decoding(prefix: str, sample_fp: str) -> str:
        return _digest(f"{prefix}|{sample_fp}".encode())

    def scoring(self, scorer: str) -> str:
        return _digest(canonical_json({"scorer": self.scorer_version(scorer), "mode": self.scoring_mode}).encode(), 12)


def join(decoding: str, scoring: str) -> str:
    """The stored provenance: both halves, so a row whose decoding still matches can be rescored."""
    return f"{decoding}-{scoring}"


def decoding_part(provenance: str) -> str:
    """The decoding half of a stored provenance ("" for rows written before the split)."""
    head, sep, _ = (provenance or "").partition("-")
    return head if sep else ""
