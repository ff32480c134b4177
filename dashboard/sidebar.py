"""Sidebar controls: page, devices and workbook, model, workload, method, share link."""

from __future__ import annotations

import time
from dataclasses import replace

import streamlit as st

from dashboard import data, session
from dashboard.state import PAGE_TITLES, PAGES
from engine import (
    DTYPES, METHODS, PHASES, SUPPORTED_MODEL_TYPES, auto_available, AutoModel, catalog_ids, is_automatic,
    load_catalog_config, load_specs, ModelConfig, ModelConfigError, parse_config_json,
)

MODEL_SOURCES = ("Catalog", "Hugging Face Hub", "Upload config.json")
SWAP_WINDOW_S = 30.0   # an upload this soon after the uploader emptied is a swap, not a fresh start


def workbook_specs() -> dict:
    """The bundled workbook, or the user's uploaded one; a bad upload keeps what the user had, exactly.

    Call before the view is read from the widgets. Replacing a file empties the uploader for a run or more
    before the new file arrives (more than one on a slow machine: the emptied run may rerun itself); those
    runs fall back to the bundled workbook and drop the uploaded devices from the view, so the first run with
    the new file, when it comes within SWAP_WINDOW_S, puts back the upload it emptied (when the new file is
    bad) and the selection, clones and edits of the view before it (`_put_back`).
    """
    upload = st.session_state.get("w_specs_file")
    if upload is None:
        if "specs_upload" in st.session_state:   # removed, or the uploader swapping files
            st.session_state["specs_emptied"] = (time.monotonic(), st.session_state.pop("specs_upload"),
                                                 session.view())
            st.session_state.pop("specs_upload_id", None)
        st.session_state.pop("specs_error", None)
        return data.bundled_specs()
    if st.session_state.get("specs_upload_id") != upload.file_id:
        st.session_state["specs_upload_id"] = upload.file_id
        emptied = st.session_state.pop("specs_emptied", None)
        swapped = emptied if emptied is not None and time.monotonic() - emptied[0] <= SWAP_WINDOW_S else None
        try:
            st.session_state["specs_upload"] = (upload.name, load_specs(upload.getvalue()))
            st.session_state.pop("specs_error", None)
        except (ValueError, OSError) as error:
            st.session_state["specs_error"] = f"{upload.name}: {error}"
            if swapped is not None:
                st.session_state["specs_upload"] = swapped[1]
        if swapped is not None:
            _put_back(swapped[2])
    if "specs_upload" in st.session_state:
        return st.session_state["specs_upload"][1]
    return data.bundled_specs()


def _put_back(before) -> None:
    """The devices, clones and edits of the view `before` the uploader emptied, back into the view and widgets."""
    session.set_view(replace(session.view(), devices=before.devices, clones=before.clones, edits=before.edits))
    st.session_state["w_devices"] = list(before.devices)


def _set_model(model_id: str) -> None:
    st.session_state["w_model"] = model_id   # callbacks run before the script, so this is allowed


def _load_from_hub() -> None:
    repo_id = st.session_state.get("w_hub_id", "").strip()
    token = st.session_state.get("w_hub_token", "")
    try:
        model = data.hub_model(repo_id, token)
    except (ValueError, OSError) as error:
        st.session_state["model_error"] = str(error)
        return
    st.session_state["uploaded_models"][repo_id] = model
    st.session_state.pop("model_error", None)
    _set_model(repo_id)


def _load_upload() -> None:
    upload = st.session_state.get("w_config_file")
    if upload is None:
        return
    name = f"uploaded/{upload.name}"
    try:      # size and nesting capped, as for a config.json on disk
        config = parse_config_json(upload.getvalue(), repr(upload.name))
    except ModelConfigError as error:
        st.session_state["model_error"] = str(error)
        return
    try:
        model = model_from_config(config, name)
    except ValueError as error:
        st.session_state["model_error"] = f"{upload.name}: {error}"
        return
    st.session_state["uploaded_models"][name] = model
    st.session_state.setdefault("uploaded_configs", {})[name] = config    # carried in the share link
    st.session_state.pop("model_error", None)
    _set_model(name)


