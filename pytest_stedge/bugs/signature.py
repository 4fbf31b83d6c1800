"""Bug signatures: parsed once, evaluated on each item in three-valued logic, never ``eval``.

A known bug's signature is a condition over one item's figures::

    activations_ratio > 4
    "PRelu" in software_ops and epochs_sw > 1
    stage == "validate-target" and (val_cos < 0.5 or val_snr < 0)
    activations_bytes / activations_lower_bound_bytes >= 2

The grammar is in :mod:`pytest_stedge.bugs.grammar`.

Evaluation is three-valued: a name the item did not measure makes every
comparison that reads it *unknown*; ``false and unknown`` is false, ``true or
unknown`` is true, otherwise unknown propagates. A finding is then "unknown",
never a guess.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_stedge.result import Result, flat_metrics

from .grammar import (
    LIST_NAMES,
    STRING_NAMES,
    Arith,
    Bool,
    Compare,
    Logic,
    Name,
    Neg,
    Node,
    Not,
    Num,
    Str,
    known_names,
    name_type,
    parse_tree,
)
from .tokens import KEYWORDS, SignatureError, Token, tokenize

__all__ = [
    "KEYWORDS",
    "LIST_NAMES",
    "STRING_NAMES",
    "UNKNOWN",
    "Node",
    "Signature",
    "SignatureError",
    "Token",
    "Truth",
    "Unknown",
    "known_names",
    "name_type",
    "parse_signature",
    "signature_env",
    "tokenize",
]


class Unknown:
    """The third truth value (and the value of an unmeasured name); use :data:`UNKNOWN`."""

    def __repr__(self) -> str:
        return "UNKNOWN"

    def __bool__(self) -> bool:
        raise TypeError("UNKNOWN has no truth value; compare with `is UNKNOWN`")


UNKNOWN = Unknown()
Truth = bool | Unknown


@dataclass(frozen=True)
class Signature:
    """A parsed, type-checked signature."""

    text: str
    tree: Node

    def names(self) -> list[str]:
        """The names the signature reads, sorted (what a finding's evidence shows)."""
        found: set[str] = set()
        _collect(self.tree, found)
        return sorted(found)

    def evaluate(self, env: Mapping[str, Any]) -> Truth:
        """True, False or :data:`UNKNOWN` for the item described by ``env``."""
        value = _eval(self.tree, env)
        assert value is UNKNOWN or isinstance(value, bool)
        return value

    def evidence(self, env: Mapping[str, Any]) -> dict[str, Any]:
        """The values of the names the signature reads (None: not measured)."""
        return {name: env.get(name) for name in self.names()}


def _collect(node: Node, found: set[str]) -> None:
    if isinstance(node, Name):
        found.add(node.name)
    elif isinstance(node, (Neg, Not)):
        _collect(node.operand, found)
    elif isinstance(node, (Arith, Compare)):
        _collect(node.left, found)
        _collect(node.right, found)
    elif isinstance(node, Logic):
        for operand in node.operands:
            _collect(operand, found)


def parse_signature(text: str) -> Signature:
    """Parse and type-check a signature.

    :raises SignatureError: naming the column and what was expected there.
    """
    return Signature(text, parse_tree(text))


# -- evaluation ----------------------------------------------------------------------------


def _eval(node: Node, env: Mapping[str, Any]) -> Any:
    if isinstance(node, (Num, Str, Bool)):
        return node.value
    if isinstance(node, Name):
        return _lookup(node, env)
    if isinstance(node, Neg):
        value = _eval(node.operand, env)
        return UNKNOWN if value is UNKNOWN else -value
    if isinstance(node, Arith):
        left, right = _eval(node.left, env), _eval(node.right, env)
        if left is UNKNOWN or right is UNKNOWN:
            return UNKNOWN
        if node.op == "+":
            result = left + right
        elif node.op == "-":
            result = left - right
        elif node.op == "*":
            result = left * right
        else:
            if right == 0:
                return UNKNOWN  # a ratio over a zero bound says nothing
            result = left / right
        return result if math.isfinite(result) else UNKNOWN
    if isinstance(node, Compare):
        left, right = _eval(node.left, env), _eval(node.right, env)
        if left is UNKNOWN or right is UNKNOWN:
            return UNKNOWN
        return _compare(node.op, left, right)
    if isinstance(node, Not):
        value = _eval(node.operand, env)
        return UNKNOWN if value is UNKNOWN else not value
    if isinstance(node, Logic):
        values = [_eval(operand, env) for operand in node.operands]
        decisive = node.op == "or"  # True decides an 'or', False decides an 'and'
        if any(v is not UNKNOWN and v is decisive for v in values):
            return decisive
        if any(v is UNKNOWN for v in values):
            return UNKNOWN
        return not decisive
    raise TypeError(f"not a signature node: {node!r}")  # pragma: no cover


def _lookup(node: Name, env: Mapping[str, Any]) -> Any:
    value = env.get(node.name)
    if value is None:
        return UNKNOWN
    if node.type == "number":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return UNKNOWN
        try:
            number = float(value)
        except OverflowError:  # an int beyond float range: no figure to compare
            return UNKNOWN
        return number if math.isfinite(number) else UNKNOWN
    if node.type == "list":
        if isinstance(value, (list, tuple, set, frozenset)):
            return [str(v) for v in value]
        return UNKNOWN
    return str(value)


def _compare(op: str, left: Any, right: Any) -> bool:
    if op == "in":
        return left in right
    if op == "not in":
        return left not in right
    if op == "==":
        return bool(left == right)
    if op == "!=":
        return bool(left != right)
    if op == "<":
        return bool(left < right)
    if op == "<=":
        return bool(left <= right)
    if op == ">":
        return bool(left > right)
    return bool(left >= right)


def signature_env(
    result: Result | None,
    *,
    stage: str | None = None,
    version: str | None = None,
    metrics: Mapping[str, float] | None = None,
    target: str | None = None,
) -> dict[str, Any]:
    """The environment a signature reads for one item.

    ``target`` is the case's (a validate log may state none); without it, the Result's.

    Flat metrics come from ``metrics`` when given (e.g. with oracle figures merged
    in), else from the Result. Names the Result does not know are left out, so they
    evaluate to unknown.
    """
    env: dict[str, Any] = dict(metrics if metrics is not None else flat_metrics(result or {}))
    if result:
        if isinstance(result.get("software_ops"), list):
            env["software_ops"] = [str(op) for op in result["software_ops"]]
        diagnostics = result.get("diagnostics")
        if isinstance(diagnostics, list):
            codes: list[str] = []
            for diag in diagnostics:
                if isinstance(diag, dict):
                    codes += [str(diag[k]) for k in ("code", "kind") if diag.get(k)]
            env["diagnostics"] = codes
        if result.get("target"):
            env["target"] = str(result["target"])
        tool = result.get("tool") or {}
        if version is None and tool.get("version"):
            env["version"] = str(tool["version"])
    if target:
        env["target"] = target
    if stage is not None:
        env["stage"] = stage
    if version is not None:
        env["version"] = version
    return env
