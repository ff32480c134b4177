"""Numeric formats: bytes per value and how matrix units fall back between them.

Bytes per value (DESIGN.md): fp32 4, tf32 4 (stored as fp32), bf16/fp16 2, fp8/int8 1,
int4/fp4 0.5. Weights, activations and the KV cache each carry their own dtype.
"""

from __future__ import annotations

BYTES_PER_VALUE: dict[str, float] = {
    "fp32": 4.0,
    "tf32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
    "fp4": 0.5,
}

DTYPES: tuple[str, ...] = tuple(BYTES_PER_VALUE)

# Formats a matrix unit may be rated for in specs.xlsx (row `matrix_macs_per_cycle_per_core_<dtype>`).
MATRIX_DTYPES: tuple[str, ...] = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")

# When a device has no matrix rate for a dtype, the kernel runs in the next format of this list
# (the way real kernels up-convert: int4 weights are multiplied as int8/fp8 or fp16, etc.).
MATRIX_FALLBACK: dict[str, tuple[str, ...]] = {
    "fp32": ("fp32", "tf32"),
    "tf32": ("tf32", "fp32"),
    "bf16": ("bf16", "fp16", "tf32", "fp32"),
    "fp16": ("fp16", "bf16", "tf32", "fp32"),
    "fp8": ("fp8", "int8", "fp16", "bf16", "tf32", "fp32"),
    "int8": ("int8", "fp8", "fp16", "bf16", "tf32", "fp32"),
    "int4": ("int8", "fp8", "fp4", "fp16", "bf16", "tf32", "fp32"),
    "fp4": ("fp4", "fp8", "int8", "fp16", "bf16", "tf32", "fp32"),
}


def check_dtype(dtype: str, what: str = "dtype") -> str:
    """Return the dtype name normalised to lower case, or raise ValueError naming the choices."""
    name = str(dtype).strip().lower()
    aliases = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "half": "fp16", "float": "fp32"}
    name = aliases.get(name, name)
    if name not in BYTES_PER_VALUE:
        raise ValueError(f"{what} {dtype!r} is not a known dtype; expected one of {', '.join(DTYPES)}")
    return name


def bytes_per_value(dtype: str) -> float:
    return BYTES_PER_VALUE[check_dtype(dtype)]


def compute_dtype(*dtypes: str) -> str:
    """The format a kernel multiplies in: the widest of its operands' formats.

    Weight-only quantization (int4 weights, bf16 activations) computes at the bf16 rate;
    fp8 weights with fp8 activations compute at the fp8 rate.
    """
    names = [check_dtype(d) for d in dtypes]
    return max(names, key=lambda d: (BYTES_PER_VALUE[d], d.startswith("fp") or d == "bf16"))
