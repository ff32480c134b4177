"""The view <-> URL round trip and per-field fallback for bad parameters (pure, no Streamlit)."""

from __future__ import annotations

import pytest

from dashboard.resolve import resolve_devices, resolve_lengths, resolve_model, resolve_scenario
from dashboard.state import ViewState, parse_query, to_query
from engine.models import load_model


def test_default_view_round_trips():
    state = ViewState()
    parsed, warnings = parse_query(to_query(state))
    assert parsed == state and warnings == []


def test_full_view_round_trips():
    state = ViewState(page="compare", devices=("H100-SXM", "MI300X", "H100-NEXT"), model="Qwen/Qwen2.5-7B",
                      phase="decode", batch=64, input_length=4096, output_length=512, context_length=8000,
                      chunk_size=512, weight_dtype="fp8", activation_dtype="bf16", kv_dtype="fp8",
                      method="seed", stack_by="family", percent=True, sweep_field="input_length",
                      overview_chart="kernels", clones=(("H100-NEXT", "H100-SXM"),),
                      edits=(("H100-NEXT", (("memory_bandwidth", "5025"), ("num_cores", "144"))),))
    query = to_query(state)
    assert query["hw"] == "H100-SXM,MI300X,H100-NEXT"
    assert query["edit.H100-NEXT"] == "memory_bandwidth:5025;num_cores:144"
    assert query["clone.H100-NEXT"] == "H100-SXM"
    assert query["chart"] == "kernels"
    parsed, warnings = parse_query(query)
    assert parsed == state and warnings == []


@pytest.mark.parametrize("key, value, attribute", [
    ("batch", "lots", "batch"), ("batch", "0", "batch"), ("in", "-3", "input_length"),
    ("phase", "training", "phase"), ("wdt", "fp7", "weight_dtype"), ("method", "magic", "method"),
    ("page", "nowhere", "page"), ("pct", "yes", "percent"), ("chart", "pie", "overview_chart"),
])
def test_bad_parameter_falls_back_for_that_field_only(key, value, attribute):
    parsed, warnings = parse_query({key: value, "batch" if key != "batch" else "out": "7", "model": "Qwen/Qwen2.5-7B"})
    assert getattr(parsed, attribute) == getattr(ViewState(), attribute)
    assert parsed.model == "Qwen/Qwen2.5-7B"                      # the other fields survive
    assert len(warnings) == 1 and key in warnings[0] and repr(value) in warnings[0]


def test_unknown_and_garbled_parameters_warn():
    parsed, warnings = parse_query({"zoom": "3", "edit.H100-SXM": "memory_bandwidth", "clone.a,b": "H100-SXM"})
    assert parsed.edits == () and parsed.clones == ()
    assert len(warnings) == 3
    assert any("zoom" in w for w in warnings)


def test_resolve_devices_applies_clones_and_edits(devices):
    state, _ = parse_query({"hw": "H100-NEXT,H100-SXM,Z9000", "clone.H100-NEXT": "H100-SXM",
                            "edit.H100-NEXT": "memory_bandwidth:5025;num_cores:oops"})
    resolved, state, warnings = resolve_devices(state, devices)
    assert state.devices == ("H100-NEXT", "H100-SXM")
    assert resolved["H100-NEXT"].memory_bandwidth_bytes_per_s == 5.025e12
    assert resolved["H100-NEXT"].num_cores == resolved["H100-SXM"].num_cores    # bad edit dropped
    assert resolved["H100-SXM"].memory_bandwidth_bytes_per_s == 3.35e12          # base untouched
    assert state.edits == (("H100-NEXT", (("memory_bandwidth", "5025"),)),)
    assert any("Z9000" in w for w in warnings) and any("num_cores" in w and "oops" in w for w in warnings)


def test_resolve_model_and_scenario_fall_back():
    state, _ = parse_query({"model": "no-such-org/no-such-model", "in": "2048"})
    model, state, warnings = resolve_model(state, lambda m: load_model(m, offline=True), {})
    assert model.name == "meta-llama/Llama-3.1-8B" and "no-such-org/no-such-model" in warnings[0]
    scenario, problems = resolve_scenario(state)
    assert scenario.input_length == 2048 and problems == []


def test_downloaded_workbook_carries_clones_and_edits(devices):
    from dashboard.views.hardware import workbook_bytes
    from engine.hardware.specs import load_sources, load_specs
    state, _ = parse_query({"clone.H100-NEXT": "H100-SXM", "edit.H100-NEXT": "memory_bandwidth:5025",
                            "edit.MI300X": "num_cores:320"})
    resolved, state, warnings = resolve_devices(state, devices)
    assert warnings == []
    data = workbook_bytes(resolved, state)
    reloaded = load_specs(data)
    assert list(reloaded) == list(devices) + ["H100-NEXT"]
    assert reloaded["H100-NEXT"].memory_bandwidth_bytes_per_s == 5.025e12
    assert reloaded["MI300X"].num_cores == 320 and reloaded["H100-SXM"] == devices["H100-SXM"]
    sources = load_sources(data)
    assert "what-if edit" in sources["MI300X"]["num_cores"][0]
    assert sources["H100-NEXT"]["memory_bandwidth"][0].startswith(("what-if edit", "clone of H100-SXM"))


