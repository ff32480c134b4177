#!/usr/bin/env bash
# Set everything up and run the whole test suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1   # the tests never reach the Hugging Face Hub
exec .venv/bin/python -m pytest "$@"
