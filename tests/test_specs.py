"""specs.xlsx: bundled device data against datasheet headlines, round trips, template, and errors.

Expected numbers are datasheet figures (dense, per device), not the code's own output. Error
tests edit real workbooks with openpyxl and locate the expected cell independently.
"""

from __future__ import annotations

import importlib.util
import io
import math
import os
import shutil
from pathlib import Path

import openpyxl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.hardware.device import WORKBOOK_FIELDS, Hardware
from engine.hardware.specs import (
    SpecsError, default_specs_path, load_hardware, load_sources, load_specs, specs_to_frame, write_specs,
    write_template,
)
from engine.hardware.specs.cells import to_si
from engine.hardware.specs.writing import to_workbook_value

REPO = Path(__file__).resolve().parent.parent
BUNDLED = REPO / "specs.xlsx"
NAMES = ["NVL-AX", "JGS", "A100-40GB-PCIe", "A100-80GB-SXM", "H100-SXM", "H200-SXM", "B200", "GB200", "B300",
         "GB300", "MI300X", "T4", "L4", "L40S", "RTX-PRO-6000-Server", "Arc-Pro-B60", "TPU-v5e", "V100-SXM2-32GB"]


@pytest.fixture(autouse=True)
def _bundled_workbook(monkeypatch):
    monkeypatch.delenv("LLM_ROOFLINE_SPECS", raising=False)


@pytest.fixture(scope="module")
def devices():
    return load_specs()


# ---- bundled data against datasheets ---------------------------------------------------------
def test_bundled_workbook_is_the_default_and_lists_every_device_in_order(devices):
    assert default_specs_path() == BUNDLED
    assert list(devices) == NAMES
    assert all(isinstance(d, Hardware) and d.name == n for n, d in devices.items())


# (device, dtype, datasheet dense FLOP/s, relative tolerance)
MATRIX_HEADLINES = [
    ("A100-40GB-PCIe", "bf16", 312e12, 0.005),
    ("A100-40GB-PCIe", "tf32", 156e12, 0.005),
    ("A100-40GB-PCIe", "int8", 624e12, 0.005),
    ("A100-80GB-SXM", "bf16", 312e12, 0.005),
    ("H100-SXM", "bf16", 989.4e12, 0.005),
    ("H100-SXM", "fp8", 3958e12 / 2, 0.005),
    ("H200-SXM", "bf16", 989.4e12, 0.005),
    ("B200", "bf16", 2.25e15, 0.005),
    ("B200", "fp8", 4.5e15, 0.005),
    ("B200", "fp4", 9e15, 0.005),
    ("MI300X", "bf16", 1307.4e12, 0.005),
    ("MI300X", "fp8", 2614.9e12, 0.005),
    ("MI300X", "fp32", 163.4e12, 0.005),
    ("T4", "fp16", 65e12, 0.01),
    ("T4", "int8", 130e12, 0.01),
    ("L4", "bf16", 242e12 / 2, 0.005),
    ("L4", "fp8", 485e12 / 2, 0.005),
    ("TPU-v5e", "bf16", 197e12, 0.005),
    ("TPU-v5e", "int8", 394e12, 0.005),
    ("V100-SXM2-32GB", "fp16", 125e12, 0.01),
]


@pytest.mark.parametrize("name,dtype,expected,tolerance", MATRIX_HEADLINES)
def test_dense_matrix_peak_matches_datasheet(devices, name, dtype, expected, tolerance):
    assert devices[name].matrix_flops_per_s(dtype) == pytest.approx(expected, rel=tolerance)


@pytest.mark.parametrize("name,expected", [
    ("A100-40GB-PCIe", 19.5e12), ("A100-80GB-SXM", 19.5e12), ("MI300X", 163.4e12),
    ("T4", 8.1e12), ("L4", 30.3e12), ("V100-SXM2-32GB", 15.7e12),
])
def test_vector_fp32_peak_matches_datasheet(devices, name, expected):
    assert devices[name].vector_flops_per_s == pytest.approx(expected, rel=0.01)


