"""The kernel table: exact SI numbers in CSV/XLSX, units and separators on screen, help on every column."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from dashboard import export
from dashboard.charts.tables import COLUMN_HELP, kernel_table_frame, kernel_table_view, screen_text


def one_row(**fields) -> pd.DataFrame:
    row = dict(phase="prefill", name="FFN_up", type="Ma_Mw", m=1024, k=4096, n=14336, batch=1, count=32,
               macs=7288373116928, flops=14576746233856, bytes=155_189_248.0, time_s=0.0123456, bound="compute")
    row.update(fields)
    return pd.DataFrame([row])


def test_export_frame_keeps_the_engine_numbers_exactly(llama8b):
    import engine

    result = engine.estimate(engine.load_hardware("H100-SXM"), llama8b, engine.Scenario(), method="realistic")
    kernels = result.kernels
    table = kernel_table_frame(kernels)
    for engine_column, column in (("flops", "FLOPs per call"), ("bytes", "Bytes per call"), ("macs", "MACs per call"),
                                  ("time_s", "Time per call (s)")):
        assert np.array_equal(table[column].to_numpy(dtype=float), kernels[engine_column].to_numpy(dtype=float))
    assert np.array_equal(table["Calls"].to_numpy(dtype=float), kernels["count"].to_numpy(dtype=float))
    total = kernels["count"] * kernels["time_s"]
    assert np.array_equal(table["Total time (s)"].to_numpy(), total.to_numpy())
    # the files carry the same numbers: CSV round-trips to float equality, XLSX cells are those floats
    back = pd.read_csv(io.BytesIO(export.table_csv(table)))
    assert np.array_equal(back["FLOPs per call"].to_numpy(dtype=float), kernels["flops"].to_numpy(dtype=float))
    assert np.array_equal(back["Time per call (s)"].to_numpy(dtype=float), kernels["time_s"].to_numpy(dtype=float))
    from openpyxl import load_workbook
    rows = list(load_workbook(io.BytesIO(export.table_xlsx(table)))["kernels"].iter_rows(values_only=True))
    column = rows[0].index("Time per call (s)")
    # Excel keeps 15 significant digits
    assert [r[column] for r in rows[1:]] == pytest.approx(list(kernels["time_s"].astype(float)), rel=1e-14)


def test_screen_shows_units_separators_and_ms():
    """Hand-formatted: 14,576,746,233,856 FLOP -> 14.58 TFLOP; 0.0123456 s -> 12.35 ms; 32 x that -> 395.1 ms;
    155,189,248 B -> 155.2 MB; 14576746233856 / 155189248 = 93,928.8 FLOP/byte."""
    text = screen_text(kernel_table_frame(one_row())).iloc[0]
    assert text["FLOPs per call"] == "14.58 TFLOP"
    assert text["MACs per call"] == "7.288 TMAC"
    assert text["Bytes per call"] == "155.2 MB"
    assert text["Time per call (ms)"] == "12.35"
    assert text["Total time (ms)"] == "395.1"             # 32 x 12.3456 = 395.06
    assert text["Intensity (FLOP/byte)"] == "93,929"
    assert text["n"] == "14,336" and text["Calls"] == "32"
    assert text["Share of phase (%)"] == "100.0"


def test_zero_byte_rows_show_a_dash_not_inf():
    table = kernel_table_frame(one_row(name="Softmax", type="Softmax", bytes=0.0, macs=0, flops=8.3968e7))
    assert np.isinf(table["Intensity (FLOP/byte)"].iloc[0])          # the export keeps the exact value
    text = screen_text(table).iloc[0]
    assert text["Intensity (FLOP/byte)"] == "—" and text["Bytes per call"] == "0 B"
    assert text["MACs per call"] == "0"
    assert "inf" not in " ".join(map(str, text.values))


def test_every_column_explains_itself_on_hover():
    table = kernel_table_frame(one_row().assign(device="H100-SXM"))
    styler, helps = kernel_table_view(table)
    assert set(helps) == set(styler.data.columns)                   # every column shown has a help text
    assert "Time per call (ms)" in styler.data.columns and "Time per call (s)" not in styler.data.columns
    assert "sequences x KV heads" in helps["Batch"]                   # what Batch means on an attention row
    assert "Ma_Mw" in helps["Type"] and "C[m,n] = A[m,k] @ B[k,n]" in helps["m"]
    assert all(text.endswith(".") for text in COLUMN_HELP.values())
    html = styler.to_html()
    assert "14.58 TFLOP" in html and "12.35" in html
    # the numbers under the text stay the exact seconds, so sorting by a column sorts by value
    assert styler.data["Time per call (ms)"].iloc[0] == pytest.approx(0.0123456, rel=0)


def test_overview_table_on_screen_has_units_and_help():
    from tests.dashboard.test_views_honest import run_app
    import pyarrow as pa
    import json

    from dashboard.views.overview import OPEN_KERNELS
    app = run_app()
    app.session_state[OPEN_KERNELS] = True          # the kernel table runs only while its section is open
    app.run()
    assert not app.exception
    frame = app.dataframe[0]
    shown = pa.ipc.open_stream(frame.proto.arrow_data.styler.display_values).read_all().to_pandas()
    cells = " ".join(shown.astype(str).to_numpy().ravel())
    assert "TFLOP" in cells or "GFLOP" in cells
    assert "inf" not in cells.split()
    config = json.loads(frame.proto.columns)
    assert "sequences x KV heads" in config["Batch"]["help"]


def test_device_comparison_shows_each_time_in_its_unit():
    """The issue's '16704591.15 ms' TTFT: 16,704,591.15 ms = 16,704.6 s = 4.64 h on screen; the frame keeps ms."""
    from dashboard.charts.tables import metrics_view

    metrics = pd.DataFrame([{"device": "H100-SXM", "TTFT (ms)": 16704591.15, "TPOT (ms)": 7.384,
                             "end-to-end (ms)": 16706481.5, "output tokens/s": 15912.0, "memory (GB)": 100.7,
                             "capacity (GB)": 141.0, "fits": True, "largest batch that fits": 218}])
    styler, helps = metrics_view(metrics)
    html = styler.to_html()
    for text in ("4.64 h", "7.38 ms", "15.9k", "101 GB", "141 GB", ">yes<", ">218<"):
        assert text in html
    assert "16704591" not in html
    assert styler.data["TTFT"].iloc[0] == 16704591.15              # the number underneath is unchanged
    assert set(helps) == set(styler.data.columns)


