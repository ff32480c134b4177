"""Regenerate tests/data/aiconfigurator/ (a few hundred rows of aiconfigurator-core's measured tables).

    PYTHONPATH=. python scripts/make_silicon_subset.py        # needs the `calibration` extra installed

Also writes tests/data/aiconfigurator_rtx_pro/ (RTX PRO 6000 Server bf16 GEMMs: a device known only from the workbook)
and tests/data/aiconfigurator_a100_mla/ (A100's MLA decode rows: the one-core MLA decode kernel).

Keeps the package's layout (systems/<system>.yaml, systems/data/<system>/<family>/<framework>/<version>/
<table>.csv with its collection_meta.yaml, systems/silicon_sample.csv) for two systems and one framework
version each, rows picked with a fixed seed, values exactly as stored (columns and units unchanged;
parquet written as CSV). See tests/data/aiconfigurator/NOTICE.md for what is cut.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd

from engine.calibration.silicon.package import package_root

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "aiconfigurator" / "systems"
SYSTEMS = ("h100_sxm", "b200_sxm")
# (family, framework, version or None for the newest, table, rows, filter)
PICKS = (
    ("gemm", "trtllm", "1.3.0rc20", "gemm_perf", 40,
     lambda d: d[d.gemm_dtype.isin(["bfloat16", "fp8"]) & (d.n >= 1024) & (d.k >= 1024)]),
    # nvfp4 rows (the fp4-rated systems only; tests/test_silicon_gemm_nvfp4.py), added to the sample above
    ("gemm", "trtllm", "1.3.0rc20", "gemm_perf", 24,
     lambda d: d[(d.gemm_dtype == "nvfp4") & (d.n >= 1024) & (d.k >= 1024)]),
    ("attention", "trtllm", "1.3.0rc20", "context_attention_perf", 25, lambda d: d[d.window_size == 0]),
    ("attention", "trtllm", "1.3.0rc20", "generation_attention_perf", 25, lambda d: d[d.window_size == 0]),
    ("mla", "trtllm", "1.3.0rc20", "context_mla_perf", 10, None),
    ("mla", "trtllm", "1.3.0rc20", "generation_mla_perf", 10, None),
    ("moe", "trtllm", "1.3.0rc20", "moe_perf", 15, None),
    # the 4-bit formats' balanced rows (engine/calibration/silicon/moe_4bit_fit.py), added to the sample above
    ("moe", "trtllm", "1.3.0rc20", "moe_perf", 24,
     lambda d: d[d.moe_dtype.isin(["nvfp4", "w4a16_mxfp4", "w4a8_mxfp4_mxfp8"]) & (d.distribution == "balanced")
                 & (d.kernel_source != "moe_torch_flow_min_latency")]),
    ("comm", "nccl", None, "nccl_perf", 20, None),
    ("comm", "trtllm", "1.3.0rc20", "custom_allreduce_perf", 10, None),
)
SERVING_ROWS_PER_SYSTEM = 15
# a device known only from the workbook (issue 12, h/newdev): RTX PRO 6000 Server bf16 GEMMs for
# tests/test_silicon_pcie_floor.py
OUT_PCIE = OUT.parent.parent / "aiconfigurator_rtx_pro" / "systems"
PCIE_SYSTEM, PCIE_GEMMS = "rtx_pro_6000_server", 240
# the one-core MLA decode kernel (engine/estimators/mla_attention.py): A100's TensorRT-LLM 1.0.0 MLA decode rows for
# tests/test_mla_one_core.py
OUT_A100_MLA = OUT.parent.parent / "aiconfigurator_a100_mla" / "systems"
A100_SYSTEM, A100_MLA_ROWS = "a100_sxm", 40


def newest(folder: Path) -> Path:
    def key(path: Path) -> list:
        return [int(x) if x.isdigit() else x for x in path.name.replace("-", ".").split(".")]
    return sorted(folder.iterdir(), key=key)[-1]


def main() -> None:
    source = package_root()
    if OUT.exists():
        shutil.rmtree(OUT)
    for system in SYSTEMS:
        OUT.mkdir(parents=True, exist_ok=True)
        shutil.copy(source / f"{system}.yaml", OUT / f"{system}.yaml")
        picked: dict = {}       # target CSV -> its picks (a table picked twice: the union, in the file's order)
        for family, framework, version, table, rows, keep in PICKS:
            folder = source / "data" / system / family / framework
            folder = folder / version if version else newest(folder)
            frame = pd.read_parquet(folder / f"{table}.parquet")
            frame = keep(frame) if keep else frame
            frame = frame.sample(n=min(rows, len(frame)), random_state=0)
            target = OUT / "data" / system / family / framework / folder.name
            target.mkdir(parents=True, exist_ok=True)
            picked.setdefault(target / f"{table}.csv", []).append(frame)
            if (folder / "collection_meta.yaml").is_file():
                shutil.copy(folder / "collection_meta.yaml", target / "collection_meta.yaml")
        for path, frames in picked.items():
            frame = pd.concat(frames)
            frame[~frame.index.duplicated()].sort_index().to_csv(path, index=False)
    runs = pd.read_csv(source / "silicon_sample.csv", dtype=str, keep_default_na=False)
    picked = [runs[runs.system == s].sample(n=SERVING_ROWS_PER_SYSTEM, random_state=0) for s in SYSTEMS]
    pd.concat(picked).sort_index().to_csv(OUT / "silicon_sample.csv", index=False)
    pcie_subset(source)
    a100_mla_subset(source)


def a100_mla_subset(source: Path) -> None:
    """tests/data/aiconfigurator_a100_mla/systems: A100_SYSTEM's yaml and A100_MLA_ROWS trtllm 1.0.0 MLA decode rows."""
    if OUT_A100_MLA.exists():
        shutil.rmtree(OUT_A100_MLA)
    folder = source / "data" / A100_SYSTEM / "mla" / "trtllm" / "1.0.0"
    frame = pd.read_parquet(folder / "generation_mla_perf.parquet")
    target = OUT_A100_MLA / "data" / A100_SYSTEM / "mla" / "trtllm" / folder.name
    target.mkdir(parents=True)
    shutil.copy(source / f"{A100_SYSTEM}.yaml", OUT_A100_MLA / f"{A100_SYSTEM}.yaml")
    shutil.copy(folder / "collection_meta.yaml", target / "collection_meta.yaml")
    frame.sample(n=A100_MLA_ROWS, random_state=0).sort_index().to_csv(target / "generation_mla_perf.csv", index=False)


def pcie_subset(source: Path) -> None:
    """tests/data/aiconfigurator_rtx_pro/systems: PCIE_SYSTEM's yaml and PCIE_GEMMS trtllm bf16 GEMMs, n, k >= 128."""
    if OUT_PCIE.exists():
        shutil.rmtree(OUT_PCIE)
    folder = source / "data" / PCIE_SYSTEM / "gemm" / "trtllm" / "1.3.0rc20"
    frame = pd.read_parquet(folder / "gemm_perf.parquet")
    frame = frame[(frame.gemm_dtype == "bfloat16") & (frame.n >= 128) & (frame.k >= 128)]
    target = OUT_PCIE / "data" / PCIE_SYSTEM / "gemm" / "trtllm" / folder.name
    target.mkdir(parents=True)
    shutil.copy(source / f"{PCIE_SYSTEM}.yaml", OUT_PCIE / f"{PCIE_SYSTEM}.yaml")
    shutil.copy(folder / "collection_meta.yaml", target / "collection_meta.yaml")
    frame.sample(n=PCIE_GEMMS, random_state=0).sort_index().to_csv(target / "gemm_perf.csv", index=False)


if __name__ == "__main__":
    main()