@pytest.mark.parametrize("name,quoted", [("H100-SXM", 67e12), ("B200", 80e12)])
def test_vector_quoted_at_another_clock_is_explained_in_notes(devices, name, quoted):
    hw = devices[name]
    assert hw.vector_flops_per_s < quoted * 0.99  # derived at the tensor clock: lower than NVIDIA's figure
    assert hw.vector_flops_per_cycle_per_core == 256  # 128 FP32 lanes x 2
    assert "clock" in hw.notes and "TFLOP/s" in hw.notes


@pytest.mark.parametrize("name,bandwidth,capacity", [
    ("A100-40GB-PCIe", 1.555e12, 40e9), ("A100-80GB-SXM", 2.039e12, 80e9), ("H100-SXM", 3.35e12, 80e9),
    ("H200-SXM", 4.8e12, 141e9), ("B200", 8e12, 180e9), ("MI300X", 5.3e12, 192e9), ("T4", 0.32e12, 16e9),
    ("L4", 300e9, 24e9), ("TPU-v5e", 819e9, 16e9), ("V100-SXM2-32GB", 900e9, 32e9),
])
def test_memory_matches_datasheet_exactly(devices, name, bandwidth, capacity):
    assert devices[name].memory_bandwidth_bytes_per_s == bandwidth
    assert devices[name].memory_capacity_bytes == capacity


def test_tpu_v5e_ridge_point_is_about_240_flop_per_byte(devices):
    assert devices["TPU-v5e"].ridge_point("bf16") == pytest.approx(240, rel=0.02)


def test_seed_devices_are_entered_exactly_as_the_notebook_computes_them(devices):
    nvl, jgs = devices["NVL-AX"], devices["JGS"]
    assert nvl.memory_bandwidth_bytes_per_s == 342 * 1024**3
    assert nvl.llc_capacity_bytes == 36 * 1024**2
    assert nvl.matrix_macs_per_s("bf16") == 163840000000000.0  # the notebook prints MACs_per_second
    assert nvl.matrix_macs_per_s("fp16") == 163840000000000.0
    assert jgs.memory_bandwidth_bytes_per_s == 30 * 1024**4
    assert jgs.llc_capacity_bytes == 120 * 1024**2
    assert jgs.matrix_macs_per_s("fp32") == 192 * 1.5e9 * 8 * 1024
    for hw in (nvl, jgs):
        assert hw.kind == "hypothetical" and "binary" in hw.notes and "assumption" in hw.notes.lower()


def test_dtypes_a_device_lacks_are_blank_and_fall_back(devices):
    for name in ("T4", "V100-SXM2-32GB"):
        hw = devices[name]
        assert hw.matrix_macs_per_cycle_per_core_bf16 is None and hw.matrix_macs_per_cycle_per_core_fp8 is None
        assert hw.matrix_rate_dtype("bf16") == "fp16"
    assert devices["T4"].matrix_flops_per_s("bf16") == devices["T4"].matrix_flops_per_s("fp16")
    assert devices["A100-40GB-PCIe"].matrix_macs_per_cycle_per_core_fp8 is None
    assert [n for n, d in devices.items() if d.matrix_macs_per_cycle_per_core_fp4 is not None] == [
        "B200", "GB200", "B300", "GB300", "RTX-PRO-6000-Server"]     # the GB202 card has fp4 too (h/newdev)
    assert devices["TPU-v5e"].matrix_dtypes == ("bf16", "int8")


def test_per_cycle_figures_are_architectural_integers(devices):
    for hw in devices.values():
        for dtype in hw.matrix_dtypes:
            assert float(getattr(hw, f"matrix_macs_per_cycle_per_core_{dtype}")).is_integer()
        assert float(hw.vector_flops_per_cycle_per_core).is_integer()


