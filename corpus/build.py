"""Rebuild every model of this corpus from fixed seeds (no downloads).

    python corpus/build.py [--force] [--out DIR] [--check]
    stedge corpus build [--force] [--out DIR] [--check]      # the same code

Float graphs come from ``nets/`` (onnx.helper, seeded He-normal weights); int8
models are onnxruntime static QDQ quantizations (per-channel symmetric int8
weights, int8 activations, MinMax calibration on seeded uniform inputs). The
build refuses to overwrite a model whose case.toml pins another sha256 unless
``--force``; writing in place pins every new model.
"""

from __future__ import annotations

import hashlib
import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
try:
    from pytest_stedge.case.build import Recipe, load_module
except ImportError:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, str(HERE.parent))
    from pytest_stedge.case.build import Recipe, load_module

# one package name per corpus folder, so that two corpora never share their nets/
_NETS = "stedge_corpus_nets_" + hashlib.sha256(str(HERE).encode()).hexdigest()[:12]
load_module(HERE / "nets", _NETS)
mlperf, mobilenet, mtcnn, qdq, small, tcn, tflite_nets = (
    importlib.import_module(f"{_NETS}.{name}")
    for name in ("mlperf", "mobilenet", "mtcnn", "qdq", "small", "tcn", "tflite_nets")
)

IMAGE = {"low": 0.0, "high": 1.0}  # pixels scaled to [0, 1]
FEATURES = {"low": -1.0, "high": 1.0}  # normalised audio/sensor features


def recipes() -> list[Recipe]:
    """Every model file of the corpus, in build order."""

    def int8(path: str, build: Callable[[int], Any], seed: int, **quant: Any) -> Recipe:
        # the calibration seed is the architecture seed + 1000: one number per model
        spec = qdq.Quantize(seed=seed + 1000, **quant)
        return Recipe(path, lambda: qdq.quantize_qdq(build(seed), spec))

    return [
        Recipe("mvs-cnn/model_float.onnx", lambda: small.mvs_cnn(11)),
        int8("mvs-cnn/model_int8.onnx", small.mvs_cnn, 11, samples=4, **IMAGE),
        int8("mtcnn-rnet/model_int8.onnx", mtcnn.rnet, 21, **IMAGE),
        int8("mtcnn-rnet/model_prelu_float.onnx", mtcnn.rnet, 21, float_op_types=("PRelu",), **IMAGE),
        int8("mtcnn-onet/model_int8.onnx", mtcnn.onet, 22, **IMAGE),
        int8("mtcnn-onet/model_prelu_float.onnx", mtcnn.onet, 22, float_op_types=("PRelu",), **IMAGE),
        int8("tcn-23x60/model_int8.onnx", tcn.tcn_23x60, 31, **FEATURES),
        int8("mlperf-resnet8/model_int8.onnx", mlperf.resnet8, 41, **IMAGE),
        int8("mlperf-ds-cnn/model_int8.onnx", mlperf.ds_cnn, 42, **FEATURES),
        int8("mlperf-autoencoder/model_int8.onnx", mlperf.autoencoder, 43, **FEATURES),
        int8("mlperf-mobilenetv1-vww/model_int8.onnx", mlperf.mobilenet_v1_vww, 44, **IMAGE),
        int8("mobilenetv2-0.35-128/model_int8.onnx", mobilenet.mobilenet_v2, 51, **IMAGE),
        int8("relu-dw7/model_int8.onnx", small.relu_dw7, 61, keep_activations=True, **FEATURES),
        int8("dw-stride2/model_int8.onnx", small.dw_stride2, 62, **FEATURES),
        int8("conv2d-16f-3x3/model_int8.onnx", small.conv2d_16f_3x3, 63, **IMAGE),
        # the real micro model's own format: int8 TFLite, CONV_2D (ReLU fused) + MEAN
        Recipe("micro-conv-tflite/model_int8.tflite", lambda: tflite_nets.micro_conv_bytes(16, 64)),
    ]


if __name__ == "__main__":
    from pytest_stedge.cli.corpus import build_main

    sys.exit(build_main(sys.argv[1:], corpus_root=HERE))
