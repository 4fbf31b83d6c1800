"""Activation memory: what the model needs, what the tool will allocate, what it did.

Owns the memory question, from the model and its deployment alone: tensor lifetimes as
deployed (``liveness``, ``deployed_liveness`` applying one family's rules:
``rules_n6_npu``, ``rules_n6_sw``, ``rules_mcu``, over operator classes in ``opclass``),
the admissible floor no schedule beats (``floor``), the expected figure as an offset plan
in the mpool's pools (``planner``, ``pools``), the report (``analysis``); and the tool's own
figure explained from its ``c_info.json`` buffers (``explain``, ``explain_parts``,
``tool_buffers``), with the real (model, run) pairs that check it all (``real_pairs``).

May import the sibling wings ``model`` and ``deployment``, ``pytest_stedge.errors`` and
``pytest_stedge.parsers`` (to read the runs of a real pair); never ``placement`` or
``accuracy``. onnx and numpy load inside functions.
"""