# ---- memory hierarchy and realistic-method fields -----------------------------------------
def test_llc_bandwidth_from_published_bytes_per_clock(devices):
    """Ampere whitepaper: A100 L2 reads 5120 B/clk, V100 2048 B/clk; Hopper: a measured 4472.3 B/clk."""
    for name in ("A100-40GB-PCIe", "A100-80GB-SXM"):
        assert devices[name].llc_bandwidth_bytes_per_s == pytest.approx(5120 * 1.41e9, rel=1e-12)
    assert devices["V100-SXM2-32GB"].llc_bandwidth_bytes_per_s == pytest.approx(2048 * 1.53e9, rel=1e-12)
    for name in ("H100-SXM", "H200-SXM"):
        assert devices[name].llc_bandwidth_bytes_per_s == pytest.approx(4472.3 * 1.83e9, rel=1e-12)
    assert devices["MI300X"].llc_bandwidth_bytes_per_s == 17e12
    assert devices["B200"].llc_bandwidth_bytes_per_s is None     # not published: the level is skipped


def test_register_files(devices):
    """64 K 32-bit registers per SM on every NVIDIA GPU listed; 512 KiB of VGPRs per MI300X CU."""
    for name, hw in devices.items():
        if hw.vendor == "NVIDIA":
            assert hw.register_file_per_core_bytes == 65536 * 4
    assert devices["MI300X"].register_file_per_core_bytes == 512 * 1024
    assert devices["TPU-v5e"].register_file_per_core_bytes is None


def test_gemm_tile_shapes_parse_and_validate(devices):
    assert devices["A100-80GB-SXM"].tile_shapes[:2] == ((256, 128), (128, 256))
    assert len(devices["A100-40GB-PCIe"].tile_shapes) == 8
    assert devices["H100-SXM"].tile_shapes is None                 # blank: the documented default list
    hw = devices["T4"].with_changes(gemm_tile_shapes=" 128x64 , 64X64")
    assert hw.gemm_tile_shapes == "128x64,64x64" and hw.tile_shapes == ((128, 64), (64, 64))
    with pytest.raises(ValueError, match="MxN"):
        devices["T4"].with_changes(gemm_tile_shapes="128 by 64")


def test_fitted_realistic_values_and_their_sources(devices):
    sources = load_sources()
    fitted = ("achievable_matrix_fraction", "achievable_memory_bandwidth_fraction", "kernel_latency")
    for name in ("A100-80GB-SXM", "H100-SXM"):
        hw = devices[name]
        assert 0.5 < hw.achievable_matrix_fraction <= 1 and 0.5 < hw.achievable_memory_bandwidth_fraction <= 1
        assert 0 < hw.kernel_latency_s < 20e-6
        for key in fitted:
            assert "vidur_llama2_ops.csv" in sources[name][key][0] and "GEMM rows" in sources[name][key][1]
    for sibling, measured in (("A100-40GB-PCIe", "A100-80GB-SXM"), ("H200-SXM", "H100-SXM")):
        assert devices[sibling].achievable_matrix_fraction == devices[measured].achievable_matrix_fraction
        assert devices[sibling].kernel_latency_s == devices[measured].kernel_latency_s
        assert "transferred" in sources[sibling]["kernel_latency"][1]
    assert devices["MI300X"].achievable_matrix_fraction is None      # never measured: left blank


def test_bad_tile_shapes_in_a_workbook_name_the_cell(tmp_path):
    path, cell = _edit(tmp_path, "L4", "gemm_tile_shapes", "128x64,huge")
    message = str(_error(path))
    assert message.startswith(f"hardware!{cell}: gemm_tile_shapes of 'L4' is '128x64,huge'")


def test_every_value_in_the_bundled_workbook_has_a_source_row():
    workbook = openpyxl.load_workbook(BUNDLED)
    sheet = workbook["hardware"]
    names = [c.value for c in sheet[1][3:]]
    filled = {(names[i], row[0].value) for row in sheet.iter_rows(min_row=2)
              for i, cell in enumerate(row[3:]) if cell.value not in (None, "")}
    sources = workbook["sources"]
    assert [c.value for c in sources[1]] == ["device", "field", "source", "note"]
    cited = {(r[0], r[1]): r[2] for r in sources.iter_rows(min_row=2, values_only=True)}
    assert filled - set(cited) == set()
    assert set(cited) - filled == set()
    assert all(source and source.strip() for source in cited.values())
    assert "assumption, not in the seed" in str(
        [r for r in sources.iter_rows(min_row=2, values_only=True) if r[:2] == ("NVL-AX", "memory_capacity")])


