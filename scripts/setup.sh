#!/usr/bin/env bash
# Set up a local virtual environment (.venv) with llm-roofline installed (editable) and test tools.
# Needs only python3 (3.10+). Safe to run again: it reinstalls only when pyproject.toml changed.
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

# The `auto` extra (automatic decomposition) needs PyTorch; its CPU build is enough (models are traced
# on the meta device). Install it first so the extra's `torch>=2.6` is already satisfied. On this
# project's machines pip resolves torch==2.13.0 to a local CPU build; elsewhere, point pip at a CPU
# wheel source through TORCH_PIP_ARGS (e.g. "--index-url <your CPU wheel index>") to avoid CUDA wheels.
install_torch() {
  if .venv/bin/python -c "import torch" >/dev/null 2>&1; then
    return
  fi
  # shellcheck disable=SC2086
  .venv/bin/python -m pip install --quiet "torch==${TORCH_VERSION:-2.13.0}" ${TORCH_PIP_ARGS:-}
}

stamp=".venv/.installed-$(cat pyproject.toml | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  install_torch
  .venv/bin/python -m pip install --quiet -e ".[test,auto,calibration]"
  rm -f .venv/.installed-*
  touch "$stamp"
fi
