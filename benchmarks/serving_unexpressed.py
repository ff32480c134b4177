"""Count the measured serving runs (silicon_sample.csv) that `serve` cannot express, by reason and model.

    python benchmarks/serving_unexpressed.py [--mode agg|disagg|all]

Aggregated runs go through engine.serving.validation.express and then the checks serve() makes before it
simulates (the parallel layout, the weights fitting the devices), without simulating. Disaggregated runs
are counted by their prefill and decode layouts expressed the same way (each worker as an agg layout).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.serving import validation  # noqa: E402
from engine.calibration.silicon.package import resolve_root  # noqa: E402
from engine.calibration.silicon.serving import read_serving_runs  # noqa: E402
from engine.hardware.specs import load_specs  # noqa: E402


def layout_reason(hardware, model, fields: dict) -> str:
    """'' when serve() would accept the run's layout, else the first line of its error."""
    from engine.workload.parallel import parallel_layout
    from engine.serving.simulate import split_fields
    from engine.workload.scenario import Scenario
    from engine.results.run import check_fits_model
    scenario_fields, _ = split_fields(fields)
    try:
        scenario = Scenario.model_validate({"phase": "request", "batch": 1, "input_length": fields["input_length"],
                                            "output_length": fields["output_length"], **scenario_fields})
        check_fits_model(model, scenario)
        replica = scenario if scenario.ep > scenario.tp else scenario.model_copy(update={"dp": 1})
        parallel_layout(model, replica)
    except ValueError as error:
        text = " ".join(str(error).split())
        return text.replace(str(model.name), "<model>")[:110]
    return ""


def reasons(runs: pd.DataFrame, devices: dict, root) -> pd.DataFrame:
    models = validation.ModelSource(root)
    rows = []
    for run in runs.itertuples(index=False):
        if run.mode == "disagg":   # count the decode worker's layout, the part TPOT comes from
            run = run._replace(mode="agg", tp=run.decode_tp, pp=run.decode_pp, attention_dp=run.decode_attention_dp,
                               moe_tp=run.decode_moe_tp, moe_ep=run.decode_moe_ep,
                               max_batch=run.decode_max_batch)
        expressed = validation.express(run, devices, models)
        reason = expressed[:110] if isinstance(expressed, str) else layout_reason(*expressed)
        rows.append({"model_path": run.model_path, "system": run.system, "tp": run.tp,
                     "attention_dp": run.attention_dp, "moe_tp": run.moe_tp, "moe_ep": run.moe_ep,
                     "reason": reason})
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("agg", "disagg", "all"), default="all")
    args = parser.parse_args(argv)
    root = resolve_root()
    runs = read_serving_runs(root)
    devices = load_specs()
    for mode in ("agg", "disagg") if args.mode == "all" else (args.mode,):
        part = runs[runs["mode"] == mode]
        found = reasons(part, devices, root)
        bad = found[found["reason"] != ""]
        print(f"\n== {mode}: {len(part)} runs, {len(part) - len(bad)} expressed, {len(bad)} not")
        print(bad["reason"].value_counts().to_string())
        print("\nby model (runs not expressed):")
        print(bad.groupby(["model_path", "reason"]).size().to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
