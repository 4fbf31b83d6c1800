"""Output layouts that real N6 folders hold: AI Studio c_info names, epoch-controller blobs,
a Developer Cloud console beside its own report, the validate run's front-end summary, the
2.0.0 user I/O pools; and what the text reports alone say about epochs.

Each class is shown on the real files of ../shared that hold it and on minimal files written
here from real lines (where ../shared has no folder with the layout, the file says so).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import built_run, validate_run

from pytest_stedge.errors import ReportParseError
from pytest_stedge.parsers import parse_path
from pytest_stedge.result import flat_metrics

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
SAMPLES = SHARED / "stedgeai-samples"
CASES = SHARED / "real-cases"
MICRO = CASES / "n6-micro-convs-4flows"

# --------------------------------------------------------------------- epochs from the text

# (total, hw, ec, sw, hybrid, ec_blobs or None), written by hand from each report's
# "Epochs details": the 2.x list and counts line, the 3.x/4.x summary lines ("pure hardware
# (HW or EC) epochs 95 (implemented in 10 epoch controller blobs)") and their boxed table.
TEXT_EPOCHS = {
    "stedgeai-samples/n6-v2.0.0-xcubeai10.0-generate-tinyyolo-EC/network_generate_report.txt": (
        21, 0, 20, 1, 0, None,
    ),
    "stedgeai-samples/n6-v2.1.0-xcubeai10.1-mobilenetv2/network_generate_report.txt": (
        56, 55, 0, 1, 0, None,
    ),
    "stedgeai-samples/n6-v2.2.0-xcubeai10.2-generate-many-sw-epochs/network_generate_report.txt": (
        95, 68, 0, 26, 1, None,
    ),
    "real-cases/n6-mobilenetv2-224-onnx-irv/rev-B-ir9/2.2.0-cubemx/mobilenet_v2_224.txt": (
        58, 55, 0, 3, 0, None,
    ),
    "stedgeai-samples/n6-v3.0.0-mobilenetv2-cli/network_generate_report.txt": (56, 55, 0, 1, 0, 0),
    "stedgeai-samples/n6-v4.0.0-generate-npu-conv2d-default-profile/network_generate_report.txt": (
        18, 18, 0, 0, 0, 0,
    ),
    "real-cases/n6-micro-convs-4flows/conv2d_32f_7x7/4.0.0-devcloud/conv2d_32f_7x7_report.txt": (
        5, 5, 0, 0, 0, 0,
    ),
    "real-cases/n6-micro-convs-4flows/conv2d_32f_7x7/4.0.0-devcloud/"
    "conv2d_32f_7x7_epochController_report.txt": (5, 0, 5, 0, 0, 1),
    "real-cases/n6-mobilenetv2-224-onnx-irv/rev-A-ir10/4.0.1-aistudio/mobilenet_v2_224.txt": (
        58, 0, 55, 3, 0, 2,
    ),
    "real-cases/n6-yolo-micro-onnx/yolov8n_micro_224/4.0.1-aistudio/yolov8n_micro_224.txt": (
        108, 0, 95, 5, 8, 10,
    ),
    "real-cases/n6-yolo-micro-onnx/yolov11n_micro_224/4.0.1-aistudio/yolov11n_micro_224.txt": (
        151, 0, 129, 10, 12, 14,
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(TEXT_EPOCHS))
def test_the_hw_ec_split_the_text_report_alone_states(shared_dir: Path, name: str) -> None:
    """c_info outranks the text in a folder: read alone, the text must give the same split."""
    epochs = built_run(SHARED / name)["epochs"]
    expected = TEXT_EPOCHS[name]
    assert tuple(epochs[k] for k in ("total", "hw", "ec", "sw", "hybrid")) == expected[:5]
    assert epochs.get("ec_blobs") == expected[5]


@pytest.mark.parametrize(
    ("name", "ops"),
    [
        (
            "stedgeai-samples/n6-v2.2.0-xcubeai10.2-generate-many-sw-epochs/network_generate_report.txt",
            ["DequantizeLinear", "QuantizeLinear", "Transpose"],
        ),
        (
            "real-cases/n6-yolo-micro-onnx/yolov8n_micro_224/4.0.1-aistudio/yolov8n_micro_224.txt",
            ["Concat", "DepthToSpace", "DequantizeLinear", "QuantizeLinear", "Softmax", "Sub",
             "Transpose"],
        ),
    ],
)  # fmt: skip
def test_software_ops_the_text_report_alone_names(shared_dir: Path, name: str, ops: list[str]) -> None:
    result = built_run(SHARED / name)
    assert result["software_ops"] == ops
    hardware = [e for e in result["epochs"]["list"] if e["kind"] == "hw"]
    assert all(e["ops"] == [] for e in hardware)  # the 2.x list names SW operators only


def test_ec_ranges_stay_blobs_and_are_never_counted_as_epochs(shared_dir: Path) -> None:
    # yolov8n: 10 EC rows ("epochs 1 -> 51" ... "<no executed epochs>") whose id ranges add up
    # to 110, while the report counts 95 HW/EC epochs: the counts come from its summary lines
    result = built_run(CASES / "n6-yolo-micro-onnx/yolov8n_micro_224/4.0.1-aistudio")
    listing = result["epochs"]["list"]
    ranges = [e for e in listing if "to" in e]
    assert sum(e["to"] - e["id"] + 1 for e in ranges) == 110
    assert result["epochs"]["ec"] == 95 and result["epochs"]["ec_blobs"] == 10


# ------------------------------------------------------- 3.x/4.x c_info with EC blob nodes


def _blob_c_info(seed: dict, version: str) -> dict:
    """The layout the issue reports for a 3.0.0 run (194 epochs, 192 EC in 3 blobs, 2 SW):
    one NODE_EC node per blob, epoch nodes only for the software epochs."""
    doc = json.loads(json.dumps(seed))
    doc["environment"]["tools"][0]["version"] = version
    doc["ec_blobs_info"] = []  # as every real file in ../shared has it

    def node(nid: int, name: str, mapping: str, ops: list[str]) -> dict:
        subs = [{"id": nid * 100 + k, "name": f"{op}_{nid}", "type": op} for k, op in enumerate(ops)]
        return {"id": nid, "name": name, "mapping": mapping, "type": "", "subgraph_nodes": subs}

    doc["graphs"][0]["nodes"] = [
        node(1, "epoch_0", "NODE_NO_X", ["Param"]),
        node(2, "_ec_blob_1", "NODE_EC", ["Conv", "Conv", "Add"]),
        node(3, "epoch_65", "NODE_SW", ["Softmax"]),
        node(4, "_ec_blob_66", "NODE_EC", ["Conv"]),
        node(5, "_ec_blob_130", "NODE_EC", ["Conv", "Relu"]),
        node(6, "epoch_194", "NODE_SW", ["DequantizeLinear"]),
        node(7, "epoch_195", "NODE_NO_X", ["Return"]),
    ]
    return doc


BLOB_REPORT = """ST Edge AI Core v3.0.0-20426 123672867
Created date          : 2026-01-10 10:00:00
Parameters            : generate --target stm32n6 --st-neural-art default -m model.onnx

