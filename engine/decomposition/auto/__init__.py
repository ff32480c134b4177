"""Automatic decomposition: any Hugging Face causal LM -> the kernel table, by tracing it on meta tensors.

    from engine.decomposition.auto import available, decompose_auto, load_auto_model
    ok, why = available()                       # (False, "... pip install 'llm-roofline[auto]' ...") without the extra
    table = decompose_auto("microsoft/phi-2", Scenario(phase="prefill", batch=1, input_length=1024))
    model = load_auto_model(config_dict)        # an AutoModel: what engine.estimate needs, decomposed by tracing

The model is built from its config with transformers on PyTorch's meta device (no weights, no download,
no memory) and one forward pass per scenario phase is traced op by op (engine/decomposition/auto/trace.py); the trace
becomes the same kernel table the hand decomposition produces (engine/decomposition/auto/to_kernels.py), so every
estimator, chart and export works on it. docs/auto.md has the conventions and the cross-check.

Needs the optional `auto` extra (PyTorch CPU and transformers): `pip install "llm-roofline[auto]"`.
Without it this package still imports; `available()` says what is missing and the entry points raise
AutoDecompositionUnavailable naming the extra.
"""

from __future__ import annotations

import importlib.util
import json
import os
from functools import lru_cache

import pandas as pd

from engine.models.config_reader import ModelConfigError
from engine.models.validation import check_config_fields

EXTRA = "auto"
INSTALL_HINT = 'pip install "llm-roofline[auto]"'
WHAT_THE_EXTRA_ADDS = ("automatic decomposition of any Hugging Face causal-LM architecture (traced on PyTorch's "
                       "meta device: no weights, no download)")
MINIMUM_VERSIONS = {"torch": "2.6", "transformers": "5.17"}

__all__ = [
    "AutoDecompositionError", "AutoDecompositionUnavailable", "AutoModel", "available", "decompose_auto",
    "decompose_auto_columns", "decompose_columns", "is_automatic", "load_any_model", "load_auto_model",
    "load_config_dict",
]


class AutoDecompositionUnavailable(ImportError):
    """The optional `auto` extra (PyTorch and transformers) is not installed (or too old)."""


class AutoDecompositionError(ValueError):
    """A model that could not be built or traced automatically; the message says why."""


def _version_tuple(text: str) -> tuple[int, ...]:
    parts = []
    for piece in text.split("+")[0].split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def available() -> tuple[bool, str]:
    """(True, versions) when the `auto` extra is installed, else (False, what is missing and how to get it).

    Cheap: looks the packages up without importing them."""
    from importlib.metadata import PackageNotFoundError, version

    problems = []
    versions = []
    for package, minimum in MINIMUM_VERSIONS.items():
        if importlib.util.find_spec(package) is None:
            problems.append(f"{package} is not installed")
            continue
        try:
            found = version(package)
        except PackageNotFoundError:
            found = "0"
        if _version_tuple(found) < _version_tuple(minimum):
            problems.append(f"{package} {found} is older than {minimum}")
        versions.append(f"{package} {found}")
    if problems:
        return False, (f"{WHAT_THE_EXTRA_ADDS} needs the optional '{EXTRA}' extra (PyTorch CPU and transformers): "
                       f"{INSTALL_HINT}; {'; '.join(problems)}")
    return True, ", ".join(versions)


def _require() -> None:
    ok, reason = available()
    if not ok:
        raise AutoDecompositionUnavailable(reason)


def is_automatic(model) -> bool:
    """True for models decomposed by tracing (AutoModel), False for hand models (ModelConfig)."""
    return bool(getattr(model, "automatic", False))


# --------------------------------------------------------------------------------------- configs

def load_config_dict(source, *, token: str | None = None, offline: bool | None = None,
                     local_files: bool = True) -> tuple[dict, str]:
    """(config.json dict, name) from a dict, a transformers config, a catalog id, a local file or folder
    (unless `local_files` is False), or a Hub repo id (config.json only, through huggingface_hub and its cache)."""
    if isinstance(source, dict):
        return dict(source), str(source.get("_name_or_path") or source.get("model_type") or "config")
    if hasattr(source, "to_dict") and hasattr(source, "model_type"):
        data = source.to_dict()
        return data, str(getattr(source, "name_or_path", "") or data.get("model_type"))
    if not isinstance(source, (str, os.PathLike)) or not str(source).strip():
        raise AutoDecompositionError(f"model source must be a config dict, a repo id or a path, got {source!r}")
    from engine.models.loading import ModelLoadError, catalog_ids, load_catalog_config, local_path, read_config_json

    text = os.fspath(source).strip()
    if text.lower() in {model_id.lower() for model_id in catalog_ids()}:
        return load_catalog_config(text), next(m for m in catalog_ids() if m.lower() == text.lower())
    path = local_path(text) if local_files else None
    if path is not None:
        return read_config_json(path / "config.json" if path.is_dir() else path), text
    try:
        from huggingface_hub import hf_hub_download
        if offline is None:
            offline = os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes", "on")
        file = hf_hub_download(text, "config.json", token=token, local_files_only=offline)
    except Exception as error:   # any Hub failure becomes one line
        raise ModelLoadError(f"cannot load config.json of {text!r}: {type(error).__name__}: {error}") from None
    return read_config_json(file), text