def test_bundled_workbook_is_up_to_date_with_the_build_script():
    spec = importlib.util.spec_from_file_location("build_specs", REPO / "scripts" / "build_specs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert {d.name: d for d, _ in module.DEVICES} == load_specs()
    assert load_sources() == {d.name: s for d, s in module.DEVICES}


def test_bundled_layout_and_readme():
    workbook = openpyxl.load_workbook(BUNDLED)
    assert workbook.sheetnames == ["hardware", "sources", "README"]
    sheet = workbook["hardware"]
    assert [sheet[c].value for c in ("A1", "B1", "C1", "D1")] == ["field", "unit", "description", "NVL-AX"]
    assert sheet.freeze_panes == "D2" and sheet["A1"].font.bold
    assert [row[0].value for row in sheet.iter_rows(min_row=2)] == [f.key for f in WORKBOOK_FIELDS]
    readme = " ".join(str(r[0]) for r in workbook["README"].iter_rows(values_only=True) if r[0])
    for phrase in ("1 GB = 1e9 B", "2 x num_cores x clock", "sparsity", "Add a column"):
        assert phrase in readme


# ---- round trips ---------------------------------------------------------------------------
def test_write_then_load_gives_back_equal_devices_and_sources(devices, tmp_path):
    path = tmp_path / "copy.xlsx"
    write_specs(devices, path, sources=load_sources())
    assert load_specs(path) == devices
    assert load_sources(path) == load_sources()
    buffer = io.BytesIO()
    write_specs(list(devices.values())[:3], buffer)
    assert list(load_specs(buffer.getvalue())) == NAMES[:3]


def test_round_trip_keeps_seed_bandwidth_bit_exact(tmp_path):
    hw = load_hardware("NVL-AX").with_changes(memory_bandwidth_bytes_per_s=342 * 1024**3, launch_overhead_s=0.3e-6)
    write_specs([hw], tmp_path / "one.xlsx")
    back = load_hardware("NVL-AX", tmp_path / "one.xlsx")
    assert back.memory_bandwidth_bytes_per_s == 342 * 1024**3 and back.launch_overhead_s == 0.3e-6
    assert back == hw


SCALES = [f.scale for f in WORKBOOK_FIELDS if not f.text]


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 10**15 - 1), st.integers(-25, 12), st.sampled_from(SCALES))
def test_values_with_up_to_15_significant_digits_round_trip_exactly(mantissa, exponent, scale):
    si = float(f"{mantissa}e{exponent}")
    assert to_si(to_workbook_value(si, scale), scale) == si


@settings(max_examples=300, deadline=None)
@given(st.floats(1e-9, 1e15), st.sampled_from(SCALES))
def test_any_value_round_trips_within_a_few_ulps(si, scale):
    assert abs(to_si(to_workbook_value(si, scale), scale) - si) <= 4 * math.ulp(si)


def test_user_typed_decimals_read_as_shown():
    assert to_si(1.41, 1e9) == 1.41e9 and to_si(0.3, 1e-6) == 3e-7 and to_si(32985.34883328, 1e9) == 30 * 1024**4


def test_specs_to_frame_is_the_datasheet_layout(devices):
    frame = specs_to_frame(devices)
    assert list(frame.index) == [f.key for f in WORKBOOK_FIELDS]
    assert list(frame.columns) == ["unit", "description", *NAMES]
    assert frame.loc["memory_bandwidth", "A100-40GB-PCIe"] == 1555
    assert frame.loc["clock", "H100-SXM"] == 1.83 and frame.loc["memory_bandwidth", "unit"] == "GB/s"
    assert frame.loc["matrix_macs_per_cycle_per_core_bf16", "T4"] is None


