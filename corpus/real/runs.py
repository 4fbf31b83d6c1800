"""Which public runs of ../shared/real-cases become which corpus case (the table record.py
reads). Each entry names the files of one run; record.py parses them with pytest-stedge's
own parsers and takes provenance from the SOURCE.txt beside them.

A case holds one network; a variant one flow (front end, profile, board). Two runs are
compared only when the same model and the same stated options made them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MICRO = "n6-micro-convs-4flows"
# every micro-benchmark flow generates, then validates on a board: a log whose validation
# never answered (a board read timeout) is still that stage, one that failed
BOARD = "validate-target"
MICRO_MODELS = {
    "conv2d_16f_3x3": ("conv 16 filters 3x3", "conv2d_16f_3x3.txt"),
    "conv2d_1x1": ("conv 1x1", "conv2d_1x1_report.txt"),
    "conv2d_32f_5x5": ("conv 32 filters 5x5", "conv2d_32f_5x5.txt"),
    "conv2d_32f_7x7": ("conv 32 filters 7x7", "conv2d_32f_7x7.txt"),
    "conv2d_3x3": ("conv 3x3", "conv2d_3x3.txt"),
    "conv2d_64f_3x3": ("conv 64 filters 3x3", "conv2d_64f_3x3.txt"),
    "conv2d_pool": ("conv + max pool", "conv2d_poll.txt"),
    "depthwise_3x3": ("depthwise conv 3x3", "depthwise_3x3.txt"),
}


@dataclass(frozen=True)
class Run:
    """One recorded run: its files (relative to real-cases/, the first states the command)."""

    variant: str | None
    version: str
    files: tuple[str, ...]
    flow: str
    stage: str | None = None  # default: what the outputs say (generate, analyze, validate-*)


@dataclass(frozen=True)
class RealCase:
    """One corpus case made of public runs."""

    name: str
    shared: str  # the real-cases folder
    description: str
    why: str
    target: str
    markers: tuple[str, ...]
    runs: tuple[Run, ...]
    model: str | None = None  # the model file in real-cases/, when it is public
    model_md5: str | None = None  # when the model is not public: the md5 the tool printed
    model_file: str | None = None
    model_source: str | None = None  # https URL where the model (or its runs) is published
    variants: dict[str, str] = field(default_factory=dict)  # variant -> description
    baseline: dict[str, str] = field(default_factory=dict)  # [baseline] bands
    root: str = "real-cases"  # the ../shared folder holding ``shared``
    folder: str = ""  # where under corpus/real the case is written (default: its name)


def _micro(model: str) -> RealCase:
    what, devcloud_2 = MICRO_MODELS[model]
    base = f"{MICRO}/{model}"
    report = f"{model.replace('conv2d_pool', 'conv2d_poll')}"
    runs = [
        Run("devcloud", "2.2.0", (f"{base}/2.2.0-devcloud/{devcloud_2}",),
            "ST Edge AI Developer Cloud: generate, then validate on a remote STM32N6570-DK",
            BOARD),
        Run("devcloud", "4.0.0", (f"{base}/4.0.0-devcloud/{report}_report.txt",),
            "ST Edge AI Developer Cloud: generate, then validate on a remote STM32N6570-DK",
            BOARD),
        Run("cubemx", "2.2.0", (
            f"{base}/2.2.0-cubemx-target/network_validate_report.txt",
            f"{base}/2.2.0-cubemx-target/network_c_info.json",
            f"{base}/2.2.0-cubemx-target/network_generate_report.txt",
            f"{base}/2.2.0-cubemx-target/network_val_io.npz",
        ), "X-CUBE-AI 10.2.0 in STM32CubeMX: generate, then validate on an STM32N6 board over serial",
            BOARD),
        Run("aistudio", "4.0.0", (f"{base}/4.0.0-aistudio/{report}.txt",),
            "STM32Cube AI Studio: generate, then validate on a NUCLEO-N657X0-Q", BOARD),
    ]
    variants = {
        "devcloud": "ST Edge AI Developer Cloud, the same flow in 2.2.0 and 4.0.0",
        "cubemx": "STM32CubeMX, profile n6-extflash, validated on a board",
        "aistudio": "STM32Cube AI Studio, validated on a NUCLEO-N657X0-Q",
    }
    if model == "conv2d_32f_7x7":
        runs.append(Run("devcloud-ec", "4.0.0",
                        (f"{base}/4.0.0-devcloud/conv2d_32f_7x7_epochController_report.txt",),
                        "ST Edge AI Developer Cloud with the epoch-controller option", BOARD))
        variants["devcloud-ec"] = "ST Edge AI Developer Cloud, epoch controller on"
    return RealCase(
        name=f"n6-micro-{model.replace('_', '-')}",
        shared=MICRO,
        description=f"int8 TFLite micro-benchmark: one {what} on a 64x64x3 input (STM32N6 NPU)",
        why="the same model file compiled and validated on boards by 2.2.0 and 4.0.0",
        target="stm32n6",
        markers=("real", "n6"),
        runs=tuple(runs),
        model=f"{base}/baseline_{model}_int8.tflite",
        variants=variants,
        # time per inference on a remote board moves by about 1% between runs
        baseline={"duration_ms": "+10%"},
    )


MBV2_QDQ = "n6-mobilenetv2-qdq-3versions"
BLAZE = "n6-blazeface-2profiles"
IRV = "n6-mobilenetv2-224-onnx-irv"
YOLO = "n6-yolo-micro-onnx"
PACKET = "n6-packetqc-tcn-qwen2"
MLP = "stm32-mlp-validate-host"
MNIST = "stm32-mnist-onnx-3runs"
F4 = "stm32f4-mobilenetv2-2builds"
H7 = "stm32h7-policy-3regens"
U3 = "stm32u3-yamnet-hsp"

CASES: tuple[RealCase, ...] = (
    *(_micro(m) for m in MICRO_MODELS),
    RealCase(
        name="n6-mobilenetv2-128-qdq",
        shared=MBV2_QDQ,
        description="MobileNetV2 0.5 128x128, 2 classes, QDQ int8 ONNX (STM32N6 NPU)",
        why="one model compiled by 2.1.0, 2.2.0 and 3.0.0 (the model file itself was never published)",
        target="stm32n6",
        markers=("real", "n6"),
        model_md5="dae521fe100a352ff90af6e09847bc7f",
        model_file="mobilenet_v2_128_0.5_QDQ_quant.onnx",
        model_source="https://github.com/AlexGraefe/STM32N6Example/tree/8becbb20eb0643f4fff7197f44ec6bf554ae4e9b",
        runs=(
            Run(None, "2.1.0", (f"{MBV2_QDQ}/2.1.0/network_generate_report.txt",
                                f"{MBV2_QDQ}/2.1.0/network_null_c_info.json"),
                "X-CUBE-AI 10.1.0 in STM32CubeMX, profile n6-allmems-O3"),
            Run(None, "2.2.0", (f"{MBV2_QDQ}/2.2.0/network_test_generate_report.txt",
                                f"{MBV2_QDQ}/2.2.0/network_test_null_c_info.json"),
                "X-CUBE-AI 10.2.0 in STM32CubeMX, profile n6-allmems-O3"),
            Run(None, "3.0.0", (f"{MBV2_QDQ}/3.0.0/network_generate_report.txt",
                                f"{MBV2_QDQ}/3.0.0/network_c_info.json"),
                "stedgeai command line, the default Neural-ART profile"),
        ),
    ),
    RealCase(
        name="n6-mobilenetv2-224-int8",
        shared=IRV,
        description="MobileNetV2 224x224 int8 QDQ ONNX (STM32N6 NPU), validated on boards",
        why="one graph compiled and validated by 2.2.0 (file ir_version 9) and 4.0.1 (ir_version 10)",
        target="stm32n6",
        markers=("real", "n6"),
        model=f"{IRV}/rev-B-ir9/mobilenet_v2_224_int8.onnx",
        runs=(
            Run(None, "2.2.0", (f"{IRV}/rev-B-ir9/2.2.0-cubemx/mobilenet_v2_224.txt",),
                "X-CUBE-AI 10.2.0 in STM32CubeMX, profile n6-extflash, validated over serial"),
            Run(None, "4.0.1", (f"{IRV}/rev-A-ir10/4.0.1-aistudio/mobilenet_v2_224.txt",),
                "STM32Cube AI Studio, a user profile, validated on a NUCLEO-N657X0-Q"),
        ),
    ),
    RealCase(
        name="n6-yolov8n-micro-224",
        shared=YOLO,
        description="YOLOv8n micro 224 int8 QDQ ONNX detector (STM32N6 NPU), validated on a board",
        why="hybrid and software epochs of a detector head (8 hybrid, 5 SW in 4.0.1)",
        target="stm32n6",
        markers=("real", "n6"),
        model=f"{YOLO}/yolov8n_micro_224/yolov8n_micro_224_int8.onnx",
        runs=(Run(None, "4.0.1", (f"{YOLO}/yolov8n_micro_224/4.0.1-aistudio/yolov8n_micro_224.txt",),
                  "STM32Cube AI Studio, validated on a NUCLEO-N657X0-Q"),),
    ),
    RealCase(
        name="n6-yolo11n-micro-224",
        shared=YOLO,
        description="YOLO11n micro 224 int8 QDQ ONNX detector (STM32N6 NPU), validated on a board",
        why="hybrid and software epochs of a detector head (12 hybrid, 10 SW in 4.0.1)",
        target="stm32n6",
        markers=("real", "n6"),
        model=f"{YOLO}/yolov11n_micro_224/yolov11n_micro_224_int8.onnx",
        runs=(Run(None, "4.0.1", (f"{YOLO}/yolov11n_micro_224/4.0.1-aistudio/yolov11n_micro_224.txt",),
                  "STM32Cube AI Studio, validated on a NUCLEO-N657X0-Q"),),
    ),
    RealCase(
        name="n6-blazeface-128",
        shared=BLAZE,
        description="ST BlazeFace 128 int8 TFLite face detector (STM32N6 NPU)",
        why="one model and version under two Neural-ART profiles: 85 epochs (27 SW) vs 95 (26 SW)",
        target="stm32n6",
        markers=("real", "n6"),
        model=f"{BLAZE}/blazeface_front_128_quant_pc_ff_od_wider_face.tflite",
        variants={
            "profile-default": "stedgeai command line on Windows, profile profile-default",
            "allmems-o3": "X-CUBE-AI 10.2.0 in STM32CubeMX on Linux, profile n6-allmems-O3",
        },
        runs=(
            Run("profile-default", "2.2.0", (
                f"{BLAZE}/2.2.0-profile-default-cli/generate-2025-08-25/network_generate_report.txt",
                f"{BLAZE}/2.2.0-profile-default-cli/generate-2025-08-25/network_c_info.json",
            ), "stedgeai command line (Windows), profile-default"),
            Run("allmems-o3", "2.2.0", (
                f"{BLAZE}/2.2.0-n6-allmems-O3-cubemx/network_generate_report.txt",
                f"{BLAZE}/2.2.0-n6-allmems-O3-cubemx/network_model.tflite_c_info.json",
            ), "X-CUBE-AI 10.2.0 in STM32CubeMX (Linux), n6-allmems-O3"),
        ),
    ),
    RealCase(
        name="n6-mobilenetv1-025-224",
        shared="n6-mobilenetv1-cubemx",
        description="MobileNetV1 0.25 224x224 int8 TFLite (STM32N6 NPU)",
        why="a single-version baseline of a standard CNN (33 epochs, 2 SW)",
        target="stm32n6",
        markers=("real", "n6"),
        model="n6-mobilenetv1-cubemx/mobilenetv1_a025_224_fft_int8.tflite",
        runs=(Run(None, "2.2.0", (
            "n6-mobilenetv1-cubemx/2.2.0-cubemx/network_generate_report.txt",
            "n6-mobilenetv1-cubemx/2.2.0-cubemx/network_mobilenetv1_a025_224_fft_int8.tflite_c_info.json",
        ), "X-CUBE-AI 10.2.0 in STM32CubeMX, profile n6-allmems-O3"),),
    ),
    RealCase(
        name="n6-m55-tcn-text",
        shared=PACKET,
        description="TCN text model, int8 ONNX, STM32N6 without the NPU (Cortex-M55 software path)",
        why="the software-only N6 path of 4.0.0: per-layer figures without Neural-ART",
        target="stm32n6",
        markers=("real", "n6"),
        model=f"{PACKET}/tcn/model_npu_int8.onnx",
        runs=(
            Run(None, "4.0.0", (f"{PACKET}/tcn/4.0.0/network_generate_report.txt",
                                f"{PACKET}/tcn/4.0.0/network_c_info.json"),
                "stedgeai command line, --c-api st-ai"),
        ),
    ),
    RealCase(
        name="n6-m55-qwen2-decoder",
        shared=PACKET,
        description="2-layer Qwen2-style decoder, QDQ int8 ONNX, STM32N6 Cortex-M55 software path",
        why="a transformer graph (GatherND, Softmax, MatMul) through 4.0.0 without the NPU",
        target="stm32n6",
        markers=("real", "n6"),
        model=f"{PACKET}/qwen2-qdq/model_npu_qdq.onnx",
        runs=(Run(None, "4.0.0", (f"{PACKET}/qwen2-qdq/4.0.0-host/network_generate_report.txt",
                                  f"{PACKET}/qwen2-qdq/4.0.0-host/network_c_info.json"),
                  "stedgeai command line, --mode host --c-api st-ai"),),
    ),
    RealCase(
        name="stm32-mlp-policy-12d",
        shared=MLP,
        description="float ONNX MLP policy (12-d), generic STM32, host validation with user data",
        why="host validation against the author's reference vectors, reproducible without a board",
        target="stm32",
        markers=("real", "mcu"),
        model=f"{MLP}/actor_joint_12d_c860k/actor_joint_12d_c860k.onnx",
        runs=(
            Run(None, "2.2.0", (f"{MLP}/actor_joint_12d_c860k/2.2.0/generate/network_generate_report.txt",
                                f"{MLP}/actor_joint_12d_c860k/2.2.0/generate/network_c_info.json"),
                "stedgeai command line (Linux)"),
            Run(None, "2.2.0", (f"{MLP}/actor_joint_12d_c860k/2.2.0/validate-host/network_validate_report.txt",
                                f"{MLP}/actor_joint_12d_c860k/2.2.0/validate-host/network_c_info.json"),
                "stedgeai command line (Linux), validate --mode host with csv references"),
        ),
    ),
    RealCase(
        name="stm32f4-mobilenetv2-035-128",
        shared=F4,
        description="ST model-zoo person MobileNetV2 0.35 128x128 int8 TFLite on an STM32F4",
        why="two 2.1.0 builds with different options: activations 339,796 B (2 pools) vs 266,292 B",
        target="stm32f4",
        markers=("real", "mcu"),
        model=f"{F4}/mobilenet_v2_0.35_128_fft_int8.tflite",
        variants={
            "devcloud-balanced": "Developer Cloud 2.1.0-20182, balanced, board memory pools",
            "cubemx-ram": "X-CUBE-AI 10.1.0 2.1.0-20194, -O ram, no I/O allocation",
        },
        runs=(
            Run("devcloud-balanced", "2.1.0", (f"{F4}/2.1.0-20182-devcloud/network_generate_report.txt",
                                               f"{F4}/2.1.0-20182-devcloud/network_c_info.json"),
                "ST Edge AI Developer Cloud 2.1.0-20182"),
            Run("cubemx-ram", "2.1.0", (f"{F4}/2.1.0-20194-cubemx/network_generate_report.txt",),
                "X-CUBE-AI 10.1.0 in STM32CubeMX"),
        ),
    ),
    RealCase(
        name="stm32-mnist-cnn",
        shared=MNIST,
        description="MNIST CNN, per-channel int8 QDQ ONNX, STM32F4 and STM32H7 (ST Edge AI Core 1.0)",
        why="the oldest ST Edge AI Core format; the same model on two targets",
        target="stm32f4",
        markers=("real", "mcu"),
        model=f"{MNIST}/mnist_model-2_PerChannel_quant_random_1.onnx",
        variants={
            "stm32f4": "Developer Cloud, --target stm32f4",
            "stm32h7-split": "Developer Cloud board project, --target stm32h7 --split-weights",
        },
        runs=(
            Run("stm32f4", "1.0.0", (f"{MNIST}/1.0.0-19894-devcloud-stm32f4/network_generate_report.txt",),
                "ST Edge AI Developer Cloud 1.0.0-19894"),
            Run("stm32h7-split", "1.0.0", (
                f"{MNIST}/1.0.0-19894-devcloud-stm32h7-split-weights/network_generate_report.txt",
                f"{MNIST}/1.0.0-19894-devcloud-stm32h7-split-weights/network_c_info.json",
            ), "ST Edge AI Developer Cloud 1.0.0-19894 board project"),
        ),
    ),
    RealCase(
        name="stm32h7-rl-policy",
        shared=H7,
        description="float ONNX RL policy (2 inputs) on an STM32H7",
        why="the same version and options on three dates give identical figures (determinism)",
        target="stm32h7",
        markers=("real", "mcu"),
        model=f"{H7}/policy.onnx",
        runs=(Run(None, "2.2.0", (f"{H7}/2.2.0/run-2026-07-18/network_generate_report.txt",
                                  f"{H7}/2.2.0/run-2026-07-18/network_policy.onnx_c_info.json"),
                  "X-CUBE-AI 10.2.0 in STM32CubeMX"),),
    ),
    RealCase(
        name="stm32u3-yamnet-256",
        shared=U3,
        description="YAMNet-256 5-class int8 TFLite (ST) on an STM32U3, with and without the HSP",
        why="the hardware signal processor option: activations 101,440 B with --hsp 4096, 158,720 B without",
        target="stm32u3",
        markers=("real", "mcu"),
        model=f"{U3}/yamnet_256_64x96_tl_int8_5_classes.tflite",
        variants={"hsp": "--hsp 4096", "no-hsp": "without --hsp"},
        runs=(
            Run("hsp", "4.0.0", (f"{U3}/4.0.0-hsp-run1/network_generate_report.txt",
                                 f"{U3}/4.0.0-hsp-run1/network_c_info.json"),
                "stedgeai command line, -O time --hsp 4096"),
            Run("no-hsp", "4.0.0", (f"{U3}/4.0.0-no-hsp/network_generate_report.txt",
                                    f"{U3}/4.0.0-no-hsp/network_c_info.json"),
                "stedgeai command line, -O time"),
        ),
    ),
)