# --------------------------------------------------------------------------------------- the model

class AutoModel:
    """A model with no hand decomposition: built from its config on meta tensors and decomposed by tracing.

    Offers what engine.estimate and the reports read from a model (name, max_position_embeddings,
    params_total, kv_cache_bytes_per_token, summary) plus `decompose(scenario)`. `automatic` is True.
    """

    automatic = True

    def __init__(self, config_dict: dict, name: str | None = None, traced_layers: int | None = 2):
        _require()
        from engine.decomposition.auto import trace

        self.config_dict = dict(config_dict)
        self.name = name or str(config_dict.get("_name_or_path") or config_dict.get("model_type") or "model")
        self.traced_layers = traced_layers
        check_config_fields(self.config_dict)        # the hand parser's checks, naming the field
        try:
            self._prepared = trace.prepare_model(self.config_dict, traced_layers)
        except ModelConfigError:
            raise
        except trace.TraceError as error:
            raise AutoDecompositionError(f"{error}{_sizes_in(self.config_dict)}") from None
        except Exception as error:   # transformers raises many kinds on a bad config
            raise AutoDecompositionError(f"cannot build {self.name!r} with transformers: {_one_line(error)}"
                                         f"{_sizes_in(self.config_dict)}") from None
        try:
            self._describe()
        except (AutoDecompositionError, ModelConfigError):
            raise
        except Exception as error:   # noqa: BLE001 - a library's failure while tracing, as one line
            raise AutoDecompositionError(f"cannot trace {self.name!r} with transformers: {_one_line(error)}") from None

    def _describe(self) -> None:
        """Sizes from the config and, by one traced decode step, the KV bytes per token and active weights."""
        config = self._prepared.model.config
        self.model_type = self._prepared.model_type
        self.architectures = tuple(self.config_dict.get("architectures") or ())
        self.num_layers = self._prepared.layers_total
        # informational, from the config (a model whose layers differ is described by its trace, not these)
        self.hidden_size = _int_or_none(getattr(config, "hidden_size", None))
        self.intermediate_size = _int_or_none(getattr(config, "intermediate_size", None))
        self.num_attention_heads = _int_or_none(getattr(config, "num_attention_heads", None))
        self.num_key_value_heads = _int_or_none(getattr(config, "num_key_value_heads", None)) \
            or self.num_attention_heads
        self.head_dim = _int_or_none(getattr(config, "head_dim", None)) or (
            self.hidden_size // self.num_attention_heads if self.hidden_size and self.num_attention_heads else None)
        self.vocab_size = _int_or_none(getattr(config, "vocab_size", None))
        positions = getattr(config, "max_position_embeddings", None)
        self.max_position_embeddings = int(positions) if isinstance(positions, int) and positions > 0 else 10**9
        self.params_total = int(self._prepared.parameters)
        one_token = self._trace(batch=1, new_tokens=1, prior=1, keep=1)
        self._kv_elements_per_token = _kv_elements_per_token(one_token)
        # what the cache stores, not what the config's head count suggests (Falcon-7B: 71 query heads, 1 KV head)
        self.num_key_value_heads = _stored_kv_heads(one_token) or self.num_key_value_heads
        self.params_active = self.params_total - int(round(_idle_expert_parameters(one_token)))

    def _trace(self, batch: int, new_tokens: int, prior: int, keep: int | None):
        from engine.decomposition.auto import trace

        try:
            return trace.trace_forward(self._prepared, batch, new_tokens, prior, keep)
        except trace.TraceError as error:
            raise AutoDecompositionError(f"{error}{_sizes_in(self.config_dict)}") from None
        except Exception as error:   # noqa: BLE001 - transformers failing on an unusual config, as one line
            raise AutoDecompositionError(f"cannot trace {self.name!r} with transformers: {_one_line(error)}"
                                         f"{_sizes_in(self.config_dict)}") from None

    @property
    def notes(self) -> tuple[str, ...]:
        """How the model was traced (layers traced, scaling)."""
        return self._prepared.notes

    def kv_cache_bytes_per_token(self, kv_dtype: str = "bf16") -> float:
        """K and V bytes stored per token over all layers, from the traced cache updates (a sliding-window
        layer's cap is not applied: an upper bound for such layers)."""
        from engine.hardware.dtypes import bytes_per_value
        return self._kv_elements_per_token * bytes_per_value(kv_dtype)

    def decompose_columns(self, scenario) -> dict:
        """The kernel table as a dict of numpy arrays (what the estimators take)."""
        from engine.decomposition.auto.passes import check_supported, forward_passes
        from engine.decomposition.auto.to_kernels import Dtypes, add_pass
        from engine.kernels.table import KernelTableBuilder

        try:
            check_supported(scenario)
        except ValueError as error:
            raise AutoDecompositionError(str(error)) from None
        if scenario.unquantized_modules:
            raise AutoDecompositionError(f"{self.name} is decomposed automatically (traced): unquantized_modules "
                                         "needs a hand model (every traced weight takes weight_dtype)")
        dtypes = Dtypes(scenario.weight_dtype, scenario.activation_dtype, scenario.kv_dtype)
        builder = KernelTableBuilder()
        for forward_pass in forward_passes(scenario):
            traced, following = self._trace_pass(forward_pass)
            try:
                add_pass(builder, traced, forward_pass, dtypes, traced.base_prefix, following)
            except ValueError as error:
                raise AutoDecompositionError(f"{self.name}: {error}") from None
            except ArithmeticError as error:     # a degenerate shape from an unusual config
                raise AutoDecompositionError(f"{self.name}: cannot turn the trace into kernels: "
                                             f"{_one_line(error)}") from None
        return builder.build_columns()

    def decompose(self, scenario) -> pd.DataFrame:
        return pd.DataFrame(self.decompose_columns(scenario))

    def _trace_pass(self, forward_pass):
        """(trace, trace with one more cached token or None) for a pass.

        Attention rows are computed per part and step from the attention records (to_kernels.py), so
        the traced context need not be the scenario's: a decode step is traced with a one- and a
        two-token cache (what else grows with the context is extended linearly), a prompt as it is, and
        a chunk as one sequence of `tokens` tokens."""
        alike = [part.alike for part in forward_pass.attention]
        if all(part.new_tokens == 1 for part in alike):
            prior = 1 if min(float(part.prior[0]) for part in alike) > 0 else 0
            return (self._trace(forward_pass.tokens, 1, prior, 1),
                    self._trace(forward_pass.tokens, 1, prior + 1, 1))
        if len(alike) == 1 and alike[0].sequences * alike[0].new_tokens == forward_pass.tokens \
                and float(alike[0].prior[0]) == 0 and forward_pass.logit_rows == alike[0].sequences:
            return self._trace(alike[0].sequences, alike[0].new_tokens, 0, 1), None
        return self._trace(1, forward_pass.tokens, 0, forward_pass.logit_rows), None

    def summary(self) -> dict:
        return {
            "name": self.name,
            "model_type": self.model_type,
            "decomposition": "automatic (traced with transformers on the meta device)",
            "params_total": self.params_total,
            "params_active": self.params_active,
            "num_layers": self.num_layers,
            "hidden_size": self.hidden_size,
            "num_attention_heads": self.num_attention_heads,
            "num_key_value_heads": self.num_key_value_heads,
            "head_dim": self.head_dim,
            "vocab_size": self.vocab_size,
            "max_position_embeddings": self.max_position_embeddings,
            "kv_cache_bytes_per_token": self.kv_cache_bytes_per_token("bf16"),
            "notes": list(self.notes),
        }

    def __repr__(self) -> str:
        return f"AutoModel({self.name!r}, model_type={self.model_type!r}, params_total={self.params_total:,})"


def _sizes_in(config_dict: dict) -> str:
    """The size fields a shape mismatch comes from, as config.json states them (the places to look)."""
    from engine.models.validation import SIZE_LIMITS
    sizes = [f"{name}={value}" for name, value in config_dict.items() if name in SIZE_LIMITS and value is not None]
    return f" (the sizes in config.json: {', '.join(sizes)})" if sizes else ""


def _one_line(error: BaseException) -> str:
    """`Type: first line` of a library's exception, at most 300 characters."""
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text[:300]}" if text else type(error).__name__