# ---- sources of a workbook ------------------------------------------------------------------
def test_load_from_path_str_bytes_and_file_objects(devices):
    data = BUNDLED.read_bytes()
    assert load_specs(str(BUNDLED)) == devices
    assert load_specs(data) == devices
    assert load_specs(io.BytesIO(data)) == devices
    with open(BUNDLED, "rb") as handle:
        handle.read()  # already consumed once, as an upload widget may leave it
        assert load_specs(handle) == devices


def test_env_var_overrides_the_default_and_the_cache_follows_file_changes(monkeypatch, tmp_path, devices):
    path = tmp_path / "mine.xlsx"
    write_specs([devices["T4"]], path)
    monkeypatch.setenv("LLM_ROOFLINE_SPECS", str(path))
    assert default_specs_path() == path
    assert list(load_specs()) == ["T4"]
    first = load_specs()
    assert load_specs() == first and load_specs() is not first
    write_specs([devices["L4"], devices["T4"]], path)
    os.utime(path, ns=(os.stat(path).st_atime_ns, os.stat(path).st_mtime_ns + 10**9))
    assert list(load_specs()) == ["L4", "T4"]


def test_load_hardware_and_unknown_names(devices):
    assert load_hardware("H100-SXM") == devices["H100-SXM"]
    assert load_hardware("h100-sxm") == devices["H100-SXM"]
    with pytest.raises(SpecsError) as info:
        load_hardware("H100")
    assert "'H100'" in str(info.value) and "H100-SXM" in str(info.value) and "TPU-v5e" in str(info.value)


def test_template_structure_and_loading_it_names_the_missing_values(tmp_path):
    path = tmp_path / "template.xlsx"
    write_template(path)
    workbook = openpyxl.load_workbook(path)
    assert workbook.sheetnames == ["hardware", "sources", "README"]
    sheet = workbook["hardware"]
    assert [sheet[c].value for c in ("A1", "B1", "C1", "D1")] == ["field", "unit", "description", "MY-DEVICE"]
    rows = list(sheet.iter_rows(min_row=2, values_only=True))
    assert [(r[0], r[1], r[2]) for r in rows] == [(f.key, f.unit, f.description) for f in WORKBOOK_FIELDS]
    assert all(len(r) < 4 or r[3] is None for r in rows)
    assert sheet.freeze_panes == "D2"
    with pytest.raises(SpecsError) as info:
        load_specs(path)
    error = info.value
    assert error.device == "MY-DEVICE" and error.cell == "D2" and "blank" in str(error)
    assert "memory_bandwidth" in str(error) and "hardware!D16" in str(error)


# ---- user workbooks and their errors ---------------------------------------------------------
def _copy(tmp_path) -> Path:
    path = tmp_path / "edited.xlsx"
    shutil.copy(BUNDLED, path)
    return path


def _cell_of(sheet, device: str, key: str) -> str:
    """Expected cell address found by scanning the sheet: device header column, field key row."""
    column = next(c.column_letter for c in sheet[1] if c.value == device)
    row = next(c.row for c in sheet["A"] if c.value == key)
    return f"{column}{row}"


def _edit(tmp_path, device: str, key: str, value):
    path = _copy(tmp_path)
    workbook = openpyxl.load_workbook(path)
    sheet = workbook["hardware"]
    cell = _cell_of(sheet, device, key)
    sheet[cell] = value
    workbook.save(path)
    return path, cell


def _error(path) -> SpecsError:
    with pytest.raises(SpecsError) as info:
        load_specs(path)
    return info.value


