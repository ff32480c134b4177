"""load_model: bundled catalog, local files, and the real huggingface_hub download path.

The Hub path is never mocked. It is exercised for real through
  * a Hugging Face cache folder laid out by hand (models--org--name/refs, snapshots, blobs),
    read by `hf_hub_download` in offline mode, and
  * a tiny local HTTP server speaking the Hub's file protocol (HEAD/GET .../resolve/<rev>/<file>,
    X-Repo-Commit, ETag, X-Error-Code), reached through load_model's `endpoint` argument.
"""

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from huggingface_hub import constants as hub_constants

from engine.models import ModelConfigError, ModelLoadError, catalog_ids, load_catalog_config, load_model
from engine.models.loading import CATALOG_DIR, hub_error_message

TINY_LLAMA = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 64,
              "intermediate_size": 172, "num_hidden_layers": 3, "num_attention_heads": 4,
              "num_key_value_heads": 2, "vocab_size": 100, "max_position_embeddings": 128}

BUNDLED = [
    "meta-llama/Llama-2-7b-hf", "meta-llama/Llama-2-70b-hf", "meta-llama/Llama-3.1-8B",
    "meta-llama/Llama-3.1-70B", "meta-llama/Llama-3.1-405B", "mistralai/Mistral-7B-v0.1",
    "Qwen/Qwen2.5-7B", "Qwen/Qwen2.5-72B", "openai-community/gpt2", "EleutherAI/pythia-1b",
    "facebook/opt-1.3b", "mistralai/Mixtral-8x7B-v0.1", "deepseek-ai/DeepSeek-V3", "Qwen/Qwen3-30B-A3B",
    "Qwen/Qwen3-8B", "openai/gpt-oss-20b", "openai/gpt-oss-120b", "google/gemma-2-9b", "google/gemma-3-27b-pt",
    "microsoft/Phi-3-mini-4k-instruct",
]


@pytest.fixture(autouse=True)
def isolated_hub(tmp_path, monkeypatch):
    """No test reads the user's Hugging Face cache or token, or inherits their offline setting."""
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "default-hf-cache"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setenv("HF_TOKEN", "")


def put_in_cache(cache_dir: Path, repo_id: str, content: dict | str, *, revision: str = "main",
                 commit: str | None = None) -> str:
    """Lay out config.json for repo_id@revision exactly as huggingface_hub's cache does. Returns the commit."""
    body = (json.dumps(content, indent=2) if isinstance(content, dict) else content).encode()
    commit = commit or hashlib.sha1(repo_id.encode() + revision.encode() + body).hexdigest()
    repo_dir = cache_dir / ("models--" + repo_id.replace("/", "--"))
    blob = repo_dir / "blobs" / hashlib.sha256(body).hexdigest()
    snapshot_file = repo_dir / "snapshots" / commit / "config.json"
    blob.parent.mkdir(parents=True, exist_ok=True)
    snapshot_file.parent.mkdir(parents=True, exist_ok=True)
    blob.write_bytes(body)
    try:  # the real cache links snapshots/<commit>/<file> to ../../blobs/<hash>
        snapshot_file.symlink_to(Path("../..") / "blobs" / blob.name)
    except OSError:
        snapshot_file.write_bytes(body)
    if revision != commit:
        (repo_dir / "refs").mkdir(exist_ok=True)
        (repo_dir / "refs" / revision).write_text(commit)
    return commit


# ------------------------------------------------------------------ bundled catalog

def test_catalog_lists_the_bundled_models():
    ids = catalog_ids()
    assert sorted(ids, key=str.lower) == ids
    assert set(BUNDLED) <= set(ids)
    assert len(ids) >= 20


@pytest.mark.parametrize("repo_id", BUNDLED)
def test_catalog_files_are_the_raw_config(repo_id):
    path = CATALOG_DIR / (repo_id.replace("/", "--") + ".json")
    raw = load_catalog_config(repo_id)
    assert raw == json.loads(path.read_text())
    assert "model_type" in raw and "architectures" in raw
    assert load_model(repo_id).name == repo_id


def test_unknown_catalog_id():
    with pytest.raises(ModelLoadError, match="not in the bundled catalog"):
        load_catalog_config("nobody/nothing")


def test_catalog_works_offline_with_an_empty_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model = load_model("meta-llama/Llama-3.1-8B", cache_dir=tmp_path / "empty")
    assert model.params_total == 8_030_261_248
    assert model.kv_cache_bytes_per_token() == 131072


def test_catalog_id_is_case_insensitive():
    model = load_model("META-LLAMA/llama-3.1-8b")
    assert model.name == "meta-llama/Llama-3.1-8B"
    assert load_model("  qwen/qwen2.5-7b ").name == "Qwen/Qwen2.5-7B"


# ------------------------------------------------------------------ local files

