"""Ctrl-C and SIGTERM held back while a unit's rows are written and counted.

An interrupt acts at the next bytecode, so one arriving after a unit's transaction committed but
before the run counted its rows would make the closing line ("N rows of this run are saved")
say fewer than the database holds. Inside `held()` the signal is only noted; it acts, through
the handler that was there before, as soon as the block ends.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Iterator

HELD = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def held() -> Iterator[None]:
    """Run the block whole; an interrupt that came meanwhile is delivered at its end."""
    if threading.current_thread() is not threading.main_thread():  # handlers can only be set here
        yield
        return
    came: list[int] = []
    previous: dict[int, object] = {}

    def note(signum, frame) -> None:
        came.append(signum)

    try:
        for signum in HELD:
            handler = signal.getsignal(signum)
            if handler in (signal.SIG_IGN, None):  # ignored, or set outside Python: leave it
                continue
            previous[signum] = signal.signal(signum, note)
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if came:
            _deliver(came[0], previous[came[0]])


def _deliver(signum: int, handler: object) -> None:
    if callable(handler):
        handler(signum, None)  # Python's Ctrl-C handler raises KeyboardInterrupt, the run's SIGTERM one too
    elif handler == signal.SIG_DFL:
        signal.raise_signal(signum)
