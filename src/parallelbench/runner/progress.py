"""Progress of a run: one live bar per model (ETA, rows per second, live accuracy) on a terminal;
plain lines, and no bar at all, when the output is piped or redirected.

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
    gets the same one-line messages and nothing of the bar.
    """

    def __init__(self, console: Console | None = None, enabled: bool = True):
        self.console = console or Console()
        self.enabled = enabled and self.console.is_terminal and not self.console.is_dumb_terminal
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

    @property
    def accuracy(self) -> float | None:
        return self._score_sum / self._scored if self._scored else None
