"""The deployment the three oracle questions read: target family, options, mpool.

Owns what a ``stedgeai`` command line means for the oracle: the target family
(``n6-npu``, ``n6-sw``, ``mcu``), whether the inputs and outputs live in the activations
and with which data types, and the writable pools of an mpool or memory-pool file in
profile order (``settings``, ``mpool``); and the options a recorded run's command line
states (``recorded``).

May import ``pytest_stedge.errors`` only: it knows no model and no rule. ``memory``,
``placement`` and ``accuracy`` import it; a family's memory rules live in ``memory``.
"""
