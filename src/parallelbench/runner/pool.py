"""Worker processes of the local executor: one copy of the model and one torch thread each.

The parent hands the next unit to whichever worker is free and yields finished units in the
order it was given them, so the database receives the rows of a one-process run, in the same
order; only the parent writes the database. A worker is a fresh interpreter (no torch thread
pool, CUDA context or lock inherited half-made through `fork`) started in isolated mode, so
nothing is imported from the current directory (a stray `threading.py` there never runs) and
the user's script is not imported again (what `multiprocessing`'s spawn would do to find its
`__main__`); it gets the parent's import path and talks to it through two pipes with
`multiprocessing.connection`. Each runs in a session of its own: a Ctrl-C or a SIGTERM sent to
the terminal's process group reaches only the parent, which saves what finished and stops them;
on Linux a worker also dies with its parent. A worker that dies (killed, out of memory) loses
only the unit it was decoding: the others carry on, and the run names what was lost.
"""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import threading
import time
import traceback
import warnings
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.connection import wait as wait_any
from typing import Any, Callable, Iterable, Iterator

from parallelbench.runner.units import UnitRunner, UnsupportedTask, WorkUnit

# A worker's first line: the parent's import path (isolated mode started with the standard library
# only), then its loop. Nothing is imported before the path is set.
_BOOT = ("import sys; sys.path[:] = sys.argv[5:]; from parallelbench.runner.pool import serve; "
         "serve(*map(int, sys.argv[1:5]))")

# A job being stopped (Slurm's scancel, `systemctl stop`) signals every process, the workers too, in
# no set order: a worker ended by one of these is reported only if the run's own signal has not come
# within STOP_GRACE_S, so a stopped run still ends with its one line.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
STOP_GRACE_S = 2.0


class WorkerLoadError(RuntimeError):
    """No worker process could load the model."""


class RemoteTraceback(Exception):
    """The worker's traceback, attached as the cause of an error raised in the parent."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


@dataclass
class Lost:
    """A unit whose worker died while decoding it."""

    unit: WorkUnit
    why: str  # "worker 2 (pid 4711) was killed by SIGKILL"


def describe_unit(unit: WorkUnit) -> str:
    """'confidence-topk[k=2] · waiting_line/copy, samples 8-15, seed 0' (ids after the task's prefix)."""
    ids = [s.id[len(unit.task) + 1:] if s.id.startswith(unit.task + "/") else s.id for s in unit.samples]
    shown = ids[0] if len(ids) == 1 else f"{ids[0]}-{ids[-1]}"
    return f"{unit.config.label} · {unit.task}, samples {shown}, seed {unit.seed}"


def death_reason(exitcode: int | None) -> str:
    if exitcode is None:
        return "stopped answering"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        hint = " (e.g. by the out-of-memory killer)" if -exitcode == signal.SIGKILL else ""
        return f"was killed by {name}{hint}"
    return f"exited with status {exitcode}"


def _workers(n: int) -> str:
    return f"{n} worker{'s' if n != 1 else ''}"


def adopt_driver_imports(paths: list[str], user_dir: str | None, threads: int | None) -> None:
    """Make a worker import like the process that started it: its module paths, the user's
    directory for `py:` models and `module:Class` strategies, and its torch thread count."""
    from parallelbench.userimport import set_user_dir

    for p in reversed(paths):
        if p not in sys.path:
            sys.path.insert(0, p)
    set_user_dir(user_dir)
    if threads:
        import torch

        torch.set_num_threads(threads)


def _portable(exc: BaseException) -> BaseException:
    """The exception itself if it survives pickling both ways, else a RuntimeError with its text;
    either way with the worker's traceback attached for whoever debugs it."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    try:
        out = pickle.loads(pickle.dumps(exc))
    except Exception:  # noqa: BLE001 - unpicklable arguments, a class the parent cannot rebuild
        out = RuntimeError(f"{type(exc).__name__}: {exc}")
    out.__cause__ = RemoteTraceback(text)
    return out


def _die_with_parent(parent: int) -> None:
    """Linux: the kernel kills this process when the parent dies (even by SIGKILL)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - not Linux: the closed pipe ends the worker after its unit
        pass
    if os.getppid() != parent:  # the parent died before the line above
        os._exit(0)


def serve(read_fd: int, write_fd: int, parent: int, threads: int) -> None:
    """A worker's life: load models and run units as the parent asks, until it closes the pipe or goes away."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent(parent)
    warnings.simplefilter("ignore")  # the parent loaded the same model and has shown its warnings once
    inbox, outbox = Connection(read_fd, writable=False), Connection(write_fd, readable=False)
    adopt_driver_imports([], os.getcwd(), threads)  # the path is the parent's already (see _BOOT)
    runner: UnitRunner | None = None
    while True:
        try:
            message = inbox.recv()
        except (EOFError, OSError):
            return
        op = message[0]
        try:
            if op == "load":
                from parallelbench.models import load_model

                runner = None  # free the previous model first
                spec, options = message[1], message[2]
                runner = UnitRunner(load_model(spec, **options), spec)
                reply: tuple = ("loaded", runner.kind)
            else:
                assert runner is not None, "load a model first"
                try:
                    reply = ("rows", runner.run(message[1]))
                except UnsupportedTask as exc:
                    reply = ("unsupported", exc.reason)
        except Exception as exc:  # noqa: BLE001 - the parent raises it as a one-process run would
            reply = ("error", _portable(exc))
        try:
            outbox.send(reply)
        except (OSError, ValueError):
            return


class _Handle:
    """The parent's side of one worker: its process and the two ends of its pipes."""

    def __init__(self, index: int, threads: int, device: str | None):
        self.index = index
        self.busy: int | None = None  # position of the unit it decodes
        to_child, from_parent = os.pipe()
        to_parent, from_child = os.pipe()
        env = dict(os.environ)
        if device is not None:
            env["CUDA_VISIBLE_DEVICES"] = device  # the worker's one GPU
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-I", "-c", _BOOT, str(to_child), str(from_child), str(os.getpid()), str(threads),
                 *[p for p in sys.path if p]],
                pass_fds=(to_child, from_child), env=env, stdin=subprocess.DEVNULL,
                start_new_session=True,  # group signals (Ctrl-C, `timeout`) are the parent's to handle
            )
        finally:
            os.close(to_child)
            os.close(from_child)
        self.outbox = Connection(from_parent, readable=False)
        self.conn = Connection(to_parent, writable=False)  # readable at a reply or at the worker's end

    @property
    def name(self) -> str:
        return f"worker {self.index + 1} (pid {self.process.pid})"

    def send(self, message: tuple) -> None:
        self.outbox.send(message)

    def close(self) -> None:
        for end in (self.outbox, self.conn):
            try:
                end.close()
            except OSError:
                pass


