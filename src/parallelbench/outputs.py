"""Where commands write files (`--out`): checked up front, and every failure one line.

A read-only folder, an existing file where a folder is needed (or a folder where a file
is), a full disk: each becomes an `OutputError` naming the path and the fix instead of a
traceback. Single files are written through a temporary file in the same folder and
renamed into place, so a failed write never leaves a truncated file or clobbers the old one.
"""

from __future__ import annotations

import errno
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator


class OutputError(RuntimeError):
    """An output path cannot be written; the message is one line for the user."""


def _reason(exc: OSError) -> str:
    code = exc.errno
    if code in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
        return "the disk is full; free some space or write to another disk"
    if code in (errno.EACCES, errno.EPERM, errno.EROFS):
        return "the folder is not writable (read-only); pass a path you can write to"
    if code in (errno.EEXIST, errno.ENOTDIR):
        return "a part of the path is a file, not a folder; pass another path"
    if code == errno.EISDIR:
        return "it is a folder; pass a file path"
    return f"{exc.strerror or exc}; pass another path"


def report_folder(db: str | Path) -> Path:
    """Where a database's report goes unless `--out` says otherwise: beside it, named after it
    (`parallelbench.db` -> `parallelbench-out/`, `results/tour.db` -> `results/tour-out/`), so a second
    database never overwrites the first one's report."""
    db = Path(db)
    return db.with_name(f"{db.stem or db.name}-out")


def output_error(path: str | Path, exc: OSError, what: str) -> OutputError:
    return OutputError(f"cannot write {what} to {path}: {_reason(exc)}")


def _existing_ancestor(path: Path) -> Path:
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return probe


def _probe(folder: Path, target: Path, what: str) -> None:
    """Create and delete a file in `folder`: the only honest writability test (root's access() says yes)."""
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise output_error(target, exc, what) from None


def check_folder(path: str | Path, what: str) -> None:
    """Raise `OutputError` unless `path` is, or can become, a writable folder; creates nothing."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise OutputError(f"cannot write {what} to {p}: it is a file, not a folder; pass a folder path with --out")
    base = _existing_ancestor(p.absolute())
    if not base.is_dir():
        raise OutputError(f"cannot write {what} to {p}: {base} is a file, not a folder; pass another --out")
    _probe(base, p, what)


def prepare_folder(path: str | Path, what: str) -> Path:
    """`path` as a writable folder (created), or `OutputError`."""
    check_folder(path, what)
    p = Path(path)
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise output_error(p, exc, what) from None
    _probe(p, p, what)
    return p


def check_file(path: str | Path, what: str) -> None:
    """Raise `OutputError` unless `path` can be written as a file (an existing file is replaced)."""
    p = Path(path)
    if p.is_dir():
        raise OutputError(f"cannot write {what} to {p}: it is a folder; pass a file path")
    base = _existing_ancestor(p.absolute().parent)
    if not base.is_dir():
        raise OutputError(f"cannot write {what} to {p}: {base} is a file, not a folder; pass another path")
    _probe(base, p, what)


def _file_mode() -> int:
    """The mode a plain open() would give a new file (mkstemp makes it 0600)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


@contextmanager
def atomic_file(path: str | Path, what: str, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Open a temporary file beside `path`; on success it replaces `path`, on any error it is removed.

    OSError (disk full, read-only folder) becomes `OutputError`.
    """
    p = Path(path)
    check_file(p, what)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=p.absolute().parent, prefix=f".{p.name}.", suffix=".part")
    except OSError as exc:
        raise output_error(p, exc, what) from None
    try:
        with os.fdopen(fd, mode, encoding=encoding if "b" not in mode else None) as fh:
            yield fh
        os.chmod(tmp, _file_mode())
        os.replace(tmp, p)
    except OSError as exc:
        _unlink(tmp)
        raise output_error(p, exc, what) from None
    except BaseException:
        _unlink(tmp)
        raise


@contextmanager
def atomic_path(path: str | Path, what: str) -> Iterator[Path]:
    """Like `atomic_file`, for writers that take a path (pandas, pyarrow)."""
    p = Path(path)
    check_file(p, what)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=p.absolute().parent, prefix=f".{p.name}.", suffix=".part")
        os.close(fd)
    except OSError as exc:
        raise output_error(p, exc, what) from None
    try:
        yield Path(tmp)
        os.chmod(tmp, _file_mode())
        os.replace(tmp, p)
    except OSError as exc:
        _unlink(tmp)
        raise output_error(p, exc, what) from None
    except BaseException:
        _unlink(tmp)
        raise


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
