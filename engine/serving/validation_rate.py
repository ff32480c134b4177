"""How much matrix throughput a measured closed-loop serving run implies: a consistency check on the measurements.

A closed loop of C clients, each sending its next request when its previous one ends, completes C / L requests per
second, L = TTFT + (OSL - 1) x TPOT the mean request latency (Little's law, with the run's own measured means). Each
request's ISL prompt tokens and OSL output tokens each pass once through every linear layer a token uses: at least
2 x `linear_params_per_token` FLOP apiece (the active weights without the embedding lookup and the LM head, which a
prefill runs for its last token only; the attention's context products, the norms' work and the decode steps' weight
and KV-cache streaming come on top). So a run needs, per device of its tp x dp group,

    implied rate  >=  C / L x (ISL + OSL) x 2 x linear_params_per_token / devices     FLOP/s

and `implied_peak_share` divides that by the device's matrix peak for the run's compute dtype (the workbook's).
A share above what the model's own GEMMs reach on the device (Llama-3.1-8B's four shapes at m 8192 together: 1.30
PFLOP/s in aiconfigurator's vLLM fp8 table on H200, 0.66 of the 1.98 PFLOP/s peak) means the measured means cannot
both come from a closed loop that prefills every prompt in full on those devices: prompt tokens were skipped (prefix
caching), run elsewhere, or the means are not what the simulation reports. benchmarks/serving_implied_rate.py
prints it per series (docs/serving.md, "vLLM 0.12.0 on H200").
"""

from __future__ import annotations


def linear_params_per_token(model) -> int:
    """Weights of the layers one token passes through: ModelConfig.params_active without the embedding table, the LM
    head (counted for every token by params_active; a prefill runs the head for its last token only) and the final
    norm. The layers' own norm weights stay (0.004% of Llama-3.1-8B's count)."""
    return int(model.params_active - model.params_embedding - model.params_lm_head - model.params_final_norm)


def implied_matrix_rate(model, concurrency: float, input_length: float, output_length: float, ttft_s: float,
                        tpot_s: float, devices: int) -> float:
    """Lower bound of the matrix FLOP/s per device that a closed-loop run with these measured means needs (module
    docstring). ValueError naming the field for a latency that is not positive or a device count below 1."""
    latency = float(ttft_s) + (float(output_length) - 1.0) * float(tpot_s)
    if not latency > 0:
        raise ValueError(f"implied_matrix_rate: TTFT + (OSL - 1) x TPOT must be > 0 s, got {latency!r}")
    if int(devices) < 1:
        raise ValueError(f"implied_matrix_rate: devices must be >= 1, got {devices!r}")
    requests_per_s = float(concurrency) / latency
    tokens = float(input_length) + float(output_length)
    return requests_per_s * tokens * 2.0 * linear_params_per_token(model) / int(devices)


def implied_peak_share(model, hardware, dtype: str, **run) -> float:
    """implied_matrix_rate(model, **run) / the device's matrix peak for `dtype` (Hardware.matrix_flops_per_s)."""
    return implied_matrix_rate(model, **run) / hardware.matrix_flops_per_s(dtype)
