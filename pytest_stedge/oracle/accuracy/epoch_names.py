"""From the tool's buffer names to the tensors and nodes of the user's model.

A c_info names its buffers and operators after the tool's own import of the model
(the ``*_OE_*.onnx`` it writes next to the c_info: ``Conv2D_4``, ``Quantize_5_out_0``),
and derives more from them: ``<X>_zero_off_out_<n>`` is the input of operator X with its
zero point moved, ``<X>_off_bias_out_<n>`` the output of X, ``..._cp_in_<n>`` a copy.
The ``*_OE_*_Q.json`` beside it says which operators of the user's model each OE node
comes from (ONNX node or tensor names; for TFLite ``<OPCODE>_<index>``), or
``__FE_GENERATED__`` for nodes the front end added (Q/DQ pairs, transposes).

:class:`Namer` resolves a buffer in two steps: to a tensor of the OE graph (or of the
model itself when the c_info's names are the model's), then, through the renames, to
the user model's tensor holding the same values.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_stedge.errors import OracleError

from .epoch_plan import Buffer, Epoch, EpochPlan
from .refmodel import RefModel, load_reference

FE_GENERATED = "__FE_GENERATED__"
_COPY_SUFFIX = re.compile(r"(_cp_(in|out)_\d+|_inserted_(in|out)_?\d+)+$")
_QDQ = frozenset({"QuantizeLinear", "DequantizeLinear"})
_PREPARES_INPUT = re.compile(r"_(suboff|zero_off)(_|$)")
# Operators a tensor passes through unchanged in value (or only padded/requantized).
_TRANSPARENT = frozenset({"DequantizeLinear", "QuantizeLinear", "Pad", "Identity", "Relu",
                          "Clip", "Transpose", "Reshape", "Squeeze", "Unsqueeze", "Flatten"})


@dataclass(frozen=True)
class Resolved:
    """Where a buffer's values are in the user's model (``tensor`` None: nowhere)."""

    tensor: str | None
    how: str
    oe_tensor: str | None = None
    codes: tuple[float, int] | None = None  # quantization of codes a buffer moves as is
    perm: tuple[int, ...] | None = None  # the user tensor .transpose(perm) is the buffer's


def load_renames(path: Path | str) -> dict[str, list[str]]:
    """OE node -> user names from a ``*_OE_*_Q.json`` (its ``nodes`` map).

    :raises OracleError: unreadable, or no ``nodes`` object.
    """
    p = Path(path)
    try:
        doc = json.loads(p.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError) as exc:
        raise OracleError(f"{p}: not a readable *_Q.json ({exc})") from None
    nodes = doc.get("nodes") if isinstance(doc, dict) else None
    if not isinstance(nodes, dict):
        raise OracleError(f"{p}: field 'nodes' missing: not the tool's *_OE_*_Q.json")
    out = {}
    for name, entry in nodes.items():
        names = entry.get("names") if isinstance(entry, dict) else None
        out[str(name)] = [str(n) for n in names or [] if str(n) != FE_GENERATED]
    return out


def md5_signature(path: Path) -> str:
    """``0x`` + md5 of a file: how a c_info records the models it was compiled from."""
    return "0x" + hashlib.md5(path.read_bytes(), usedforsecurity=False).hexdigest()


def compiled_from(c_info: Path) -> list[str]:
    """The model signatures a c_info records (the user's model, then the OE model)."""
    try:
        doc = json.loads(c_info.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        return []
    tools = (doc.get("environment") or {}).get("tools") if isinstance(doc, dict) else None
    out = []
    for tool in tools or []:
        files = ((tool or {}).get("input_model") or {}).get("model_files") or []
        out += [str(f.get("signature")).lower() for f in files
                if isinstance(f, dict) and f.get("signature")]
    return out


def find_oe_files(c_info: Path) -> tuple[Path | None, Path | None]:
    """The OE model and its ``_Q.json`` next to a c_info; with several, the one the
    c_info's ATONN step read (its md5 is in the c_info)."""
    folder = c_info.parent
    models = sorted(folder.glob("*_OE_*.onnx"))
    if len(models) > 1:
        signatures = set(compiled_from(c_info))
        models = [m for m in models if md5_signature(m) in signatures] or models[:1]
    model = models[0] if models else None
    q_json = None
    if model is not None and model.with_name(model.stem + "_Q.json").is_file():
        q_json = model.with_name(model.stem + "_Q.json")
    elif len(list(folder.glob("*_OE_*_Q.json"))) == 1:
        q_json = next(folder.glob("*_OE_*_Q.json"))
    return model, q_json


class Namer:
    """Buffer -> user-model tensor, epoch -> user-model nodes.

    :param plan: the c_info's epochs and buffers.
    :param ref: the user's model (values come from it).
    :param oe: the tool's OE model, when the c_info's names are not the user model's.
    :param renames: OE node -> user names (``*_Q.json``).
    """

    def __init__(self, plan: EpochPlan, ref: RefModel, oe: RefModel | None = None,
                 renames: dict[str, list[str]] | None = None) -> None:
        self.plan, self.ref, self.renames = plan, ref, renames or {}
        own = sum(op.name in ref.op_by_name for op in plan.operators.values())
        self.space = ref if own or oe is None else oe
        self.direct = self.space is ref
        self._ops = self.space.op_by_name
        self._prefixes = sorted(self._ops, key=len, reverse=True)
        self._layouts: dict[str, tuple[int, ...] | None] | None = None
        # a buffer's tensor depends on the buffer and the models only: every dump of one
        # compilation resolves the same buffers (one comparer judges them all)
        self._resolved: dict[tuple[int, str], Resolved] = {}
        self._owners: dict[str, str | None] = {}

    def layout(self, oe_tensor: str) -> tuple[int, ...] | None:
        """How the OE tensor orders the user tensor it maps to (:mod:`.epoch_layout`)."""
        if self._layouts is None:
            from .epoch_layout import oe_layouts

            self._layouts = oe_layouts(self.space, self.ref)
        return self._layouts.get(oe_tensor)

    @property
    def naming(self) -> str:
        """How names are resolved, for the report."""
        if self.direct:
            return f"the c_info's names are {self.ref.path.name}'s"
        return (f"the c_info's names are the OE model {self.space.path.name}'s, mapped back "
                f"to {self.ref.path.name} through its _Q.json")

    # --- buffers ----------------------------------------------------------------------
    def resolve(self, buf: Buffer) -> Resolved:
        """The user-model tensor holding ``buf``'s values, or why there is none."""
        key = (buf.id, buf.name)
        if key not in self._resolved:
            self._resolved[key] = self._resolve(buf)
        return self._resolved[key]

    def _resolve(self, buf: Buffer) -> Resolved:
        oe_tensor, how = self._in_space(buf)
        if oe_tensor is None:
            return Resolved(None, how)
        codes = None if buf.has_quantization else self.codes_quant(oe_tensor)
        if self.direct:
            return Resolved(oe_tensor, how, oe_tensor, codes, self.layout(oe_tensor))
        tensor, why = self._to_user(oe_tensor, buf.elements)
        if tensor is None:
            return Resolved(None, f"{how}; not in {self.ref.path.name}: {why}", oe_tensor, codes)
        perm = self.layout(oe_tensor)
        if perm is None:
            return Resolved(None, f"{how} = {tensor}, but the OE model's layout of it is not "
                            "known (a reshape of a transposed tensor)", oe_tensor, codes)
        other = self._other_scale(buf, tensor)
        if other:
            return Resolved(None, f"{how} = {tensor}? {other}", oe_tensor, codes)
        return Resolved(tensor, f"{how} = {tensor}", oe_tensor, codes, perm)

    def _other_scale(self, buf: Buffer, tensor: str) -> str:
        """Why ``buf`` cannot hold ``tensor``'s codes: the tool keeps a tensor's scale in
        the buffers that hold it (their zero point may move), so a buffer quantized with
        another scale holds another tensor, or a requantized copy ("" when they agree)."""
        mine = self.ref.quant.get(tensor)
        if mine is None or len(buf.scales) != 1 or not mine[0]:
            return ""
        if abs(buf.scales[0] - mine[0]) <= 1e-5 * abs(mine[0]):
            return ""
        return (f"no: the buffer's scale {buf.scales[0]:.9g} is not the tensor's "
                f"{mine[0]:.9g} (another tensor, or a requantized copy of it)")

    def codes_quant(self, tensor: str) -> tuple[float, int] | None:
        """The quantization of the int8 codes behind a tensor: its own, else the nearest
        one upstream past value-preserving operators (a Transpose or Pad of DQ'd codes)."""
        found = self._upstream(tensor, lambda t: t in self.space.quant)
        return None if found is None else self.space.quant[found]

    def _in_space(self, buf: Buffer) -> tuple[str | None, str]:
        g, n = self.space, buf.elements
        if buf.frac_bits:
            return None, (f"a fixed-point Q{buf.nbits - buf.frac_bits - 1}.{buf.frac_bits} "
                          "intermediate of the NPU, in no quantization of the model")
        if buf.name in g.shapes and g.elements(buf.name) == n:
            return self._quantized(buf.name, buf, n), "same name"
        plain = _COPY_SUFFIX.sub("", buf.name)
        if plain != buf.name and plain in g.shapes and g.elements(plain) == n:
            return self._quantized(plain, buf, n), f"copy of {plain}"
        node = self._owner(buf.name)
        if node is not None:
            rest = buf.name[len(node):]
            if "zero_off" in rest:
                found = self._back(self._data_input(node), n)
                if found:
                    return found, f"input of {node} ({found})"
            else:
                found = self._forward(self._ops[node].outputs[0], n)
                if found:
                    return found, f"output of {node} ({found})"
        for op in self.plan.upstream_operators(buf):
            owner = op.name if op.name in self._ops else self._owner(op.name)
            if owner is not None:
                found = self._forward(self._ops[owner].outputs[0], n)
                if found:
                    return found, f"output of {owner} ({found}), which {op.name} computes from"
        if buf.name.startswith("SCRATCH_"):
            return None, "the tool's scratch buffer: no tensor of the model holds it"
        return None, (f"no tensor of {g.path.name} has this name or comes from an operator "
                      f"it names ({n} elements, shape {list(buf.shape)})")

    def _quantized(self, tensor: str, buf: Buffer, n: int) -> str:
        """An integer buffer of a float tensor holds what the model quantizes it to: the
        QuantizeLinear after it (past a Relu or Clip the NPU folds into the clamp)."""
        g = self.space
        producer = g.producer.get(tensor)
        if buf.dtype.startswith("float") or (
                producer is not None and g.ops_by_index[producer].op_type == "QuantizeLinear"):
            return tensor
        current = tensor
        for _ in range(3):
            users = g.consumers.get(current, [])
            if len(users) != 1:
                break
            op = g.ops_by_index[users[0]]
            if op.op_type == "QuantizeLinear":
                return op.outputs[0] if g.elements(op.outputs[0]) == n else tensor
            if op.op_type not in ("Relu", "Clip"):
                break
            current = op.outputs[0]
        return tensor

    def _owner(self, name: str) -> str | None:
        """The longest operator name that ``name`` starts with (then ``_``)."""
        if name not in self._owners:
            self._owners[name] = next((op for op in self._prefixes
                                       if name.startswith(op + "_")), None)
        return self._owners[name]

    def _data_input(self, node: str) -> str:
        g = self.space
        op = self._ops[node]
        for name in op.inputs:
            if name and name not in g.constants:
                return name
        return op.inputs[0] if op.inputs else ""

    def _back(self, tensor: str, n: int) -> str | None:
        return self._upstream(tensor, lambda t: self.space.elements(t) == n)

    def _upstream(self, tensor: str, wanted: Callable[[str], bool]) -> str | None:
        """``tensor`` or the nearest tensor up to 8 value-preserving operators upstream of
        it (a Transpose, Pad, or a max-pool, which keeps its input's quantization) that is
        ``wanted``."""
        g = self.space
        for _ in range(8):
            if wanted(tensor):
                return tensor
            index = g.producer.get(tensor)
            if index is None:
                return None
            op = g.ops_by_index[index]
            if op.op_type not in _TRANSPARENT | {"MaxPool"} or not op.inputs:
                return None
            tensor = op.inputs[0]
        return None

    def _forward(self, tensor: str, n: int) -> str | None:
        g = self.space
        users = g.consumers.get(tensor, [])
        if len(users) == 1:
            op = g.ops_by_index[users[0]]
            if op.op_type == "QuantizeLinear" and g.elements(op.outputs[0]) == n:
                return op.outputs[0]
        return tensor if g.elements(tensor) == n else None

    def _to_user(self, oe_tensor: str, n: int) -> tuple[str | None, str]:
        """Walk up the OE graph past the front end's Q/DQ to the node the _Q.json names,
        and take the output of those user operators that has ``n`` elements (the last).
        Any other front-end node on the way (a Transpose, a Relu the user's operator
        fuses) changes layout or values: then there is no user tensor, and why."""
        g, ref = self.space, self.ref
        for user in self._downstream(oe_tensor):
            if not self.renames.get(user.name) and user.op_type not in _QDQ:
                return None, f"the front end's {user.name} ({user.op_type}) follows it"
        tensor = oe_tensor
        for _ in range(16):
            index = g.producer.get(tensor)
            if index is None:
                names = self.renames.get(tensor) or ([tensor] if tensor in ref.shapes else [])
                found = next((t for t in names if ref.elements(t) == n), None)
                return found, "" if found else "no user tensor of that size"
            op = g.ops_by_index[index]
            names = self.renames.get(op.name, [])
            if names:
                candidates = []
                for name in names:
                    user_op = ref.op_by_name.get(name)
                    candidates += list(user_op.outputs) if user_op else [name]
                fitting = [t for t in candidates if ref.elements(t) == n]
                if fitting:
                    return max(fitting, key=lambda t: ref.producer.get(t, -1)), ""
                return None, f"no output of {', '.join(names)} has {n} elements"
            if op.op_type not in _QDQ | {"Relu", "Clip"}:  # a user op fuses its activation
                return None, f"the front end's {op.name} ({op.op_type}) computes it"
            if not op.inputs:
                return None, "no user operator above it"
            tensor = op.inputs[0]
        return None, "no user operator above it"

    def _downstream(self, tensor: str) -> list[Any]:
        """The first consumers past Q/DQ chains."""
        g = self.space
        out, todo, seen = [], [tensor], set()
        while todo:
            t = todo.pop()
            for index in g.consumers.get(t, []):
                op = g.ops_by_index[index]
                if op.name in seen:
                    continue
                seen.add(op.name)
                if op.op_type in _QDQ and not self.renames.get(op.name):
                    todo.extend(op.outputs)
                else:
                    out.append(op)
        return out

    # --- epochs -----------------------------------------------------------------------
    def model_nodes(self, epoch: Epoch) -> list[str]:
        """The user-model operators an epoch computes (from its operators' names)."""
        out: list[str] = []
        for op in epoch.operators:
            owner = op.name if op.name in self._ops else self._owner(op.name)
            if owner is None or _PREPARES_INPUT.match(op.name[len(owner):]):
                continue  # <X>_suboff_<n> prepares X's input in the epoch before X
            names = [owner] if self.direct else [
                n for n in self.renames.get(owner, []) if n in self.ref.op_by_name]
            out += [n for n in names if n not in out]
        return out


def open_models(model: Path, c_info: Path, *, oe_model: Path | None = None,
                q_json: Path | None = None) -> tuple[RefModel, RefModel | None,
                                                     dict[str, list[str]], list[str]]:
    """The user's model, the OE model and renames to use with ``c_info``, and notes
    (what was found, signature checks)."""
    notes: list[str] = []
    ref = load_reference(model)
    signatures = compiled_from(c_info)
    if signatures and md5_signature(model) not in signatures:
        notes.append(f"{model.name} (md5 {md5_signature(model)}) is not the model "
                     f"{c_info.name} records ({', '.join(signatures)}): another model?")
    found_oe, found_q = find_oe_files(c_info)
    oe_path = oe_model or found_oe
    q_path = q_json or found_q
    oe = None
    if oe_path is not None and oe_path.resolve() != model.resolve():
        oe = load_reference(oe_path)
        notes.append(f"OE model: {oe_path}")
    renames = load_renames(q_path) if q_path is not None else {}
    if q_path is not None:
        notes.append(f"renames: {q_path}")
    return ref, oe, renames, notes


def describe_value(value: Any) -> str:
    """Shape and dtype of an array, for messages."""
    import numpy as np

    arr = np.asarray(value)
    return f"{arr.dtype}{list(arr.shape)}"