def _int_or_none(value) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _kv_elements_per_token(one_token_trace) -> float:
    from engine.decomposition.auto.records import KVStoreRecord

    total = 0.0
    for event in one_token_trace.events:
        if isinstance(event, KVStoreRecord):
            total += (event.key_elements + event.value_elements) / max(event.tokens, 1) * \
                one_token_trace.weight(event.site.module)
    return total


def _stored_kv_heads(one_token_trace) -> int | None:
    """The KV heads the traced cache updates store (the most common over layers), None when nothing is stored."""
    from collections import Counter

    from engine.decomposition.auto.records import KVStoreRecord

    heads = Counter(event.kv_heads for event in one_token_trace.events if isinstance(event, KVStoreRecord))
    return heads.most_common(1)[0][0] if heads else None


def _idle_expert_parameters(one_token_trace) -> float:
    """Expert weights a token does not touch: (experts - top_k) x per-expert weights, over all layers."""
    from engine.decomposition.auto.records import ExpertsRecord

    idle = 0.0
    for event in one_token_trace.events:
        if isinstance(event, ExpertsRecord):
            per_expert = event.weight_elements_per_expert + event.bias_elements_per_expert
            idle += (event.experts - event.top_k) * per_expert * one_token_trace.weight(event.site.module)
    return idle


