"""Where NVIDIA's aiconfigurator-core keeps its measured tables, and which of its systems we model.

The package (PyPI `aiconfigurator-core`, Apache-2.0, NVIDIA; the optional extra
`pip install llm-roofline[calibration]`) is found WITHOUT importing it (importlib's spec only),
so its compiled module and dependencies never load. Its `systems/` folder holds:

    systems/<system>.yaml                                              system description (GPU, node)
    systems/data/<system>/<op family>/<framework>/<version>/<table>.parquet   measured per-op tables
    systems/data/<system>/<op family>/<framework>/<version>/collection_meta.yaml
    systems/silicon_sample.csv                                         measured serving runs

A `root` argument anywhere in engine.calibration.silicon is such a `systems/` folder: the installed package's
(default) or a copy with the same layout, e.g. tests/data/aiconfigurator/systems (CSV instead of
parquet, a few hundred rows).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import yaml

PACKAGE = "aiconfigurator_core"
DISTRIBUTION = "aiconfigurator-core"
EXTRA_HINT = "pip install llm-roofline[calibration]"

# aiconfigurator system name -> specs.xlsx device name (None: the workbook has no such device).
SYSTEM_DEVICES: dict[str, str | None] = {
    "a100_sxm": "A100-80GB-SXM",
    "h100_sxm": "H100-SXM",
    "h200_sxm": "H200-SXM",
    "b200_sxm": "B200",
    "gb200": "GB200",
    "b300_sxm": "B300",
    "gb300": "GB300",
    "l4": "L4",
    "a100_pcie": None,            # 80 GB PCIe; the workbook has only the 40 GB PCIe card
    "a30": None,
    "b60": "Arc-Pro-B60",         # Intel Arc Pro B60 (Xe2; vLLM tables, oneCCL)
    "h100_pcie": None,
    "l40s": "L40S",
    "rtx_pro_6000_server": "RTX-PRO-6000-Server",
}


# The devices whose tables train the calibrated constants by default: the seven HBM data-center GPUs (all of them
# also have serving runs). The PCIe cards with tables (L40S, RTX-PRO-6000-Server, Arc-Pro-B60; issue 12, h/newdev)
# are scored leave-one-device-out with constants fitted on these, as devices known only from the workbook; a
# benchmark trains on them too only where that does not make these seven worse (docs/accuracy.md).
TRAINING_DEVICES = ("A100-80GB-SXM", "H100-SXM", "H200-SXM", "B200", "GB200", "B300", "GB300")


class SiliconDataMissing(RuntimeError):
    """aiconfigurator-core is not installed (or its systems folder is gone)."""


def package_root() -> Path:
    """The installed package's `systems/` folder; a clear error naming the extra when it is missing."""
    spec = importlib.util.find_spec(PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        systems = Path(location) / "systems"
        if systems.is_dir():
            return systems
    raise SiliconDataMissing(f"the measured tables need the package {DISTRIBUTION} (NVIDIA AIConfigurator, "
                             f"Apache-2.0); install the optional extra: {EXTRA_HINT}")


def is_installed() -> bool:
    try:
        package_root()
    except SiliconDataMissing:
        return False
    return True


def resolve_root(root=None) -> Path:
    """`root` as a Path (default: the installed package's systems folder)."""
    if root is None:
        return package_root()
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: no such folder (expected an aiconfigurator systems folder)")
    return root


def list_systems(root=None) -> list[str]:
    """Systems with a description (`<system>.yaml` naming a data_dir), sorted."""
    root = resolve_root(root)
    return sorted(path.stem for path in root.glob("*.yaml") if _is_system_file(path))


def _is_system_file(path: Path) -> bool:
    try:
        return "data_dir" in (yaml.safe_load(path.read_text(encoding="utf-8")) or {})
    except yaml.YAMLError:
        return False


def read_system(system: str, root=None) -> dict:
    """The system's yaml as a dict, plus provenance keys `system` and `file` (path of the yaml)."""
    root = resolve_root(root)
    path = root / f"{system}.yaml"
    if not path.is_file():
        raise ValueError(f"unknown system {system!r}; known: {', '.join(list_systems(root))}")
    try:
        spec = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as error:
        raise ValueError(f"{path}: not valid YAML ({error})") from error
    if not isinstance(spec, dict) or "gpu" not in spec:
        raise ValueError(f"{path}: expected a mapping with a 'gpu' section")
    return {**spec, "system": system, "file": str(path)}


def device_of(system: str) -> str | None:
    """The workbook device name of an aiconfigurator system (None where the workbook has none)."""
    return SYSTEM_DEVICES.get(system)


def installed_version() -> str | None:
    """The installed distribution's version (package metadata, no import), None when absent."""
    from importlib import metadata
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None
