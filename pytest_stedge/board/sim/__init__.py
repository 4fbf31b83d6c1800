"""A simulated board: the validation firmware's protocol over a pty or TCP socket,
with onnxruntime computing what the board would return, and injectable faults.

For tests and for trying ``--stedge-board`` without hardware
(``python -m pytest_stedge.board.sim MODEL.onnx --socket 127.0.0.1:0``). May import
``board.protocol``, ``board.tensors``, ``errors`` and, for its N6 mode, the oracle's
epoch plan (``oracle.epochs``, ``oracle.epoch_names``, ``oracle.refmodel``); the real client never imports it.
"""
