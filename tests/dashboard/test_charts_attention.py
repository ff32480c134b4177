"""Decode attention on the roofline carries the KV bytes it reads under every method (issue 14), not only
the roofline method: Gemma-3-27B at 32k context on an H100 is memory-bound at 2 FLOP/byte."""

from __future__ import annotations

import pytest

import engine
from dashboard.charts import roofline_figure


@pytest.mark.parametrize("method", ["realistic", "realistic-graph", "hierarchical"])
def test_decode_attention_sits_at_two_flop_per_byte_under_every_method(devices, method):
    from engine.hardware.ceilings import roofline_ceilings
    from engine.models import load_model
    h100 = devices["H100-SXM"]
    scenario = engine.Scenario(phase="decode", input_length=32768, context_length=32768)
    result = engine.estimate(h100, load_model("google/gemma-3-27b-pt"), scenario, method=method)
    figure = roofline_figure(roofline_ceilings(h100).assign(device="H100-SXM"), result.kernels)
    points = {name: (x, y, trace.meta["bound"]) for trace in figure.data
              if trace.meta and trace.meta.get("role") == "kernels"
              for name, x, y in zip(trace.meta["names"], trace.x, trace.y)}
    # per cached token Q*K does 2 x 32 query heads x 128 FLOPs and reads 16 KV heads x 128 bf16 values
    intensity = 2 * 32 * 128 / (16 * 128 * 2)
    assert intensity == 2.0
    for name in ("Q*gK", "Q*gK*gV"):
        x, y, bound = points[name]
        assert x == pytest.approx(intensity, rel=1e-3) and bound == "memory"
        assert y <= intensity * 3.35e12 * 1.001          # at or under the HBM slope, far from the compute roof
        assert x < 989e12 / 3.35e12                      # left of the ridge (295 FLOP/byte)
