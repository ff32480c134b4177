#!/usr/bin/env bash
# Set up a local virtual environment (.venv) with llm-roofline installed (editable) and test tools.
# Needs only python3 (3.10+). Safe to run again: it reinstalls only when pyproject.toml changed (offline then).
#
# Installs with uv (fetched from PyPI into .venv; parallel downloads, one resolver pass) and falls back to pip
# when uv cannot be had or fails. SETUP_INSTALLER=pip forces pip. uv does not read pip's configuration, so the
# pip settings in effect here (pip.conf and PIP_* variables: index-url, extra-index-url, find-links, no-index,
# constraint, trusted-host, cert, proxy, default-timeout) are handed to uv, and uv resolves like pip does
# (the best version over every index).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}

if [ ! -x .venv/bin/python ]; then
  if ! "$python" -m venv .venv >/dev/null 2>&1; then
    rm -rf .venv
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      echo "python3 -m venv failed; installing Debian's python3-venv" >&2
      apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
      "$python" -m venv .venv
    else
      echo "error: '$python -m venv' failed; install your distribution's python3-venv package" >&2
      exit 1
    fi
  fi
fi

stamp=".venv/.installed-$(sha256sum pyproject.toml | cut -c1-16)"
if [ -f "$stamp" ]; then
  exit 0
fi

project=".[test,auto,calibration]"

# The `auto` extra (automatic decomposition) needs PyTorch; its CPU build is enough (models are traced on the
# meta device). torch==2.13.0 goes into the same install so the extra's `torch>=2.6` takes it. On this project's
# machines it resolves to a local CPU build; elsewhere PyTorch's CPU wheel index is added for torch when it
# answers, or point the install at a CPU wheel source through TORCH_PIP_ARGS (e.g. "--index-url <your CPU wheel
# index>") to avoid CUDA wheels. A torch already installed is kept.
cpu_index=https://download.pytorch.org/whl/cpu
torch_req=()
torch_args=()
if ! .venv/bin/python -c "import torch" >/dev/null 2>&1; then
  torch_req=("torch==${TORCH_VERSION:-2.13.0}")
  if [ -n "${TORCH_PIP_ARGS:-}" ]; then
    # shellcheck disable=SC2206
    torch_args=(${TORCH_PIP_ARGS})
  elif .venv/bin/python - "$cpu_index/torch/" >/dev/null 2>&1 <<'EOF'
import sys, urllib.request
urllib.request.urlopen(urllib.request.Request(sys.argv[1], method="HEAD"), timeout=5)
EOF
  then
    torch_args=(--extra-index-url "$cpu_index")
  fi
fi

# pip's settings for `pip install` as uv arguments (one per line); SSL_CERT_FILE, HTTP(S)_PROXY and
# UV_HTTP_TIMEOUT lines are environment variables. Precedence as pip's: PIP_* variables, then [install], then
# [global].
pip_settings_for_uv() {
  .venv/bin/python - <<'EOF'
import ast, os, subprocess, sys
out = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True).stdout
settings = {}
for section in ("global", "install", ":env:"):
    for line in out.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.startswith(section + "."):
            settings[key[len(section) + 1:]] = ast.literal_eval(value)
flags = {"index-url": "--index-url", "extra-index-url": "--extra-index-url", "find-links": "--find-links",
         "constraint": "--constraint", "trusted-host": "--allow-insecure-host"}
for name, flag in flags.items():
    for value in settings.get(name, "").split():
        print(flag)
        print(value)
if settings.get("no-index", "").lower() in ("1", "true", "yes", "on"):
    print("--no-index")
env = {"SSL_CERT_FILE": "cert", "HTTPS_PROXY": "proxy", "HTTP_PROXY": "proxy", "UV_HTTP_TIMEOUT": "default-timeout"}
for var, name in env.items():
    if settings.get(name) and not os.environ.get(var):
        print(f"{var}={settings[name]}")
EOF
}

install_with_uv() {
  [ "${SETUP_INSTALLER:-uv}" = uv ] || return 1
  if [ ! -x .venv/bin/uv ]; then
    .venv/bin/python -m pip install -qq uv >/dev/null 2>&1 || { echo "uv unavailable; installing with pip" >&2; return 1; }
  fi
  local args=() env=() line
  while IFS= read -r line; do
    case "$line" in
      SSL_CERT_FILE=* | HTTPS_PROXY=* | HTTP_PROXY=* | UV_HTTP_TIMEOUT=*) env+=("$line") ;;
      *) args+=("$line") ;;
    esac
  done < <(pip_settings_for_uv)
  local uv=(env "${env[@]}" .venv/bin/uv pip install --quiet --python .venv/bin/python
            --index-strategy unsafe-best-match "${args[@]}")
  if [ ${#torch_args[@]} -gt 0 ]; then
    "${uv[@]}" "${torch_req[@]}" "${torch_args[@]}" || return 1
    "${uv[@]}" -e "$project" || return 1
  else
    "${uv[@]}" "${torch_req[@]}" -e "$project" || return 1
  fi
}

install_with_pip() {
  .venv/bin/python -m pip install --quiet --upgrade pip
  if [ ${#torch_req[@]} -gt 0 ]; then
    .venv/bin/python -m pip install --quiet "${torch_req[@]}" "${torch_args[@]}"
  fi
  .venv/bin/python -m pip install --quiet -e "$project"
}

if ! install_with_uv; then
  [ "${SETUP_INSTALLER:-uv}" = uv ] && echo "uv install failed; installing with pip" >&2
  install_with_pip
fi
rm -f .venv/.installed-*
touch "$stamp"
