"""Which compiler option breaks it: delta debugging over a case's options.

Owns splitting a case's compiler options (its Neural-ART profile's ``options`` string
and its own ``stedgeai`` options) into units, a variant of the case with some of them
(a derived profile file in the run's own folder: the corpus is never edited), the
delta-debugging search (``ddmin``: Zeller and Hildebrandt's minimizing algorithm, its
runs cached), and the bisection of one failing stage: every run's figures, the smallest
set of options whose presence makes the check fail.

The stage runner (``runner``) runs one try as the pytest flow runs the stage, flashing
the variant for validate-target. May import ``errors``, ``result``, ``case``, ``tool``
(to read a profile and run a stage), ``board`` (to flash a variant),
``verdict`` (the expectations a run is checked against) and ``oracle`` (the floor an
``activations_ratio`` expectation needs). The CLI (``stedge bisect``) and the pytest
flow (``--stedge-bisect``) import it; it imports neither.
"""
