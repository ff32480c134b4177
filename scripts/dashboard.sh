#!/usr/bin/env bash
# Set everything up and open the dashboard on the bundled defaults (no network needed).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/streamlit run dashboard/app.py "$@"
