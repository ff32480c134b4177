"""Public silicon measurements: NVIDIA AIConfigurator's per-operation tables and serving runs.

    from engine.calibration import silicon
    silicon.list_systems()                       # h100_sxm, b200_sxm, gb200, ... (the installed package)
    silicon.read_system("h100_sxm")              # its yaml, with `system` and `file`
    silicon.gemm_table(systems=["h100_sxm"])     # m, n, k, dtype, time_s + provenance, one row per measurement
    silicon.context_attention_table(), silicon.generation_attention_table(), silicon.mla_table("generation"),
    silicon.moe_table(), silicon.collective_table()
    silicon.read_serving_runs()                  # silicon_sample.csv: TTFT/TPOT at a fixed concurrency
    silicon.SYSTEM_DEVICES                       # aiconfigurator system -> specs.xlsx device (None: none)

Needs the optional extra `pip install llm-roofline[calibration]` (aiconfigurator-core, Apache-2.0),
read in place without importing it. Every reader takes `root=`: another folder with the package's
`systems/` layout (tests/data/aiconfigurator/systems ships a few hundred rows as CSV).
Column mappings and units: engine/calibration/silicon/tables.py and engine/calibration/silicon/serving.py.
"""

from engine.calibration.silicon.files import PROVENANCE_COLUMNS, SiliconFileError, read_table_file
from engine.calibration.silicon.package import (SYSTEM_DEVICES, SiliconDataMissing, device_of, installed_version, is_installed,
                                    list_systems, package_root, read_system)
from engine.calibration.silicon.serving import read_serving_runs
from engine.calibration.silicon.tables import (collective_table, context_attention_table, gemm_table, generation_attention_table,
                                   mla_table, moe_table)

__all__ = [
    "PROVENANCE_COLUMNS", "SYSTEM_DEVICES", "SiliconDataMissing", "SiliconFileError", "collective_table",
    "context_attention_table", "device_of", "gemm_table", "generation_attention_table", "installed_version",
    "is_installed", "list_systems", "mla_table", "moe_table", "package_root", "read_serving_runs", "read_system",
    "read_table_file",
]
