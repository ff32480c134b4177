#!/usr/bin/env bash
# Set everything up and open the dashboard on the bundled defaults (no network needed).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# warmed before it answers (dashboard/serve.py: imports and the default view's estimate), then `streamlit run`
exec .venv/bin/python -m dashboard.serve "$@"
