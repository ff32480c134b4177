#!/usr/bin/env bash
# Set everything up and run the whole test suite. Extra arguments go to pytest (after -n and --dist: yours win).
# Browser tests drive Debian's Chromium (/usr/bin/chromium); it is installed here when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing Debian's chromium for the browser and image-export tests" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "error: /usr/bin/chromium is missing; install it (sudo apt-get install chromium)" >&2
    exit 1
  fi
fi
# Parallel workers (pytest-xdist), one per CPU unless TEST_WORKERS says otherwise (TEST_WORKERS=0: one process).
# loadgroup keeps the browser tests (one Streamlit server and Chromium per worker) together on one worker.
exec .venv/bin/python -m pytest -n "${TEST_WORKERS:-auto}" --dist loadgroup "$@"
