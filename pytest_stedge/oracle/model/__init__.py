"""Reading a model: the graph the three oracle questions (memory, placement, accuracy) share.

Owns opening a model file (ONNX by onnx, TFLite by the ``tflite`` flatbuffer package, ST's
``_OE_`` ONNX with its ``_Q.json``) into one :class:`~.graph.Graph` with the deployed
view: constants folded into weights, QDQ pairs folded, operators named as ONNX names
them (``files``, ``graph``, ``tflite``), and the facts read off it: quantized and float
nodes, weight bytes, operator counts (``facts``).

May import ``pytest_stedge.errors`` only; onnx, numpy and tflite load inside functions.
The question wings (``memory``, ``placement``, ``accuracy``) import it; it imports none
of them and nothing of ``deployment``.
"""
