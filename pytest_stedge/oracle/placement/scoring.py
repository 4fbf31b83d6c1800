"""How well the placement oracle predicts the real epoch tables: leave one model out.

For every real run whose model is in the tree, the table is rebuilt without any run of
that model (so a run's own model never teaches its prediction), the model's placement is
predicted for the run's version, and the prediction is compared with the run's table:
which operator types ran in software or hybrid epochs (precision and recall, summed over
runs), and whether the SW and hybrid epoch counts are exact.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .runs import Run, load_runs
from .table import build_table


@dataclass
class RunScore:
    """One run: the operator types and epoch counts, real and predicted."""

    folder: str
    version: str
    model: str
    real_ops: set[str]
    predicted_ops: set[str]
    real_counts: tuple[int, int]
    predicted_counts: tuple[int, int]
    unknown: int

    @property
    def exact(self) -> bool:
        """SW and hybrid epoch counts both right."""
        return self.real_counts == self.predicted_counts


@dataclass
class Score:
    """Totals over runs."""

    runs: list[RunScore] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (folder, why)

    def _sums(self, runs: list[RunScore]) -> tuple[int, int, int]:
        tp = sum(len(r.real_ops & r.predicted_ops) for r in runs)
        fp = sum(len(r.predicted_ops - r.real_ops) for r in runs)
        fn = sum(len(r.real_ops - r.predicted_ops) for r in runs)
        return tp, fp, fn

    @property
    def precision(self) -> float:
        """Predicted SW/hybrid operator types that really ran there."""
        tp, fp, _ = self._sums(self.runs)
        return tp / (tp + fp) if tp + fp else 1.0

    @property
    def recall(self) -> float:
        """Operator types that ran in SW/hybrid epochs and were predicted so."""
        tp, _, fn = self._sums(self.runs)
        return tp / (tp + fn) if tp + fn else 1.0

    def exact_share(self, only_with_software: bool = False) -> float:
        """Share of runs whose SW and hybrid epoch counts are both exact."""
        runs = [r for r in self.runs if not only_with_software or any(r.real_counts)]
        return sum(r.exact for r in runs) / len(runs) if runs else 0.0

    def summary(self) -> dict[str, Any]:
        """The figures a benchmark prints."""
        tp, fp, fn = self._sums(self.runs)
        with_sw = [r for r in self.runs if any(r.real_counts)]
        return {"runs": len(self.runs), "runs_with_sw_or_hybrid": len(with_sw),
                "skipped": len(self.skipped), "tp": tp, "fp": fp, "fn": fn,
                "precision": round(self.precision, 3), "recall": round(self.recall, 3),
                "exact_counts": round(self.exact_share(), 3),
                "exact_counts_runs_with_sw": round(self.exact_share(True), 3)}


def _real_ops(run: Run) -> set[str]:
    return {o.op.replace("(float)", "").split("(")[0].split("+")[0]
            for o in run.observations if o.kind in ("sw", "hybrid") and o.op not in ("", "?")}


def leave_one_model_out(root: Path | str, runs: list[Run] | None = None) -> Score:
    """Score every run of ``root`` that has its model, each with its model left out."""
    from ..model.files import open_graph
    from .predict import predict_placement

    root = Path(root)
    runs = runs if runs is not None else load_runs(root)
    score = Score()
    graphs: dict[str, Any] = {}
    for run in runs:
        if not run.model_file or not run.model_md5:
            score.skipped.append((run.folder, "its model is not in the tree"))
            continue
        table = build_table(runs, exclude_model=run.model_md5)
        if run.model_file not in graphs:
            graphs[run.model_file] = open_graph(root / run.model_file)
        plan = predict_placement(graphs[run.model_file], run.version, table=table)
        counts = plan["counts"]
        score.runs.append(RunScore(
            run.folder, run.version, run.model_file, _real_ops(run),
            set(plan["software_ops"]) | set(plan["hybrid_ops"]),
            (run.counts.get("sw", 0), run.counts.get("hybrid", 0)),
            (counts["sw"], counts["hybrid"]), counts["unknown"]))
    return score