@lru_cache(maxsize=32)
def _auto_model_cached(config_json: str, name: str, traced_layers: int | None) -> AutoModel:
    return AutoModel(json.loads(config_json), name, traced_layers)


def load_auto_model(source, *, name: str | None = None, traced_layers: int | None = 2, token: str | None = None,
                    offline: bool | None = None, local_files: bool = True) -> AutoModel:
    """An AutoModel from a config dict, a transformers config, a catalog id, a config.json path or a Hub id.

    traced_layers: layers traced per kind of layer (layers built alike run the same ops, so each kind is
    traced through this many and scaled to its layer count; see trace.PreparedModel); None traces all."""
    _require()
    config_dict, found_name = load_config_dict(source, token=token, offline=offline, local_files=local_files)
    return _auto_model_cached(json.dumps(config_dict, sort_keys=True), name or found_name, traced_layers)


def decompose_auto_columns(config_or_model_id, scenario, *, traced_layers: int | None = 2) -> dict:
    """`decompose_auto` as a dict of numpy arrays."""
    model = config_or_model_id if is_automatic(config_or_model_id) else \
        load_auto_model(config_or_model_id, traced_layers=traced_layers)
    return model.decompose_columns(scenario)


def decompose_auto(config_or_model_id, scenario, *, traced_layers: int | None = 2) -> pd.DataFrame:
    """The kernel table of `scenario` for any Hugging Face causal LM, by tracing it on meta tensors.

    config_or_model_id: a config.json dict, a transformers config, a catalog id, a local config.json (or
    folder) or a Hub repo id, or an AutoModel. Raises AutoDecompositionUnavailable without the extra."""
    return pd.DataFrame(decompose_auto_columns(config_or_model_id, scenario, traced_layers=traced_layers))


def load_any_model(source, **options):
    """The hand model when there is one, else the automatic one (the hook for model pickers).

    Hand models (engine.models.load_model) win; a config the hand parser rejects (ModelConfigError:
    an unsupported family or feature) is decomposed automatically when the extra is installed, and
    otherwise the hand error is raised with a hint naming the extra. Both paths validate the config the
    same way (engine/models/validation.py). `options` go to load_model (revision, token, cache_dir, offline,
    endpoint, local_files); token, offline and local_files also to the automatic loader. Errors are the
    project's own (ModelConfigError, ModelLoadError, AutoDecompositionError), never a library's."""
    from engine.models import ModelLoadError

    try:
        return _load_any_model(source, **options)
    except (ModelConfigError, ModelLoadError, AutoDecompositionError, AutoDecompositionUnavailable):
        raise
    except Exception as error:  # noqa: BLE001 - a library's failure becomes one line naming the source
        raise ModelLoadError(f"cannot load model {source!r}: {_one_line(error)}") from None


def _load_any_model(source, **options):
    from engine.models import ModelConfigError, load_model

    try:
        return load_model(source, **options)
    except ModelConfigError as error:
        ok, reason = available()
        if not ok:
            raise ModelConfigError(f"{error} (automatic decomposition could model it: {reason})") from None
        extra = {key: options[key] for key in ("token", "offline", "local_files") if key in options}
        return load_auto_model(source, **extra)


def decompose_columns(model, scenario) -> dict:
    """The hook for engine.estimate: automatic models decompose by tracing, hand models as before."""
    if is_automatic(model):
        return model.decompose_columns(scenario)
    from engine.decomposition.transformer import decompose_columns as hand_decompose_columns
    return hand_decompose_columns(model, scenario)
