#!/usr/bin/env bash
# Set everything up and run the whole test suite. Extra arguments go to pytest.
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
exec .venv/bin/python -m pytest "$@"