Epochs details
   ---------------------------------------------------------------------------------
Total number of epochs                             194
>> pure software (SW) epochs                         2
>> hybrid epochs (using both software and hardware)  0
>> pure hardware (HW or EC) epochs                 192  (implemented in 3 epoch controller blobs/meta epochs)
+--------------------+------+------------------+
| epoch ID           | Type | Details          |
+--------------------+------+------------------+
| epochs    1 -> 64  |  EC  |                  |
| epoch_65           |  SW  | Softmax          |
| epochs   66 -> 129 |  EC  |                  |
| epochs  130 -> 193 |  EC  |                  |
| epoch_194          |  SW  | DequantizeLinear |
+--------------------+------+------------------+
====================================================================================
"""


def test_a_3x_c_info_blob_node_is_not_an_epoch(shared_dir: Path, tmp_path: Path) -> None:
    seed = json.loads((SAMPLES / "n6-v3.0.0-mobilenetv2-cli/network_c_info.json").read_text())
    path = tmp_path / "network_c_info.json"
    path.write_text(json.dumps(_blob_c_info(seed, "3.0.0-20426 123672867")))
    epochs = parse_path(path)["epochs"]
    # the file does not say how many epochs each blob runs: unknown, never 3 or 0
    assert "total" not in epochs and "ec" not in epochs
    assert (epochs["ec_blobs"], epochs["sw"], epochs["hw"], epochs["hybrid"]) == (3, 2, 0, 0)
    assert [e.get("blob") for e in epochs["list"] if e["kind"] == "ec"] == [
        "_ec_blob_1",
        "_ec_blob_66",
        "_ec_blob_130",
    ]


def test_a_folder_counts_ec_epochs_from_the_report_table(shared_dir: Path, tmp_path: Path) -> None:
    seed = json.loads((SAMPLES / "n6-v3.0.0-mobilenetv2-cli/network_c_info.json").read_text())
    (tmp_path / "network_c_info.json").write_text(
        json.dumps(_blob_c_info(seed, "3.0.0-20426 123672867"))
    )
    (tmp_path / "network_generate_report.txt").write_text(BLOB_REPORT)
    result = parse_path(tmp_path)
    epochs = result["epochs"]
    assert tuple(epochs[k] for k in ("total", "hw", "ec", "sw", "hybrid")) == (194, 0, 192, 2, 0)
    assert epochs["ec_blobs"] == 3
    assert flat_metrics(result)["epochs_ec"] == 192
    # weights/activations still come from the c_info
    assert result["memory"]["weights_bytes"] == 212_609


def test_a_2x_c_info_keeps_one_ec_node_per_epoch(shared_dir: Path) -> None:
    # 2.0.0: epoch_1 .. epoch_21 are NODE_EC ("Epoch Controller _ec_blob_1"), one per epoch
    epochs = parse_path(
        SAMPLES
        / "n6-v2.0.0-xcubeai10.0-generate-tinyyolo-EC/network_tiny_yolo_v2_224_int8.tflite_c_info.json"
    )["epochs"]
    assert (epochs["total"], epochs["ec"], epochs["sw"]) == (21, 20, 1)
    assert "ec_blobs" not in epochs


# ----------------------------------------------------------------- AI Studio c_info names


def test_ai_studio_c_info_names_are_read_by_folder_parsing(
    shared_dir: Path, tmp_path: Path
) -> None:
    """AI Studio names them <name>_<model>_c_info_generate.json / _c_info_analyze.json; the
    report beside prints rounded figures ("358.595 kB"), the c_info the exact ones."""
    run = CASES / "n6-mobilenetv2-qdq-3versions/2.2.0"
    stem = "network_test_mobilenet_v2_128_0.5_QDQ_quant"
    shutil.copy(run / "network_test_null_c_info.json", tmp_path / f"{stem}_c_info_generate.json")
    shutil.copy(
        run / "network_test_mobilenet_v2_128_0.5_QDQ_quant.onnx_c_info.json",
        tmp_path / f"{stem}_c_info_analyze.json",
    )
    shutil.copy(run / "network_test_generate_report.txt", tmp_path)
    result = parse_path(tmp_path)
    names = [Path(s).name for s in result["sources"]]
    assert names[0] == f"{stem}_c_info_generate.json"  # the generate c_info is the base
    assert f"{stem}_c_info_analyze.json" in names
    assert result["command"] == "generate"
    assert result["memory"]["weights_bytes"] == 367_201
    assert "precision" not in result["memory"]  # exact: from c_info, not the report


def test_an_analyze_c_info_is_an_analyze_result(shared_dir: Path, tmp_path: Path) -> None:
    # real analyze c_info files ("analyze --target stm32n6 ..." in tools[0].arguments)
    for path in (
        SAMPLES / "n6-v2.2.0-analyze-blazeface/network_c_info.json",
        SAMPLES / "n6-v2.0.0-xcubeai10.0-analyze-tinyyolo"
        / "network_1741323424369_tiny_yolo_v2_224_int8.tflite_c_info.json",
        CASES / "stm32-mnist-onnx-3runs/1.0.0-19899-cubemx-analyze-stm32h7"
        / "network_mnist_model-2_PerChannel_quant_random_1.onnx_c_info.json",
    ):
        assert parse_path(path)["command"] == "analyze", path
    doc = json.loads((SAMPLES / "n6-v2.2.0-analyze-blazeface/network_c_info.json").read_text())
    args = doc["environment"]["tools"][0]["arguments"]
    # an executable path before the command (a wrapper logging its whole argv)
    doc["environment"]["tools"][0]["arguments"] = "C:\\ST\\STEdgeAI\\2.2\\stedgeai.exe " + args
    wrapped = tmp_path / "network_c_info.json"
    wrapped.write_text(json.dumps(doc))
    assert parse_path(wrapped)["command"] == "analyze"
    # no arguments at all: AI Studio's file name says it
    doc["environment"]["tools"][0]["arguments"] = ""
    named = tmp_path / "network_model_c_info_analyze.json"
    named.write_text(json.dumps(doc))
    assert parse_path(named)["command"] == "analyze"
    plain = tmp_path / "other" / "network_c_info.json"
    plain.parent.mkdir()
    plain.write_text(json.dumps(doc))
    assert parse_path(plain)["command"] == "generate"  # nothing says otherwise


# -------------------------------------------------------------- model identity from c_info


def _case_models(case: Path) -> dict[str, str]:
    import hashlib

    return {
        hashlib.md5(p.read_bytes()).hexdigest(): p.name
        for p in case.rglob("*")
        if p.suffix in (".onnx", ".tflite") and "_OE_" not in p.name
    }


# (c_info, model name, model file) as the files state them; the hash is checked against
# the md5 of the model committed in the case (SOURCE.txt pairs them the same way)
MODEL_IDENTITY = [
    (
        "n6-blazeface-2profiles/2.2.0-profile-default-cli/analyze/network_c_info.json",
        "blazeface_front_128_quant_pc_ff_od_wider_face",
        "blazeface_front_128_quant_pc_ff_od_wider_face.tflite",
    ),
    (
        "n6-blazeface-2profiles/2.2.0-n6-allmems-O3-cubemx/network_model.tflite_c_info.json",
        "model",
        "model.tflite",  # CubeMX copied the tflite as model.tflite: same bytes
    ),
    (
        "n6-micro-convs-4flows/conv2d_32f_7x7/2.2.0-cubemx-target/network_c_info.json",
        "baseline_conv2d_32f_7x7_int8",
        "baseline_conv2d_32f_7x7_int8.tflite",
    ),
    (
        "stm32f4-mobilenetv2-2builds/2.1.0-20182-devcloud/network_c_info.json",
        "mobilenet_v2_0_35_128_fft_int8",
        "mobilenet_v2_0.35_128_fft_int8.tflite",
    ),
    (
        "stm32-mnist-onnx-3runs/1.0.0-19894-devcloud-stm32h7-split-weights/network_c_info.json",
        "mnist_model2_PerChannel_quant_random_1",
        "mnist_model-2_PerChannel_quant_random_1.onnx",
    ),
    (
        "n6-packetqc-tcn-qwen2/qwen2-qdq/4.0.0-host/network_c_info.json",
        "model_npu_qdq",
        "model_npu_qdq.onnx",
    ),
    ("stm32u3-yamnet-hsp/4.0.0-no-hsp/network_c_info.json", "yamnet_256_64x96_tl_int8_5_classes",
     "yamnet_256_64x96_tl_int8_5_classes.tflite"),
]  # fmt: skip


@pytest.mark.parametrize(("c_info", "name", "file"), MODEL_IDENTITY)
def test_model_name_file_and_hash_from_c_info(
    shared_dir: Path, c_info: str, name: str, file: str
) -> None:
    model = parse_path(CASES / c_info)["model"]
    assert (model["name"], model["file"]) == (name, file)
    models = _case_models(CASES / c_info.split("/")[0])
    digest = model["hash"].removeprefix("0x")
    assert digest in models, f"{model['hash']} is the md5 of no model in the case"
    assert model["type"] == file.rsplit(".", 1)[1]


# ------------------------------------------------ Developer Cloud console and its own report

CONSOLE = MICRO / "conv2d_32f_7x7/4.0.0-devcloud/conv2d_32f_7x7_report.txt"


def _own_report(console: list[str], *, sections: bool, service_dir: bool) -> str:
    """The report the console's run wrote (``Creating txt report file .../st_ai_output/
    network_generate_report.txt``): the tool's banner, header and the sections the console
    printed, taken from the console itself."""
    start = console.index("Compilation details")
    end = next(i for i, line in enumerate(console) if line.startswith(" Generated files"))
    body = console[start:end]
    if not sections:
        cut = next(i for i, line in enumerate(body) if "Requested memory size" in line)
        body = body[:cut]
    where = "/tmp/rootDir-45c31f94-8ad9-47bc-ab54-320bacfcbc70/STM32N6570-DK" if service_dir else "."
    head = [
        console[3],  # "ST Edge AI Core v4.0.0-20500 359356bb0"
        "Created date          : 2026-05-30 12:15:29",
        (
            f"Parameters            : generate --target stm32n6 --name network -m "
            f"{where}/baseline_conv2d_32f_7x7_int8.tflite --workspace {where}/.ai --output "
            f"{where}/st_ai_output"
        ),
        "",
    ]
    return "\n".join(head + body) + "\n"


@pytest.mark.parametrize(
    ("sections", "service_dir"), [(True, True), (False, True), (False, False)]
)
def test_a_dev_cloud_console_beside_its_own_report_is_one_run(
    shared_dir: Path, tmp_path: Path, sections: bool, service_dir: bool
) -> None:
    console = CONSOLE.read_text().splitlines()
    shutil.copy(CONSOLE, tmp_path / "conv2d_32f_7x7_console.txt")
    report = _own_report(console, sections=sections, service_dir=service_dir)
    if not sections:  # only the rounded "1.512 MB" total, as 3.x reports without the table
        report = "\n".join(line for line in report.splitlines() if not line.startswith("\t"))
    (tmp_path / "network_generate_report.txt").write_text(report)
    result = built_run(tmp_path)  # the console's generate run, beside its own report
    assert result["command"] == "generate"
    memory = result["memory"]
    # exact figures of the console's summary, whatever the report rounded
    assert (memory["weights_bytes"], memory["activations_bytes"]) == (4_833, 1_585_152)
    assert "precision" not in memory
    assert result["epochs"]["total"] == 5 and len(result["sources"]) == 2


def test_two_dev_cloud_runs_in_one_folder_are_still_refused(
    shared_dir: Path, tmp_path: Path
) -> None:
    # the epoch-controller run's own report beside the plain run's console: other figures
    ec_console = (CONSOLE.parent / "conv2d_32f_7x7_epochController_report.txt").read_text()
    report = _own_report(ec_console.splitlines(), sections=True, service_dir=False)
    shutil.copy(CONSOLE, tmp_path / "conv2d_32f_7x7_console.txt")
    (tmp_path / "network_generate_report.txt").write_text(report)
    with pytest.raises(ReportParseError, match="2 different generate runs"):
        parse_path(tmp_path)


# ------------------------------------------------- the validate run's front-end summary


@pytest.mark.parametrize(
    ("run", "weights", "activations", "macc"),
    [
        # AI Studio 4.0.0: generate summary 225 B / 143,360 B / 458,752; the validate
        # summary prints 224 B / 133,384 B / 524,320 for the validation front end
        (MICRO / "conv2d_1x1/4.0.0-aistudio/conv2d_1x1.txt", 225, 143_360, 458_752),
        # Dev Cloud 2.2.0: 497 B / 12,304 B and "macc : 0"; validate: 496 B / 79,056 B / 1,835,024
        (MICRO / "conv2d_16f_3x3/2.2.0-devcloud/conv2d_16f_3x3.txt", 497, 12_304, None),
        # CubeMX 2.2.0 log: 4,137,361 B / 2,107,392 B; validate: 3,552,224 B / 1,220,520 B
        (
            CASES / "n6-mobilenetv2-224-onnx-irv/rev-B-ir9/2.2.0-cubemx/mobilenet_v2_224.txt",
            4_137_361,
            2_107_392,
            None,
        ),
    ],
    ids=["aistudio-4.0.0", "devcloud-2.2.0", "cubemx-2.2.0"],
)
def test_the_validate_summary_never_gives_the_generate_figures(
    shared_dir: Path, run: Path, weights: int, activations: int, macc: int | None
) -> None:
    # Two runs (a generate and the validate of an NPU model): the figures are the
    # generate's; the validate's front-end summary gives none, in neither run.
    result = built_run(run)
    assert result["command"] == "generate"
    assert result["memory"]["weights_bytes"] == weights
    assert result["memory"]["activations_bytes"] == activations
    assert result.get("macc") == macc
    validated = validate_run(run)
    assert validated["command"] == "validate"
    assert "weights_bytes" not in validated.get("memory", {})
    assert "epochs" not in validated


def test_an_mcu_validate_report_keeps_its_summary_figures(shared_dir: Path) -> None:
    # on MCU targets the validate summary is the deployed model (21,004 B in generate too)
    result = parse_path(SAMPLES / "stm32-v2.2.0-validate-host-mlp/network_validate_report.txt")
    assert (result["memory"]["weights_bytes"], result["memory"]["activations_bytes"]) == (
        21_004,
        512,
    )


NPU_VALIDATE_ONLY = """ST Edge AI Core v2.2.0-20266 2adc00962
 Exec/report summary (validate)
 ---------------------------------------------------------------------------
 model file         :   /tmp/baseline_conv2d_16f_3x3_int8.tflite
 type               :   tflite
 target/series      :   stm32n6npu
 model_hash         :   0x5dcb483041d313e5ae021646dafb5b48
 macc               :   1,835,024
 weights (ro)       :   496 B (496 B) (1 segment) / -1,296(-72.3%) vs float model
 activations (rw)   :   79,056 B (77.20 KiB) (1 segment) *
 ---------------------------------------------------------------------------
