"""The plain records a trace produces (no torch objects), shared by trace.py and to_kernels.py."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Operand:
    """One tensor an op reads: which storage (`serial`), what it holds, how many elements."""

    serial: int
    kind: str            # weight | act | kv | const
    elements: int
    floating: bool
    itemsize: int


@dataclass(frozen=True)
class Output:
    serial: int
    elements: int
    floating: bool
    itemsize: int


@dataclass(frozen=True)
class Site:
    """Where an event ran: the innermost module call and the helper function below its forward."""

    module: str          # module path, e.g. model.layers.3.self_attn
    module_class: str
    call: int            # id of this module call (increments per call)
    leaf: bool           # the module has no children
    helper: str | None   # e.g. apply_rotary_pos_emb; None when the op sits in forward itself


@dataclass(frozen=True)
class Gemm:
    """C[m,n] = A[m,k] @ B[k,n], `batch` of them; A is the activation side, B the weight if any."""

    m: int
    k: int
    n: int
    batch: int
    weight_elements: int     # B (and the bias) when they are weights
    bias_elements: int


@dataclass(frozen=True)
class TracedOp:
    kind: str                # gemm | gather | elementwise
    aten: str                # e.g. mm, addmm, mul, native_layer_norm
    site: Site
    inputs: tuple[Operand, ...]
    outputs: tuple[Output, ...]
    vector_flops: float = 0.0
    gemm: Gemm | None = None


@dataclass(frozen=True)
class AttentionRecord:
    site: Site
    batch: int
    q_heads: int
    kv_heads: int
    q_tokens: int            # new tokens per sequence
    kv_tokens: int           # keys attended by the last query, as traced
    head_dim_qk: int
    head_dim_v: int
    window: int | None       # sliding window in tokens (None: full attention)
    causal: bool
    softcap: bool            # tanh logit soft-capping on the scores
    inputs: tuple[Operand, ...] = ()

    @property
    def kv_from_cache(self) -> bool:
        """K and V come straight from the KV cache (else they were computed, e.g. expanded from a latent)."""
        return len(self.inputs) == 3 and self.inputs[1].kind == "kv"


@dataclass(frozen=True)
class KVStoreRecord:
    site: Site
    tokens: int              # new tokens written (all sequences)
    key_elements: int
    value_elements: int
    kv_heads: int
    head_dim: int
    inputs: tuple[Operand, ...] = ()


@dataclass(frozen=True)
class ExpertsRecord:
    """One grouped GEMM over the routed experts: `rows` = tokens x top_k (token, expert) pairs."""

    site: Site
    name: str                # gate_up_proj, up_proj, down_proj
    rows: int
    k: int
    n: int
    tokens: int
    experts: int
    top_k: int
    weight_elements_per_expert: int
    bias_elements_per_expert: int


@dataclass
class Trace:
    """One traced forward pass and what it stood for."""

    model_type: str
    batch: int
    new_tokens: int                  # per sequence
    prior_tokens: int                # cached tokens before the pass
    logit_rows: int
    layers_total: int
    layers_traced: int
    events: list = field(default_factory=list)
    base_prefix: str = "model"       # the base model's attribute (model, transformer, ...), dropped from names
    layer_weights: dict = field(default_factory=dict)   # traced layer position -> layers it stands for
    unrecognized_ops: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def tokens(self) -> int:
        return self.batch * self.new_tokens

    def weight(self, module_path: str) -> float:
        """Occurrences in the full model of an event traced once in this module (1 outside the layers)."""
        layer, _ = layer_of(module_path)
        if layer is None:
            return 1.0
        return float(self.layer_weights.get(layer, 1.0))


def layer_of(module_path: str) -> tuple[int | None, str]:
    """(layer index, path with every index replaced by *) for a module path."""
    parts = module_path.split(".")
    layer = None
    for i, part in enumerate(parts):
        if part.isdigit():
            if layer is None:
                layer = int(part)
            parts[i] = "*"
    return layer, ".".join(parts)