def model_from_config(config: dict, name: str):
    """The hand model of a config.json, else (architectures the hand parser rejects) the automatic one
    when the `auto` extra is installed; otherwise the hand parser's error plus what the extra would add."""
    try:
        return ModelConfig.from_hf_config(config, name=name)
    except ModelConfigError as error:
        if str(config.get("model_type", "")) in SUPPORTED_MODEL_TYPES:
            raise                      # a family we model by hand, with a bad field: say which
        ready, reason = auto_available()
        if not ready:
            raise ValueError(f"{error}. {reason}") from None
        return AutoModel(config, name=name)


def model_controls() -> None:
    current = session.view().model
    families = catalog_families()
    options = sorted(catalog_ids(), key=lambda m: (families[m], m.lower()))
    options += [m for m in st.session_state["uploaded_models"] if m not in options]
    if current not in options:
        options.append(current)
    source = st.radio("Source", MODEL_SOURCES, horizontal=True, key="w_model_source", label_visibility="collapsed")
    st.selectbox("Model (catalog grouped by family)", options, key="w_model",
                 format_func=lambda m: f"{families[m]} · {m}" if m in families else m)
    if source == MODEL_SOURCES[1]:
        st.text_input("Repo id", key="w_hub_id", placeholder="org/name")
        st.text_input("Token (gated repos; never put in the link)", key="w_hub_token", type="password")
        st.button("Load from the Hub", on_click=_load_from_hub)
    elif source == MODEL_SOURCES[2]:
        st.file_uploader("config.json", type=["json"], key="w_config_file", on_change=_load_upload)
    if st.session_state.get("model_error"):
        st.error(st.session_state["model_error"])


@st.cache_data(show_spinner=False)
def catalog_families() -> dict[str, str]:
    """{catalog id: family (HF model_type)} for grouping the picker."""
    return {model_id: str(load_catalog_config(model_id).get("model_type", "other")) for model_id in catalog_ids()}


def model_card(model) -> None:
    summary = model.summary()
    active = summary.get("params_active") or model.params_total
    params = (f"{model.params_total / 1e9:.2f} B parameters" if active == model.params_total
              else f"{model.params_total / 1e9:.1f} B parameters, {active / 1e9:.1f} B active")
    lines = [params, f"{model.num_layers} layers · {model.num_attention_heads} heads ({model.num_key_value_heads} KV) · "
                     f"head dim {model.head_dim}",
             f"KV cache {model.kv_cache_bytes_per_token('bf16') / 1024:.0f} KiB/token (bf16)"]
    if summary.get("layer_pattern"):
        lines.append(f"layers: {summary['layer_pattern']}")
    if is_automatic(model):
        lines.append("**automatic decomposition** (no hand model: traced with transformers on the meta device)")
    st.caption("  \n".join(lines))


def body_rerun():
    """The callback of an input only the overview's body depends on (the workload's lengths and dtypes, the method,
    the engine options; Batch is drawn by the body itself, `batch_input`): on the overview, with the share box closed
    (its link shows every value), a change reruns only the overview's body (a keyed fragment, views/overview.py), not
    the sidebar; elsewhere None (the whole page reruns). Inputs that change the sidebar itself (phase, chunked
    prefill, parallelism, devices, model) have none."""
    if st.session_state.get("w_page", "overview") != "overview" or st.session_state.get(session.OPEN_SHARE):
        return None
    return lambda: st.rerun(session.OVERVIEW_BODY)


def body_draws_batch(page: str) -> bool:
    """Whether the overview's body draws the Batch input (into its place in the sidebar, `batch_input`): on the
    overview with the share box closed (its link shows the batch, so then the whole page reruns, as elsewhere)."""
    return page == "overview" and not st.session_state.get(session.OPEN_SHARE)