# ---- Explore page keys ----------------------------------------------------------------------------

def test_explore_view_round_trips_through_its_url_keys():
    from dashboard.state import EXPLORE_KEYS
    state = ViewState(page="explore", devices=("H100-SXM", "MI300X"), explore_view="heatmap",
                      explore_x="memory_bandwidth", explore_x_values="log:1000:10000:100", explore_y="matrix_tflops",
                      explore_y_values="100,200,400", explore_metric="tokens_per_j", explore_change=10,
                      explore_inverse_field="tp", explore_target=12.5)
    query = to_query(state)
    assert {k: query[k] for k in EXPLORE_KEYS} == {
        "ex.view": "heatmap", "ex.x": "memory_bandwidth", "ex.xv": "log:1000:10000:100", "ex.y": "matrix_tflops",
        "ex.yv": "100,200,400", "ex.metric": "tokens_per_j", "ex.change": "10", "ex.ifield": "tp",
        "ex.target": "12.5"}
    parsed, warnings = parse_query(query)
    assert parsed == state and warnings == []


def test_explore_keys_stay_out_of_other_pages_links_unless_changed():
    assert not any(key.startswith("ex.") for key in to_query(ViewState()))
    query = to_query(ViewState(page="overview", explore_x="clock"))
    assert query["ex.x"] == "clock" and "ex.view" not in query
    on_explore = to_query(ViewState(page="explore"))
    assert {"ex.view", "ex.x", "ex.y", "ex.metric", "ex.change", "ex.ifield"} <= set(on_explore)
    assert "ex.xv" not in on_explore and "ex.target" not in on_explore          # empty / automatic
    assert parse_query(on_explore)[0] == ViewState(page="explore")


@pytest.mark.parametrize("key, value, attribute, fragment", [
    ("ex.view", "scatter3d", "explore_view", "one of line"),
    ("ex.x", "warp_speed", "explore_x", "a scenario field"),
    ("ex.x", "none", "explore_x", "a scenario field"),
    ("ex.y", "flux", "explore_y", "or none"),
    ("ex.xv", "1:2", "explore_x_values", "start:stop:count"),
    ("ex.xv", "log:0:100:5", "explore_x_values", "start and stop > 0"),
    ("ex.yv", "1:100:1000", "explore_y_values", "count must be from 2 to 200"),
    ("ex.yv", "1,,3", "explore_y_values", "empty item"),
    ("ex.xv", "a:b:3", "explore_x_values", "must be numbers"),
    ("ex.metric", "speed", "explore_metric", "tpot_s"),
    ("ex.change", "150", "explore_change", "from 1 to 90"),
    ("ex.ifield", "batch", "explore_inverse_field", "memory_bandwidth"),
    ("ex.target", "-2", "explore_target", "> 0"),
    ("ex.target", "soon", "explore_target", "> 0"),
])
def test_bad_explore_parameter_warns_naming_it_and_falls_back_for_that_field_only(key, value, attribute, fragment):
    parsed, warnings = parse_query({key: value, "page": "explore", "ex.metric" if key != "ex.metric" else "batch":
                                    "ttft_s" if key != "ex.metric" else "8"})
    assert getattr(parsed, attribute) == getattr(ViewState(), attribute)
    assert parsed.page == "explore"
    assert (parsed.explore_metric == "ttft_s") if key != "ex.metric" else (parsed.batch == 8)   # others survive
    assert len(warnings) == 1 and f"URL parameter {key}={value!r}" in warnings[0] and fragment in warnings[0]


@pytest.mark.parametrize("text, numeric, values, geometric", [
    ("1:5:5", True, [1, 2, 3, 4, 5], False),
    ("0:1:3", True, [0, 0.5, 1], False),
    ("log:1:1000:4", True, [1, 10, 100, 1000], True),
    ("log:1:1024:11", True, [2 ** i for i in range(11)], True),
    ("LOG:10:1:2", True, [10, 1], True),
    (" 64, 1, 8 ,8", True, [64, 1, 8], False),
    ("H100-SXM,MI300X", False, ["H100-SXM", "MI300X"], False),
])
def test_parse_values(text, numeric, values, geometric):
    from dashboard.state import parse_values
    parsed, log = parse_values(text, numeric=numeric)
    assert parsed == pytest.approx(values) if numeric else parsed == values
    assert log is geometric


@pytest.mark.parametrize("text", ["", "1:2", "1:2:3:4:5", "log:-1:10:3", "1:10:1", "1:10:201", "x,y", "1,inf",
                                  "nan:1:3", ",".join(["1"] * 201)])
def test_parse_values_rejects_with_a_reason(text):
    from dashboard.state import ValuesError, parse_values
    with pytest.raises(ValuesError) as error:
        parse_values(text)
    assert str(error.value)