def test_user_workbook_with_an_extra_device_column(tmp_path):
    path = _copy(tmp_path)
    workbook = openpyxl.load_workbook(path)
    sheet = workbook["hardware"]
    source_column = next(c.column for c in sheet[1] if c.value == "H100-SXM")
    new_column = sheet.max_column + 1
    for row in range(1, sheet.max_row + 1):
        sheet.cell(row=row, column=new_column).value = sheet.cell(row=row, column=source_column).value
    sheet.cell(row=1, column=new_column).value = "H100-FAST-HBM"
    sheet[_cell_of(sheet, "H100-FAST-HBM", "memory_bandwidth")] = 6000
    workbook.save(path)
    loaded = load_specs(path)
    assert list(loaded) == [*NAMES, "H100-FAST-HBM"]
    assert loaded["H100-FAST-HBM"].memory_bandwidth_bytes_per_s == 6e12
    assert loaded["H100-FAST-HBM"].matrix_flops_per_s("bf16") == loaded["H100-SXM"].matrix_flops_per_s("bf16")


def test_reordered_rows_and_blank_rows_are_tolerated(tmp_path, devices):
    path = _copy(tmp_path)
    workbook = openpyxl.load_workbook(path)
    sheet = workbook["hardware"]
    rows = [[c.value for c in row] for row in sheet.iter_rows(min_row=2)]
    sheet.delete_rows(2, len(rows))
    for index, row in enumerate(reversed(rows)):
        for column, value in enumerate(row, start=1):
            sheet.cell(row=2 + 2 * index, column=column).value = value  # a blank row after each
    workbook.save(path)
    assert load_specs(path) == devices


def test_negative_bandwidth_names_sheet_cell_field_device_value_and_expectation(tmp_path):
    path, cell = _edit(tmp_path, "A100-40GB-PCIe", "memory_bandwidth", -5)
    error = _error(path)
    message = str(error)
    assert message.startswith(f"hardware!{cell}: ")
    assert "memory_bandwidth" in message and "'A100-40GB-PCIe'" in message and "-5 GB/s" in message
    assert "expected a number >= 0.01 and <= 1e+06 GB/s" in message  # 1e7 .. 1e15 B/s, engine/hardware/device.py
    assert (error.sheet, error.cell, error.field, error.device, error.value) == (
        "hardware", cell, "memory_bandwidth", "A100-40GB-PCIe", -5)


@pytest.mark.parametrize("device,key,value,shown", [
    ("H100-SXM", "memory_bandwidth", 0, "0 GB/s"),
    ("T4", "memory_bandwidth", "fast", "'fast'"),
    ("MI300X", "memory_bandwidth", 2e6, "2e+06 GB/s"),  # 2e15 B/s: beyond the 1e6 GB/s limit
    ("L4", "num_cores", 4.5, "4.5"),
    ("B200", "clock", True, "True"),
    ("JGS", "clock", -1.5, "-1.5 GHz"),
    ("V100-SXM2-32GB", "matrix_macs_per_cycle_per_core_fp16", 0, "0"),
])
def test_bad_values_are_located(tmp_path, device, key, value, shown):
    path, cell = _edit(tmp_path, device, key, value)
    message = str(_error(path))
    assert message.startswith(f"hardware!{cell}: {key} of {device!r} is {shown}")
    assert "; expected " in message


def test_blank_required_value(tmp_path):
    path, cell = _edit(tmp_path, "H200-SXM", "memory_capacity", None)
    error = _error(path)
    assert error.cell == cell and error.device == "H200-SXM" and "is blank" in str(error)
    assert "(required)" in str(error)


def test_blank_optional_value_is_not_published(tmp_path):
    path, _ = _edit(tmp_path, "H200-SXM", "tdp", None)
    assert load_specs(path)["H200-SXM"].tdp_w is None


def test_device_without_any_matrix_rate(tmp_path):
    path = _copy(tmp_path)
    workbook = openpyxl.load_workbook(path)
    sheet = workbook["hardware"]
    for field in WORKBOOK_FIELDS:
        if field.key.startswith("matrix_"):
            sheet[_cell_of(sheet, "T4", field.key)] = None
    workbook.save(path)
    error = _error(path)
    assert error.device == "T4" and "matrix" in str(error) and "at least one" in str(error)


