"""The parallel layouts a serving search tries on a number of devices (engine/workload/parallel.py).

Every (tp, pp, dp) with tp x pp x dp = devices, and for a mixture-of-experts model every expert-parallel
width ep that engine/workload/parallel.py accepts: ep = 1 (each device holds every expert, split over tp), or ep a
multiple of tp that divides tp x dp and num_experts (whole experts per device). ep > tp is attention data
parallelism: attention runs on dp replicas of tp devices while the experts are spread over the ep
devices of several replicas (as engine.serve() treats it). A layout the model cannot be split into is
kept with the reason (ParallelismError's message), so the search can name it.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.workload.parallel import ParallelismError, parallel_layout
from engine.workload.scenario import Scenario


@dataclass(frozen=True)
class Layout:
    tp: int
    pp: int
    dp: int
    ep: int = 1

    @property
    def devices(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def attention_dp(self) -> bool:
        """Experts spread over more devices than one replica's tp group (attention data parallelism)."""
        return self.ep > self.tp

    @property
    def unit_devices(self) -> int:
        """Devices of the smallest independent copy: one replica (tp x pp), or with attention data
        parallelism the replicas its expert-parallel group spans (tp x pp x dp)."""
        return self.devices if self.attention_dp else self.tp * self.pp

    @property
    def name(self) -> str:
        return f"TP{self.tp} PP{self.pp} DP{self.dp} EP{self.ep}"

    def fields(self) -> dict:
        return {"tp": self.tp, "pp": self.pp, "dp": self.dp, "ep": self.ep}


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def enumerate_layouts(model, devices: int) -> list[Layout]:
    """Every layout of exactly `devices` devices (module docstring), dividing or not."""
    if isinstance(devices, bool) or not isinstance(devices, int) or devices < 1:
        raise ValueError(f"devices = {devices!r}: expected a whole number of devices >= 1")
    moe = bool(getattr(model, "is_moe", False))
    layouts = []
    for tp in divisors(devices):
        for pp in divisors(devices // tp):
            dp = devices // (tp * pp)
            layouts.append(Layout(tp, pp, dp, 1))
            if moe:
                layouts.extend(Layout(tp, pp, dp, ep) for ep in divisors(tp * dp)
                               if ep > 1 and ep % tp == 0 and model.num_experts % ep == 0)
    return layouts


def layout_problem(model, layout: Layout) -> str:
    """"" when the model splits into `layout`, else why not (names the parallel field and model field)."""
    try:
        scenario = Scenario(phase="decode", **layout.fields())
        parallel_layout(model, scenario)
    except (ParallelismError, ValueError) as error:
        return " ".join(str(error).split())
    return ""


def check_layouts(layouts) -> list[Layout]:
    """Layouts given by the caller: Layout objects or dicts/tuples of (tp, pp, dp[, ep])."""
    out = []
    for position, item in enumerate(layouts):
        if isinstance(item, Layout):
            out.append(item)
        elif isinstance(item, dict):
            unknown = set(item) - {"tp", "pp", "dp", "ep"}
            if unknown:
                raise ValueError(f"layouts[{position}] has unknown field(s) {sorted(unknown)}; expected tp, pp, dp, ep")
            out.append(Layout(int(item.get("tp", 1)), int(item.get("pp", 1)), int(item.get("dp", 1)),
                              int(item.get("ep", 1))))
        elif isinstance(item, (tuple, list)) and len(item) in (3, 4):
            out.append(Layout(*(int(v) for v in item)))
        else:
            raise ValueError(f"layouts[{position}] = {item!r}: expected a dict with tp, pp, dp (and ep) or a "
                             "(tp, pp, dp[, ep]) tuple")
    return out
