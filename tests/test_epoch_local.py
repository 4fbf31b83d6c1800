"""An epoch recomputed from the board's own inputs: by hand on a two-node float graph, and the
memo that lets one comparer serve several dumps of one compilation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from pytest_stedge.oracle.accuracy import epoch_local
from pytest_stedge.oracle.accuracy.epoch_local import LocalReference
from pytest_stedge.oracle.accuracy.refmodel import load_reference


@pytest.fixture(scope="module")
def scale_then_add(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """y = x * 2, z = y + 3 (float, 1x4): each value computable by hand."""
    path = tmp_path_factory.mktemp("local") / "two.onnx"
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "two"], ["y"], name="mul"),
         helper.make_node("Add", ["y", "three"], ["z"], name="add")],
        "two",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 4])],
        [numpy_helper.from_array(np.array(2.0, np.float32), "two"),
         numpy_helper.from_array(np.array(3.0, np.float32), "three")],
        value_info=[helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def _engine(path: Path) -> LocalReference:
    space = load_reference(path)
    x = np.arange(4, dtype=np.float32).reshape(1, 4)
    return LocalReference(space, space.run({"x": x}))


def test_an_epoch_is_recomputed_from_what_the_board_wrote(scale_then_add: Path) -> None:
    engine = _engine(scale_then_add)
    # the board's y (not the reference's 0, 2, 4, 6): z = y + 3
    board_y = np.array([[10, 20, 30, 40]], np.float32)
    out = engine.recompute(["z"], {"y": board_y})
    np.testing.assert_array_equal(out["z"], [[13, 23, 33, 43]])
    # with nothing given, the frontier takes the full run's values: (x * 2) + 3
    np.testing.assert_array_equal(engine.recompute(["z"], {})["z"], [[3, 5, 7, 9]])


def test_a_second_dump_with_other_bytes_is_recomputed_not_remembered(
    scale_then_add: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = _engine(scale_then_add)
    runs = []
    monkeypatch.setattr(engine, "_session", _counting(engine._session, runs))
    first = engine.recompute(["z"], {"y": np.ones((1, 4), np.float32)})
    again = engine.recompute(["z"], {"y": np.ones((1, 4), np.float32)})
    other = engine.recompute(["z"], {"y": np.full((1, 4), 5, np.float32)})
    np.testing.assert_array_equal(first["z"], [[4, 4, 4, 4]])
    np.testing.assert_array_equal(again["z"], first["z"])
    np.testing.assert_array_equal(other["z"], [[8, 8, 8, 8]])  # other bytes: computed anew
    # a wider part (from x) is a part of its own, even with the same values at hand
    np.testing.assert_array_equal(engine.recompute(["z"], {"x": np.ones((1, 4), np.float32)})["z"],
                                  [[5, 5, 5, 5]])
    assert len(runs) == 2  # one session per part: (z from y), (z from x)
    assert len(engine._results) == 3  # y=1, y=5, x=1: the repeat was served from memory
    again["z"][0, 0] = -1  # a change to what memory served never reaches the memory
    np.testing.assert_array_equal(engine.recompute(["z"], {"y": np.ones((1, 4), np.float32)})["z"],
                                  [[4, 4, 4, 4]])


def test_the_memory_of_results_is_bounded(scale_then_add: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(epoch_local, "_RESULT_BYTES", 2 * 16)  # two results of 4 floats
    engine = _engine(scale_then_add)
    for k in range(5):
        engine.recompute(["z"], {"y": np.full((1, 4), k, np.float32)})
    assert len(engine._results) == 2 and engine._result_bytes == 32
    # the newest are kept
    kept = engine.recompute(["z"], {"y": np.full((1, 4), 4, np.float32)})
    np.testing.assert_array_equal(kept["z"], [[7, 7, 7, 7]])


def _counting(make, calls: list[object]):  # type: ignore[no-untyped-def]
    def wrapped(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(args)
        return make(*args, **kwargs)
    return wrapped