def test_missing_hardware_sheet(tmp_path):
    path = _copy(tmp_path)
    workbook = openpyxl.load_workbook(path)
    workbook.remove(workbook["hardware"])
    workbook.save(path)
    error = _error(path)
    assert error.sheet == "hardware" and "'hardware'" in str(error) and "missing" in str(error)


def test_deleted_required_row(tmp_path):
    path = _copy(tmp_path)
    workbook = openpyxl.load_workbook(path)
    sheet = workbook["hardware"]
    sheet.delete_rows(next(c.row for c in sheet["A"] if c.value == "clock"))
    workbook.save(path)
    error = _error(path)
    assert error.field == "clock" and "'clock'" in str(error) and "missing" in str(error)
    assert not error.others  # devices are not each reported for the missing row


def test_unknown_row_duplicate_device_unit_and_headerless_column(tmp_path):
    path = _copy(tmp_path)
    workbook = openpyxl.load_workbook(path)
    sheet = workbook["hardware"]
    last = sheet.max_row
    sheet.cell(row=last + 1, column=1).value = "peak_flops"
    sheet.cell(row=last + 1, column=4).value = 1e15
    sheet.cell(row=1, column=5).value = "NVL-AX"
    unit_row = next(c.row for c in sheet["A"] if c.value == "clock")
    sheet.cell(row=unit_row, column=2).value = "MHz"
    sheet.cell(row=unit_row, column=sheet.max_column + 2).value = 1.0
    workbook.save(path)
    error = _error(path)
    lines = str(error).splitlines()
    assert lines[0] == error.line()
    text = str(error)
    assert f"hardware!A{last + 1}: unknown field 'peak_flops'" in text
    assert "hardware!E1: device name 'NVL-AX' appears twice" in text
    assert f"hardware!B{unit_row}: unit of 'clock' is 'MHz'" in text
    assert "but no device name in row 1" in text


def test_not_a_workbook_and_missing_file(tmp_path):
    with pytest.raises(SpecsError, match="could not read"):
        load_specs(b"definitely not a zip file")
    with pytest.raises(SpecsError, match="cannot open"):
        load_specs(tmp_path / "absent.xlsx")


ENERGY_KEYS = [f.key for f in WORKBOOK_FIELDS if "energy" in f.key or f.key == "static_power"]


def test_energy_values_are_estimates_with_a_source(devices):
    """Every energy value has a source row marked as an estimate or assumption; devices without them stay blank."""
    sources = load_sources()
    filled = {"A100-40GB-PCIe", "A100-80GB-SXM", "H100-SXM", "H200-SXM", "B200", "GB200", "B300", "GB300", "MI300X"}
    dynamic_only = {"TPU-v5e"}      # Google publishes no TDP: per-operation energies without static power
    for name, hw in devices.items():
        values = {f.key: getattr(hw, f.attribute) for f in WORKBOOK_FIELDS if f.key in ENERGY_KEYS}
        present = {key for key, value in values.items() if value is not None}
        assert present <= set(sources[name])
        for key in present:
            assert sources[name][key][0].startswith(("ESTIMATE", "ASSUMPTION")), (name, key)
        if name in filled:
            assert {"matrix_energy_per_mac_bf16", "matrix_energy_per_mac_fp16", "matrix_energy_per_mac_int8",
                    "vector_energy_per_flop", "memory_energy_per_byte", "llc_energy_per_byte", "sram_energy_per_byte",
                    "link_energy_per_bit", "static_power"} <= present
        elif name in dynamic_only:
            assert {"matrix_energy_per_mac_bf16", "matrix_energy_per_mac_int8", "vector_energy_per_flop",
                    "memory_energy_per_byte", "llc_energy_per_byte", "link_energy_per_bit"} <= present
            assert "static_power" not in present and "TDP" in hw.notes
        else:
            assert not present, name
    assert devices["H100-SXM"].matrix_energy_j_per_mac_fp8 == 0.2e-12
    assert devices["H100-SXM"].memory_energy_j_per_byte == 31.2e-12
    assert devices["A100-80GB-SXM"].static_power_w == 0.15 * devices["A100-80GB-SXM"].tdp_w
