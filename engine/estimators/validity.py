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

Weight-only quantized GEMMs (int4 / int8 weights with 16-bit activations: engine/estimators/weight_only.py) have a
weaker basis than the rest, and every such estimate says so (`weight_only` in the dict, and a note), on any device.
So has the one-core MLA decode kernel (engine/estimators/mla_attention.py: an MLA model's absorbed decode on a device
whose cores cannot hold the split-context kernels' tiles, the workbook's sram_per_core): `one_core_mla`, and a note.
"""

from __future__ import annotations

from engine.estimators.mla_attention import SPLIT_DECODE_SRAM_BYTES, runs_one_core_decode
from engine.estimators.weight_only import weight_only_format

REALISTIC_METHODS = ("realistic", "realistic-graph")
MEASURED_ON = "NVIDIA GPUs (A100, H100, H200, B200, B300, GB200, GB300)"
WEIGHT_ONLY_BASIS = ("weight-only {weight} GEMMs ({activation} activations) take realistic's mixed-input kernel term, "
                     "calibrated in-sample on one device per format (A100 TensorRT-LLM's int4 and int8 tables; the "
                     "only other table, H100 int8 under SGLang, is another framework's kernel, 47% slower than this "
                     "term at m <= 16) and not cross-validated across devices")
ONE_CORE_MLA_BASIS = ("MLA decode attention on {device} runs the one-core MLA decode kernel (its cores' {sram:.0f} KiB "
                      "of on-chip SRAM cannot hold the split-context kernels' {need:.0f} KiB tiles), whose constants "
                      "are calibrated in-sample on one device (A100 TensorRT-LLM 1.0.0's MLA decode table) and not "
                      "cross-validated across training devices (L40S, known only from the workbook, scores 15% off "
                      "with them)")


def realistic_validation(hardware, method: str, scenario=None, model=None) -> dict | None:
    """{"validated": bool, "basis": sentence} for the realistic methods, plus "weight_only": sentence where the
    scenario quantizes weights only (weight_only_note) and "one_core_mla": sentence where `model`'s MLA decode runs
    the one-core kernel (one_core_mla_note); None for the other methods (the roofline family are ideal bounds, the
    seed method reproduces the notebook)."""
    if method not in REALISTIC_METHODS:
        return None
    status = device_status(hardware)
    note = weight_only_note(scenario)
    if note:
        status["weight_only"] = note
    note = one_core_mla_note(hardware, model, scenario)
    if note:
        status["one_core_mla"] = note
    return status


def device_status(hardware) -> dict:
    """{"validated", "basis"} for the device: an NVIDIA GPU with NVLink is what the constants were fitted on."""
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


def weight_only_note(scenario) -> str | None:
    """WEIGHT_ONLY_BASIS for a scenario whose GEMMs are weight-only quantized (weight_only.weight_only_format)."""
    if weight_only_format(scenario) is None:
        return None
    return WEIGHT_ONLY_BASIS.format(weight=scenario.weight_dtype, activation=scenario.activation_dtype)


def one_core_mla_note(hardware, model, scenario) -> str | None:
    """ONE_CORE_MLA_BASIS where `model` is an MLA model (kv_lora_rank) whose decode tokens run the absorbed form on an
    NVIDIA GPU whose cores cannot hold the split-context kernels' tiles (mla_attention.runs_one_core_decode), else
    None."""
    if not getattr(model, "kv_lora_rank", 0) or getattr(scenario, "mla_decode", "absorbed") != "absorbed" \
            or getattr(scenario, "phase", None) == "prefill":
        return None
    if not runs_one_core_decode(hardware):
        return None
    return ONE_CORE_MLA_BASIS.format(device=hardware.name, sram=hardware.sram_per_core_bytes / 1024,
                                     need=SPLIT_DECODE_SRAM_BYTES / 1024)


def validation_notes(hardware, method: str, scenario=None, model=None) -> list[str]:
    """The notes a realistic estimate carries: unvalidated on this device, weight-only GEMMs, the one-core MLA decode
    kernel (none otherwise)."""
    status = realistic_validation(hardware, method, scenario, model)
    if not status:
        return []
    return ([] if status["validated"] else [status["basis"]]) + \
        [status[key] for key in ("weight_only", "one_core_mla") if key in status]
