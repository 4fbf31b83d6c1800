"""A bug report ST can reproduce from: one folder (and its .zip) per failing case.

Owns laying out the folder (``folder``: the case's model or, for a record-only case, its
sha256 and public source; its Neural-ART profile and mpool; the runs of the failing and
the passing version made inside the folder, so their command lines and outputs hold
relative paths only; the figures side by side; the bisection and the first diverging
epoch where known), keeping it self-contained (``paths``: the folder's own prefix and
the install's are rewritten, and anything else absolute is refused), and the Markdown
post shaped like a good forum report (``post``), both from the records of ``records``.

May import ``errors``, ``result``, ``case``, ``tool`` (to run a stage), ``verdict`` (the
expectations a run missed), ``bisect`` and ``oracle`` (the divergence search). The CLI
(``stedge bug-report``) imports it.
"""
