"""Progress of a run: one live bar per model (ETA, rows per second, live accuracy) on a terminal;
when the output is piped or redirected, no bar at all but a plain line at each 10% of a model's
rows and, between those, at most every `PIPED_EVERY_S` seconds (rows done of total, rate, ETA,
failures so far).

A model may say what it is waiting for (an API request: host, attempt, seconds): `watch` takes
a callable returning that text (or None); the bar shows it live, and piped output gets a plain
line about it at most every `PIPED_WAIT_EVERY_S` seconds.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Sequence

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

PIPED_EVERY_S = 30.0  # piped output: at most one progress line this often, besides one at each 10%
PIPED_WAIT_EVERY_S = 30.0  # piped output: at most one "waiting for ..." line this often
PIPED_WAIT_AFTER_S = 10.0  # ... and only for waits longer than this


class _WaitColumn(ProgressColumn):
    """What the model waits for right now (empty when nothing is pending)."""

    def __init__(self, owner: "RunProgress"):
        super().__init__()
        self.owner = owner

    def render(self, task: Any) -> Text:
        text = self.owner.waiting_text()
        return Text(text or "", style="yellow")


class RunProgress:
    """Context manager; `start_model` opens a bar, `advance` moves it with a unit's rows.

    The live bar is drawn only on a terminal: piped or redirected output (a log file, CI)
    gets the same one-line messages, nothing of the bar, and plain progress lines. `clock`
    (seconds, monotonic) is there for tests.
    """

    def __init__(self, console: Console | None = None, enabled: bool = True,
                 clock: Callable[[], float] = time.monotonic):
        self.console = console or Console()
        self.enabled = enabled and self.console.is_terminal and not self.console.is_dumb_terminal
        self.plain = enabled and not self.enabled  # piped: progress as plain lines
        self.clock = clock
        self._model = ""
        self._total = self._done = self._failed = 0
        self._started = self._last_line = 0.0
        self._next_tenth = 1
        self._progress: Progress | None = None
        self._bar: TaskID | None = None
        self._score_sum = 0.0
        self._scored = 0
        self._watched: Callable[[], str | None] | None = None
        self._ticker: threading.Thread | None = None
        self._stop = threading.Event()

    def __enter__(self) -> "RunProgress":
        if self.enabled:
            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("acc {task.fields[acc]}"),
                TextColumn("{task.fields[where]}", style="dim"),
                TimeElapsedColumn(),
                TextColumn("eta"),
                TimeRemainingColumn(),
                _WaitColumn(self),
                console=self.console,
                transient=False,
            )
            self._progress.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.watch(None)
        if self._progress is not None:
            self._progress.__exit__(*exc)
            self._progress = None

    # -- what the model waits for -----------------------------------------------------------
    def watch(self, waiting: Callable[[], str | None] | None) -> None:
        """Show what `waiting()` says while the model works (None stops watching)."""
        self._watched = waiting if callable(waiting) else None
        if self._watched is None:
            self._stop.set()
            if self._ticker is not None:
                self._ticker.join(timeout=2.0)
                self._ticker = None
            return
        if self._progress is None and self._ticker is None:  # piped: an occasional plain line
            self._stop = threading.Event()
            self._ticker = threading.Thread(target=self._piped_ticker, name="run-progress-wait", daemon=True)
            self._ticker.start()

    def waiting_text(self) -> str | None:
        fn = self._watched
        if fn is None:
            return None
        try:
            text = fn()
        except Exception:  # noqa: BLE001 - a progress hint must never break a run
            return None
        return " ".join(str(text).split()) if text else None

    def _piped_ticker(self) -> None:
        since: float | None = None
        last = 0.0
        while not self._stop.wait(1.0):
            text = self.waiting_text()
            now = time.monotonic()
            if not text:
                since = None
                continue
            since = since if since is not None else now
            if now - since >= PIPED_WAIT_AFTER_S and now - last >= PIPED_WAIT_EVERY_S:
                last = now
                self.console.print(escape(text), style="yellow", soft_wrap=True, highlight=False)

    # -- rows --------------------------------------------------------------------------------
    def start_model(self, model: str, total: int, already_done: int, rescored: int = 0) -> None:
        self._score_sum, self._scored = 0.0, 0
        self._bar = None
        self._model, self._total, self._done, self._failed = model, total, 0, 0
        self._started = self._last_line = self.clock()
        self._next_tenth = 1
        if already_done:
            self.console.print(f"[dim]{escape(model)}: {already_done} rows already in the database, skipped[/dim]")
        if rescored:
            self.console.print(f"[dim]{escape(model)}: {rescored} stored outputs scored again (the scorer version or "
                               "--scoring changed; not decoded again)[/dim]")
        if self._progress is not None and total > 0:
            self._bar = self._progress.add_task(escape(model), total=total, acc="  -  ", where="")

    def advance(self, rows: Sequence[dict[str, Any]], where: str) -> None:
        for r in rows:
            if r.get("score") is not None:
                self._score_sum += float(r["score"])
                self._scored += 1
        acc = f"{self._score_sum / self._scored:.3f}" if self._scored else "  -  "
        if self._progress is not None and self._bar is not None:
            self._progress.update(self._bar, advance=len(rows), acc=acc, where=escape(where))
        self._done += len(rows)
        self._failed += sum(1 for r in rows if r.get("status") == "failed")
        if self.plain and self._total > 0 and rows:
            now = self.clock()
            tenth = min(10, self._done * 10 // self._total)
            if tenth >= self._next_tenth or now - self._last_line >= PIPED_EVERY_S:
                self._next_tenth = tenth + 1
                self._last_line = now
                self.console.print(escape(self.plain_line(now)), soft_wrap=True, highlight=False)

    def plain_line(self, now: float) -> str:
        """'tiny: 634 of 2,112 rows (30%), 5.2 rows/s, ETA 4 min 44 s, 0 failed so far'."""
        elapsed = max(now - self._started, 1e-9)
        rate = self._done / elapsed
        if self._done >= self._total:
            when = f"done in {_duration(elapsed)}"
        else:
            when = f"ETA {_duration((self._total - self._done) / rate)}" if rate > 0 else "ETA unknown"
        shown = f"{rate:.1f}" if rate >= 0.1 else f"{rate:.2g}"
        return (f"{self._model}: {self._done:,} of {self._total:,} rows ({100 * self._done // self._total}%), "
                f"{shown} rows/s, {when}, {self._failed:,} failed so far")

    @property
    def accuracy(self) -> float | None:
        return self._score_sum / self._scored if self._scored else None


def _duration(seconds: float) -> str:
    """'42 s', '4 min 44 s', '2 h 05 min'."""
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"
