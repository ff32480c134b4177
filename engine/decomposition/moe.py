"""Mixture-of-experts layers on one device: router, expert dispatch, grouped expert GEMMs, combine.

Formulas and the expert-parallel layout: docs/parallelism.md ("Expert parallelism").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.decomposition.pass_kernels import PassKernels
from engine.kernels.fields import mlp_activation_fields
from engine.models.config import ModelConfig
from engine.workload.parallel import ParallelLayout


def routing_probabilities(num_experts: int, experts_per_token: int, routing_skew: float = 0.0) -> np.ndarray:
    """Per-token probability p_e that a token picks expert e (experts by popularity rank, sum p_e = k).

    routing_skew s is a Zipf exponent: p_e proportional to rank^-s, capped at 1 (a token picks an expert
    at most once) with the excess shared among the others in the same proportions (water-filling), so
    that every token still picks exactly k experts on average. s = 0: uniform, p_e = k / E.
    """
    k, experts = float(experts_per_token), int(num_experts)
    if routing_skew == 0:
        return np.full(experts, k / experts)
    weight = np.arange(1, experts + 1, dtype=float) ** -float(routing_skew)
    capped = np.zeros(experts, dtype=bool)
    while not capped.all():
        share = (k - capped.sum()) / weight[~capped].sum()
        p = np.where(capped, 1.0, weight * share)
        if not (p > 1.0).any():
            return p
        capped |= p > 1.0
    return np.ones(experts)


def expected_active_experts(experts_held, num_experts, experts_per_token, tokens, routing_skew: float = 0.0):
    """Experts of the `experts_held` on a device that at least one of `tokens` tokens is routed to.

    With p_e the probability that one token picks expert e (routing_probabilities) and tokens routed
    independently, expert e stays idle with probability (1 - p_e)^tokens, so the expected number of
    distinct experts touched is sum_e [1 - (1 - p_e)^tokens] (linearity of expectation; exact for these
    marginals). Uniform routing (routing_skew 0): E x (1 - (1 - k / E)^tokens). A device holding
    `experts_held` of the E experts touches that share of them (the mean over the expert-parallel
    devices). Only these experts' weights are read."""
    tokens = np.asarray(tokens, dtype=float)
    if routing_skew == 0:
        return experts_held * (1.0 - (1.0 - experts_per_token / num_experts) ** tokens)
    p = routing_probabilities(num_experts, experts_per_token, routing_skew)
    idle = (1.0 - p[:, None]) ** tokens.reshape(1, -1)
    touched = (1.0 - idle).sum(axis=0).reshape(tokens.shape)
    return experts_held / num_experts * touched