class WorkerPool:
    """N worker processes, reused for every model of a run; `shutdown` ends them."""

    def __init__(self, workers: int, *, threads: int = 1, devices: list[str] | None = None,
                 notify: Callable[[str], None] | None = None):
        self.size = workers
        self.devices = devices  # per worker, a CUDA_VISIBLE_DEVICES value (None: inherit)
        self.notify = notify or (lambda text: None)
        self.lost: list[Lost] = []
        self.not_run: list[WorkUnit] = []
        self._results: dict[int, tuple] = {}
        self._units: list[WorkUnit] = []
        self._emitted = 0
        self.handles: list[_Handle] = []
        try:
            for i in range(workers):
                self.handles.append(_Handle(i, threads, None if devices is None else devices[i % len(devices)]))
        except BaseException:
            self.shutdown()
            raise

    # -- models --------------------------------------------------------------------------------
    def load(self, model_spec: str, options: dict[str, Any]) -> str:
        """Load a model in every worker at once; workers that fail are dropped with a note.
        Returns the model's kind; raises WorkerLoadError when none could load it."""
        errors: list[str] = []
        for h in list(self.handles):
            try:
                h.send(("load", model_spec, options))
            except (OSError, ValueError):
                errors.append(self._drop(h, "while loading it"))
        kind = ""
        waiting = list(self.handles)
        while waiting:
            ready = wait_any([h.conn for h in waiting])  # a reply, or the end of a worker that died
            for h in [h for h in waiting if h.conn in ready]:
                waiting.remove(h)
                reply = self._receive(h)
                if reply is None:
                    errors.append(self._drop(h, "while loading it"))
                elif reply[0] == "error":
                    errors.append(f"{h.name} could not load it: {' '.join(str(reply[1]).split())}")
                    self._forget(h)
                else:
                    kind = reply[1]
        if not self.handles:
            raise WorkerLoadError(f"model {model_spec!r}: {errors[0] if errors else 'no worker process is running'}")
        for text in errors:
            self.notify(f"model {model_spec!r}: {text}; carrying on with {_workers(len(self.handles))}")
        return kind

    # -- units ---------------------------------------------------------------------------------
    def run(self, units: Iterable[WorkUnit], skipped: dict[str, str]) -> Iterator[tuple[WorkUnit, list[dict]]]:
        """(unit, rows) in the order of `units`, decoded by whichever worker is free.

        A unit whose task an earlier unit found undecodable is dropped (and later ones never sent),
        as in one process; an error a worker raises is raised here once every unit before it is out.
        """
        self._units, self._results, self._emitted = list(units), {}, 0
        self.lost, self.not_run = [], []
        sent = 0
        while self._emitted < len(self._units):
            idle = [h for h in self.handles if h.busy is None]
            while idle and sent < len(self._units):
                unit = self._units[sent]
                if unit.task in skipped:
                    self._results[sent] = ("skip",)
                    sent += 1
                    continue
                h = idle[0]
                try:
                    h.send(("run", unit))
                except (OSError, ValueError):  # died while idle: nothing of it is lost
                    idle.pop(0)
                    self.notify(f"{self._drop(h)}; carrying on with {_workers(len(self.handles))}")
                    continue
                idle.pop(0)
                h.busy = sent
                sent += 1
            yield from self._emit(skipped)
            if self._emitted >= len(self._units):
                break
            busy = [h for h in self.handles if h.busy is not None]
            if not busy:  # every worker is gone: what was never sent cannot run now
                self.not_run = [u for u in self._units[sent:] if u.task not in skipped]
                for i in range(sent, len(self._units)):
                    self._results[i] = ("skip",)
                sent = len(self._units)
                continue
            self._collect(busy, block=True)

    def finished(self) -> list[tuple[WorkUnit, list[dict]]]:
        """After an interruption: units finished but not yet handed out (and any a worker is just
        sending), so the caller can save them. Workers found dead now go unmentioned: the run is
        stopping, and its one line says what was saved."""
        self._collect([h for h in self.handles if h.busy is not None], block=False, quiet=True)
        out = []
        for i in sorted(self._results):
            reply = self._results.pop(i)
            if reply[0] == "rows" and i >= self._emitted:
                out.append((self._units[i], reply[1]))
        return out

    def _emit(self, skipped: dict[str, str]) -> Iterator[tuple[WorkUnit, list[dict]]]:
        while self._emitted in self._results:
            i = self._emitted
            reply = self._results.pop(i)
            unit = self._units[i]
            self._emitted += 1
            if reply[0] in ("skip", "lost") or unit.task in skipped:
                continue
            if reply[0] == "unsupported":
                skipped.setdefault(unit.task, reply[1])
                yield unit, []
            elif reply[0] == "error":
                raise reply[1]
            else:
                yield unit, reply[1]

    def _collect(self, busy: list[_Handle], *, block: bool, quiet: bool = False) -> None:
        """Take the replies that are there (waiting for at least one when `block`); a worker whose
        process ended without replying has lost its unit."""
        if not busy:
            return
        ready = wait_any([h.conn for h in busy], None if block else 0)  # a reply, or a worker's end
        for h in busy:
            if h.conn in ready:
                reply = self._receive(h)
                position, h.busy = h.busy, None
                if reply is not None:
                    self._results[position] = reply
                    continue
                unit = self._units[position]
                why = self._drop(h, quiet=quiet)
                self.lost.append(Lost(unit, why))
                self._results[position] = ("lost",)
                if quiet:
                    continue
                left = f"carrying on with {_workers(len(self.handles))}" if self.handles else "no worker is left"
                self.notify(f"{why} while decoding {describe_unit(unit)}: those {len(unit.samples)} rows are "
                            f"lost; {left}")

    @staticmethod
    def _receive(h: _Handle) -> tuple | None:
        try:
            if h.conn.poll(0):
                return h.conn.recv()
        except (EOFError, OSError):
            pass
        return None

    @staticmethod
    def _exitcode(h: _Handle) -> int | None:
        try:
            return h.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return None

    def _drop(self, h: _Handle, doing: str | None = None, *, quiet: bool = False) -> str:
        """Stop a worker and forget it; returns what happened to it ('worker 2 (pid 1) was killed by ...')."""
        code = self._exitcode(h)
        if not quiet and code is not None and -code in STOP_SIGNALS:
            time.sleep(STOP_GRACE_S)  # the run's own stop signal, if one is coming, interrupts this
        said = f"{h.name} {death_reason(code)}" + (f" {doing}" if doing else "")
        self._forget(h)
        return said

    def _forget(self, h: _Handle) -> None:
        self._stop(h)
        if h in self.handles:
            self.handles.remove(h)

    @staticmethod
    def _stop(h: _Handle, *, gracefully: bool = False) -> None:
        """An idle worker leaves on its own once its pipes close (its interpreter's teardown then runs
        beside whatever the run does next); a busy one is killed: its unit is lost either way."""
        if not gracefully and h.process.poll() is None:
            h.process.kill()
        h.close()
        threading.Thread(target=h.process.wait, name="parallelbench-worker-reaper", daemon=True).start()

    def shutdown(self, *, gracefully: bool = False) -> None:
        """Stop every worker: idle ones leave by themselves when `gracefully`, the others are killed."""
        for h in self.handles:
            self._stop(h, gracefully=gracefully and h.busy is None)
        self.handles = []
