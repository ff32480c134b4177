"""A serving SLA: the most TTFT, TPOT and request latency a configuration may show (seconds, means).

    sla = SLA(ttft_max_s=0.5, tpot_max_s=0.02)
    sla.check(ttft_s=0.81, tpot_s=0.015, e2e_s=16.2)   # -> "TTFT 0.81 s > 0.5 s"
    sla.shortfall(0.81, 0.015, 16.2)                   # -> 0.62: the worst ratio over a limit, minus 1

A limit left at None is not checked. The numbers checked are the means serve() reports (ttft_s,
tpot_s, e2e_s), as serving benchmarks state their SLAs on means unless they name a percentile.
"""

from __future__ import annotations

import math
from typing import Optional

from pydantic import BaseModel, ConfigDict, Field

_LIMITS = (("ttft_max_s", "TTFT"), ("tpot_max_s", "TPOT"), ("latency_max_s", "request latency"))


class SLA(BaseModel):
    """Service-level limits in seconds (None: no limit on that metric)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ttft_max_s: Optional[float] = Field(None, gt=0, description="most mean time to first token, seconds")
    tpot_max_s: Optional[float] = Field(None, gt=0, description="most mean time per output token, seconds")
    latency_max_s: Optional[float] = Field(None, gt=0, description="most mean request latency, seconds")

    @property
    def is_empty(self) -> bool:
        return all(getattr(self, field) is None for field, _ in _LIMITS)

    def _pairs(self, ttft_s, tpot_s, e2e_s):
        for (field, label), value in zip(_LIMITS, (ttft_s, tpot_s, e2e_s)):
            limit = getattr(self, field)
            if limit is not None:
                yield label, float(value) if value is not None else math.nan, limit

    def check(self, ttft_s, tpot_s, e2e_s) -> str:
        """"" when every limit is met, else one clause per missed limit, e.g. "TTFT 0.81 s > 0.5 s"."""
        misses = []
        for label, value, limit in self._pairs(ttft_s, tpot_s, e2e_s):
            if not value <= limit:       # NaN (not measured) misses too
                shown = "not measured" if math.isnan(value) else _over(value, limit)
                misses.append(f"{label} {shown}")
        return "; ".join(misses)

    def shortfall(self, ttft_s, tpot_s, e2e_s) -> float:
        """How far outside the SLA: the largest value / limit - 1 over the limits (<= 0 when met)."""
        ratios = [value / limit - 1 if not math.isnan(value) else math.inf
                  for _, value, limit in self._pairs(ttft_s, tpot_s, e2e_s)]
        return max(ratios, default=0.0)

    def describe(self) -> str:
        parts = [f"{label} <= {_seconds(getattr(self, field))}" for field, label in _LIMITS
                 if getattr(self, field) is not None]
        return ", ".join(parts) or "no limits"


def _seconds(value: float, digits: int = 3) -> str:
    """0.5 -> "0.5 s", 0.02 -> "20 ms", 0.00081 -> "0.81 ms"."""
    return f"{value:.{digits}g} s" if value >= 0.1 else f"{value * 1e3:.{digits}g} ms"


def _over(value: float, limit: float) -> str:
    """"1.02 s > 1 s", with more digits when three do not tell them apart ("1.0004 s > 1 s")."""
    for digits in (3, 5, 8):
        if _seconds(value, digits) != _seconds(limit, digits):
            return f"{_seconds(value, digits)} > {_seconds(limit, digits)}"
    return f"{_seconds(value, 12)} > {_seconds(limit, 12)}"