def test_local_config_file(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(TINY_LLAMA))
    model = load_model(str(path))
    assert model.name == str(path) and model.num_layers == 3 and model.num_key_value_heads == 2
    assert load_model(path).num_layers == 3  # a Path works too


def test_local_file_with_another_name(tmp_path):
    path = tmp_path / "my-model.json"
    path.write_text(json.dumps(TINY_LLAMA))
    assert load_model(str(path)).hidden_size == 64


def test_local_directory(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(TINY_LLAMA))
    model = load_model(str(tmp_path))
    assert model.name == str(tmp_path) and model.vocab_size == 100


def test_local_directory_without_config(tmp_path):
    with pytest.raises(ModelLoadError, match="has no config.json"):
        load_model(str(tmp_path))


def test_invalid_json_names_file_and_line(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{\n  "model_type": "llama",\n  "hidden_size": ,\n}\n')
    with pytest.raises(ModelLoadError) as caught:
        load_model(str(path))
    message = str(caught.value)
    assert str(path) in message and "line 3" in message and "\n" not in message


def test_json_that_is_not_an_object(tmp_path):
    path = tmp_path / "config.json"
    path.write_text("[1, 2, 3]")
    with pytest.raises(ModelLoadError, match="JSON object"):
        load_model(str(path))


def test_unsupported_local_config_is_a_config_error(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**TINY_LLAMA, "model_type": "jamba", "num_experts": 8}))
    with pytest.raises(ModelConfigError, match="'model_type' is 'jamba'"):
        load_model(str(path))


@pytest.mark.parametrize("source", ["not a repo id!", "a/b/c", "org/bad--name", "./missing/config.json",
                                    "org/name.git", ""])
def test_bad_repo_id_format(source):
    with pytest.raises(ModelLoadError) as caught:
        load_model(source)
    assert "\n" not in str(caught.value)


def test_bad_repo_id_message():
    with pytest.raises(ModelLoadError, match="neither an existing local path nor a valid Hugging Face repo id"):
        load_model("a/b/c")


def test_source_of_wrong_type():
    with pytest.raises(ModelLoadError, match="repo id or a path"):
        load_model(42)


# ------------------------------------------------------------------ Hub path through a pre-filled cache

def test_cached_repo_offline(tmp_path):
    put_in_cache(tmp_path, "some-org/some-model", TINY_LLAMA)
    model = load_model("some-org/some-model", cache_dir=tmp_path, offline=True)
    assert model.name == "some-org/some-model"
    # embed + lm_head 2*100*64; per layer q,o 64*64, k,v 64*32, MLP 3*64*172, 2 norms; final norm 64
    assert model.params_total == 2 * 100 * 64 + 3 * (2 * 64 * 64 + 2 * 64 * 32 + 3 * 64 * 172 + 2 * 64) + 64


def test_cached_repo_offline_from_environment(tmp_path, monkeypatch):
    # huggingface_hub read HF_HUB_OFFLINE at import; load_model reads it per call
    put_in_cache(tmp_path, "some-org/some-model", TINY_LLAMA)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert load_model("some-org/some-model", cache_dir=tmp_path).num_layers == 3


def test_cached_revision_other_than_main(tmp_path):
    put_in_cache(tmp_path, "some-org/some-model", TINY_LLAMA)
    tag_commit = put_in_cache(tmp_path, "some-org/some-model", {**TINY_LLAMA, "num_hidden_layers": 7},
                              revision="v2.0")
    main = load_model("some-org/some-model", cache_dir=tmp_path, offline=True)
    tagged = load_model("some-org/some-model", revision="v2.0", cache_dir=tmp_path, offline=True)
    pinned = load_model("some-org/some-model", revision=tag_commit, cache_dir=tmp_path, offline=True)
    assert (main.num_layers, tagged.num_layers, pinned.num_layers) == (3, 7, 7)


def test_catalog_id_with_revision_reads_the_hub_cache(tmp_path):
    put_in_cache(tmp_path, "meta-llama/Llama-3.1-8B", {**load_catalog_config("meta-llama/Llama-3.1-8B"),
                                                        "num_hidden_layers": 2})
    from_cache = load_model("meta-llama/Llama-3.1-8B", revision="main", cache_dir=tmp_path, offline=True)
    bundled = load_model("meta-llama/Llama-3.1-8B", cache_dir=tmp_path, offline=True)
    assert (from_cache.num_layers, bundled.num_layers) == (2, 32)


def test_catalog_id_with_revision_is_not_silently_bundled(tmp_path):
    with pytest.raises(ModelLoadError, match="offline"):
        load_model("meta-llama/Llama-3.1-8B", revision="main", cache_dir=tmp_path, offline=True)


