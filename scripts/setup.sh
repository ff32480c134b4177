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

stamp=".venv/.installed-$(cat pyproject.toml | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e ".[test]"
  rm -f .venv/.installed-*
  touch "$stamp"
fi
