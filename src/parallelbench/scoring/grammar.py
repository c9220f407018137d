"""Grammar checking: a text scores 1 when the checker finds no error, else 0.

Two backends. Harper (``harper-py``) is offline and the default. LanguageTool
(``language_tool_python``) is the paper's choice; it is used when
``PARALLELBENCH_LANGUAGETOOL_URL`` names a server, or when asked for by name with
a server URL or a local LanguageTool install configured, and is never required.
``PARALLELBENCH_GRAMMAR_BACKEND`` (``harper`` | ``languagetool``) picks the default.

Guards that hold for every backend, so a pathological output cannot stall a run
(Harper's time grows quadratically on long runs of symbols): an empty text, a text
longer than `MAX_CHARS` characters, or one with a whitespace-free run longer than
`MAX_TOKEN_CHARS` is judged ungrammatical without calling the backend, and so is text
with no word of letters or with a control character (a NUL byte ...): the backends find
no error in a lone NUL, "[]" or "123". A model's answer of 64 tokens is a few hundred
characters, far below both limits.
"""

from __future__ import annotations

import functools
import os
import re
import unicodedata
from importlib import metadata
from pathlib import Path
from typing import Any, Iterable, NamedTuple, Protocol

MAX_CHARS = 4000
MAX_TOKEN_CHARS = 100
URL_ENV = "PARALLELBENCH_LANGUAGETOOL_URL"
BACKEND_ENV = "PARALLELBENCH_GRAMMAR_BACKEND"
BACKENDS = ("harper", "languagetool")


class GrammarBackendError(RuntimeError):
    """A grammar backend was asked for but cannot run here; the message says how to fix it."""


class GrammarResult(NamedTuple):
    score: float  # 1.0 when no error was found
    backend: str  # "harper" | "languagetool" | a custom backend's name
    version: str  # package (and server) version, recorded with every score


class GrammarBackend(Protocol):
    name: str
    version: str

    def count_errors(self, text: str, known_words: frozenset[str] = frozenset()) -> int:
        """Errors in `text`; a spelling error on a word in `known_words` (lower case) is not one."""
        ...


def word_key(word: str) -> str:
    """How a flagged word is compared with known words: lower case, before any apostrophe."""
    return word.replace("\u2019", "'").split("'")[0].strip().lower()


def _package_version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "unknown"


class HarperBackend:
    """Harper's linter (American English, plain text).

    Every lint counts as an error except the kinds Harper itself files as style
    advice (`IGNORED_KINDS`, e.g. "An Oxford comma is necessary here"), which are
    preferences rather than errors and which LanguageTool does not raise by default.
    """

    IGNORED_KINDS = frozenset({"Style", "Enhancement", "Readability"})

    name = "harper"

    def __init__(self) -> None:
        try:
            import harper  # noqa: PLC0415
        except ImportError as err:
            raise GrammarBackendError(
                "the Harper grammar backend needs harper-py: pip install 'parallelbench[scoring]'"
            ) from err
        self._harper = harper
        self._linter = harper.Linter(harper.Dialect.AMERICAN)
        self.version = f"harper-py {_package_version('harper-py')}"

    def count_errors(self, text: str, known_words: frozenset[str] = frozenset()) -> int:
        lints = self._linter.lint(text, language=self._harper.Language.PLAINTEXT)
        return sum(
            1
            for lint in lints
            if lint.lint_kind not in self.IGNORED_KINDS
            and not (lint.lint_kind == "Spelling" and word_key(lint.problem_text) in known_words)
        )


class LanguageToolBackend:
    """Wraps a ``language_tool_python.LanguageTool``-like object: any match is an error."""

    name = "languagetool"

    def __init__(self, tool: Any, *, where: str, package_version: str | None = None) -> None:
        self._tool = tool
        pkg = package_version or _package_version("language_tool_python")
        self.version = f"language_tool_python {pkg} ({where})"

    def count_errors(self, text: str, known_words: frozenset[str] = frozenset()) -> int:
        def known_spelling(match: Any) -> bool:
            rule = str(getattr(match, "ruleId", "") or getattr(match, "rule_id", ""))
            category = str(getattr(match, "category", ""))
            if not known_words or not (category == "TYPOS" or rule.startswith("MORFOLOGIK")):
                return False
            start = int(getattr(match, "offset", 0))
            length = int(getattr(match, "errorLength", getattr(match, "error_length", 0)))
            return word_key(text[start : start + length]) in known_words

        return sum(1 for match in self._tool.check(text) if not known_spelling(match))


def _local_languagetool_dirs() -> list[Path]:
    """Folders where language_tool_python keeps a downloaded LanguageTool, if any exist."""
    roots = [os.environ.get(var) for var in ("LTP_JAR_DIR_PATH", "LTP_PATH")]
    roots.append(str(Path.home() / ".cache" / "language_tool_python"))
    found: list[Path] = []
    for root in filter(None, roots):
        path = Path(root)
        if path.is_dir():
            found += sorted(p for p in path.glob("LanguageTool*") if p.is_dir())
            if (path / "languagetool-server.jar").exists():
                found.append(path)
    return found


