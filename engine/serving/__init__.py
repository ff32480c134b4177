"""Serving at a fixed concurrency: a closed-loop, continuous-batching simulation (docs/serving.md).

    import engine
    result = engine.serve(hw, model, concurrency=32, input_length=1024, output_length=1024, tp=4,
                          weight_dtype="fp8", activation_dtype="fp8", kv_dtype="fp8", method="realistic")
    result.ttft_s, result.tpot_s, result.ttft_p90_s, result.tokens_per_s_per_device
    result.requests, result.iterations
    engine.serve(hw, model, concurrency=32, speculative=SpeculativeDecoding(draft_model=draft, draft_tokens=3,
                 acceptance_rate=0.7))      # speculative decoding (or mtp_layers=1 for the target's MTP layers)
    WORKLOADS["chat"]                       # (input_length, output_length) of a workload preset
    engine.serving.serving_curve(hw, model, [1, 2, 4, 8, 16, 32], input_length=1024)  # one row per concurrency
"""

from engine.serving.presets import WORKLOAD_LABELS, WORKLOADS, workload_lengths
from engine.serving.speculative import SpeculativeDecoding, expected_tokens_per_step
from engine.serving.curve import doubling_concurrencies, serving_curve
from engine.serving.options import ServingOptions
from engine.serving.scheduler import ServingCapacityError, schedule
from engine.serving.simulate import ServingResult, serve

__all__ = ["ServingCapacityError", "ServingOptions", "ServingResult", "doubling_concurrencies", "schedule", "serve",
           "serving_curve"]