def batch_input(place) -> None:
    """The Batch input, into `place`. On the overview the body's fragment draws it (views/overview.body) into the
    place the sidebar keeps for it (`draw`, batch_in_body): an input a fragment drew reruns that fragment directly,
    one run per change, where a callback's `st.rerun(OVERVIEW_BODY)` first starts a full run that it aborts at once
    (two runs in the browser, docs/responsiveness.md). Elsewhere the sidebar draws it, and a change reruns the page."""
    place.number_input("Batch", min_value=1, max_value=1_000_000, step=1, key="w_batch")


def workload_controls(phase: str, batch_in_body: bool = False):
    """The workload's inputs; returns the Batch input's place (an empty slot at its place in its column) when
    `batch_in_body`, for the overview's body to draw it in, else None (drawn here)."""
    body = body_rerun()
    st.selectbox("Phase", PHASES, key="w_phase")
    left, right = st.columns(2)
    batch_place = left.empty() if batch_in_body else None
    if batch_place is None:
        batch_input(left)
    right.number_input("Input tokens", min_value=1, max_value=10_000_000, step=128, key="w_input", on_change=body)
    left.number_input("Output tokens", min_value=1, max_value=10_000_000, step=128, key="w_output", on_change=body)
    if phase in ("decode", "chunked"):
        right.number_input("Context (cached tokens)", min_value=0, max_value=10_000_000, step=128, key="w_context",
                           value=None, placeholder="default", on_change=body)
    if phase == "chunked":
        right.number_input("Chunk size", min_value=1, max_value=10_000_000, step=64, key="w_chunk", on_change=body)
    if phase == "request":
        st.toggle("Chunked prefill (simulate the real schedule)", key="w_chunked_prefill",
                  help="Iterations of chunk-size tokens mixing prompt chunks and decode tokens until every "
                       "request is done; TTFT/TPOT come from the schedule.")
        if st.session_state.get("w_chunked_prefill"):
            right.number_input("Chunk size", min_value=1, max_value=10_000_000, step=64, key="w_chunk",
                               on_change=body)
    first, second = st.columns(2)          # two per row: at 1440 px three cut "bf16" to "bf1"
    for column, label, key in ((first, "Weights", "w_weight_dtype"), (second, "Activations", "w_act_dtype"),
                               (first, "KV cache", "w_kv_dtype")):
        options = list(DTYPES) + ([st.session_state[key]] if st.session_state.get(key) not in DTYPES else [])
        column.selectbox(label, options, key=key, on_change=body)
    st.selectbox("Method", list(METHODS), key="w_method", on_change=body, help="\n\n".join(
        f"**{m.name}**: {m.description}" for m in METHODS.values()))
    return batch_place


def parallelism_controls() -> None:
    ways = (1, 2, 4, 8, 16, 32, 64)
    left, right = st.columns(2)            # two per row: at 1440 px four in a row showed no value
    for column, label, key, tip in ((left, "TP", "w_tp", "tensor-parallel ways"), (right, "PP", "w_pp", "pipeline stages"),
                                    (left, "DP", "w_dp", "data-parallel replicas"),
                                    (right, "EP", "w_ep", "expert-parallel ways (MoE)")):
        options = list(ways) + ([st.session_state[key]] if st.session_state.get(key) not in ways else [])
        column.selectbox(label, options, key=key, help=tip)
    devices = st.session_state["w_tp"] * st.session_state["w_pp"] * st.session_state["w_dp"]
    st.caption(f"{devices} device{'s' if devices > 1 else ''} (TP x PP x DP); batch is per replica")
    st.toggle("Overlap communication with compute", key="w_overlap", on_change=body_rerun())


