"""The local executor: one process, one loaded model, units in order."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Iterator

from parallelbench.runner.units import UnitRunner, UnsupportedTask, WorkUnit

if TYPE_CHECKING:
    from parallelbench.models.base import BenchModel


class LocalSession:
    """Runs a model's units in this process, one batch after another."""

    def __init__(self, model: "BenchModel", model_spec: str):
        self.runner = UnitRunner(model, model_spec)
        self.kind = self.runner.kind
        self.model = model
        self.model_versions = self.runner.versions.get("model", {})  # part of each row's provenance
        self.model_name = getattr(model, "name", None)  # a py: factory's rows carry it (runner.job.row_model_name)
        self.skipped: dict[str, str] = {}  # tasks found undecodable mid-run, with the reason

    def run(self, units: Iterable[WorkUnit]) -> Iterator[tuple[WorkUnit, list[dict[str, Any]]]]:
        """Rows per unit; a task the model turns out not to decode is skipped whole (empty rows)."""
        for unit in units:
            if unit.task in self.skipped:
                continue
            try:
                rows = self.runner.run(unit)
            except UnsupportedTask as exc:
                self.skipped[exc.task] = exc.reason
                rows = []
            yield unit, rows

    def close(self) -> None:
        pass
