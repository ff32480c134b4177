"""Devices and models given by name: engine.estimate and engine.serve resolve them as the CLI does."""

from __future__ import annotations

import os


def named_inputs(hardware, model):
    """(Hardware, model): a device name read from the bundled workbook (engine.load_hardware), a model id or
    config.json path loaded as the CLI loads it (catalog, Hub cache, Hub); objects pass through. Anything else is a
    TypeError saying what to pass."""
    if isinstance(hardware, str):
        from engine.hardware.specs import load_hardware
        hardware = load_hardware(hardware)
    elif not hasattr(hardware, "memory_bandwidth_bytes_per_s"):
        raise TypeError(f"hardware: expected a device name (e.g. 'H100-SXM') or a Hardware from "
                        f"engine.load_hardware(), got {type(hardware).__name__}")
    if isinstance(model, (str, os.PathLike)):
        from engine.decomposition.auto import load_any_model
        model = load_any_model(model)
    elif not hasattr(model, "name") or not hasattr(model, "num_layers"):
        raise TypeError(f"model: expected a model id (e.g. 'meta-llama/Llama-3.1-8B'), a config.json path or a model "
                        f"from engine.load_model(), got {type(model).__name__}")
    return hardware, model