def test_explore_sweep_table_is_in_the_charts_units_and_explains_each_column():
    from dashboard.charts.tables import sweep_table_view

    frame = pd.DataFrame({"batch": [1, 4096], "tpot_s": [0.00767, 0.301472], "ttft_s": [0.027, 100.96],
                          "memory_per_device_bytes": [24.3e9, 1072e9], "energy_per_token_j": [1.3026, 0.038954],
                          "flops": [1.856e13, 7.602e16], "fits": [True, False], "error": ["", ""]})
    shown, helps = sweep_table_view(frame)
    assert list(shown["TPOT (ms)"]) == pytest.approx([7.67, 301.472])            # s x 1,000
    assert list(shown["Memory per device (GB)"]) == pytest.approx([24.3, 1072])  # B / 1e9
    assert list(shown["Energy per token (mJ)"]) == pytest.approx([1302.6, 38.954])
    assert list(shown["FLOPs (TFLOP)"]) == pytest.approx([18.56, 76020])
    assert "Batch (sequences)" in shown
    assert set(helps) == set(shown.columns) and all(helps.values())
    assert frame["tpot_s"].iloc[0] == 0.00767                                     # the download frame is untouched


def test_explore_page_shows_the_sweep_table_in_ms():
    from tests.dashboard.test_views_honest import run_app
    import json

    app = run_app(page="explore")
    assert not app.exception
    table = next(frame for frame in app.dataframe if "TPOT (ms)" in frame.value.columns)
    assert (table.value["TPOT (ms)"] > 1).all()                                  # ms, not s, for an 8B model
    assert "decode step" in json.loads(table.proto.columns)["TPOT (ms)"]["help"]
