"""llm-roofline dashboard (placeholder until the full dashboard lands): one real estimate.

Run: bash scripts/dashboard.sh   (or: streamlit run dashboard/app.py)
"""

from __future__ import annotations

import streamlit as st

import engine

DEFAULT_HARDWARE = "H100-SXM"
DEFAULT_MODEL = "meta-llama/Llama-3.1-8B"


@st.cache_data(show_spinner=False)
def default_estimate():
    hardware = engine.load_hardware(DEFAULT_HARDWARE)
    model = engine.load_model(DEFAULT_MODEL)
    scenario = engine.Scenario(phase="request", batch=1, input_length=1024, output_length=256)
    result = engine.estimate(hardware, model, scenario)
    return result.to_dict(include_kernels=False), result.kernels


def main() -> None:
    st.set_page_config(page_title="llm-roofline", layout="wide")
    st.title("llm-roofline")
    summary, kernels = default_estimate()
    st.caption(f"{summary['model']} on {summary['hardware']} · request, 1024 tokens in, 256 out, batch 1 · "
               f"method {summary['method']}")
    ttft, tpot, rate, memory = st.columns(4)
    ttft.metric("TTFT", f"{summary['ttft_s'] * 1e3:.2f} ms")
    tpot.metric("TPOT", f"{summary['tpot_s'] * 1e3:.2f} ms")
    rate.metric("Output tokens/s", f"{summary['tokens_per_s']:.1f}")
    fit = summary["memory"]
    memory.metric("Memory", f"{fit['total_bytes'] / 1e9:.1f} / {fit['capacity_bytes'] / 1e9:.0f} GB",
                  "fits" if fit["fits"] else "does not fit")
    columns = ["phase", "name", "type", "m", "k", "n", "batch", "count", "macs", "bytes", "intensity", "time_s", "bound"]
    st.dataframe(kernels[columns], hide_index=True, use_container_width=True)


main()
