"""The Ray pool turns a worker's UnsupportedTask into a skip of that task, like the local executor.

Driven through a stand-in for the `ray` module (references are computed eagerly), so the
hand-out logic is tested without starting a cluster.
"""

from __future__ import annotations

from types import SimpleNamespace

from parallelbench.runner.ray_executor import RayPool, _Worker
from parallelbench.runner.units import UnsupportedTask


class _Runner:
    def __init__(self):
        self.ran: list[str] = []

    def run(self, unit):
        self.ran.append(unit.task)
        if unit.task == "bad":
            raise UnsupportedTask("bad", "no answer set")
        return [{"task": unit.task}]


class _Ref:
    def __init__(self, value):
        self.value = value


class _Remote:
    def __init__(self, fn):
        self.fn = fn

    def remote(self, *args):
        return _Ref(self.fn(*args))


class _FakeRay:
    def wait(self, refs, num_returns=1):
        return refs[:num_returns], refs[num_returns:]

    def get(self, ref):
        return ref.value


def _pool(runner: _Runner) -> RayPool:
    worker = _Worker([], None)
    worker.runner = runner
    pool = RayPool.__new__(RayPool)
    pool.ray, pool.kind, pool.skipped, pool.waiting, pool._waits = _FakeRay(), "fake", {}, None, {}
    pool.actors = [SimpleNamespace(run=_Remote(worker.run))]
    return pool


def test_worker_reports_unsupported_task_instead_of_failing():
    worker = _Worker([], None)
    worker.runner = _Runner()
    assert worker.run(SimpleNamespace(task="bad")) == ([], "no answer set")
    assert worker.run(SimpleNamespace(task="ok")) == ([{"task": "ok"}], None)


def test_pool_skips_the_rest_of_an_unsupported_task():
    runner = _Runner()
    units = [SimpleNamespace(task=t) for t in ("ok", "bad", "bad", "ok", "bad")]
    out = list(_pool(runner).run(units))
    pool_rows = [(u.task, rows) for u, rows in out]
    assert pool_rows == [("ok", [{"task": "ok"}]), ("bad", []), ("ok", [{"task": "ok"}])]
    assert runner.ran == ["ok", "bad", "ok"]  # later "bad" units never reach a worker


def test_pool_reports_the_skip_reason():
    pool = _pool(_Runner())
    list(pool.run([SimpleNamespace(task="bad")]))
    assert pool.skipped == {"bad": "no answer set"}
