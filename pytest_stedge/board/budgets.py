"""What one per-layer run may take, bounded by the network's size.

A board reports each executed c-operator once (N6: each epoch; protocol 8.6), and the
network says how many it has (``n_nodes``, 4.11). So a run gets, per announced node, one op
wait, one small message and, with data, the line time of every buffer the network has
(what one node's tensors can hold): a board dribbling reports to a 1-node network stops in
seconds, not after ``Timeouts.per_layer`` (1 h), and more reports than nodes are refused.
"""

from __future__ import annotations

import math

from .errors import BoardProtocolError
from .messages import Limits, NetworkInfo, Timeouts

_MESSAGE_OVERHEAD = 512  # bytes of an output tensor message besides its data


def run_budget(
    timeouts: Timeouts, limits: Limits, rate: float, info: NetworkInfo, mode: str, *,
    payload: int, header_bytes: int,
) -> float:
    """Seconds one run of ``info`` in ``mode`` may take at ``rate`` bytes/s: the run ack,
    each input's packets (``payload`` bytes each, ``header_bytes`` of header) and its ack,
    the inference, the outputs' messages, one small message of slack, and the node
    reports of a per-layer mode (:func:`per_layer_budget`)."""
    total = timeouts.run_ack + timeouts.op + limits.info_bytes / rate
    for desc in info.inputs:
        packets = math.ceil((desc.nbytes + 16) / payload)
        total += timeouts.input_ack + timeouts.packet_sync + packets * (header_bytes + payload) / rate
    total += sum(d.nbytes + _MESSAGE_OVERHEAD for d in info.outputs) / rate
    return total + per_layer_budget(timeouts, limits, rate, info, mode)


def per_layer_budget(
    timeouts: Timeouts, limits: Limits, rate: float, info: NetworkInfo, mode: str
) -> float:
    """Seconds the node reports of one run in ``mode`` may take, at ``rate`` bytes/s:
    ``n_nodes`` x (op wait + one small message [+ every buffer's line time, with data]),
    at most ``timeouts.per_layer``; a firmware that does not say its buffers' sizes gets
    the ceiling with data. None in mode ``io``."""
    if mode == "io":
        return 0.0
    per_node = timeouts.op + limits.info_bytes / rate
    if mode == "per-layer-data":
        pools = (info.activations_bytes, info.params_bytes)
        if any(p is None for p in pools):
            return timeouts.per_layer
        io = sum(d.nbytes for d in (*info.inputs, *info.outputs))
        per_node += (sum(p or 0 for p in pools) + io) / rate
    return min(timeouts.per_layer, max(info.n_nodes, 1) * per_node)


def node_report_cap(limits: Limits, info: NetworkInfo) -> int:
    """The most node reports one run may send: one per announced node, within
    :attr:`Limits.node_reports`."""
    if info.n_nodes > 0:
        return min(limits.node_reports, info.n_nodes)
    return limits.node_reports


def too_many_reports(where: str, most: int, info: NetworkInfo) -> BoardProtocolError:
    """The error of a run sending more than ``most`` node reports."""
    return BoardProtocolError(f"{where}: more than {most} node reports in one run (the "
                              f"network has {info.n_nodes} node(s)); at most {most} are accepted")
