"""Numeric formats: bytes per value (scale factors included) and the format matrix units multiply in.

Bytes per value (DESIGN.md): fp32 4, tf32 4 (stored as fp32), bf16/fp16 2, fp8/int8 1, int4/fp4 0.5.
fp8 comes as `fp8` (either encoding), `fp8_e4m3` and `fp8_e5m2`: one byte each, all at the fp8 rate.

Block-scaled (grouped) formats store one scale per group of `group_size` values, so a value costs
element bits / 8 + scale bytes / group size:

    int4_g128   int4 values, one bf16 scale per 128 (GPTQ/AWQ style)   0.5 + 2/128 = 0.515625 B
    int4_g<N>   the same with a group of N (any N >= 1; int8_g<N>, fp8_g<N>, fp4_g<N> likewise)
    mxfp4       OCP microscaling: fp4 (e2m1) values, one e8m0 (1 B) scale per 32   0.5 + 1/32 = 0.53125 B
    nvfp4       NVIDIA fp4: fp4 (e2m1) values, one fp8 (e4m3) scale per 16          0.5 + 1/16 = 0.5625 B
    mxfp8       OCP microscaling: fp8 values, one e8m0 scale per 32                 1 + 1/32 = 1.03125 B

(nvfp4's extra per-tensor fp32 scale is negligible and not counted; so are the per-channel or
per-tensor scales of plain int8/fp8.) Weights, activations and the KV cache each carry their own
format; every byte count of the engine (kernel table and memory footprint) uses `bytes_per_value`.

Matrix work runs in a *compute format* (the key of the device's matrix rates): fp8_e4m3 -> fp8,
mxfp4/nvfp4 -> fp4, int4_g128 -> int4, ... A GEMM multiplies in the wider of its two operands'
compute formats (`compute_dtype`): weight-only quantization (W4A16, W8A16) runs at the activation
rate while reading the narrow weights; W8A8 / FP8 (both operands 8-bit) at the 8-bit rate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class NumberFormat:
    """One storage format: bits per stored value, the matrix rate it uses, and its scale groups."""

    name: str
    element_bits: float
    compute_format: str          # the `matrix_macs_per_cycle_per_core_<format>` rate it runs at (or falls back from)
    group_size: int = 0          # values sharing one scale; 0: no per-group scale (per tensor/channel, negligible)
    scale_bytes: float = 0.0     # bytes of one scale
    description: str = ""

    @property
    def bytes_per_value(self) -> float:
        """Bytes per stored value, the scale factors included."""
        scales = self.scale_bytes / self.group_size if self.group_size else 0.0
        return self.element_bits / 8.0 + scales

    @property
    def is_float(self) -> bool:
        return not self.compute_format.startswith("int")


_BASE = {
    "fp32": NumberFormat("fp32", 32, "fp32", description="IEEE single precision"),
    "tf32": NumberFormat("tf32", 32, "tf32", description="stored as fp32, multiplied as tf32"),
    "bf16": NumberFormat("bf16", 16, "bf16", description="bfloat16"),
    "fp16": NumberFormat("fp16", 16, "fp16", description="IEEE half precision"),
    "fp8": NumberFormat("fp8", 8, "fp8", description="8-bit float, either encoding"),
    "int8": NumberFormat("int8", 8, "int8", description="8-bit integer (per-channel/tensor scales not counted)"),
    "int4": NumberFormat("int4", 4, "int4", description="4-bit integer (per-channel scales not counted)"),
    "fp4": NumberFormat("fp4", 4, "fp4", description="4-bit float (e2m1)"),
}
_NAMED = {
    "fp8_e4m3": NumberFormat("fp8_e4m3", 8, "fp8", description="fp8, 4 exponent and 3 mantissa bits"),
    "fp8_e5m2": NumberFormat("fp8_e5m2", 8, "fp8", description="fp8, 5 exponent and 2 mantissa bits"),
    "mxfp8": NumberFormat("mxfp8", 8, "fp8", 32, 1.0, "OCP MX fp8: one e8m0 scale per 32 values"),
    "mxfp4": NumberFormat("mxfp4", 4, "fp4", 32, 1.0, "OCP MX fp4 (e2m1): one e8m0 scale per 32 values"),
    "nvfp4": NumberFormat("nvfp4", 4, "fp4", 16, 1.0, "NVIDIA fp4 (e2m1): one fp8 e4m3 scale per 16 values"),
}
GROUP_SCALE_BYTES = 2.0          # `<base>_g<N>` formats keep one bf16 scale per group
GROUPED_BASES = ("int4", "int8", "fp4", "fp8")
_GROUPED = re.compile(r"^(int4|int8|fp4|fp8)_g([1-9][0-9]{0,5})$")

# The formats offered in menus (any `<base>_g<N>` is accepted too).
DTYPES: tuple[str, ...] = ("fp32", "tf32", "bf16", "fp16", "fp8", "fp8_e4m3", "fp8_e5m2", "int8", "int4", "fp4",
                           "mxfp8", "mxfp4", "nvfp4", "int4_g128", "int4_g64", "int4_g32")

# Formats a matrix unit may be rated for in specs.xlsx (row `matrix_macs_per_cycle_per_core_<dtype>`).
MATRIX_DTYPES: tuple[str, ...] = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")


@lru_cache(maxsize=None)
def number_format(dtype: str) -> NumberFormat:
    """The NumberFormat of a (normalised) dtype name; raises ValueError for an unknown one."""
    name = check_dtype(dtype)
    if name in _BASE:
        return _BASE[name]
    if name in _NAMED:
        return _NAMED[name]
    base, group = _GROUPED.match(name).groups()
    element = _BASE[base]
    return NumberFormat(name, element.element_bits, element.compute_format, int(group), GROUP_SCALE_BYTES,
                        f"{base} values, one bf16 scale per {group} values")


_CHECKED: dict[str, str] = {}     # dtype strings seen -> their normalised names (the hot path asks often)


def check_dtype(dtype: str, what: str = "dtype") -> str:
    """Return the dtype name normalised to lower case, or raise ValueError naming the choices."""
    if dtype.__class__ is str:
        name = _CHECKED.get(dtype)
        if name is not None:
            return name
    name = str(dtype).strip().lower().replace("-", "_")
    aliases = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "half": "fp16", "float": "fp32",
               "e4m3": "fp8_e4m3", "e5m2": "fp8_e5m2", "float8_e4m3fn": "fp8_e4m3", "float8_e5m2": "fp8_e5m2"}
    name = aliases.get(name, name)
    if name not in _BASE and name not in _NAMED and not _GROUPED.match(name):
        raise ValueError(f"{what} {dtype!r} is not a known dtype; expected one of {', '.join(DTYPES)} "
                         f"or a grouped format <{'|'.join(GROUPED_BASES)}>_g<group size> (e.g. int4_g128)")
    if dtype.__class__ is str:
        _CHECKED[dtype] = name
    return name


def bytes_per_value(dtype: str) -> float:
    """Bytes per stored value, scale factors of block-scaled formats included."""
    return number_format(dtype).bytes_per_value


def compute_format(dtype: str) -> str:
    """The matrix-rate format `dtype` multiplies in (fp8_e4m3 -> fp8, nvfp4 -> fp4, int4_g128 -> int4)."""
    return number_format(dtype).compute_format


@lru_cache(maxsize=1024)
def compute_dtype(*dtypes: str) -> str:
    """The format a kernel multiplies in: the widest of its operands' compute formats.

    Weight-only quantization (int4 or fp8 weights, bf16 activations) computes at the bf16 rate;
    fp8 weights with fp8 activations (W8A8) at the fp8 rate; nvfp4 x nvfp4 at the fp4 rate.
    Between formats of equal width a float format wins (fp8 x int8 -> fp8).
    """
    formats = [number_format(d) for d in dtypes]
    widest = max(formats, key=lambda f: (f.element_bits, f.is_float))
    return widest.compute_format


def gemm_dtype(weight: str, activation: str) -> str:
    """The dtype a GEMM row carries: the key of its per-format constants (RealisticConstants, looked up by the
    dtype, then by its compute format) and, through its compute format, of its matrix rate. Where both operands
    share one software block-scaled format `<base>_g<N>` (fp8_g128 x fp8_g128: DeepSeek-style block-scaled fp8,
    aiconfigurator's fp8_block) the format itself, so its own constants apply rather than the per-tensor format's
    (plain fp8's quantize kernel); else `compute_dtype`. The named microscaled formats (mxfp4, nvfp4, mxfp8: scales
    taken by the tensor cores themselves) and weight-only or mixed pairs keep their compute format."""
    name = check_dtype(weight)
    if name == check_dtype(activation) and _GROUPED.match(name):
        return name
    return compute_dtype(weight, activation)


def is_block_scaled(dtype: str) -> bool:
    """A software block-scaled format `<base>_g<N>` (fp8_g128, int4_g128), as opposed to the tensor cores' own
    microscaled ones (mxfp8, nvfp4) and plain formats."""
    return bool(_GROUPED.match(dtype))


class _FallbackTable(dict):
    """MATRIX_FALLBACK, also answering for every named or grouped format through its compute format."""

    def __missing__(self, key: str) -> tuple[str, ...]:
        return self[compute_format(key)]


# When a device has no matrix rate for a dtype, the kernel runs in the next format of this list
# (the way real kernels up-convert: int4 weights are multiplied as int8/fp8 or fp16, etc.).
MATRIX_FALLBACK: dict[str, tuple[str, ...]] = _FallbackTable({
    "fp32": ("fp32", "tf32"),
    "tf32": ("tf32", "fp32"),
    "bf16": ("bf16", "fp16", "tf32", "fp32"),
    "fp16": ("fp16", "bf16", "tf32", "fp32"),
    "fp8": ("fp8", "int8", "fp16", "bf16", "tf32", "fp32"),
    "int8": ("int8", "fp8", "fp16", "bf16", "tf32", "fp32"),
    "int4": ("int8", "fp8", "fp4", "fp16", "bf16", "tf32", "fp32"),
    "fp4": ("fp4", "fp8", "int8", "fp16", "bf16", "tf32", "fp32"),
})

# bytes per value of the menu formats (kept for `engine.BYTES_PER_VALUE`)
BYTES_PER_VALUE: dict[str, float] = {name: bytes_per_value(name) for name in DTYPES}