def add_moe_block(kernels: PassKernels, model: ModelConfig, layout: ParallelLayout, count,
                  routing_skew: float = 0.0, moe_dispatch: str = "all_to_all") -> None:
    """One MoE MLP on one device (docs/parallelism.md): router, [dispatch], routed experts as grouped
    GEMMs over the experts the tokens reach, [combine], weighted sum of the k outputs, shared experts.
    `moe_dispatch` "all_reduce" with ep = tp > 1: every rank routes all the (replicated) tokens and runs its own
    experts on the T x k / ep pairs that reach them, no all-to-all; the MoE all-reduce sums the outputs."""
    hidden, k, tp, ep = model.hidden_size, model.experts_per_token, layout.tp, layout.ep
    activation = kernels.value_bytes.activation
    tokens = kernels.tokens
    replicated = moe_dispatch == "all_reduce" and 1 < ep <= tp
    dispatched = ep > 1 and not replicated
    routed_tokens = tokens / tp if dispatched else tokens   # dispatching, each TP rank routes its share of the tokens
    # (token, expert) pairs on the device: sent out = received when dispatched (balanced), else the share of all
    # pairs that reach the device's num_experts / ep experts
    assignments = routed_tokens * k / ep if replicated else routed_tokens * k
    reaching = tokens if replicated else routed_tokens * ep     # tokens able to reach the device's experts
    active = np.maximum(expected_active_experts(layout.experts, model.num_experts, k, reaching, routing_skew), 1e-9)
    experts = RoutedExperts(kernels, assignments, active, count, model.expert_bias, layout.experts)
    inner = layout.expert_intermediate
    router = kernels.gemm("MoE_router", routed_tokens, hidden, model.num_experts, count, model.router_bias,
                          module="router")
    kernels.elementwise("MoE_topk", "topk", topk_fields(routed_tokens, model.num_experts, k, activation), count)
    if dispatched:
        kernels.collective("AllToAll_dispatch", assignments, hidden, assignments * hidden * activation, ep, count,
                           router)
    experts.gemm("Expert_up", hidden, inner)
    if model.gated_mlp:
        experts.gemm("Expert_gate", hidden, inner)
    kernels.elementwise("Expert_act", "activation",
                        mlp_activation_fields(assignments, inner, model.hidden_act, model.gated_mlp, activation), count)
    down = experts.gemm("Expert_down", inner, hidden)
    if dispatched:
        kernels.collective("AllToAll_combine", assignments, hidden, assignments * hidden * activation, ep, count,
                           down)
    kernels.elementwise("MoE_combine", "residual",   # weighted sum of each token's k expert outputs
                        dict(m=routed_tokens, n=hidden, vector_flops=2.0 * assignments * hidden,
                             activation_bytes=(assignments + routed_tokens) * hidden * activation), count)
    shared = layout.shared_intermediate
    if shared:
        kernels.gemm("Shared_up", tokens, hidden, shared, count, model.mlp_bias, module="shared_experts")
        if model.gated_mlp:
            kernels.gemm("Shared_gate", tokens, hidden, shared, count, model.mlp_bias, module="shared_experts")
        kernels.elementwise("Shared_act", "activation",
                            mlp_activation_fields(tokens, shared, model.hidden_act, model.gated_mlp, activation),
                            count)
        down = kernels.gemm("Shared_down", tokens, shared, hidden, count, model.mlp_bias, module="shared_experts")
    if tp > 1:   # partial sums of TP-split experts (or of EP ranks' experts, or their token shares) completed over tp
        kernels.collective("AllReduce_moe", tokens, hidden, tokens * hidden * activation, tp, count, down)


def topk_fields(tokens, num_experts: int, experts_per_token: int, activation_bytes: float) -> dict:
    """The routing kernel after the router GEMM: a softmax over each token's E logits (5 FLOPs each, as the
    attention softmax counts) and the pick of its k experts; reads the logits, writes k (expert id, weight) pairs
    of 4 bytes each. m tokens, n = E logits, k = experts picked."""
    return dict(m=tokens, n=num_experts, k=experts_per_token, vector_flops=5.0 * tokens * num_experts,
                activation_bytes=tokens * (num_experts * activation_bytes + experts_per_token * 8.0))


@dataclass(frozen=True)
class RoutedExperts:
    """The routed experts' grouped GEMMs: `assignments` (token, expert) pairs over `active` experts, each
    expert's weights (and biases with `bias`) read once."""

    kernels: PassKernels
    assignments: object
    active: object
    count: object
    bias: bool
    held: float = 1.0        # experts the device holds: the grouped GEMM's problems (the table's group_size)

    def gemm(self, name: str, k_dim: int, n_dim: int) -> int:
        kernels, assignments, active = self.kernels, self.assignments, self.active
        return kernels.add(name=name, type=kernels.weight_matrix_type, op="gemm", unit="matrix",
                           dtype=kernels.gemm_dtype, m=assignments / active, k=k_dim, n=n_dim, batch=active,
                           count=self.count, macs=assignments * k_dim * n_dim, group_size=self.held,
                           weight_bytes=active * (k_dim * n_dim + (n_dim if self.bias else 0))
                           * kernels.value_bytes.weight,
                           activation_bytes=assignments * (k_dim + n_dim) * kernels.value_bytes.activation)
