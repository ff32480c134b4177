"""Serving at a fixed concurrency: a closed-loop, continuous-batching simulation (docs/serving.md).

    import engine
    result = engine.serve(hw, model, concurrency=32, input_length=1024, output_length=1024, tp=4,
                          weight_dtype="fp8", activation_dtype="fp8", kv_dtype="fp8", method="realistic")
    result.ttft_s, result.tpot_s, result.ttft_p90_s, result.tokens_per_s_per_device
    result.requests, result.iterations
    engine.serving.serving_curve(hw, model, [1, 2, 4, 8, 16, 32], input_length=1024)  # one row per concurrency
    engine.serving_search(hw, model, devices=8, sla=engine.serving.SLA(ttft_max_s=0.5, tpot_max_s=0.02))  # design space
"""

from engine.serving.curve import doubling_concurrencies, serving_curve
from engine.serving.options import ServingOptions
from engine.serving.scheduler import ServingCapacityError, schedule
from engine.serving.search import SearchResult, serving_search
from engine.serving.simulate import ServingResult, serve
from engine.serving.sla import SLA

__all__ = ["SLA", "SearchResult", "ServingCapacityError", "ServingOptions", "ServingResult", "doubling_concurrencies",
           "schedule", "serve", "serving_curve", "serving_search"]
