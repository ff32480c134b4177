"""Monotonicity hunt: more hardware never slower, larger never faster, never faster than the roofline (issue 12's tests
name "more bandwidth never slower"; tests/test_realistic_properties.py draws 30 cases per property, this many more).

Properties, on engine.estimate for every workbook device (engine.load_specs()), dense, MoE and MLA models, every phase,
batch 1-256, prompts 1-32k, weights bf16 / fp8 / int4 / nvfp4 / mxfp4 / int8 / block-scaled, KV cache bf16 / fp8,
tp / pp / ep layouts, overlap and collective algorithms, methods roofline, realistic, realistic-graph, hierarchical:
  hardware  one workbook field better (benchmarks/monotonicity_checks.py KNOBS: bandwidth, cores, clock, matrix rates,
            vector rate, caches, links, latencies, achievable fractions) x 1.01-4: no total (total_time_s, ttft_s,
            tpot_s) and no kernel slower (a fused attention group summed: one launch; time_s x count);
  larger    the same phase with more work: a longer prompt or larger batch (prefill, request), a longer context or
            larger batch (decode), a longer decode context (chunked: the seed's average chunk, whose prefill / decode
            mix follows the lengths, so only its context grows), more output tokens (request): never faster; a request's
            kernels are means over its steps, and a prefill split into another number of pipeline micro-batches runs
            other kernels, so only their totals count (labelled "micro-batches change"; a chunked_prefill request's
            schedule changes with its lengths: "chunked schedule");
  roofline  realistic, realistic-graph and hierarchical never faster than the roofline, in total and per kernel.
Relative tolerance 1e-9. Violations are grouped by (property, method, knob, metric or kernel), the worst case of each
printed with how often it was seen. Known classes (2026-11-28, the integrator's report): collective latency grows with
the last-level cache (collectives' latency_llc_share); the shipped norm class shares gamma out over the tokens
(KernelClass.row_weights_cached); the fused attention kernel's offset max(rows' ideal sum - t0, 0) grows where t0
falls faster than the rows' ideals (engine/estimators/realistic_fused.py shared_kernel_s); pipeline micro-batches are
the largest divisor of the batch up to pp (batch 4 at pp 2 runs 2 micro-batches, batch 5 one); a chunked_prefill
request's mean TPOT falls as its output grows (fewer of its steps share an iteration with prompt chunks).

Run: .venv/bin/python benchmarks/monotonicity_hunt.py [--examples N] [--grid] [--database DIR] [--skip-knobs a,b]
  --examples N   hypothesis examples per property (default 2000; a fresh database: --database under /tmp)
  --grid         instead, the dense threshold grids (decode contexts around the split-KV threshold, prompts around
                 tile edges, batches 1 / 16 / 256, both cache widths, every device; ~3 CPU min)
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis import target as hypothesis_target  # noqa: E402
from hypothesis.database import DirectoryBasedExampleDatabase  # noqa: E402
from pydantic import ValidationError  # noqa: E402

import engine  # noqa: E402
from benchmarks.monotonicity_checks import KNOBS, LOG, below_roofline, compare, improved  # noqa: E402
from engine.results.run import ScenarioError  # noqa: E402

SPECS = engine.load_specs()
DEVICES = list(SPECS)
MODELS = ["meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-70B", "Qwen/Qwen3-8B", "Qwen/Qwen3-30B-A3B",
          "openai/gpt-oss-20b", "openai/gpt-oss-120b", "mistralai/Mixtral-8x7B-v0.1", "deepseek-ai/DeepSeek-V3"]
MOE = ("Qwen/Qwen3-30B-A3B", "openai/gpt-oss-20b", "openai/gpt-oss-120b", "mistralai/Mixtral-8x7B-v0.1",
       "deepseek-ai/DeepSeek-V3")
METHODS = ["roofline", "realistic", "realistic-graph", "hierarchical"]
_MODELS = {}

# lengths near thresholds, each +-1: the split-KV threshold of 32,768 values per head (256 tokens at head dim 128,
# 512 at 64, 57 at MLA's 576), powers of two and tile multiples
EDGES = sorted({edge + step for edge in (16, 32, 56, 57, 64, 128, 132, 256, 264, 512, 1024, 2048, 4096, 8192, 16384,
                                         32768) for step in (-1, 0, 1)})
LENGTHS = st.one_of(st.integers(1, 32768), st.sampled_from(EDGES), st.integers(1, 600))
BATCHES = st.one_of(st.integers(1, 256), st.sampled_from([1, 2, 3, 4, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65,
                                                          127, 128, 129, 255, 256]))
WEIGHTS = st.sampled_from(["bf16", "fp8", "int4", "nvfp4", "mxfp4", "int4_g128", "int8", "fp8_g128"])


def model_of(model_id: str):
    if model_id not in _MODELS:
        _MODELS[model_id] = engine.load_model(model_id)
    return _MODELS[model_id]


def target(value: float, label: str) -> None:
    """hypothesis.target inside a hypothesis test (steers the search to larger violations); nothing in the grids."""
    try:
        hypothesis_target(float(value), label=label)
    except Exception:       # outside a hypothesis test
        pass


@st.composite
def scenarios(draw, model_id: str) -> dict:
    """Scenario fields of any phase, dtypes and layout (build() validates them; invalid ones are counted, not run)."""
    phase = draw(st.sampled_from(["prefill", "decode", "chunked", "request"]))
    tp = draw(st.sampled_from([1, 1, 1, 2, 4, 8]))
    fields = dict(phase=phase, batch=draw(BATCHES), input_length=draw(LENGTHS), output_length=draw(st.integers(1, 24)),
                  chunk_size=draw(st.sampled_from([16, 64, 256, 512, 2048]) | st.integers(16, 4096)),
                  weight_dtype=draw(WEIGHTS), activation_dtype=draw(st.sampled_from(["bf16", "bf16", "fp8"])),
                  kv_dtype=draw(st.sampled_from(["bf16", "fp8"])), tp=tp, overlap_communication=draw(st.booleans()),
                  collective_algorithm=draw(st.sampled_from(["ring", "tree"])))
    if draw(st.integers(0, 5)) == 0:
        fields["pp"] = 2
    if model_id in MOE:
        fields.update(ep=draw(st.sampled_from([1, tp, 2 * tp])), routing_skew=draw(st.sampled_from([0.0, 0.5, 1.2])),
                      moe_dispatch=draw(st.sampled_from(["all_to_all", "all_reduce"])))
    if "DeepSeek" in model_id:
        fields["mla_decode"] = draw(st.sampled_from(["absorbed", "absorbed", "naive"]))
    if phase == "decode" and draw(st.booleans()):
        fields["context_length"] = draw(LENGTHS)
    if phase == "request" and draw(st.integers(0, 2)) == 0:
        fields.update(chunked_prefill=True, chunk_size=max(fields["chunk_size"], fields["batch"]))
    if phase == "request" and draw(st.integers(0, 3)) == 0:
        fields.update(output_length=draw(st.integers(1, 4)), input_length=min(fields["input_length"], 8192))
    return fields


def build(fields: dict):
    try:
        return engine.Scenario(**fields)
    except (ValidationError, ValueError) as error:
        LOG.rejected["scenario: " + str(error).splitlines()[-1][:60]] += 1
        return None


def run(hw, model_id: str, scenario, method: str):
    """The estimate, or the error that refuses it (a layout the device's links or the model cannot take)."""
    try:
        return engine.estimate(hw, model_of(model_id), scenario, method=method)
    except (ScenarioError, ValueError) as error:
        LOG.rejected[f"{method}: {str(error)[:60]}"] += 1
        return None


def describe(device: str, model_id: str, fields: dict, method: str, change: str) -> str:
    shown = {k: v for k, v in fields.items() if v not in (None, False) and not (k in ("tp", "pp") and v == 1)}
    return f"{device} {model_id.split('/')[-1]} {method} {shown} {change}"


def hardware_case(device: str, model_id: str, fields: dict, method: str, knob: str, factor: float) -> None:
    """One device improved in one knob: nothing slower."""
    scenario, hw = build(fields), SPECS[device]
    better = improved(hw, knob, factor)
    if scenario is None or better is None:
        LOG.rejected[f"no {knob} field" if better is None else "invalid scenario"] += 1
        return
    base = run(hw, model_id, scenario, method)
    if base is None:
        return
    case = describe(device, model_id, fields, method, f"{knob} x{factor:.4g}")
    try:
        other = engine.estimate(better, model_of(model_id), scenario, method=method)
    except (ScenarioError, ValueError) as error:
        LOG.violation(("hardware", method, knob, "refused after the improvement"), 1.0, f"{case}: {error}")
        return
    target(compare("hardware", method, knob, base, other, case), label="hardware")


# what "larger" grows per phase (module docstring)
GROWS = {"prefill": ("input_length", "batch"), "decode": ("input_length", "batch", "context_length"),
         "chunked": ("context_length",), "request": ("input_length", "batch", "output_length")}


def grown(fields: dict, grow: str, extra: int):
    """(base fields, larger fields), or None where `grow` does not apply to the phase."""
    phase = fields["phase"]
    if grow not in GROWS[phase]:
        return None
    base, bigger = dict(fields), dict(fields)
    if grow == "context_length":
        if base.get("context_length") is None:      # the phase's own default context, made explicit
            base["context_length"] = (fields["input_length"] if phase == "decode"
                                      else fields["input_length"] + fields["output_length"] // 2)
        bigger["context_length"] = base["context_length"] + extra
        return base, bigger
    if grow == "input_length" and phase == "decode" and base.get("context_length") is not None:
        return None                                  # an explicit context: the prompt length changes nothing
    bigger[grow] += extra
    if grow == "batch" and fields.get("chunked_prefill") and bigger["batch"] > bigger["chunk_size"]:
        return None
    return base, bigger


def larger_case(device: str, model_id: str, fields: dict, method: str, grow: str, extra: int) -> None:
    """The same phase with more work: never faster; and the realistic / hierarchical estimate never beats the
    roofline."""
    pair = grown(fields, grow, extra)
    if pair is None:
        LOG.rejected[f"{grow} does not grow a {fields['phase']}"] += 1
        return
    scenario, larger = build(pair[0]), build(pair[1])
    hw = SPECS[device]
    base = run(hw, model_id, scenario, method) if scenario is not None and larger is not None else None
    other = run(hw, model_id, larger, method) if base is not None else None
    if other is None:
        return
    label = grow
    if scenario.prefill_micro_batches != larger.prefill_micro_batches and fields["phase"] in ("prefill", "request"):
        label = grow + " (micro-batches change)"
    if fields.get("chunked_prefill"):
        label = grow + " (chunked schedule)"
    case = describe(device, model_id, pair[0], method, f"{grow} +{extra}")
    rows = fields["phase"] != "request" and label == grow
    target(compare("larger", method, label, base, other, case, expect="not_faster", rows=rows), label="larger")
    if method != "roofline":
        roofline = run(hw, model_id, scenario, "roofline")
        if roofline is not None:
            target(below_roofline(method, base, roofline, case), label="roofline")


def hunt(examples: int, database: str, knobs: list[str]) -> None:
    """The two hypothesis searches (the roofline property rides on the larger one's base estimates)."""
    common = settings(max_examples=examples, deadline=None, database=DirectoryBasedExampleDatabase(database),
                      suppress_health_check=list(HealthCheck), derandomize=False)

    @common
    @given(data=st.data(), device=st.sampled_from(DEVICES), model_id=st.sampled_from(MODELS),
           method=st.sampled_from(METHODS + ["realistic", "realistic"]), knob=st.sampled_from(knobs),
           factor=st.one_of(st.floats(1.01, 4.0), st.sampled_from([1.01, 1.5, 2.0, 4.0])))
    def more_hardware(data, device, model_id, method, knob, factor):
        hardware_case(device, model_id, data.draw(scenarios(model_id)), method, knob, factor)

    @common
    @given(data=st.data(), device=st.sampled_from(DEVICES), model_id=st.sampled_from(MODELS),
           method=st.sampled_from(METHODS + ["realistic"]),
           grow=st.sampled_from(["input_length", "batch", "context_length", "output_length"]),
           extra=st.one_of(st.integers(1, 8), st.integers(1, 5000)))
    def larger(data, device, model_id, method, grow, extra):
        larger_case(device, model_id, data.draw(scenarios(model_id)), method, grow, extra)

    for search in (more_hardware, larger):
        start = time.process_time()
        search()
        print(f"{search.__name__}: {examples} examples, {time.process_time() - start:.0f} CPU s", flush=True)


GRID_MODELS = ["meta-llama/Llama-3.1-8B", "openai/gpt-oss-20b", "deepseek-ai/DeepSeek-V3", "Qwen/Qwen3-30B-A3B"]
GRID_CONTEXTS = [56, 57, 58, 127, 128, 129, 255, 256, 257, 511, 512, 513, 1023, 1024, 1025, 4095, 4096, 4097, 32767,
                 32768]
GRID_PROMPTS = [1, 2, 63, 64, 65, 127, 128, 129, 255, 256, 257, 1024, 1025, 4096, 4097]
GRID_KNOBS = [("memory_bandwidth", 1.01), ("memory_bandwidth", 2.0), ("cores", 1.01), ("clock", 1.01),
              ("matrix_rate", 1.5), ("vector_rate", 1.5)]


def grid(methods=("realistic",), batches=(1, 16, 256)) -> None:
    """Dense grids around the thresholds (module docstring): each point improved by GRID_KNOBS and grown by one."""
    start = time.process_time()
    for device, model_id, method, batch, kv in itertools.product(DEVICES, GRID_MODELS, methods, batches,
                                                                ("bf16", "fp8")):
        for phase, lengths in (("decode", GRID_CONTEXTS), ("prefill", GRID_PROMPTS)):
            for length in lengths:
                if phase == "prefill" and batch * length > 300_000:
                    continue
                fields = dict(phase=phase, batch=batch, input_length=length, kv_dtype=kv)
                for knob, factor in GRID_KNOBS:
                    hardware_case(device, model_id, fields, method, knob, factor)
                larger_case(device, model_id, fields, method, "input_length", 1)
                if phase == "decode":
                    larger_case(device, model_id, fields, method, "batch", 1)
    print(f"grid: {time.process_time() - start:.0f} CPU s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=2000, help="hypothesis examples per property")
    parser.add_argument("--database", default="/tmp/monotonicity_hunt_db", help="hypothesis example database")
    parser.add_argument("--grid", action="store_true", help="the dense threshold grids instead of hypothesis")
    parser.add_argument("--skip-knobs", default="", help="comma-separated knobs left out (a known violation's, e.g. "
                                                           "llc, so that the search looks elsewhere)")
    args = parser.parse_args()
    knobs = [knob for knob in KNOBS if knob not in args.skip_knobs.split(",")]
    print(f"devices: {', '.join(DEVICES)}\nmodels: {', '.join(MODELS)}\nmethods: {', '.join(METHODS)}\n"
          f"knobs: {', '.join(knobs)}", flush=True)
    if args.grid:
        grid()
    else:
        hunt(args.examples, args.database, knobs)
    LOG.report()


if __name__ == "__main__":
    main()
