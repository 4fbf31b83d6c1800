"""Architectures of the corpus models, built with ``onnx.helper`` from fixed seeds.

Loaded by ``corpus/build.py`` (by path, as the package ``stedge_corpus_nets``);
each public function returns a float :class:`onnx.ModelProto`.
"""
