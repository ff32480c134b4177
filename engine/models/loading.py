"""Where a ModelConfig comes from: the bundled catalog, a local file, or the Hugging Face Hub.

`load_model(source)` tries, in order:
  1. the bundled catalog (exact repo id, any letter case) - unless a `revision` is asked for;
  2. a local `config.json` file, or a directory that holds one;
  3. the Hub, through `huggingface_hub.hf_hub_download` and its local cache.

Offline mode: huggingface_hub reads HF_HUB_OFFLINE once, when it is first imported, so setting
the variable later has no effect on it. We therefore decide per call (the `offline` argument,
else HF_HUB_OFFLINE as it is *now*) and pass `local_files_only=True`, which never touches the
network and only reads the cache.

Every failure becomes a ModelLoadError (or a ModelConfigError for a bad config) with a one-line
message; no library traceback reaches the caller.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from engine.common.names import did_you_mean
from engine.models.config import ModelConfig
from engine.models.config_reader import ModelConfigError, shown
from engine.models.validation import MAX_CONFIG_BYTES, parse_config_json

CATALOG_DIR = Path(__file__).parent / "catalog"  # files named <org>--<name>.json
CONFIG_FILENAME = "config.json"
HUB_URL = "https://huggingface.co"
HUB_PROBE_TIMEOUT_S = 1.5  # the connection check before a download; a reachable Hub answers in far less
_NO_HUB_ADVICE = ("use a catalog id (e.g. meta-llama/Llama-3.1-8B), a local config.json, "
                  "or set HF_HUB_OFFLINE=1 with a populated cache")


class ModelLoadError(ValueError):
    """A model config that could not be found or read (not cached, gated, bad JSON, ...)."""


# --------------------------------------------------------------------- bundled catalog

@lru_cache(maxsize=1)
def _catalog_files() -> dict[str, Path]:
    """Lower-cased repo id -> bundled config file."""
    files = {}
    for path in sorted(CATALOG_DIR.glob("*.json")):
        org, separator, name = path.stem.partition("--")
        if separator:
            files[f"{org}/{name}".lower()] = path
    return files


def _catalog_id(path: Path) -> str:
    org, _, name = path.stem.partition("--")
    return f"{org}/{name}"


def catalog_ids() -> list[str]:
    """Repo ids of the bundled configs (exact Hub spelling), sorted case-insensitively."""
    return sorted((_catalog_id(path) for path in _catalog_files().values()), key=str.lower)


def _close_ids(repo_id: str) -> str:
    """" (did you mean ...?)" naming the closest bundled ids (engine/common/names.py), or ""."""
    close = did_you_mean(repo_id, catalog_ids())
    return f" ({close})" if close else ""


def load_catalog_config(repo_id: str) -> dict:
    """The raw config.json dict of a bundled model; the id may differ in letter case."""
    path = _catalog_files().get(str(repo_id).strip().lower())
    if path is None:
        raise ModelLoadError(f"{repo_id!r} is not in the bundled catalog{_close_ids(repo_id)}; bundled: "
                             f"{', '.join(catalog_ids())}")
    return _read_json(path)


# --------------------------------------------------------------------- entry point

def load_model(
    source: str | os.PathLike,
    *,
    revision: str | None = None,
    token: str | None = None,
    cache_dir: str | Path | None = None,
    offline: bool | None = None,
    endpoint: str | None = None,
    local_files: bool = True,
) -> ModelConfig:
    """A ModelConfig from a catalog id, a local config.json (or folder), or a Hub repo id.

    revision: branch, tag or commit on the Hub; given, it bypasses the bundled catalog.
    token: Hugging Face token for gated or private repos (default: HF_TOKEN / saved login).
    cache_dir: Hugging Face cache folder (default: HF_HUB_CACHE).
    offline: True reads only the cache; None follows HF_HUB_OFFLINE.
    endpoint: Hub URL for mirrors (default: HF_ENDPOINT or https://huggingface.co).
    local_files: False never reads a path on this machine (a shared dashboard: only catalog and Hub ids).

    Raises ModelConfigError (a bad field, named) or ModelLoadError (not found, unreadable); an exception
    from a library underneath becomes a ModelLoadError naming the source, never a traceback.
    """
    try:
        return _load_model(source, revision=revision, token=token, cache_dir=cache_dir, offline=offline,
                           endpoint=endpoint, local_files=local_files)
    except (ModelConfigError, ModelLoadError):
        raise
    except Exception as error:  # noqa: BLE001 - a library's failure becomes one line naming the source
        raise ModelLoadError(f"cannot load model {shown(source)}: {type(error).__name__}: "
                             f"{shown(str(error))}") from None


def _load_model(source, *, revision, token, cache_dir, offline, endpoint, local_files) -> ModelConfig:
    text = os.fspath(source).strip() if isinstance(source, (str, os.PathLike)) else ""
    if not text:
        raise ModelLoadError(f"model source must be a repo id or a path, got {shown(source)}")
    if revision is None and text.lower() in _catalog_files():
        path = _catalog_files()[text.lower()]
        return ModelConfig.from_hf_config(_read_json(path), name=_catalog_id(path))
    path = local_path(text) if local_files else None
    if path is not None:
        return _load_local(path, name=text)
    repo_id = _check_repo_id(text)
    if offline is None:
        offline = _offline_from_environment()
    config_file = _download_config(repo_id, revision=revision, token=token, cache_dir=cache_dir,
                                   offline=offline, endpoint=endpoint)
    return ModelConfig.from_hf_config(_read_json(config_file), name=repo_id)


def local_path(text: str) -> Path | None:
    """The existing path `text` names on this machine, else None (also for names no file can have:
    too long, a NUL byte, an unknown ~user)."""
    try:
        path = Path(text).expanduser()
        return path if path.exists() else None
    except (OSError, ValueError, RuntimeError):
        return None


def _load_local(path: Path, name: str) -> ModelConfig:
    if path.is_dir():
        path = path / CONFIG_FILENAME
        if not path.is_file():
            raise ModelLoadError(f"folder {str(path.parent)!r} has no {CONFIG_FILENAME}")
    return ModelConfig.from_hf_config(_read_json(path), name=name)


def read_config_json(path: str | Path) -> dict:
    """The JSON object of a config.json file: at most MAX_CONFIG_BYTES, nested at most MAX_JSON_DEPTH;
    ModelLoadError naming the file and what was expected."""
    where = repr(str(path))
    try:
        size = Path(path).stat().st_size
        if size > MAX_CONFIG_BYTES:
            raise ModelLoadError(f"{where} is {size:,} bytes: a config.json is at most {MAX_CONFIG_BYTES:,} bytes "
                                 "(real ones are a few kB)")
        content = Path(path).read_bytes()
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise ModelLoadError(f"cannot read {where}: {reason}; expected a readable config.json file") from None
    try:
        return parse_config_json(content, where)
    except ModelConfigError as error:
        raise ModelLoadError(str(error)) from None


_read_json = read_config_json


# --------------------------------------------------------------------- Hugging Face Hub

def _offline_from_environment() -> bool:
    """HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) as set now, or as huggingface_hub saw it at import."""
    from huggingface_hub import constants

    now = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or ""
    return now.strip().upper() in {"1", "ON", "YES", "TRUE"} or bool(constants.HF_HUB_OFFLINE)


def _check_repo_id(text: str) -> str:
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(text)
    except HFValidationError as error:
        raise ModelLoadError(
            f"{text!r} is neither an existing local path nor a valid Hugging Face repo id "
            f"('org/name'): {error}") from None
    return text


def _download_config(repo_id: str, *, revision: str | None, token: str | None, cache_dir: str | Path | None,
                     offline: bool, endpoint: str | None) -> str:
    """Path of config.json in the local Hugging Face cache, downloading it unless offline.

    Online, a short connection check comes first: huggingface_hub retries a failed request with backoff
    for ~25 s before giving up, so with no route to the Hub we read only the cache and, on a miss, say
    at once that the Hub cannot be reached."""
    from huggingface_hub import hf_hub_download

    unreachable = None if offline else hub_unreachable_reason(endpoint)
    try:
        return hf_hub_download(repo_id, CONFIG_FILENAME, revision=revision, token=token, cache_dir=cache_dir,
                               local_files_only=offline or unreachable is not None, endpoint=endpoint)
    except Exception as error:  # noqa: BLE001 - every Hub failure becomes one clear line
        if unreachable is not None:
            raise ModelLoadError(_unreachable_message(unreachable, repo_id, revision)) from error
        raise ModelLoadError(hub_error_message(error, repo_id, revision=revision, offline=offline,
                                               endpoint=endpoint)) from error


def hub_unreachable_reason(endpoint: str | None = None, timeout_s: float = HUB_PROBE_TIMEOUT_S) -> str | None:
    """None when a TCP connection to the Hub endpoint (or to the proxy the environment names for it)
    opens within timeout_s, else why not, in words."""
    import socket
    import urllib.request
    from urllib.parse import urlsplit

    from huggingface_hub import constants

    url = urlsplit(endpoint or constants.ENDPOINT or HUB_URL)
    proxy = urllib.request.getproxies().get(url.scheme)
    if proxy and not urllib.request.proxy_bypass(url.hostname or ""):
        url = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    host, default_port = url.hostname or "", 443 if url.scheme == "https" else 80
    try:
        port = url.port or default_port
        with socket.create_connection((host, port), timeout=timeout_s):
            return None
    except (OSError, ValueError) as error:
        return f"no connection to {host}:{url.port or default_port} within {timeout_s:g} s ({_first_line(error)})"


def _unreachable_message(reason: str, repo_id: str, revision: str | None) -> str:
    where = f"{repo_id!r}" + (f" at revision {revision!r}" if revision else "")
    return (f"the Hugging Face Hub cannot be reached from this machine: {reason}, and {CONFIG_FILENAME} of "
            f"{where} is not in the local cache{_close_ids(repo_id)}; {_NO_HUB_ADVICE}")


def hub_error_message(error: BaseException, repo_id: str, *, revision: str | None = None,
                      offline: bool = False, endpoint: str | None = None) -> str:
    """One line saying what went wrong fetching config.json and what to do about it."""
    from huggingface_hub.utils import (
        EntryNotFoundError,
        GatedRepoError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    where = f"{repo_id!r}" + (f" at revision {revision!r}" if revision else "")
    page = f"{(endpoint or HUB_URL).rstrip('/')}/{repo_id}"
    causes = _cause_chain(error)
    if isinstance(error, GatedRepoError):
        return (f"{where} is a gated repo: accept its licence on {page} and pass token=... "
                "(or set HF_TOKEN / run `hf auth login`)")
    if isinstance(error, RepositoryNotFoundError):
        return (f"{where} was not found on the Hugging Face Hub (check the spelling{_close_ids(repo_id)}; "
                "private repos need token=...)")
    if isinstance(error, RevisionNotFoundError):
        return f"revision {revision!r} does not exist in {repo_id!r} (check the branch, tag or commit)"
    offline_blocked = offline or any(isinstance(cause, OfflineModeIsEnabled) for cause in causes)
    if offline_blocked and isinstance(error, (LocalEntryNotFoundError, OfflineModeIsEnabled)):
        return (f"offline mode is on (offline=True or HF_HUB_OFFLINE=1) and {CONFIG_FILENAME} of {where} "
                f"is not cached{_close_ids(repo_id)}; go online once, or use a bundled id "
                f"({', '.join(catalog_ids()[:3])}, ...)")
    refusal = next((cause for cause in causes if isinstance(cause, HfHubHTTPError)), None)
    if isinstance(refusal, EntryNotFoundError):
        return f"{where} has no {CONFIG_FILENAME} (is it a model repo with a transformers config?)"
    if refusal is not None:
        status = getattr(getattr(refusal, "response", None), "status_code", "?")
        return f"the Hugging Face Hub refused {CONFIG_FILENAME} of {where} (HTTP {status}): {_first_line(refusal)}"
    if isinstance(error, LocalEntryNotFoundError) or any(isinstance(c, _network_error_types()) for c in causes):
        return (f"the Hugging Face Hub cannot be reached from this machine ({_first_line(causes[-1])}), and "
                f"{CONFIG_FILENAME} of {where} is not in the local cache{_close_ids(repo_id)}; check your connection or "
                f"proxy, or "
                f"{_NO_HUB_ADVICE}")
    return f"could not fetch {CONFIG_FILENAME} of {where}: {_first_line(error)}"


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0]}" if text else type(error).__name__


def _cause_chain(error: BaseException) -> list[BaseException]:
    chain, seen = [], set()
    while error is not None and id(error) not in seen:
        chain.append(error)
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return chain


@lru_cache(maxsize=1)
def _network_error_types() -> tuple[type[BaseException], ...]:
    """Connection-level errors of whichever HTTP client this huggingface_hub uses.

    huggingface_hub 0.x used requests, 1.x httpx, 2.x httpx2; all are covered when installed.
    """
    import importlib

    types: list[type[BaseException]] = [ConnectionError, TimeoutError]
    for module_name, names in (("httpx2", ("TransportError",)), ("httpx", ("TransportError",)),
                               ("requests", ("ConnectionError", "Timeout"))):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        exceptions = getattr(module, "exceptions", module)
        types.extend(getattr(exceptions, name) for name in names if hasattr(exceptions, name))
    return tuple(types)
