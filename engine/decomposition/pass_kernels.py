"""The record every part of the decomposition adds its kernels through: one forward pass on one device,
with its dtypes and bytes per value (engine/decomposition/transformer.py builds it; the attention rows,
MLA and MoE modules take it instead of loose arguments)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache


from engine.common.traced import as_float
from engine.decomposition.passes import ForwardPass
from engine.hardware.dtypes import bytes_per_value, compute_dtype, gemm_dtype
from engine.kernels.collective_kinds import bandwidth_factor, kind_of
from engine.kernels.fields import gemm_fields
from engine.kernels.table import KernelTableBuilder
from engine.workload.module_dtypes import module_gemm_dtypes
from engine.workload.scenario import Scenario


@dataclass(frozen=True)
class BytesPerValue:
    """Bytes of one activation, weight and KV-cache value (their dtypes differ)."""

    activation: float
    weight: float
    kv: float


@lru_cache(maxsize=256)
def _pass_dtypes(activation: str, weight: str, kv: str) -> tuple[BytesPerValue, str, str]:
    """(bytes per activation, weight and KV value; the GEMM dtype; the attention dtype) of a scenario's dtypes, once
    per combination (a frozen record, shared)."""
    return (BytesPerValue(bytes_per_value(activation), bytes_per_value(weight), bytes_per_value(kv)),
            gemm_dtype(weight, activation), compute_dtype(activation, kv))


@dataclass(frozen=True)
class ModuleGemm:
    """The GEMM dtype and the bytes per weight and per activation value of one module group's GEMMs."""

    gemm_dtype: str
    weight_bytes: float
    activation_bytes: float


@lru_cache(maxsize=256)
def _module_gemms(activation: str, weight: str, unquantized: str,
                  modules: tuple[str, ...]) -> tuple[tuple[str, ModuleGemm], ...]:
    """(module group, ModuleGemm) of every group of `modules` (the scenario's unquantized_modules)."""
    out = []
    for module in modules:
        module_weight, module_activation = module_gemm_dtypes(weight, activation, unquantized, module, modules)
        out.append((module, ModuleGemm(gemm_dtype(module_weight, module_activation), bytes_per_value(module_weight),
                                       bytes_per_value(module_activation))))
    return tuple(out)


@dataclass(frozen=True)
class PassKernels:
    """Adds the kernels of `forward_pass` to `builder`: GEMMs in `gemm_dtype` on the matrix units, element-wise
    work in `vector_dtype` on the vector units, attention in `attention_dtype`, the KV cache in `kv_dtype`.

    `weight_matrix_type` is the seed's type of the weight GEMMs: Va_Mw when every query is a single token
    (decode), else Ma_Mw; `collective_algorithm` the ring or tree collectives (docs/parallelism.md)."""

    builder: KernelTableBuilder
    forward_pass: ForwardPass
    value_bytes: BytesPerValue
    gemm_dtype: str
    attention_dtype: str
    vector_dtype: str
    kv_dtype: str
    weight_matrix_type: str = "Ma_Mw"
    collective_algorithm: str = "ring"
    unquantized: tuple[tuple[str, ModuleGemm], ...] = ()

    @classmethod
    def for_scenario(cls, builder: KernelTableBuilder, forward_pass: ForwardPass, scenario: Scenario) -> PassKernels:
        decode_only = all(part.matrix_type == "Va_Mqa" for part in forward_pass.attention)
        value_bytes, gemm, attention = _pass_dtypes(scenario.activation_dtype, scenario.weight_dtype, scenario.kv_dtype)
        return cls(builder, forward_pass, value_bytes, gemm_dtype=gemm, attention_dtype=attention,
                   vector_dtype=scenario.activation_dtype, kv_dtype=scenario.kv_dtype,
                   weight_matrix_type="Va_Mw" if decode_only else "Ma_Mw",
                   collective_algorithm=scenario.collective_algorithm,
                   unquantized=_module_gemms(scenario.activation_dtype, scenario.weight_dtype,
                                             scenario.unquantized_dtype, scenario.unquantized_modules)
                   if scenario.unquantized_modules else ())

    @property
    def tokens(self):
        """Tokens through the linear layers in one step (an array: one value per iteration)."""
        return self.forward_pass.tokens

    @property
    def steps(self) -> int:
        return self.forward_pass.steps

    def add(self, **columns) -> int:
        """One kernel row of this pass (the builder's columns); returns its group."""
        return self.builder.add_row(self.forward_pass.phase, columns)

    def module_gemm(self, module: str | None) -> ModuleGemm:
        """The dtypes of `module`'s GEMMs (a group of engine/workload/module_dtypes.py; None: the routed experts)."""
        for group, found in self.unquantized:
            if group == module:
                return found
        return ModuleGemm(self.gemm_dtype, self.value_bytes.weight, self.value_bytes.activation)

    def gemm(self, name: str, m, k, n, count, bias: bool, module: str | None = None) -> int:
        """A weight GEMM C[m, n] = A[m, k] @ W[k, n] (+ bias) of `module` (module_gemm)."""
        if not self.unquantized:
            return self.add(name=name, type=self.weight_matrix_type, op="gemm", unit="matrix", dtype=self.gemm_dtype,
                            count=count, **gemm_fields(m, k, n, self.value_bytes.weight, self.value_bytes.activation,
                                                       bias))
        dtypes = self.module_gemm(module)
        return self.add(name=name, type=self.weight_matrix_type, op="gemm", unit="matrix", dtype=dtypes.gemm_dtype,
                        count=count, **gemm_fields(m, k, n, dtypes.weight_bytes, dtypes.activation_bytes, bias))

    def elementwise(self, name: str, op: str, fields: dict, count, type: str = "Elementwise") -> int:
        return self.add(name=name, type=type, op=op, unit="vector", dtype=self.vector_dtype, count=count, **fields)

    def collective(self, name: str, tokens, width, message_bytes, group: int, count, producer: int = -1) -> int:
        """A collective of `message_bytes` per device over `group` devices (docs/parallelism.md); `producer`
        is the kernel whose output it carries (an overlapped collective hides behind it)."""
        factor = bandwidth_factor(kind_of(name), group, self.collective_algorithm)
        return self.add(name=name, type="Collective", op="collective", unit="link", dtype=self.vector_dtype,
                        m=tokens, n=width, count=count, link_bytes=factor * as_float(message_bytes),
                        group_size=group, overlap_group=producer)

    def hidden_state_collective(self, name: str, hidden: int, group: int, count, producer: int = -1) -> int:
        """A collective of the pass's hidden states (tokens x hidden activations)."""
        tokens = self.tokens
        return self.collective(name, tokens, hidden, tokens * hidden * self.value_bytes.activation, group, count,
                               producer)