def test_offline_miss(tmp_path):
    with pytest.raises(ModelLoadError) as caught:
        load_model("some-org/not-downloaded", cache_dir=tmp_path, offline=True)
    message = str(caught.value)
    assert "offline" in message and "not cached" in message and "some-org/not-downloaded" in message
    assert "\n" not in message


def test_offline_miss_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelLoadError, match="offline mode is on"):
        load_model("some-org/not-downloaded", cache_dir=tmp_path)


def test_invalid_json_in_cache_names_the_cached_file(tmp_path):
    commit = put_in_cache(tmp_path, "some-org/broken", '{"model_type": "llama",\n oops}')
    with pytest.raises(ModelLoadError) as caught:
        load_model("some-org/broken", cache_dir=tmp_path, offline=True)
    assert f"snapshots/{commit}/config.json" in str(caught.value) and "line 2" in str(caught.value)


def test_unsupported_model_in_cache(tmp_path):
    put_in_cache(tmp_path, "some-org/moe", {**TINY_LLAMA, "model_type": "jamba"})
    with pytest.raises(ModelConfigError, match="jamba"):
        load_model("some-org/moe", cache_dir=tmp_path, offline=True)


# ------------------------------------------------------------------ Hub path against a local Hub-protocol server

class FakeHub:
    """Serves <endpoint>/<org>/<name>/resolve/<revision>/<file> like the Hub's file API."""

    def __init__(self):
        self.repos: dict[str, dict] = {}  # repo id -> {revision: (commit, {file: bytes})} or {"error": (status, code)}
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_HEAD(self):
                self.respond(send_body=False)

            def do_GET(self):
                self.respond(send_body=True)

            def respond(self, send_body):
                parts = self.path.split("?")[0].strip("/").split("/")
                repo_id, revision, filename = "/".join(parts[:2]), parts[3], "/".join(parts[4:])
                repo = hub.repos.get(repo_id, {"error": (401, "RepoNotFound")})
                if "error" in repo:
                    return self.fail(*repo["error"])
                if revision not in repo:
                    return self.fail(404, "RevisionNotFound")
                commit, files = repo[revision]
                if filename not in files:
                    return self.fail(404, "EntryNotFound")
                body = files[filename]
                self.send_response(200)
                self.send_header("X-Repo-Commit", commit)
                self.send_header("ETag", f'"{hashlib.sha1(body).hexdigest()}"')
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if send_body:
                    self.wfile.write(body)

            def fail(self, status, code):
                self.send_response(status)
                if code:
                    self.send_header("X-Error-Code", code)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def add(self, repo_id, config, revision="main", commit="c" * 40):
        self.repos.setdefault(repo_id, {})[revision] = (commit, {"config.json": json.dumps(config).encode()})


@pytest.fixture
def hub():
    if hub_constants.HF_HUB_OFFLINE:
        pytest.skip("huggingface_hub was imported with HF_HUB_OFFLINE=1; it blocks every request")
    server = FakeHub()
    yield server
    server.server.shutdown()
    server.server.server_close()


def test_download_then_offline(tmp_path, hub):
    hub.add("some-org/online", TINY_LLAMA, commit="a" * 40)
    model = load_model("some-org/online", cache_dir=tmp_path, endpoint=hub.url)
    assert model.num_layers == 3 and model.name == "some-org/online"
    assert (tmp_path / "models--some-org--online" / "snapshots" / ("a" * 40) / "config.json").exists()
    hub.server.shutdown()  # the cache alone now answers
    assert load_model("some-org/online", cache_dir=tmp_path, offline=True).num_layers == 3


def test_download_a_revision(tmp_path, hub):
    hub.add("some-org/online", TINY_LLAMA)
    hub.add("some-org/online", {**TINY_LLAMA, "num_hidden_layers": 9}, revision="v1", commit="b" * 40)
    assert load_model("some-org/online", revision="v1", cache_dir=tmp_path, endpoint=hub.url).num_layers == 9


def test_gated_repo(tmp_path, hub):
    hub.repos["meta-llama/Some-Gated"] = {"error": (401, "GatedRepo")}
    with pytest.raises(ModelLoadError) as caught:
        load_model("meta-llama/Some-Gated", cache_dir=tmp_path, endpoint=hub.url)
    message = str(caught.value)
    assert "gated" in message and "accept its licence" in message and "token" in message
    assert f"{hub.url}/meta-llama/Some-Gated" in message and "\n" not in message


def test_repo_not_found(tmp_path, hub):
    with pytest.raises(ModelLoadError, match="'some-org/missing' was not found on the Hugging Face Hub"):
        load_model("some-org/missing", cache_dir=tmp_path, endpoint=hub.url)


def test_revision_not_found(tmp_path, hub):
    hub.add("some-org/online", TINY_LLAMA)
    with pytest.raises(ModelLoadError, match="revision 'v9' does not exist in 'some-org/online'"):
        load_model("some-org/online", revision="v9", cache_dir=tmp_path, endpoint=hub.url)


