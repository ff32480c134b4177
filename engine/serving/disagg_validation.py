"""Score `serve_disaggregated` against the measured disaggregated runs of aiconfigurator-core (silicon_sample.csv).

A disagg row gives the prefill and decode layouts (tp, pp, attention_dp, moe_tp, moe_ep), the batch size of
each side and, for some rows, the number of prefill and decode workers; the client concurrency equals
decode batch x decode workers x decode attention_dp on every row that has workers. `express_disaggregated`
maps a row as engine/serving/validation.py maps an aggregated one (same device, model and dtype rules;
attention_dp -> dp, moe_tp x moe_ep -> ep for MoE models), with:
- prefill_max_batch -> the prompts a prefill replica admits at once; decode_max_batch -> max_batch (per
  decode replica);
- the KV link from the workbook (kv_transfer.workbook_link: scale-up inside one NVLink domain, else the NIC);
- the backend's host-side times fitted on the aggregated runs (nothing is fitted on these runs).
Rows without worker counts cannot be expressed: the pool sizes set the decode batch and the prefill load.
"""

from __future__ import annotations

import pandas as pd

from engine.serving.backends import BACKENDS
from engine.serving.validation_express import ModelSource, _whole, family_of, model_and_dtypes

NO_WORKERS = "no prefill/decode worker counts in the file (pool sizes unknown)"


def concurrency_of(run):
    """The run's client concurrency (its source note), else decode batch x workers x attention_dp, else None."""
    if pd.notna(run.concurrency):
        return int(run.concurrency)
    if pd.notna(run.decode_max_batch) and pd.notna(run.decode_num_workers):
        return int(run.decode_max_batch) * int(run.decode_num_workers) * _whole(run.decode_attention_dp)
    return None


def _side(run, side: str, moe: bool) -> dict:
    get = lambda name: getattr(run, f"{side}_{name}")   # noqa: E731
    ep = _whole(get("moe_ep")) * _whole(get("moe_tp")) if moe else 1
    return {"tp": _whole(get("tp")), "pp": _whole(get("pp")), "dp": _whole(get("attention_dp")), "ep": ep}


def express_disaggregated(run, devices: dict, models: ModelSource):
    """(hardware, model, serve_disaggregated() arguments) for a measured disagg run, or why it cannot be."""
    hardware = devices.get(run.device) if isinstance(run.device, str) else None
    if hardware is None:
        return f"system {run.system} has no workbook device"
    if run.mode != "disagg":
        return "aggregated run (scored by benchmarks/serving_accuracy.py)"
    if pd.isna(run.prefill_num_workers) or pd.isna(run.decode_num_workers):
        return NO_WORKERS
    if concurrency_of(run) is None:
        return "no concurrency in the file"
    found = model_and_dtypes(run, hardware, models)
    if isinstance(found, str):
        return found
    model, dtypes = found
    moe = getattr(model, "is_moe", False)
    prefill, decode = _side(run, "prefill", moe), _side(run, "decode", moe)
    for name, layout in (("prefill", prefill), ("decode", decode)):
        if layout["dp"] > 1 and layout["ep"] <= layout["tp"] and moe:
            return f"{name} attention data parallelism without an expert-parallel group spanning the replicas"
    arguments = dict(prefill_layout=prefill, decode_layout=decode, prefill_workers=int(run.prefill_num_workers),
                     decode_workers=int(run.decode_num_workers),
                     prefill_max_batch=_whole(run.prefill_max_batch), max_batch=_whole(run.decode_max_batch),
                     concurrency=int(concurrency_of(run)), input_length=int(run.input_length),
                     output_length=int(run.output_length), weight_dtype=dtypes[0], activation_dtype=dtypes[1],
                     kv_dtype=dtypes[2])
    return hardware, model, arguments


def score_disaggregated_runs(runs: pd.DataFrame, devices: dict, root, method: str = "realistic",
                             **serving_fields) -> pd.DataFrame:
    """One row per disagg run: measured and predicted TTFT/TPOT, the KV transfer and the limiting pool, or
    `reason` where the run is not expressed (the columns engine.serving.validation.errors/summary read).
    `serving_fields` (ServingOptions fields) apply to every run."""
    from engine.serving.disagg import serve_disaggregated
    models = ModelSource(root)
    rows = []
    for run in runs.itertuples(index=False):
        base = dict(system=run.system, device=run.device, backend=run.backend, model_path=run.model_path,
                    family=family_of(run.model_path), concurrency=concurrency_of(run), input_length=run.input_length,
                    output_length=run.output_length, quant=run.gemm_quant_mode,
                    prefill_workers=run.prefill_num_workers, decode_workers=run.decode_num_workers,
                    measured_ttft_s=run.ttft_s, measured_tpot_s=run.tpot_s)
        expressed = express_disaggregated(run, devices, models)
        if isinstance(expressed, str):
            rows.append({**base, "reason": expressed})
            continue
        hardware, model, arguments = expressed
        backend = run.backend if run.backend in BACKENDS else "generic"
        try:
            result = serve_disaggregated(model, hardware, hardware, method=method, backend=backend,
                                         **{**arguments, **serving_fields})
        except ValueError as error:
            reason = str(error).splitlines()[0].replace(str(model.name), run.model_path)
            rows.append({**base, "reason": reason[:160]})
            continue
        rows.append({**base, "reason": "", "ttft_s": result.ttft_s, "tpot_s": result.tpot_s,
                     "kv_transfer_s": result.kv_transfer_s, "bound": result.bound, "devices": result.devices,
                     "decode_batch": result.decode_batch})
    return pd.DataFrame(rows)