def make_languagetool(url: str | None = None) -> LanguageToolBackend:
    """LanguageTool on a server (`url` or ``$PARALLELBENCH_LANGUAGETOOL_URL``) or a local install.

    Raises `GrammarBackendError` with the fix when neither is configured; it never
    downloads LanguageTool.
    """
    url = url or os.environ.get(URL_ENV)
    local = _local_languagetool_dirs()
    if not url and not local:
        raise GrammarBackendError(
            f"LanguageTool is not configured: set {URL_ENV}=http://HOST:8081 to a running "
            "LanguageTool server (or install LanguageTool locally for language_tool_python), "
            "or use the offline default backend 'harper'"
        )
    try:
        import language_tool_python  # noqa: PLC0415
    except ImportError as err:
        raise GrammarBackendError(
            "the LanguageTool backend needs language_tool_python: "
            "pip install 'parallelbench[languagetool]', or use the default backend 'harper'"
        ) from err
    where = f"server {url}" if url else f"local {local[0]}"
    try:
        if url:
            tool = language_tool_python.LanguageTool("en-US", remote_server=url)
        else:
            tool = language_tool_python.LanguageTool("en-US", config={"maxCheckThreads": 1})
    except Exception as err:  # the server is down, java is missing, ...
        raise GrammarBackendError(f"could not start LanguageTool ({where}): {err}") from err
    return LanguageToolBackend(tool, where=where)


def default_backend_name() -> str:
    """``$PARALLELBENCH_GRAMMAR_BACKEND``, else LanguageTool when its URL is set, else Harper."""
    chosen = os.environ.get(BACKEND_ENV, "").strip().lower()
    if chosen:
        return chosen
    return "languagetool" if os.environ.get(URL_ENV) else "harper"


def get_backend(name: str | None = None) -> GrammarBackend:
    """The backend called `name` (default: `default_backend_name()`), built once per process."""
    return _build_backend((name or default_backend_name()).strip().lower())


@functools.lru_cache(maxsize=None)
def _build_backend(name: str) -> GrammarBackend:
    if name == "harper":
        return HarperBackend()
    if name == "languagetool":
        return make_languagetool()
    raise GrammarBackendError(f"unknown grammar backend {name!r}; choose one of {', '.join(BACKENDS)}")


def _resolve(backend: str | GrammarBackend | None) -> GrammarBackend:
    return backend if backend is not None and not isinstance(backend, str) else get_backend(backend)


def within_limits(text: str) -> bool:
    """Whether `text` is short enough to send to a backend (see the module docstring)."""
    if len(text) > MAX_CHARS:
        return False
    return max((len(tok) for tok in text.split()), default=0) <= MAX_TOKEN_CHARS


def has_real_words(text: str) -> bool:
    """Text is prose only with a word of letters and no control character: the backends
    find no error in "\\x00", "[]", "123" or "!!!", which are not grammatical text."""
    if any(unicodedata.category(c) == "Cc" and c not in "\t\n\r" for c in text):
        return False
    return _LETTERS.search(text) is not None


_LETTERS = re.compile(r"[^\W\d_]{1,}")


@functools.lru_cache(maxsize=200_000)
def _cached_errors(backend: GrammarBackend, text: str, known_words: frozenset[str]) -> int:
    if known_words:
        return backend.count_errors(text, known_words)
    return backend.count_errors(text)


def grammar_check(
    text: str, backend: str | GrammarBackend | None = None, known_words: Iterable[str] = ()
) -> GrammarResult:
    """Score `text` (1.0 when grammatical) with the backend's name and version; cached per text.

    `known_words` are words the answer may use that a dictionary lacks (the names of a
    dialogue, the words a W2S prompt asks for): a spelling error on one of them is not
    counted. Raises `GrammarBackendError` only when the backend itself cannot be built.
    """
    impl = _resolve(backend)
    body = text.strip() if isinstance(text, str) else ""
    if not body or not within_limits(body) or not has_real_words(body):
        return GrammarResult(0.0, impl.name, impl.version)
    from parallelbench.scoring.similarity import valid_unicode  # noqa: PLC0415

    body = valid_unicode(body)
    known = frozenset(word_key(w) for w in known_words if isinstance(w, str) and w.strip())
    return GrammarResult(float(_cached_errors(impl, body, known) == 0), impl.name, impl.version)


def is_grammatical(text: str, backend: str | GrammarBackend | None = None, known_words: Iterable[str] = ()) -> bool:
    """True when the grammar checker finds no error in `text` (empty text is not grammatical)."""
    return grammar_check(text, backend, known_words).score == 1.0