"""


def test_an_npu_validate_summary_alone_gives_no_memory_figure(tmp_path: Path) -> None:
    path = tmp_path / "network_validate_report.txt"
    path.write_text(NPU_VALIDATE_ONLY)
    result = parse_path(path)
    assert "memory" not in result and "macc" not in result  # unknown, not the front end's
    assert result["model"]["hash"] == "0x5dcb483041d313e5ae021646dafb5b48"


# ----------------------------------------------------------------- 2.0.0 user I/O pools

TINYYOLO = SAMPLES / "n6-v2.0.0-xcubeai10.0-generate-tinyyolo-EC"


def test_activations_exclude_user_io_as_c_info_and_report_json_do(shared_dir: Path) -> None:
    text = parse_path(TINYYOLO / "network_generate_report.txt")
    c_info = json.loads((TINYYOLO / "network_tiny_yolo_v2_224_int8.tflite_c_info.json").read_text())
    report_json = json.loads(
        (TINYYOLO / "network_tiny_yolo_v2_224_int8.tflite_report.json").read_text()
    )
    footprint = c_info["memory_footprint"]
    assert text["memory"]["activations_bytes"] == footprint["activations"] == 351_232
    assert report_json["ram_size"] == 351_232
    # the I/O the section table lists apart ("io ... 156,408") is c_info's io, not activations
    io_row = text["memory"]["sections"]["modules"]["io"]["bss"]
    assert io_row == sum(footprint["io"]) == 156_408
    folder = parse_path(TINYYOLO)
    assert folder["memory"]["io_bytes"] == [150_528, 5_880]
    assert folder["memory"]["activations_bytes"] == 351_232


def test_a_total_that_counts_user_io_is_not_the_activations(
    shared_dir: Path, tmp_path: Path
) -> None:
    """The 2.0.0 layout with user I/O pools: the memory-usage total counts them (351,232 +
    156,408 = 507,640 B = 495.742 kB), the section table does not."""
    lines = (TINYYOLO / "network_generate_report.txt").read_text().splitlines()
    lines = [
        line.replace("activations:    343.000 kB", "activations:    495.742 kB")
        if line.startswith("Total:")
        else line
        for line in lines
    ]
    path = tmp_path / "network_generate_report.txt"
    path.write_text("\n".join(lines) + "\n")
    memory = parse_path(path)["memory"]
    assert memory["activations_bytes"] == 351_232


def test_user_allocated_pools_are_marked(shared_dir: Path) -> None:
    result = parse_path(
        SAMPLES / "stm32f4-v2.1.0-cubemx-generate-no-io-alloc-O-ram"
        / "network_mobilenet_v2_0.35_128_fft_int8.tflite_c_info.json"
    )
    user = {p["name"]: p["used_bytes"] for p in result["memory"]["pools"] if p.get("user_allocated")}
    assert user == {
        "serving_default_input_10_output_array_pool": 49_152,
        "conversion_70_output_array_pool": 4,
    }
    assert result["memory"]["activations_bytes"] == 266_292  # without them
    assert result["memory"]["io_bytes"] == [49_152, 4]
