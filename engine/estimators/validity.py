"""Where the realistic method's constants have been checked against measurements, and where they have not.

The realistic constants (achievable fractions, kernel latencies, kernel classes, host-side serving times)
are fitted and scored on NVIDIA GPUs only: Vidur's kernel profiles (A100, H100), aiconfigurator-core's
per-operation tables and serving runs (H100, H200, B200, B300, GB200; docs/accuracy.md, docs/serving.md).
A device of another kind or vendor (a TPU, an AMD GPU, an Intel GPU, an NPU, a hypothetical part of another kind)
gets the same GPU-derived constants: its realistic estimate is an extrapolation, and every result says so.
So does an NVIDIA GPU whose only device-to-device path is one PCIe link (num_links <= 1: T4, L4, L40S, RTX PRO
6000): the constants were fitted on NVLink/HBM data-center GPUs, and on the PCIe cards with measured tables (L40S,
RTX PRO 6000 Server, and Intel's Arc Pro B60; issue 12, h/newdev) leave-one-device-out scores miss the kernel
targets (docs/accuracy.md, "Devices known only from the workbook").
The rule reads the workbook's `kind`, `vendor` and `num_links` fields, so a user's device is judged the same way.
"""

from __future__ import annotations

REALISTIC_METHODS = ("realistic", "realistic-graph")
MEASURED_ON = "NVIDIA GPUs (A100, H100, H200, B200, B300, GB200, GB300)"


def realistic_validation(hardware, method: str) -> dict | None:
    """{"validated": bool, "basis": sentence} for the realistic methods; None for the others (the roofline
    family are ideal bounds, the seed method reproduces the notebook)."""
    if method not in REALISTIC_METHODS:
        return None
    nvidia_gpu = str(hardware.kind).lower() == "gpu" and str(hardware.vendor).strip().upper() == "NVIDIA"
    if nvidia_gpu and (hardware.num_links or 0) > 1:
        return {"validated": True, "basis": f"realistic constants fitted and scored on measured {MEASURED_ON}"}
    if nvidia_gpu:
        return {"validated": False,
                "basis": (f"realistic is unvalidated on {hardware.name} (an NVIDIA GPU on one PCIe link, no NVLink): "
                          f"its constants were fitted on NVLink-connected {MEASURED_ON}; on the PCIe cards with "
                          "measured tables (L40S, RTX PRO 6000 Server) they miss the attention and collective targets "
                          "leave-one-device-out "
                          "(docs/accuracy.md), so this estimate extrapolates them; compare with the roofline bound")}
    return {"validated": False,
            "basis": (f"realistic is unvalidated on {hardware.name} ({hardware.vendor} {hardware.kind}): its constants "
                      f"were fitted on {MEASURED_ON} only, so this estimate extrapolates them; compare with the "
                      "roofline bound")}


def validation_notes(hardware, method: str) -> list[str]:
    """The note an unvalidated realistic estimate carries (none otherwise)."""
    status = realistic_validation(hardware, method)
    return [status["basis"]] if status and not status["validated"] else []
