"""The bug-signature grammar: AST and recursive-descent parser (no ``eval``); the
tokenizer is :mod:`.tokens`.

A known bug's signature is a condition over one item's figures::

    activations_ratio > 4
    "PRelu" in software_ops and epochs_sw > 1
    stage == "validate-target" and (val_cos < 0.5 or val_snr < 0)
    activations_bytes / activations_lower_bound_bytes >= 2

Grammar (precedence from low to high)::

    condition  := or_expr END
    or_expr    := and_expr ("or" and_expr)*
    and_expr   := not_expr ("and" not_expr)*
    not_expr   := "not" not_expr | comparison
    comparison := sum (("<" | "<=" | ">" | ">=" | "==" | "!=") sum
                       | ["not"] "in" sum)?
    sum        := product (("+" | "-") product)*
    product    := unary (("*" | "/") unary)*
    unary      := "-" unary | atom
    atom       := NUMBER | STRING | NAME | "true" | "false" | "(" or_expr ")"

Names are the flat metrics of :data:`pytest_stedge.result.METRICS` (numbers),
``software_ops`` and ``diagnostics`` (lists of strings) and ``target``,
``stage``, ``version`` (strings); anything else is refused when the signature is
parsed, as is a type mismatch (``software_ops > 3``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pytest_stedge.result import METRICS

from .tokens import COMPARISONS, KEYWORDS, SignatureError, Token, tokenize

LIST_NAMES = {
    "software_ops": "operator types in software or hybrid epochs",
    "diagnostics": "diagnostic codes and kinds the tool printed",
}
STRING_NAMES = {
    "target": "the case's target (e.g. 'stm32n6')",
    "stage": "the item's stage (generate, validate-host, ...)",
    "version": "the toolchain version",
}
_MAX_DEPTH = 50  # nesting depth; deeper input is refused before Python's recursion limit
# Depth of the parsed tree: a chain such as 1+1+...+1 nests one node per operator without
# any parenthesis, so it is bounded too; evaluation then recurses at most this deep.
_MAX_TREE_DEPTH = 100


# -- AST ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Num:
    """A number literal."""

    value: float


@dataclass(frozen=True)
class Str:
    """A string literal."""

    value: str


@dataclass(frozen=True)
class Bool:
    """``true`` or ``false``."""

    value: bool


@dataclass(frozen=True)
class Name:
    """A metric or item property; ``type`` is number, string or list."""

    name: str
    type: str


@dataclass(frozen=True)
class Neg:
    """Unary minus."""

    operand: Node


@dataclass(frozen=True)
class Arith:
    """``left op right`` with op one of + - * /."""

    op: str
    left: Node
    right: Node


@dataclass(frozen=True)
class Compare:
    """``left op right`` with op a comparison, ``in`` or ``not in``."""

    op: str
    left: Node
    right: Node


@dataclass(frozen=True)
class Not:
    """Logical negation."""

    operand: Node


@dataclass(frozen=True)
class Logic:
    """``and`` / ``or`` over two or more operands."""

    op: str
    operands: tuple[Node, ...]


Node = Num | Str | Bool | Name | Neg | Arith | Compare | Not | Logic


def name_type(name: str) -> str | None:
    """The type of a known name (number, string, list), None when unknown."""
    if name in METRICS:
        return "number"
    if name in LIST_NAMES:
        return "list"
    if name in STRING_NAMES:
        return "string"
    return None


def known_names() -> list[str]:
    """Every name a signature may use."""
    return sorted([*METRICS, *LIST_NAMES, *STRING_NAMES])


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = tokenize(text)
        self.pos = 0
        self.depth = 0
        self._tree_depth: dict[int, int] = {}  # id(node) -> depth of its subtree (leaves: 1)

    def node(self, tok: Token, made: Node, *children: Node) -> Node:
        """Record ``made`` (built over ``children``) and refuse a tree grown too deep."""
        depth = 1 + max((self._tree_depth.get(id(c), 1) for c in children), default=0)
        if depth > _MAX_TREE_DEPTH:
            raise self.error(
                tok,
                f"the condition nests more than {_MAX_TREE_DEPTH} operations (each '+', '-', "
                "'*', '/' of a chain adds one)",
                "a shorter condition",
            )
        self._tree_depth[id(made)] = depth
        return made

    # token helpers
    @property
    def tok(self) -> Token:
        return self.tokens[self.pos]

    def at(self, kind: str, value: Any = None) -> bool:
        tok = self.tok
        if tok.kind != kind:
            return False
        return value is None or tok.value == value

    def at_keyword(self, word: str) -> bool:
        return self.at("NAME", word)

    def advance(self) -> Token:
        tok = self.tok
        self.pos += 1
        return tok

    def error(self, tok: Token, message: str, expected: str = "") -> SignatureError:
        return SignatureError(self.text, tok.column, message, expected)

    def describe(self, tok: Token) -> str:
        if tok.kind == "END":
            return "end of the signature"
        if tok.kind == "STRING":
            return f"string {tok.value!r}"
        if tok.kind == "NUMBER":
            return f"number {tok.value:g}"
        return repr(tok.value)

    # grammar
    def parse(self) -> Node:
        if self.at("END"):
            raise self.error(self.tok, "empty signature", "a condition such as 'epochs_sw > 0'")
        start = self.tok
        tree, kind = self.or_expr()
        if not self.at("END"):
            raise self.error(
                self.tok,
                f"unexpected {self.describe(self.tok)}",
                "'and', 'or' or the end of the signature",
            )
        if kind != "bool":
            raise self.error(
                start,
                f"the signature is a {kind}, not a condition",
                "a comparison such as 'activations_ratio > 4' or '\"PRelu\" in software_ops'",
            )
        return tree

    def or_expr(self) -> tuple[Node, str]:
        return self._logic("or", self.and_expr)

    def and_expr(self) -> tuple[Node, str]:
        return self._logic("and", self.not_expr)

    def _logic(self, word: str, operand: Any) -> tuple[Node, str]:
        first_tok = self.tok
        node, kind = operand()
        if not self.at_keyword(word):
            return node, kind
        nodes = [self._need_bool(node, kind, first_tok, word)]
        while self.at_keyword(word):
            self.advance()
            tok = self.tok
            nxt, nkind = operand()
            nodes.append(self._need_bool(nxt, nkind, tok, word))
        return self.node(first_tok, Logic(word, tuple(nodes)), *nodes), "bool"

    def _need_bool(self, node: Node, kind: str, tok: Token, word: str) -> Node:
        if kind != "bool":
            raise self.error(
                tok, f"{word!r} needs conditions on both sides, this is a {kind}", "a comparison"
            )
        return node

    def not_expr(self) -> tuple[Node, str]:
        if self.at_keyword("not"):
            tok = self.advance()
            self._enter(tok)
            node, kind = self.not_expr()
            self.depth -= 1
            operand = self._need_bool(node, kind, tok, "not")
            return self.node(tok, Not(operand), operand), "bool"
        return self.comparison()

    def comparison(self) -> tuple[Node, str]:
        left_tok = self.tok
        left, lkind = self.sum()
        if self.at("OP") and self.tok.value in COMPARISONS:
            op_tok = self.advance()
            right_tok = self.tok
            right, rkind = self.sum()
            self._check_compare(op_tok, left_tok, lkind, right_tok, rkind)
            node: Node = self.node(op_tok, Compare(op_tok.value, left, right), left, right)
        elif self.at_keyword("in") or (
            self.at_keyword("not")
            and self.tokens[self.pos + 1].kind == "NAME"
            and self.tokens[self.pos + 1].value == "in"
        ):
            op_tok = self.advance()
            op = "in"
            if op_tok.value == "not":
                self.advance()
                op = "not in"
            right_tok = self.tok
            right, rkind = self.sum()
            if lkind != "string":
                raise self.error(
                    left_tok,
                    f"{op!r} needs a string on its left, got a {lkind}",
                    'a quoted string such as "PRelu"',
                )
            if rkind != "list":
                raise self.error(
                    right_tok,
                    f"{op!r} needs a list on its right, got a {rkind}",
                    f"one of {', '.join(LIST_NAMES)}",
                )
            node = self.node(op_tok, Compare(op, left, right), left, right)
        else:
            return left, lkind
        if self.at("OP") and self.tok.value in COMPARISONS or self.at_keyword("in"):
            raise self.error(self.tok, "comparisons do not chain", "'and' between two comparisons")
        return node, "bool"

    def _check_compare(
        self, op_tok: Token, left_tok: Token, lkind: str, right_tok: Token, rkind: str
    ) -> None:
        op = op_tok.value
        if lkind == "list" or rkind == "list":
            bad = left_tok if lkind == "list" else right_tok
            raise self.error(
                bad, f"a list cannot be compared with {op!r}", "'\"X\" in <list>' or 'not in'"
            )
        if lkind == "bool" or rkind == "bool":
            bad = left_tok if lkind == "bool" else right_tok
            raise self.error(
                bad,
                f"a condition cannot be compared with {op!r}",
                "parentheses around 'and'/'or' conditions, not comparisons of them",
            )
        if lkind != rkind:
            raise self.error(
                right_tok,
                f"cannot compare a {lkind} with a {rkind}",
                f"a {lkind} on both sides of {op!r}",
            )
        if lkind == "string" and op not in ("==", "!="):
            raise self.error(
                op_tok, f"strings compare only with '==' or '!=', not {op!r}", "'==' or '!='"
            )

    def sum(self) -> tuple[Node, str]:
        return self._arith(("+", "-"), self.product)

    def product(self) -> tuple[Node, str]:
        return self._arith(("*", "/"), self.unary)

    def _arith(self, ops: tuple[str, ...], operand: Any) -> tuple[Node, str]:
        tok = self.tok
        node, kind = operand()
        while self.at("OP") and self.tok.value in ops:
            op_tok = self.advance()
            rtok = self.tok
            right, rkind = operand()
            for t, k in ((tok, kind), (rtok, rkind)):
                if k != "number":
                    raise self.error(
                        t,
                        f"{op_tok.value!r} works on numbers, this is a {k}",
                        "a metric name or a number",
                    )
            node, kind = self.node(op_tok, Arith(op_tok.value, node, right), node, right), "number"
        return node, kind

    def unary(self) -> tuple[Node, str]:
        if self.at("OP", "-"):
            tok = self.advance()
            self._enter(tok)
            rtok = self.tok
            node, kind = self.unary()
            self.depth -= 1
            if kind != "number":
                raise self.error(rtok, f"'-' works on numbers, this is a {kind}", "a number")
            return self.node(tok, Neg(node), node), "number"
        return self.atom()

    def atom(self) -> tuple[Node, str]:
        tok = self.tok
        expected = "a metric name, a number, a quoted string, 'not' or '('"
        if tok.kind == "NUMBER":
            self.advance()
            return Num(tok.value), "number"
        if tok.kind == "STRING":
            self.advance()
            return Str(tok.value), "string"
        if tok.kind == "OP" and tok.value == "(":
            self.advance()
            self._enter(tok)
            node, kind = self.or_expr()
            self.depth -= 1
            if not self.at("OP", ")"):
                raise self.error(
                    self.tok,
                    f"unexpected {self.describe(self.tok)}",
                    f"')' to close the '(' at column {tok.column}",
                )
            self.advance()
            return node, kind
        if tok.kind == "NAME":
            if tok.value in ("true", "false"):
                self.advance()
                return Bool(tok.value == "true"), "bool"
            if tok.value in KEYWORDS:
                raise self.error(tok, f"unexpected keyword {tok.value!r}", expected)
            name_kind = name_type(tok.value)
            if name_kind is None:
                raise self.error(
                    tok, f"unknown name {tok.value!r}", f"one of {', '.join(known_names())}"
                )
            self.advance()
            return Name(tok.value, name_kind), name_kind
        raise self.error(tok, f"unexpected {self.describe(tok)}", expected)

    def _enter(self, tok: Token) -> None:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise self.error(tok, f"nested more than {_MAX_DEPTH} levels deep")


def parse_tree(text: str) -> Node:
    """Parse and type-check ``text`` into its AST.

    :raises SignatureError: naming the column and what was expected there.
    """
    return _Parser(text).parse()
