"""Accuracy: the reference the tool's outputs are measured against, and where they part.

Owns the tool's default stimulus (``stimulus``), reference inference with onnxruntime or
LiteRT (``reference``, ``native_log``), ST's validation metrics (``metrics``), the output
quantization a run states (``output_quant``); and divergence: the first node of a
per-node dump that diverges (``first_node``, over ``refmodel``), and on the N6 the first
epoch, read from the c_info's epoch plan (``epoch_plan``) and a board dump
(``board_dump``), named in the user's model (``epoch_names``, ``epoch_layout``) and
recomputed locally (``epoch_local``, ``epoch_compare``, ``io_verdict``).

May import the sibling wing ``model`` and ``pytest_stedge.errors``; never ``memory`` or
``placement``. numpy, onnxruntime and LiteRT load inside functions.
"""