def engine_options(model) -> None:
    """Choices the CLI offers beyond the workload: collectives, micro-batches, and (when the model has them)
    MoE routing skew and the MLA decode form."""
    body = body_rerun()
    left, right = st.columns(2)
    left.selectbox("Collectives", ("ring", "tree"), key="w_coll", on_change=body,
                   help="All-reduce / all-gather algorithm: ring (bandwidth-optimal) or tree (fewer latency steps)")
    right.number_input("Micro-batches", min_value=1, max_value=1_000_000, step=1, key="w_mb", value=None,
                       placeholder="automatic", on_change=body,
                       help="Prefill micro-batches for the pipeline (PP > 1); empty: the engine's choice")
    if getattr(model, "is_moe", False):
        st.number_input("MoE routing skew", min_value=0.0, max_value=10.0, step=0.1, key="w_skew", on_change=body,
                        help="Zipf exponent over the experts: 0 routes tokens evenly; higher loads the busiest "
                             "expert (and its device under EP) more")
    if getattr(model, "attention_kind", "mha") == "mla":
        st.selectbox("MLA decode form", ("absorbed", "naive"), key="w_mla", on_change=body,
                     help="absorbed: kv_b_proj folded into the query and output (FlashMLA, vLLM); naive: the "
                          "latent expanded to full K/V every step")


def begin():
    """The sidebar's title, and the container its inputs go into (`draw`). Called before the page: the sidebar is
    on screen at its width from the first element on, so the page's charts are drawn once, at their final width,
    though the inputs come after them (app.py)."""
    with st.sidebar:
        st.title("llm-roofline")
        return st.container()


def draw(controls, devices: dict, model, batch_in_body: bool = False):
    """The sidebar's inputs into `controls` (from `begin`), in their order; their values are already in session
    state (session.load_widgets, or the browser's last change), so the page drawn before them used the same.
    `batch_in_body`: the Batch input's place is left empty and returned, for the overview's body to draw the input
    in (`batch_input`); otherwise None is returned."""
    with controls:
        batch_place = _inputs(devices, model, batch_in_body)
        _share_box()
    return batch_place


def _inputs(devices: dict, model, batch_in_body: bool):
    """The inputs above the share box, in their order (see `draw`)."""
    st.radio("Page", PAGES, format_func=PAGE_TITLES.get, key="w_page", horizontal=True)
    st.subheader("Hardware")
    st.multiselect("Devices (the first is the primary)", list(devices), key="w_devices")
    st.file_uploader("Your specs workbook (.xlsx)", type=["xlsx"], key="w_specs_file")
    if st.session_state.get("specs_error"):
        st.error(st.session_state["specs_error"] + " — keeping the previous workbook")
    elif "specs_upload" in st.session_state:
        name, specs = st.session_state["specs_upload"]
        st.caption(f"Using {name}")
        for warning in getattr(specs, "warnings", []):   # unusual values: likely unit slips
            st.warning(f"{name}: {warning}", icon=":material/straighten:")
    st.subheader("Model")
    model_controls()
    if model is not None:
        model_card(model)
    st.subheader("Workload")
    batch_place = workload_controls(st.session_state.get("w_phase", "request"), batch_in_body)
    st.subheader("Devices and parallelism")
    parallelism_controls()
    engine_options(model)
    return batch_place


def _share_box() -> None:
    """The "Share this view" box, its link made only while it is open."""
    share = st.expander("Share this view", key=session.OPEN_SHARE, on_change="rerun", icon=":material/link:")
    if not share.open:      # made only while open: the link box's code (1.5 MB of script) loads on demand
        return
    link, note = session.share_link(session.from_widgets(session.view()))   # the view the page wrote
    if note:
        share.warning(note, icon=":material/link_off:")
    share.code(link, language=None, wrap_lines=True)
    share.caption("Copy the link above (button at its right); it opens this exact view"
                  + (", uploaded devices and config.json included." if "dev." in link or "cfg=" in link else "."))
