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
    engine.serving_search(hw, model, devices=8, sla=engine.serving.SLA(ttft_max_s=0.5, tpot_max_s=0.02))  # design space

Disaggregated serving (prefill pool on one device, decode pool on another, KV cache over a link):
    from engine.serving import serve_disaggregated, compare_with_aggregated, KVLink, balance_pools
    r = serve_disaggregated(model, hw_p, hw_d, {"tp": 2}, {"tp": 4}, prefill_workers=1, decode_workers=2,
                            concurrency=64, input_length=1024, output_length=256)
    r.ttft_s, r.tpot_s, r.kv_transfer_s, r.tokens_per_s_per_device, r.bound
"""

from engine.serving.presets import WORKLOAD_LABELS, WORKLOADS, workload_lengths
from engine.serving.speculative import SpeculativeDecoding, expected_tokens_per_step
from engine.serving.curve import doubling_concurrencies, serving_curve
from engine.serving.disagg import DisaggregatedResult, compare_with_aggregated, serve_disaggregated
from engine.serving.disagg_balance import balance_pools, disaggregated_candidates, pool_rates
from engine.serving.kv_transfer import KVLink, transfer_seconds, workbook_link
from engine.serving.options import ServingOptions
from engine.serving.scheduler import ServingCapacityError, schedule
from engine.serving.search import SearchResult, serving_search
from engine.serving.simulate import ServingResult, serve
from engine.serving.sla import SLA

__all__ = ["DisaggregatedResult", "KVLink", "SLA", "SearchResult", "ServingCapacityError", "ServingOptions",
           "ServingResult", "SpeculativeDecoding", "WORKLOADS", "WORKLOAD_LABELS", "balance_pools",
           "compare_with_aggregated", "disaggregated_candidates", "doubling_concurrencies", "expected_tokens_per_step",
           "pool_rates", "schedule", "serve", "serve_disaggregated", "serving_curve", "serving_search",
           "transfer_seconds", "workbook_link", "workload_lengths"]
