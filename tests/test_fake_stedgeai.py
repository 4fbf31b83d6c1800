"""The fake `stedgeai` behaves like the real one: same files, same structure, model-driven figures.

Structure is checked against the real outputs in ../shared/stedgeai-samples (skipped when that
folder is absent). Most runs call the CLI in-process for speed; the exit-status, crash and hang
behaviour go through the installed executable.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from fake_stedgeai import make_install
from fake_stedgeai.cli import main as fake_main
from fake_stedgeai.faults import ENV
from onnx import TensorProto, helper
from onnx import numpy_helper as nh

from pytest_stedge.parsers import parse_path as parse_path_of

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
SAMPLES = SHARED / "stedgeai-samples"
needs_samples = pytest.mark.skipif(not SAMPLES.is_dir(), reason=f"{SAMPLES} not present")

TITLES = (
    "Exec/report summary (",
    "Model name - ",
    "Generated C-graph summary",
    "C-Arrays (",
    "C-Layers (",
    "Number of operations per c-layer",
    "Number of operation types",
    "Complexity report",
    "Compilation details",
    "Memory usage information",
    "Used memory ranges",
    "Epochs details",
    "Evaluation report (summary)",
    "Generated files (",
    "Setting validation data...",
    "Computing the metrics...",
)


# --------------------------------------------------------------------------- models


def _qdq_model(path: Path, cout: int = 8, prelu: bool = False, softmax: bool = True) -> Path:
    """A small int8 QDQ CNN: Conv-Relu[-PRelu]-GAP-Flatten-Gemm[-Softmax], float I/O."""
    rng = np.random.RandomState(cout)
    inits: list[Any] = []
    nodes: list[Any] = []

    def qdq(name: str, x: str, out: str | None = None) -> str:
        inits.extend(
            [
                nh.from_array(np.array(0.02, np.float32), f"{name}_s"),
                nh.from_array(np.array(0, np.int8), f"{name}_z"),
            ]
        )
        nodes.append(
            helper.make_node(
                "QuantizeLinear", [x, f"{name}_s", f"{name}_z"], [f"{name}_q"], name=f"{name}_Q"
            )
        )
        dq = out or f"{name}_dq"
        nodes.append(
            helper.make_node(
                "DequantizeLinear", [f"{name}_q", f"{name}_s", f"{name}_z"], [dq], name=f"{name}_DQ"
            )
        )
        return dq

    def weight(name: str, shape: tuple[int, ...]) -> str:
        inits.extend(
            [
                nh.from_array(rng.randint(-60, 60, shape).astype(np.int8), f"{name}_w8"),
                nh.from_array(np.array(0.01, np.float32), f"{name}_ws"),
                nh.from_array(np.array(0, np.int8), f"{name}_wz"),
            ]
        )
        nodes.append(
            helper.make_node(
                "DequantizeLinear",
                [f"{name}_w8", f"{name}_ws", f"{name}_wz"],
                [f"{name}_wdq"],
                name=f"{name}_WDQ",
            )
        )
        return f"{name}_wdq"

    x = qdq("in", "input")
    inits.append(nh.from_array(rng.randn(cout).astype(np.float32), "conv1_b"))
    nodes.append(
        helper.make_node(
            "Conv",
            [x, weight("conv1", (cout, 3, 3, 3)), "conv1_b"],
            ["c1"],
            name="conv1",
            pads=[1, 1, 1, 1],
        )
    )
    y = qdq("c1", "c1")
    nodes.append(helper.make_node("Relu", [y], ["r1"], name="relu1"))
    y = qdq("r1", "r1")
    if prelu:
        inits.append(nh.from_array(np.full((cout, 1, 1), 0.1, np.float32), "slope"))
        nodes.append(helper.make_node("PRelu", [y, "slope"], ["p1"], name="prelu1"))
        y = qdq("p1", "p1")
    nodes.append(helper.make_node("GlobalAveragePool", [y], ["gap"], name="gap"))
    y = qdq("gap", "gap")
    nodes.append(helper.make_node("Flatten", [y], ["fl"], name="flat"))
    y = qdq("fl", "fl")
    nodes.append(
        helper.make_node("Gemm", [y, weight("fc", (4, cout))], ["fc"], name="fc", transB=1)
    )
    if softmax:
        y = qdq("fc", "fc")
        nodes.append(helper.make_node("Softmax", [y], ["sm"], name="softmax"))
        qdq("sm", "sm", out="output")
    else:
        qdq("fc", "fc", out="output")
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 4])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def _float_mlp(path: Path) -> Path:
    rng = np.random.RandomState(1)
    inits = [
        nh.from_array(rng.randn(16, 13).astype(np.float32), "w1"),
        nh.from_array(rng.randn(16).astype(np.float32), "b1"),
        nh.from_array(rng.randn(3, 16).astype(np.float32), "w2"),
        nh.from_array(rng.randn(3).astype(np.float32), "b2"),
    ]
    nodes = [
        helper.make_node("Gemm", ["obs", "w1", "b1"], ["h"], name="dense1", transB=1),
        helper.make_node("Relu", ["h"], ["hr"], name="relu"),
        helper.make_node("Gemm", ["hr", "w2", "b2"], ["action"], name="dense2", transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("obs", TensorProto.FLOAT, [1, 13])],
        [helper.make_tensor_value_info("action", TensorProto.FLOAT, [1, 3])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("models")
    return {
        "small": _qdq_model(d / "small.onnx", 8),
        "big": _qdq_model(d / "big.onnx", 16, prelu=True),
        "mlp": _float_mlp(d / "mlp.onnx"),
    }


@pytest.fixture(scope="module")
def installs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("installs")
    return {v: make_install(d / v, v) for v in ("2.0.0", "2.1.0", "2.2.0", "3.0.0", "4.0.1")}


def _run(
    exe: Path,
    tmp: Path,
    *args: str,
    faults: dict[str, Any] | None = None,
    monkeypatch: pytest.MonkeyPatch | None = None,
) -> int:
    """Run the fake in-process as the install ``exe`` would (its version and root)."""
    text = exe.read_text()
    version = re.search(r"version='([^']+)'", text)
    config = re.search(r"config_path='([^']+)'", text)
    root = exe.parents[2]
    assert version and config
    if monkeypatch is not None:
        if faults is None:
            monkeypatch.delenv(ENV, raising=False)
        else:
            monkeypatch.setenv(ENV, json.dumps(faults))
    argv = [*args, "-o", str(tmp / "out"), "-w", str(tmp / "ws"), "--quiet"]
    return fake_main(argv, version=version.group(1), config_path=config.group(1), root=str(root))


def _titles(path: Path) -> list[str]:
    found = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        s = line.strip()
        for t in TITLES:
            if s.startswith(t):
                found.append(t)
    return found


def _cinfo(tmp: Path) -> dict[str, Any]:
    return json.loads((tmp / "out" / "network_c_info.json").read_text())


def _structure(doc: dict[str, Any]) -> dict[str, Any]:
    nodes = doc["graphs"][0]["nodes"]
    pools = [p for p in doc["memory_pools"] if not p["subpools"]]
    return {
        "top": sorted(doc),
        "node": sorted(nodes[1]),
        "buffer": sorted(doc["buffers"][0]),
        "pool": sorted(pools[0]),
        "env": sorted(doc["environment"]),
        "tools": [t["name"] for t in doc["environment"]["tools"]],
        "footprint": sorted(doc["memory_footprint"]),
        "graph": sorted(doc["graphs"][0]),
        "edge": sorted(doc["graphs"][0]["edges"][0]),
        "io": sorted(doc["graphs"][0]["original_inputs"][0]),
        "sub": sorted(next((s for n in nodes for s in n["subgraph_nodes"]), {})),
    }


# --------------------------------------------------------------------------- banner and CLI


def test_version_banner_is_the_real_one(installs: dict[str, Path]) -> None:
    out = subprocess.run(
        [str(installs["4.0.1"]), "--version"], capture_output=True, text=True, timeout=60,
        check=False,
    )
    assert out.returncode == 0
    assert out.stdout.splitlines() == [
        "ST Edge AI Core v4.0.1-20581 7ed50de05",
        "   ISPU 2.0.1-RC2",
        "   MLC 1.2.4-RC2",
        "   STM32CubeAI 12.0.1-RC2",
    ]
    old = subprocess.run(
        [str(installs["2.0.0"]), "--version"], capture_output=True, text=True, timeout=60,
        check=False,
    )
    assert old.stdout.splitlines()[0] == "ST Edge AI Core v2.0.0-20049"
    assert "   STM32CubeAI 10.0.0" in old.stdout.splitlines()


def test_unknown_version_gets_a_parsable_synthetic_banner(tmp_path: Path) -> None:
    exe = make_install(tmp_path / "x", "5.1.0")
    out = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=60, check=False)
    assert re.match(r"^ST Edge AI Core v5\.1\.0-\d+ [0-9a-f]{9}$", out.stdout.splitlines()[0])
    assert "STM32CubeAI 13.1.0" in out.stdout


def test_unknown_option_is_a_cli_argument_error(
    installs: dict[str, Path], models: dict[str, Path]
) -> None:
    out = subprocess.run(
        [
            str(installs["4.0.1"]),
            "generate",
            "-m",
            str(models["small"]),
            "--target",
            "stm32n6",
            "--frobnicate",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode != 0
    assert "E102(CliArgumentError): unrecognized arguments: --frobnicate" in out.stdout


@pytest.mark.parametrize(
    "args, expected",
    [
        (
            ["validate", "--target", "stm32n6", "--st-neural-art", "--mode", "target"],
            "E801(HwIOError)",
        ),
        (
            ["validate", "--target", "stm32n6", "--st-neural-art"],
            "E102(CliArgumentError): Validation",
        ),
        (["generate", "--target", "stm32x9"], 'unsupported target "stm32x9"'),
        (["generate", "--target", "stm32n6", "--st-neural-art", "nosuch"], 'profile "nosuch"'),
    ],
)
def test_bad_requests_fail_like_the_tool(
    args: list[str],
    expected: str,
    tmp_path: Path,
    installs: dict[str, Path],
    models: dict[str, Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rc = _run(
        installs["4.0.1"], tmp_path, *args, "-m", str(models["small"]), monkeypatch=monkeypatch
    )
    assert rc == 1
    assert expected in capsys.readouterr().out


# --------------------------------------------------------------------------- structure vs samples


@needs_samples
@pytest.mark.parametrize(
    "version, sample, cinfo_name",
    [
        ("4.0.1", "n6-v4.0.0-generate-npu-conv2d-default-profile", "network_c_info.json"),
        ("3.0.0", "n6-v3.0.0-mobilenetv2-cli", "network_c_info.json"),
        (
            "2.1.0",
            "n6-v2.1.0-xcubeai10.1-mobilenetv2",
            "network_mobilenet_v2_128_0.5_QDQ_quant.onnx_c_info.json",
        ),
    ],
)
def test_n6_generate_has_the_structure_of_the_real_files(
    version: str,
    sample: str,
    cinfo_name: str,
    tmp_path: Path,
    installs: dict[str, Path],
    models: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert (
        _run(
            installs[version],
            tmp_path,
            "generate",
            "-m",
            str(models["small"]),
            "--target",
            "stm32n6",
            "--st-neural-art",
            monkeypatch=monkeypatch,
        )
        == 0
    )
    real = SAMPLES / sample
    gcc_only = {"Requested memory size by section", "Summary -"}
    want = [t for t in _titles(real / "network_generate_report.txt") if t not in gcc_only]
    assert _titles(tmp_path / "out" / "network_generate_report.txt") == want
    ours, theirs = (
        _structure(_cinfo(tmp_path)),
        _structure(json.loads((real / cinfo_name).read_text())),
    )
    assert ours == theirs


@needs_samples
@pytest.mark.parametrize(
    "version, target, model, sample, cinfo_name",
    [
        (
            "2.2.0",
            "stm32h7",
            "mlp",
            "stm32h7-v2.2.0-generate-policy-onnx",
            "network_policy.onnx_c_info.json",
        ),
        # STM32N6 without --st-neural-art: the Cortex-M55 software path, c-graph style
        ("4.0.1", "stm32n6", "small", "n6-v4.0.0-generate-sw-st-ai-tcn", "network_c_info.json"),
    ],
)
def test_mcu_generate_has_the_structure_of_the_real_files(
    version: str,
    target: str,
    model: str,
    sample: str,
    cinfo_name: str,
    tmp_path: Path,
    installs: dict[str, Path],
    models: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    args = ["generate", "-m", str(models[model]), "--target", target]
    assert _run(installs[version], tmp_path, *args, monkeypatch=monkeypatch) == 0
    real = SAMPLES / sample
    gcc_only = {"Requested memory size by section", "Summary -"}
    want = [t for t in _titles(real / "network_generate_report.txt") if t not in gcc_only]
    assert _titles(tmp_path / "out" / "network_generate_report.txt") == want
    ours = _structure(_cinfo(tmp_path))
    theirs = _structure(json.loads((real / cinfo_name).read_text()))
    assert ours == theirs
    assert all(n["mapping"] == "NODE_SW" for n in _cinfo(tmp_path)["graphs"][0]["nodes"])
    text = (tmp_path / "out" / "network_generate_report.txt").read_text()
    assert f"target/series      :   {target}" in text


def test_v2_epoch_list_uses_the_2x_layout(
    tmp_path: Path,
    installs: dict[str, Path],
    models: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert (
        _run(
            installs["2.2.0"],
            tmp_path,
            "generate",
            "-m",
            str(models["small"]),
            "--target",
            "stm32n6",
            "--st-neural-art",
            monkeypatch=monkeypatch,
        )
        == 0
    )
    text = (tmp_path / "out" / "network_generate_report.txt").read_text()
    assert re.search(
        r"^Total number of epochs: \d+ of which \d+ implemented in software$", text, re.MULTILINE
    )
    assert "epoch 1      -SW-   (   QuantizeLinear   )" in text  # 2.x keeps the float input Q
    assert re.search(r"^epoch \d+\s+-SW-   \(      Softmax       \)$", text, re.MULTILINE)
    assert re.search(r"^epoch \d+ +HW +$", text, re.MULTILINE)


# --------------------------------------------------------------------------- figures


def _figures(tmp: Path) -> dict[str, Any]:
    """Figures read straight from c_info (pseudo-epochs holding params or the return skipped)."""
    doc = _cinfo(tmp)

    def pseudo(node: dict[str, Any]) -> bool:
        kinds = {s.get("type", s.get("description", "")) for s in node["subgraph_nodes"]}
        return kinds <= {"Param", "Return", "Node kind=Param", "Node kind=Return"}

    maps = [n["mapping"] for n in doc["graphs"][0]["nodes"] if not pseudo(n)]
    return {
        "weights": doc["memory_footprint"]["weights"],
        "activations": doc["memory_footprint"]["activations"],
        "hw": maps.count("NODE_HW"),
        "ec": maps.count("NODE_EC"),
        "sw": maps.count("NODE_SW"),
        "hybrid": maps.count("NODE_SW_HW"),
    }


def test_figures_are_derived_from_the_model(
    tmp_path: Path,
    installs: dict[str, Path],
    models: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    figs = {}
    for key in ("small", "big"):
        assert (
            _run(
                installs["4.0.1"],
                tmp_path / key,
                "generate",
                "-m",
                str(models[key]),
                "--target",
                "stm32n6",
                "--st-neural-art",
                monkeypatch=monkeypatch,
            )
            == 0
        )
        figs[key] = _figures(tmp_path / key)
    # small: int8 conv 8x3x3x3 + float bias 8 + int8 fc 4x8 = 216 + 32 + 32 bytes
    assert figs["small"]["weights"] == 280
    assert figs["big"]["weights"] > figs["small"]["weights"]
    assert figs["big"]["activations"] > figs["small"]["activations"]
    report = (tmp_path / "small" / "out" / "network_generate_report.txt").read_text()
    # 16x16x8 outputs x 27 + 8 bias, + relu, gap, fc(32), softmax
    assert "model: macc=57,396 " in report
    again = tmp_path / "again"
    _run(
        installs["4.0.1"],
        again,
        "generate",
        "-m",
        str(models["small"]),
        "--target",
        "stm32n6",
        "--st-neural-art",
        monkeypatch=monkeypatch,
    )
    assert _figures(again) == figs["small"]  # deterministic


def test_version_dependent_epoch_bugs(
    tmp_path: Path,
    installs: dict[str, Path],
    models: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    big = str(models["big"])

    def report(ver: str, profile: str) -> str:
        out = tmp_path / f"{ver}-{profile}"
        assert (
            _run(
                installs[ver],
                out,
                "generate",
                "-m",
                big,
                "--target",
                "stm32n6",
                "--st-neural-art",
                profile,
                monkeypatch=monkeypatch,
            )
            == 0
        )
        return (out / "out" / "network_generate_report.txt").read_text()

    assert "(       PRelu        )" in report("2.1.0", "default")  # PReLU in SW before 2.2
    assert "PRelu" not in report("2.2.0", "default").split("Epochs details")[1]
    assert re.search(r"^epoch \d+ +\?\? +$", report("2.1.0", "alt-sched"), re.MULTILINE)
    assert "??" not in report("2.2.0", "alt-sched").split("Epochs details")[1]
    ec = report("4.0.1", "allmems-O3-ec")
    assert re.search(r"\|  EC  \|", ec) and "(implemented in 1 epoch controller blobs" in ec
    # as the real 4.0 reports: the blob is one "epochs a -> b" row, never one row per epoch
    blob = re.search(r"^\| epochs +(\d+) -> (\d+) +\| +EC +\|", ec, re.MULTILINE)
    assert blob and not re.search(r"^\| epoch_\d+ +\| +EC +\|", ec, re.MULTILINE)
    # and its c_info holds ONE NODE_EC node for the blob (2.x: one per epoch)
    doc = _cinfo(tmp_path / "4.0.1-allmems-O3-ec")
    ec_nodes = [n for n in doc["graphs"][0]["nodes"] if n["mapping"] == "NODE_EC"]
    first, last = int(blob.group(1)), int(blob.group(2))
    assert [n["name"] for n in ec_nodes] == [f"_ec_blob_{first}"]
    result = parse_path_of(tmp_path / "4.0.1-allmems-O3-ec" / "out")
    assert result["epochs"]["ec"] == last - first + 1 and result["epochs"]["ec_blobs"] == 1


# --------------------------------------------------------------------------- faults


def _gen(
    tmp: Path,
    installs: dict[str, Path],
    models: dict[str, Path],
    faults: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    model: str = "small",
) -> int:
    return _run(
        installs["4.0.1"],
        tmp,
        "generate",
        "-m",
        str(models[model]),
        "--target",
        "stm32n6",
        "--st-neural-art",
        faults=faults,
        monkeypatch=monkeypatch,
    )


def test_error_fault_prints_a_tool_error_and_exits(tmp_path: Path, models: dict[str, Path]) -> None:
    exe = make_install(
        tmp_path / "inst", "4.0.1", config={"*": {"error": "Not enough memory", "exit_code": 3}}
    )
    out = subprocess.run(
        [
            str(exe),
            "generate",
            "-m",
            str(models["small"]),
            "--target",
            "stm32n6",
            "--st-neural-art",
            "-o",
            str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if k != ENV},
        check=False,
    )
    assert out.returncode == 3
    assert "E103(CompilerError): Not enough memory" in out.stdout
    assert not (tmp_path / "o").exists()


def test_crash_and_hang_faults(
    tmp_path: Path, installs: dict[str, Path], models: dict[str, Path]
) -> None:
    base = [
        str(installs["4.0.1"]),
        "generate",
        "-m",
        str(models["small"]),
        "--target",
        "stm32n6",
        "-o",
        str(tmp_path / "o"),
    ]
    env = dict(os.environ, **{ENV: json.dumps({"crash": True})})
    out = subprocess.run(base, capture_output=True, text=True, timeout=60, env=env, check=False)
    assert out.returncode == 1 and "Traceback (most recent call last)" in out.stderr
    env[ENV] = json.dumps({"small": {"hang": True}})
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run(base, capture_output=True, timeout=1.5, env=env, check=False)


def test_sleep_fault_shows_in_elapsed_time(
    tmp_path: Path,
    installs: dict[str, Path],
    models: dict[str, Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _gen(tmp_path, installs, models, {"sleep": 0.3}, monkeypatch) == 0
    elapsed = re.search(r"elapsed time \(GENERATE\): ([\d.]+)s", capsys.readouterr().out)
    assert elapsed and float(elapsed.group(1)) >= 0.3


def test_output_faults(
    tmp_path: Path,
    installs: dict[str, Path],
    models: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _gen(tmp_path / "none", installs, models, {"no_output": True}, monkeypatch) == 0
    assert not (tmp_path / "none" / "out").exists()
    assert (
        _gen(
            tmp_path / "trunc", installs, models, {"truncate": ["network_c_info.json"]}, monkeypatch
        )
        == 0
    )
    with pytest.raises(json.JSONDecodeError):
        json.loads((tmp_path / "trunc" / "out" / "network_c_info.json").read_text())
    assert (
        _gen(tmp_path / "junk", installs, models, {"garbage": ["*_report.txt"]}, monkeypatch) == 0
    )
    junk = (tmp_path / "junk" / "out" / "network_generate_report.txt").read_bytes()
    assert b"Epochs details" not in junk and junk


def test_figure_faults(
    tmp_path: Path,
    installs: dict[str, Path],
    models: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _gen(tmp_path / "base", installs, models, {}, monkeypatch)
    base = _figures(tmp_path / "base")
    _gen(
        tmp_path / "f",
        installs,
        models,
        {
            "*": {
                "inflate_activations": 3,
                "weights_factor": 2,
                "extra_sw_epochs": ["Gather"],
                "hybrid_epochs": 1,
            }
        },
        monkeypatch,
    )
    got = _figures(tmp_path / "f")
    assert got["activations"] > 2 * base["activations"]
    assert got["weights"] == 2 * base["weights"]
    assert got["sw"] == base["sw"] + 1 and got["hybrid"] == 1 and got["hw"] == base["hw"] - 1
    text = (tmp_path / "f" / "out" / "network_generate_report.txt").read_text()
    assert "| Gather " in text and ">> hybrid epochs (using both software and hardware)   1" in text
    # a fault scoped to another model stem leaves this one alone
    _gen(tmp_path / "other", installs, models, {"big": {"weights_factor": 5}}, monkeypatch)
    assert _figures(tmp_path / "other") == base


# --------------------------------------------------------------------------- validate


def _metrics(r: np.ndarray, p: np.ndarray) -> dict[str, float]:
    r, p = r.ravel().astype(np.float64), p.ravel().astype(np.float64)
    e = r - p
    return {
        "rmse": float(np.sqrt(np.mean(e * e))),
        "l2r": float(np.linalg.norm(e) / np.linalg.norm(p)),
        "cos": float(r @ p / (np.linalg.norm(r) * np.linalg.norm(p))),
    }


@pytest.mark.parametrize(
    "version, target, extra",
    [
        ("4.0.1", "stm32n6", ["--st-neural-art", "--mode", "target", "-d", "serial:COM3:921600"]),
        ("2.2.0", "stm32h7", []),
    ],
)
def test_validate_writes_npz_metrics_table_and_cinfo(
    version: str,
    target: str,
    extra: list[str],
    tmp_path: Path,
    installs: dict[str, Path],
    models: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = models["small"] if target == "stm32n6" else models["mlp"]
    assert (
        _run(
            installs[version],
            tmp_path,
            "validate",
            "-m",
            str(model),
            "--target",
            target,
            *extra,
            monkeypatch=monkeypatch,
        )
        == 0
    )
    npz = np.load(tmp_path / "out" / "network_val_io.npz")
    assert {"m_outputs_1", "c_outputs_1"} <= set(npz.files)
    ref, c = npz["m_outputs_1"], npz["c_outputs_1"]
    assert ref.shape[0] == 10 and c.shape[0] == 10
    val = _cinfo(tmp_path)["validation"]["val_metrics"][0]
    if c.dtype == np.int8:  # the C model returned int8: metrics use dequantized values
        out = _cinfo(tmp_path)["graphs"][0]["original_outputs"][0]["data_format"]
        c = (c.astype(np.int32) - out["zero"][0]) * np.float32(out["scale"][0])
    want = _metrics(ref, c.reshape(ref.shape))
    assert val["cos"] == pytest.approx(want["cos"], rel=1e-6)
    assert val["rmse"] == pytest.approx(want["rmse"], rel=1e-5)
    assert ("snr" in val) == (version >= "4.0")
    text = (tmp_path / "out" / "network_validate_report.txt").read_text()
    table = text.split("Evaluation report (summary)")[1]
    assert re.search(r"^X-cross #1\s+n\.a\.\s+[\d.]+\s+", table, re.MULTILINE)
    assert ("snr" in table.splitlines()[2]) == (version >= "4.0")


def test_validate_accuracy_faults(
    tmp_path: Path,
    installs: dict[str, Path],
    models: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    args = ["validate", "-m", str(models["mlp"]), "--target", "stm32h7"]
    assert (
        _run(
            installs["4.0.1"],
            tmp_path / "c",
            *args,
            faults={"validate": {"cos": 0.091}},
            monkeypatch=monkeypatch,
        )
        == 0
    )
    cos = _cinfo(tmp_path / "c")["validation"]["val_metrics"][0]["cos"]
    assert cos == pytest.approx(0.091, abs=1e-3)
    assert (
        _run(
            installs["4.0.1"],
            tmp_path / "u",
            *args,
            faults={"validate": {"uncorrelated": True}},
            monkeypatch=monkeypatch,
        )
        == 0
    )
    met = _cinfo(tmp_path / "u")["validation"]["val_metrics"][0]
    assert met["cos"] < 0.9 and met["snr"] < 10


# --------------------------------------------------------------------------- lead's parser


@pytest.mark.parametrize(
    "version, args",
    [
        ("4.0.1", ["generate", "--target", "stm32n6", "--st-neural-art"]),
        ("2.1.0", ["generate", "--target", "stm32n6", "--st-neural-art", "alt-sched"]),
        ("2.2.0", ["validate", "--target", "stm32h7"]),
    ],
)
def test_project_parser_reads_the_fake_output(
    version: str,
    args: list[str],
    tmp_path: Path,
    installs: dict[str, Path],
    models: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pytest_stedge.parsers import parse_path

    model = models["big"]
    assert _run(installs[version], tmp_path, *args, "-m", str(model), monkeypatch=monkeypatch) == 0
    doc = _cinfo(tmp_path)
    result = parse_path(tmp_path / "out")
    assert result["tool"]["version"] == version
    assert result["command"] == args[0]
    assert result["memory"]["weights_bytes"] == doc["memory_footprint"]["weights"]
    assert result["memory"]["activations_bytes"] == doc["memory_footprint"]["activations"]
    report = (tmp_path / "out" / f"network_{args[0]}_report.txt").read_text()
    macc = re.search(r"macc=([\d,]+)", report)
    assert macc and result["macc"] == int(macc.group(1).replace(",", ""))
    if "--st-neural-art" in args:
        figs = _figures(tmp_path)
        for kind in ("hw", "ec", "sw", "hybrid"):
            assert result["epochs"][kind] == figs[kind], kind
    else:
        cos = doc["validation"]["val_metrics"][0]["cos"]
        assert result["validation"]["outputs"][0]["cos"] == pytest.approx(cos)


def test_fault_config_mistakes_are_reported(
    tmp_path: Path,
    installs: dict[str, Path],
    models: dict[str, Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _gen(tmp_path, installs, models, {"slep": 0.5}, monkeypatch) == 2
    assert "unknown fault key(s) slep" in capsys.readouterr().err
    monkeypatch.setenv(ENV, "{not json")
    exe = installs["4.0.1"]
    text = exe.read_text()
    config = re.search(r"config_path='([^']+)'", text)
    assert config
    argv = ["generate", "-m", str(models["small"]), "--target", "stm32n6"]
    assert fake_main(argv, version="4.0.1", config_path=config.group(1)) == 2
    assert "STEDGE_FAKE: not valid JSON" in capsys.readouterr().err


def test_install_tree_has_profiles_and_a_loader(installs: dict[str, Path]) -> None:
    root = installs["3.0.0"].parents[2]
    profiles = root / "Utilities/linux/targets/stm32/resources/neural_art.json"
    assert "default" in json.loads(profiles.read_text().split("\n", 1)[1])["Profiles"]
    assert (root / "Utilities/linux/targets/stm32/resources/NPU/STM32N6xx/stm32n6.mpool").is_file()
    loader = root / "scripts" / "N6_scripts" / "n6_loader.py"
    cfg = loader.parent / "config_n6l.json"
    out = subprocess.run(
        [sys.executable, str(loader), "--n6-loader-config", str(cfg)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0 and "would flash" in out.stdout
    assert "config_n6l.json" in (loader.parent / "n6_loader.log").read_text()


def test_validate_uses_valinput_files(
    tmp_path: Path,
    installs: dict[str, Path],
    models: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = np.linspace(-1, 1, 4 * 13, dtype=np.float32).reshape(4, 1, 13)
    np.save(tmp_path / "obs.npy", data)
    assert (
        _run(
            installs["2.2.0"],
            tmp_path,
            "validate",
            "-m",
            str(models["mlp"]),
            "--target",
            "stm32h7",
            "-vi",
            str(tmp_path / "obs.npy"),
            monkeypatch=monkeypatch,
        )
        == 0
    )
    npz = np.load(tmp_path / "out" / "network_val_io.npz")
    assert npz["m_inputs_1"].shape == (4, 13) and npz["m_outputs_1"].shape == (4, 3)
    assert (
        f"loading file: {tmp_path / 'obs.npy'}"
        in (tmp_path / "out" / "network_validate_report.txt").read_text()
    )


def test_cinfo_buffers_form_a_valid_memory_plan(
    tmp_path: Path,
    installs: dict[str, Path],
    models: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _gen(tmp_path, installs, models, {}, monkeypatch, model="big") == 0
    doc = _cinfo(tmp_path)
    acts = [b for b in doc["buffers"] if not b["is_param"]]
    assert acts and all(b["epochs"]["start"] <= b["epochs"]["end"] for b in acts)
    for a in acts:
        for b in acts:
            if a is b or a["mpool_id"] != b["mpool_id"]:
                continue
            live = (
                a["epochs"]["start"] <= b["epochs"]["end"]
                and b["epochs"]["start"] <= a["epochs"]["end"]
            )
            apart = (
                a["offset_start"] + a["size_bytes"] <= b["offset_start"]
                or b["offset_start"] + b["size_bytes"] <= a["offset_start"]
            )
            assert not live or apart, (a["name"], b["name"])
    pools = {p["id"]: p for p in doc["memory_pools"]}
    used = sum(
        p["used_size_bytes"]
        for p in pools.values()
        if p["rights"] == "ACC_WRITE" and not p["subpools"]
    )
    assert used == doc["memory_footprint"]["activations"]
    for b in acts:
        assert b["offset_start"] + b["size_bytes"] <= pools[b["mpool_id"]]["used_size_bytes"]


def test_console_output_looks_like_the_tool(
    tmp_path: Path, installs: dict[str, Path], models: dict[str, Path]
) -> None:
    env = {k: v for k, v in os.environ.items() if k != ENV}
    out = subprocess.run(
        [
            str(installs["4.0.1"]),
            "generate",
            "-m",
            str(models["small"]),
            "--target",
            "stm32n6",
            "--st-neural-art",
            "-o",
            str(tmp_path / "o"),
            "-w",
            str(tmp_path / "w"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert out.returncode == 0
    lines = out.stdout.splitlines()
    assert lines[0] == "ST Edge AI Core v4.0.1-20581 7ed50de05"
    assert " >>>> EXECUTING NEURAL ART COMPILER" in lines
    assert " Exec/report summary (generate)" in lines and " Epochs details" in lines
    assert re.fullmatch(r"elapsed time \(GENERATE\): \d+\.\d{3}s", lines[-1])
    assert re.search(r"^PASS: +100%\|█+\| \d+/\d+ ", out.stderr, re.MULTILINE)
    assert (tmp_path / "w" / "neural_art__network" / "c_info.json").is_file()


def test_faults_can_target_one_command(
    tmp_path: Path,
    installs: dict[str, Path],
    models: dict[str, Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    faults = {
        "*": {
            "error": "board lost",
            "error_code": "E801",
            "error_kind": "HwIOError",
            "commands": ["validate"],
        }
    }
    assert _gen(tmp_path / "g", installs, models, faults, monkeypatch) == 0
    capsys.readouterr()
    args = ["validate", "-m", str(models["mlp"]), "--target", "stm32h7"]
    assert (
        _run(installs["4.0.1"], tmp_path / "v", *args, faults=faults, monkeypatch=monkeypatch) == 1
    )
    assert "E801(HwIOError): board lost" in capsys.readouterr().out
    # a message that already is a tool error line is printed as it is
    whole = {"error": "INTERNAL ERROR: Transpose on batch not supported", "exit_code": 4}
    assert _gen(tmp_path / "w", installs, models, whole, monkeypatch) == 4
    out = capsys.readouterr().out
    assert "INTERNAL ERROR: Transpose on batch not supported" in out and "E103" not in out
