"""The admissible floor: activation bytes no schedule the tool could choose goes below.

The tool may run the graph in any topological order, fuse what its target can fuse
(the intermediate tensor never exists) and write an output over an input that dies
there. The floor assumes every such choice is available wherever it is legal, and
takes, for each operator, the least memory any schedule can hold while it runs:

- any order: at operator ``v`` a tensor is live in EVERY order when its producer is an
  ancestor of ``v`` and one of its readers a descendant (or it is a graph output
  already produced, or a graph input still to be read); ``v``'s own inputs and outputs
  are live too. Tensors of independent branches are not counted: some order runs
  the branch first or last;
- fusion: a tensor the target may fuse away (:class:`Capabilities`) is left out when
  ``v`` runs in one step with its producer or readers; that step then holds what each
  member holds (the producer's inputs stay until the readers run). The least over
  the groups of fusable neighbours that contain ``v`` is taken;
- in place: an output may be written over an input that dies at the step (no reader
  left that must run later), by the operator's data dependencies (:mod:`.opclass`).

Every schedule holds at least that much while ``v`` runs, so the largest of these
figures over the operators (and the graph inputs at the start, the outputs at the
end) is below the peak of every schedule: max over operators of a min over
schedules never exceeds the min over schedules of their max.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..model.graph import Graph, Node
from .liveness import Liveness, step_node

_MAX_GROUP = 6  # members of one fused group tried around an operator
_MAX_GROUPS = 256  # groups tried around one operator


@dataclass(frozen=True)
class Capabilities:
    """What a target family may do: which tensors it may fuse away, and how an operator's
    output may share memory with its dying inputs (see :func:`.opclass.overlay_mode`)."""

    fuses: Callable[[Node, list[Node]], bool]
    overlay: Callable[[Node], tuple[str, int | None]]


@dataclass
class Floor:
    """The floor, the operator (or boundary) where it is reached and what is counted there."""

    bytes: int
    where: str  # the operator's name, "inputs at the start" or "outputs at the end"
    tensors: list[str] = field(default_factory=list)  # buffers counted at that point
    sizes: dict[str, int] = field(default_factory=dict)  # their bytes
    fused: list[str] = field(default_factory=list)  # buffers never stored there
    in_place: list[str] = field(default_factory=list)  # dying inputs written over there
    saved_bytes: int = 0  # bytes the in-place writes save there


@dataclass
class _Dag:
    steps: list[int]  # liveness step index of each DAG node (views left out)
    reads: list[list[str]]
    writes: list[list[str]]
    writer: dict[str, int]
    readers: dict[str, list[int]]
    children: list[set[int]]


def _dag(live: Liveness) -> _Dag:
    steps: list[int] = []
    reads: list[list[str]] = []
    writes: list[list[str]] = []
    for k, step in enumerate(live.steps):
        r = list(dict.fromkeys(live.root_of.get(n, n) for n in step.reads))
        w = list(dict.fromkeys(live.root_of.get(n, n) for n in step.writes))
        if not w or set(w) <= set(r):
            continue  # a view writes into the buffer it reads: no step of its own
        steps.append(k)
        reads.append([b for b in r if b not in w])
        writes.append(w)
    writer: dict[str, int] = {}
    readers: dict[str, list[int]] = {}
    for v, w in enumerate(writes):
        for b in w:
            writer.setdefault(b, v)
    for v, r in enumerate(reads):
        for b in r:
            if writer.get(b) != v:
                readers.setdefault(b, []).append(v)
    children: list[set[int]] = [set() for _ in steps]
    for b, users in readers.items():
        p = writer.get(b)
        if p is not None:
            children[p].update(u for u in users if u != p)
    return _Dag(steps, reads, writes, writer, readers, children)


def _descendants(dag: _Dag) -> list[int]:
    """Bitset of the strict descendants of every DAG node (file order is topological)."""
    desc = [0] * len(dag.steps)
    for v in range(len(dag.steps) - 1, -1, -1):
        bits = 0
        for c in dag.children[v]:
            bits |= desc[c] | (1 << c)
        desc[v] = bits
    return desc


def admissible_floor(
    graph: Graph, live: Liveness, caps: Capabilities, outputs: set[str] | None = None,
    *, prune: bool = True,
) -> Floor:
    """The floor of ``live``'s buffers (I/O already placed) under ``caps``. ``prune``:
    skip the fused-group search of operators whose lone figure cannot raise the floor
    (the same figure, faster; False tries every operator)."""
    sizes = {b.name: b.size or 0 for b in live.buffers}
    dag = _dag(live)
    n = len(dag.steps)
    out_roots = outputs if outputs is not None else set(live.outputs)
    in_roots = set(live.inputs)
    start = sorted(b for b in in_roots if sizes.get(b))
    end = sorted(b for b in out_roots if sizes.get(b))
    best = Floor(
        sum(sizes[b] for b in start), "inputs at the start", start, {b: sizes[b] for b in start}
    )
    at_end = sum(sizes[b] for b in end)
    if at_end > best.bytes:
        best = Floor(at_end, "outputs at the end", end, {b: sizes[b] for b in end})
    if n == 0:
        return best

    # Candidate operators between a buffer's producer and its last reader (file order)
    # are the only ones where it can pass by; only then are reachability sets needed.
    spans: list[tuple[str, int, int]] = []
    for b, size in sizes.items():
        if not size:
            continue
        p = dag.writer.get(b, -1)
        users = dag.readers.get(b, [])
        last = n if b in out_roots else max(users, default=p)
        if last - p > 1:
            spans.append((b, p, last))
    desc = _descendants(dag) if spans else []

    def after(v: int, u: int) -> bool:  # u must run after v in every order
        return bool((desc[v] >> u) & 1) if desc else u > v

    # Buffers live at an operator in every order that it neither reads nor writes.
    passing: list[list[str]] = [[] for _ in range(n)]
    for b, p, last in spans:
        mask = 0
        users = dag.readers.get(b, [])
        for u in users:
            mask |= 1 << u
        output = b in out_roots
        for v in range(p + 1, min(last, n)):
            if p >= 0 and not (desc[p] >> v) & 1:
                continue  # v may run before the producer
            if (output or desc[v] & mask) and not (mask >> v) & 1:
                passing[v].append(b)

    node_of = [step_node(graph, live.steps[k]) for k in dag.steps]
    fusable = _fusable(dag, node_of, caps, sizes, in_roots | out_roots)
    links: dict[int, set[int]] = {}
    for p, users in fusable.values():
        for u in users:
            links.setdefault(p, set()).add(u)
            links.setdefault(u, set()).add(p)
    at = _Context(dag, node_of, caps, sizes, passing, fusable, links, out_roots, after)
    # An operator run alone bounds what any group around it holds from above: only
    # operators whose lone figure beats the floor so far need their groups tried.
    alone = [_alone(v, at) for v in range(n)]
    for v in sorted(range(n), key=alone.__getitem__, reverse=True):
        if prune and alone[v] <= best.bytes:
            break
        found = _least_at(v, at)
        if found.bytes > best.bytes:
            best = found
    return best


def _alone(v: int, at: _Context) -> int:
    """What operator ``v`` holds run alone, its output written over its best dying input."""
    sizes = at.sizes
    reads, writes = at.dag.reads[v], at.dag.writes[v]
    total = sum(sizes.get(b, 0) for b in reads) + sum(sizes.get(b, 0) for b in writes)
    total += sum(sizes[b] for b in at.passing[v])
    if not reads:
        return total
    mode, position = at.caps.overlay(at.node_of[v])
    out = sum(sizes.get(b, 0) for b in writes)
    if mode == "none" or not out:
        return total
    operands = reads if position is None else reads[position : position + 1]
    dying = [
        sizes[b]
        for b in operands
        if sizes.get(b)
        and b not in at.outputs
        and not any(u != v and at.after(v, u) for u in at.dag.readers.get(b, ()))
    ]
    if not dying:
        return total
    return total - min(sum(dying) if mode == "all" else max(dying), out)


def _fusable(
    dag: _Dag, node_of: list[Node], caps: Capabilities, sizes: dict[str, int], io: set[str]
) -> dict[str, tuple[int, list[int]]]:
    """Buffers the family may fuse away: buffer -> (producer, readers)."""
    found: dict[str, tuple[int, list[int]]] = {}
    for b, p in dag.writer.items():
        users = dag.readers.get(b, [])
        if not users or b in io or not sizes.get(b):
            continue
        if caps.fuses(node_of[p], [node_of[u] for u in users]):
            found[b] = (p, users)
    return found


def _groups(v: int, links: dict[int, set[int]]) -> tuple[list[frozenset[int]], bool]:
    """Connected groups of fusable neighbours containing ``v`` (up to _MAX_GROUP members,
    _MAX_GROUPS groups), and whether they are all of them (False: the search stopped at a
    limit with groups left untried)."""
    seen: set[frozenset[int]] = {frozenset({v})}
    frontier = [frozenset({v})]
    complete = True
    while frontier:
        if len(seen) >= _MAX_GROUPS:
            return list(seen), False
        grown = []
        for group in frontier:
            if len(group) >= _MAX_GROUP:
                complete = complete and all(w in group for u in group for w in links.get(u, ()))
                continue
            for u in group:
                for w in links.get(u, ()):
                    bigger = group | {w}
                    if w not in group and bigger not in seen:
                        seen.add(bigger)
                        grown.append(bigger)
        frontier = grown
    return list(seen), complete


@dataclass
class _Context:
    dag: _Dag
    node_of: list[Node]
    caps: Capabilities
    sizes: dict[str, int]
    passing: list[list[str]]
    fusable: dict[str, tuple[int, list[int]]]
    links: dict[int, set[int]]
    outputs: set[str]
    after: Callable[[int, int], bool]


def _least_at(v: int, at: _Context) -> Floor:
    """The least any schedule holds while operator ``v`` runs (alone or fused)."""
    dag, sizes = at.dag, at.sizes
    groups, complete = _groups(v, at.links) if v in at.links else ([frozenset({v})], True)
    if not complete:
        # a group left untried may hold less than every group tried (a chain of more
        # fusable operators than _MAX_GROUP, fused whole): no figure here is a floor
        return Floor(0, at.node_of[v].name)
    best: Floor | None = None
    for group in groups:
        internal = {
            b
            for u in group
            for b in dag.writes[u]
            if b in at.fusable and all(r in group for r in at.fusable[b][1])
        }
        if len(group) > 1 and not internal:
            continue
        held: dict[str, None] = {}
        ext_reads: list[str] = []
        ext_writes: list[str] = []
        for u in sorted(group):
            for b in dag.reads[u]:
                if b not in internal and dag.writer.get(b) not in group:
                    ext_reads.append(b)
                held.setdefault(b)
            for b in dag.writes[u]:
                if b not in internal:
                    ext_writes.append(b)
                held.setdefault(b)
            for b in at.passing[u]:
                held.setdefault(b)
        counted = [b for b in held if b not in internal and sizes.get(b)]
        total = sum(sizes[b] for b in counted)
        saved, over = _in_place(group, at, ext_reads, ext_writes)
        figure = total - saved
        if best is None or figure < best.bytes:
            name = "+".join(at.node_of[u].name for u in sorted(group))
            best = Floor(
                figure, name, counted, {b: sizes[b] for b in counted}, sorted(internal), over,
                saved,
            )
    assert best is not None
    return best


def _in_place(
    group: frozenset[int], at: _Context, ext_reads: list[str], ext_writes: list[str]
) -> tuple[int, list[str]]:
    """Bytes saved by writing the group's outputs over its dying inputs, and those inputs."""
    dag, sizes = at.dag, at.sizes
    members = sorted(group)
    modes = [at.caps.overlay(at.node_of[u]) for u in members]
    if any(mode == "none" for mode, _ in modes):
        return 0, []
    out_bytes = sum(sizes.get(b, 0) for b in dict.fromkeys(ext_writes))
    if not out_bytes:
        return 0, []
    allowed: set[str] | None = None
    if len(members) == 1 and modes[0][1] is not None:
        position = modes[0][1]
        operands = dag.reads[members[0]]
        allowed = {operands[position]} if position < len(operands) else set()

    def dies(b: str) -> bool:
        if b in at.outputs or not sizes.get(b):
            return False
        return not any(
            u not in group and any(at.after(g, u) for g in members)
            for u in dag.readers.get(b, [])
        )

    dying = [b for b in dict.fromkeys(ext_reads) if dies(b) and (allowed is None or b in allowed)]
    if not dying:
        return 0, []
    if all(mode == "all" for mode, _ in modes):
        total = sum(sizes[b] for b in dying)
        return min(total, out_bytes), sorted(dying)
    biggest = max(dying, key=lambda b: sizes[b])
    return min(sizes[biggest], out_bytes), [biggest]
