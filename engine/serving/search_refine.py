"""Re-simulating, with serve()'s exact evaluation, the screened configurations that decide a search's answer.

The screen (engine/serving/search_screen.py) is within a few percent of serve() on TPOT and tokens/s but
can miss TTFT by tens of percent. So after screening, the configurations that matter are simulated
exactly (engine/serving/search_eval.py, serve()'s numbers) and the front, the SLA marks and the best are
drawn again, until every one of them is exact:

- every configuration on the Pareto front of its device;
- per device, the TOP_BEST with the most tokens/s per device within the SLA;
- per device, the TOP_BEST with more tokens/s per device than the best within the SLA that miss the SLA
  by less than NEAR_MISS (the screen's TTFT error could hide a configuration inside it);
- when none is within the SLA, the TOP_BEST that miss it by the least.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from engine.results.run import ScenarioError
from engine.serving.search_eval import LayoutEvaluator, ScheduleCache
from engine.serving.search_layouts import Layout
from engine.serving.search_run import METRIC_COLUMNS

TOP_BEST = 3
NEAR_MISS = 0.35
MAX_ROUNDS = 12


def wanted(configs: pd.DataFrame, sla) -> pd.Series:
    """The configurations whose exact numbers the answer depends on (module docstring)."""
    want = pd.Series(False, index=configs.index)
    ran = configs[configs["fits"] & (configs["mode"] == "aggregated")]
    for _, group in ran.groupby(["device", "mode"], sort=False):
        want[group.index[group["on_front"].to_numpy(bool)]] = True
        per_device = group["tokens_per_s_per_device"].astype(float)
        inside = group[group["meets_sla"]]
        want[per_device[inside.index].nlargest(TOP_BEST).index] = True
        if sla is None:
            continue
        outside = group[~group["meets_sla"]]
        miss = pd.Series([sla.shortfall(t, p, e) for t, p, e in zip(outside["ttft_s"], outside["tpot_s"],
                                                                      outside["e2e_s"])], index=outside.index)
        if len(inside):
            best = float(per_device[inside.index].max())
            near = miss[(miss < NEAR_MISS) & (per_device[outside.index] > best)]
            want[per_device[near.index].nlargest(TOP_BEST).index] = True
        else:
            want[miss.nsmallest(TOP_BEST).index] = True
    return want


def refine(configs: pd.DataFrame, sla, device_map: dict, model, method: str, base, scenario_fields: dict,
           mark) -> pd.DataFrame:
    """`configs` with the wanted configurations simulated exactly (`exact` True), marked again by `mark`."""
    schedules = {name: ScheduleCache() for name in device_map}
    evaluators: dict = {}
    for _ in range(MAX_ROUNDS):
        todo = configs[wanted(configs, sla) & ~configs["exact"].astype(bool)]
        if todo.empty:
            break
        configs = configs.copy()
        for (device, tp, pp, dp, ep), group in todo.groupby(["device", "tp", "pp", "dp", "ep"], sort=False):
            layout = Layout(int(tp), int(pp), int(dp), int(ep))
            key = (device, layout)
            if key not in evaluators:
                evaluators[key] = LayoutEvaluator(device_map[device], model, method, base,
                                                  {**scenario_fields, **layout.fields()}, schedules[device])
            points = [(int(c), int(b)) for c, b in zip(group["concurrency"], group["token_budget"])]
            for index, result in zip(group.index, evaluators[key].evaluate(points)):
                if isinstance(result, (ScenarioError, ValueError)):
                    configs.loc[index, ["fits", "reason"]] = [False, " ".join(str(result).split())]
                    configs.loc[index, list(METRIC_COLUMNS)] = np.nan
                else:
                    configs.loc[index, list(METRIC_COLUMNS)] = [result[name] for name in METRIC_COLUMNS]
                configs.loc[index, "exact"] = True
        configs = mark(configs, sla)
    return configs