# ------------------------------------------------------------------ a hosted app reads no one's files

@pytest.mark.parametrize("text", ["/etc/passwd", "~root/.bashrc", "~/x.json", "../engine/models/catalog/x.json",
                                  "a/b/c", "C:\\config.json", "a\\b", ".bashrc", "x/..", "uploaded/../x",
                                  "engine/models/catalog/meta-llama--Llama-3.1-8B.json", "x" * 300])
def test_model_parameter_refuses_paths_by_their_text(text):
    state, warnings = parse_query({"model": text})
    assert state.model == ViewState().model
    [warning] = warnings
    assert warning.startswith(f"URL parameter model={text!r} is not valid")
    assert "reads no paths" in warning


def test_a_path_is_refused_alike_whether_or_not_the_file_exists(tmp_path):
    existing = tmp_path / "config.json"
    existing.write_text("{}")
    answers = [parse_query({"model": str(path)})[1][0].replace(repr(str(path)), "PATH")
               for path in (existing, tmp_path / "missing.json")]
    assert answers[0] == answers[1]


@pytest.mark.parametrize("text", ["meta-llama/Llama-3.1-8B", "gpt2", "Qwen/Qwen2.5-7B", "org-x/model_v1.5",
                                  "uploaded/my config (1).json"])
def test_model_parameter_accepts_catalog_hub_and_upload_names(text):
    state, warnings = parse_query({"model": text})
    assert (state.model, warnings) == (text, [])


def test_a_repo_shaped_name_that_is_also_a_local_folder_is_not_read(tmp_path, monkeypatch):
    """`org/name` is a Hub id; the dashboard's loader never looks for it on the server's disk."""
    from engine.decomposition.auto import load_any_model
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    (tmp_path / "org" / "name").mkdir(parents=True)
    (tmp_path / "org" / "name" / "config.json").write_text(
        '{"model_type": "llama", "hidden_size": 64, "intermediate_size": 172, "num_hidden_layers": 3, '
        '"num_attention_heads": 4, "vocab_size": 100, "max_position_embeddings": 128}')
    monkeypatch.chdir(tmp_path)

    def dashboard_loader(model_id):
        return load_any_model(model_id, offline=True, local_files=False)

    state, _ = parse_query({"model": "org/name"})
    model, state, warnings = resolve_model(state, dashboard_loader, {})
    assert model.name == ViewState().model and state.model == ViewState().model
    assert "not cached" in warnings[0] and "hidden_size" not in warnings[0]


def test_an_upload_from_another_session_is_not_looked_up():
    state, _ = parse_query({"model": "uploaded/config.json"})
    _, state, warnings = resolve_model(state, lambda m: load_model(m), {})
    assert state.model == ViewState().model
    assert "uploaded in another browser session" in warnings[0]


# ------------------------------------------------------------------ lengths against the model

def test_lengths_beyond_the_models_positions_fall_back_naming_the_parameter(llama8b):
    positions = llama8b.max_position_embeddings                       # 131,072 (Llama 3.1 config.json)
    state, _ = parse_query({"phase": "decode", "ctx": "10000000"})
    fixed, [warning] = resolve_lengths(state, llama8b)
    assert fixed.context_length is None and warning.startswith("URL parameter ctx=10000000")
    assert f"{positions:,} positions" in warning
    state, _ = parse_query({"in": "200000"})
    fixed, [warning] = resolve_lengths(state, llama8b)
    assert fixed.input_length == 1024 and warning.startswith("URL parameter in=200000")
    state, _ = parse_query({"in": "131000", "out": "500"})
    fixed, [warning] = resolve_lengths(state, llama8b)
    assert (fixed.input_length, fixed.output_length) == (131000, positions - 131000)
    assert warning.startswith("URL parameter out=500") and "131,500 tokens" in warning


def test_lengths_that_fit_pass_without_a_word(llama8b):
    state, _ = parse_query({"phase": "decode", "ctx": str(llama8b.max_position_embeddings - 1)})
    assert resolve_lengths(state, llama8b) == (state, [])


def test_a_tiny_chunked_prefill_chunk_is_kept_but_named(llama8b):
    state, _ = parse_query({"cpf": "1", "chunk": "1"})
    fixed, [warning] = resolve_lengths(state, llama8b)
    assert fixed == state
    assert warning.startswith("URL parameters chunk=1 and cpf=1") and "1,024 iterations" in warning


def test_a_chunk_smaller_than_the_batch_names_the_parameters():
    state, _ = parse_query({"cpf": "1", "chunk": "4", "batch": "8"})
    _, [warning] = resolve_scenario(state)
    assert "URL parameters" in warning and "chunk" in warning and "batch" in warning


def test_an_invalid_workload_names_only_the_parameters_involved():
    state, _ = parse_query({"phase": "decode", "cpf": "1"})
    _, [warning] = resolve_scenario(state)
    assert "(URL parameters phase, cpf)" in warning
