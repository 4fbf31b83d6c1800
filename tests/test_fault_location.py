"""The first diverging epoch on every real N6 compilation in ../shared (issue 28).

For each c_info with its epochs and buffers and a matching model, the simulator serves
the compilation and a fault corrupts one epoch at a time (8 spread over each graph: the
first, the last and six between; ``python tests/fault_trials.py`` tries every epoch);
``stedge diverge`` must name that epoch (or list it among the epochs before the first
wrong one that wrote nothing comparable) with the user's own model, the OE model and
no model, and must find nothing on a healthy board.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fault_trials import SHARED, compilations, faulty_dump, healthy_dump, run_trials

pytestmark = pytest.mark.slow

if SHARED.is_dir():
    COMPILATIONS, LEFT_OUT = compilations()
else:  # pragma: no cover - depends on the machine
    COMPILATIONS, LEFT_OUT = [], []


def _ids() -> list[str]:
    return [c.label.replace("/", ":") for c in COMPILATIONS]


FAULTS = 8  # each fault is 3 whole comparisons (~0.4 s CPU each on BlazeFace)


@pytest.mark.timeout(1800)  # ~12 s CPU each; a loaded 2-core CI machine stretches it
@pytest.mark.parametrize("comp", COMPILATIONS, ids=_ids())
def test_every_fault_is_located_and_a_healthy_board_is_not_blamed(comp, tmp_path: Path) -> None:
    if comp.oe is None:
        pytest.skip(f"{comp.label}: its OE model, which maps its buffer names and which the "
                    "simulator serves, is not in ../shared")
    tallies = run_trials(comp, tmp_path, FAULTS)
    assert {t.model for t in tallies} >= {"no model"}
    for tally in tallies:
        assert tally.healthy_ok == 1, (tally.model, tally.misses)
        assert tally.faults == min(FAULTS, comp.epochs)
        assert tally.located == tally.faults, (tally.model, tally.misses)


def test_the_compilations_tried_are_the_real_ones() -> None:
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} is absent (the real tool outputs live in ../shared)")
    labels = {c.label for c in COMPILATIONS if c.oe is not None}
    # BlazeFace (2.2.0: profile-default generate, analyze, its ATONN workspace, and the
    # n6-allmems-O3 CubeMX build) and MobileNetV2 QDQ (3.0.0 CLI and workspace)
    assert sum("blazeface" in label for label in labels) == 4
    assert sum("mobilenetv2-qdq-3versions/3.0.0" in label for label in labels) == 2
    blaze = next(c for c in COMPILATIONS if "cubemx" in c.label and "blazeface" in c.label)
    assert [u.suffix for u in blaze.user] == [".tflite"] and blaze.epochs == 93
    why = dict(LEFT_OUT)
    # a validate-on-target c_info keeps no buffers: nothing maps records to epochs there
    assert any("micro-convs" in label and "buffers" in reason for label, reason in why.items())


def test_a_derived_fault_is_what_the_simulator_sends(tmp_path: Path) -> None:
    comp = next((c for c in COMPILATIONS if c.oe is not None and "mobilenetv2" in c.label),
                None)
    if comp is None:
        pytest.skip("the MobileNetV2 QDQ compilation of ../shared is absent")
    healthy = healthy_dump(comp, tmp_path / "healthy.npz")
    derived = faulty_dump(healthy, "epoch_12", tmp_path / "derived.npz")
    served = healthy_dump(comp, tmp_path / "served.npz", fault="epoch_12")
    with np.load(derived) as a, np.load(served) as b:
        assert sorted(a.files) == sorted(b.files)
        changed = [k for k in a.files if not np.array_equal(a[k], b[k])]
        assert changed == []
    with np.load(healthy) as h, np.load(served) as b:
        assert any(not np.array_equal(h[k], b[k]) for k in h.files)
