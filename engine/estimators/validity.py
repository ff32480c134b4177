"""Where the realistic method's constants have been checked against measurements, and where they have not.

The realistic constants (achievable fractions, kernel latencies, kernel classes, host-side serving times)
are fitted and scored on NVIDIA GPUs only: Vidur's kernel profiles (A100, H100), aiconfigurator-core's
per-operation tables and serving runs (H100, H200, B200, B300, GB200; docs/accuracy.md, docs/serving.md).
A device of another kind or vendor (a TPU, an AMD GPU, an NPU, a hypothetical part of another kind) gets
the same GPU-derived constants: its realistic estimate is an extrapolation, and every result says so.
The rule reads the workbook's `kind` and `vendor` fields, so a user's device is judged the same way.
"""

from __future__ import annotations

REALISTIC_METHODS = ("realistic", "realistic-graph")
MEASURED_ON = "NVIDIA GPUs (A100, H100, H200, B200, B300, GB200, GB300)"


def realistic_validation(hardware, method: str) -> dict | None:
    """{"validated": bool, "basis": sentence} for the realistic methods; None for the others (the roofline
    family are ideal bounds, the seed method reproduces the notebook)."""
    if method not in REALISTIC_METHODS:
        return None
    validated = str(hardware.kind).lower() == "gpu" and str(hardware.vendor).strip().upper() == "NVIDIA"
    if validated:
        return {"validated": True, "basis": f"realistic constants fitted and scored on measured {MEASURED_ON}"}
    return {"validated": False,
            "basis": (f"realistic is unvalidated on {hardware.name} ({hardware.vendor} {hardware.kind}): its constants "
                      f"were fitted on {MEASURED_ON} only, so this estimate extrapolates them; compare with the "
                      "roofline bound")}


def validation_notes(hardware, method: str) -> list[str]:
    """The note an unvalidated realistic estimate carries (none otherwise)."""
    status = realistic_validation(hardware, method)
    return [status["basis"]] if status and not status["validated"] else []