def test_repo_without_config_json(tmp_path, hub):
    hub.repos["some-org/dataset-like"] = {"main": ("d" * 40, {"README.md": b"hi"})}
    with pytest.raises(ModelLoadError, match="has no config.json"):
        load_model("some-org/dataset-like", cache_dir=tmp_path, endpoint=hub.url)


def test_forbidden(tmp_path, hub):
    hub.repos["some-org/forbidden"] = {"error": (403, None)}
    with pytest.raises(ModelLoadError, match=r"refused config.json of 'some-org/forbidden' \(HTTP 403\)"):
        load_model("some-org/forbidden", cache_dir=tmp_path, endpoint=hub.url)


def test_invalid_json_downloaded(tmp_path, hub):
    hub.repos["some-org/bad-json"] = {"main": ("e" * 40, {"config.json": b"{\n\n  nope\n}"})}
    with pytest.raises(ModelLoadError, match=r"config\.json' is not valid JSON: .* at line 3"):
        load_model("some-org/bad-json", cache_dir=tmp_path, endpoint=hub.url)


# ------------------------------------------------------------------ no route to the Hub: answer at once

@pytest.fixture
def closed_endpoint():
    """A loopback URL nothing listens on: a connection is refused at once, as with no network."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_unreachable_hub_fails_within_seconds_with_what_to_do(tmp_path, closed_endpoint):
    import time

    started = time.perf_counter()
    with pytest.raises(ModelLoadError) as caught:
        load_model("some-org/not-downloaded", cache_dir=tmp_path, endpoint=closed_endpoint)
    elapsed = time.perf_counter() - started
    message = str(caught.value)
    assert elapsed < 5, f"took {elapsed:.1f} s (huggingface_hub alone retries for ~25 s)"
    assert message.startswith("the Hugging Face Hub cannot be reached from this machine: no connection to "
                              f"127.0.0.1:{closed_endpoint.rsplit(':', 1)[1]}")
    assert "'some-org/not-downloaded'" in message and "not in the local cache" in message
    assert "catalog id" in message and "local config.json" in message and "HF_HUB_OFFLINE=1" in message
    assert "\n" not in message


def test_unreachable_hub_still_reads_the_cache(tmp_path, closed_endpoint):
    import time

    put_in_cache(tmp_path, "some-org/some-model", TINY_LLAMA)
    started = time.perf_counter()
    model = load_model("some-org/some-model", cache_dir=tmp_path, endpoint=closed_endpoint)
    assert model.num_layers == 3 and time.perf_counter() - started < 5


def test_reachability_check(hub, closed_endpoint):
    from engine.models.loading import hub_unreachable_reason

    assert hub_unreachable_reason(hub.url) is None
    assert "no connection to 127.0.0.1" in hub_unreachable_reason(closed_endpoint)


def test_reachability_check_goes_through_the_proxy(hub, closed_endpoint, monkeypatch):
    from engine.models.loading import hub_unreachable_reason

    monkeypatch.setenv("HTTPS_PROXY", hub.url)  # the Hub host itself does not resolve; the proxy answers
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    assert hub_unreachable_reason("https://no-such-host.invalid") is None
    monkeypatch.setenv("HTTPS_PROXY", closed_endpoint)
    assert "no connection to 127.0.0.1" in hub_unreachable_reason("https://no-such-host.invalid")


# ------------------------------------------------------------------ error wording for failures we cannot provoke here

def test_network_error_message():
    import httpx2
    from huggingface_hub.utils import LocalEntryNotFoundError

    cause = httpx2.ConnectError("[Errno 111] Connection refused")
    error = LocalEntryNotFoundError("An error happened while trying to locate the file on the Hub ...")
    error.__cause__ = cause
    message = hub_error_message(error, "some-org/some-model")
    assert "the Hugging Face Hub cannot be reached from this machine" in message
    assert "not in the local cache" in message and "HF_HUB_OFFLINE=1" in message
    assert "Connection refused" in message


def test_offline_mode_set_before_import_is_reported_as_offline():
    from huggingface_hub.utils import LocalEntryNotFoundError, OfflineModeIsEnabled

    error = LocalEntryNotFoundError("An error happened while trying to locate the file on the Hub ...")
    error.__cause__ = OfflineModeIsEnabled("Cannot reach https://huggingface.co/...: offline mode is enabled.")
    assert "offline mode is on" in hub_error_message(error, "some-org/some-model", offline=False)


def test_unexpected_error_is_one_line():
    message = hub_error_message(RuntimeError("boom\nsecond line"), "some-org/some-model", revision="v1")
    assert message == "could not fetch config.json of 'some-org/some-model' at revision 'v1': RuntimeError: boom"
