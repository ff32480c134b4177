"""Dashboard tests build every figure with plotly's validation on, so a misspelt chart property fails a test
(the dashboard itself builds without it: dashboard.charts.theme.house_figure)."""

from __future__ import annotations

import os

from dashboard.charts.theme import VALIDATE_ENV

os.environ.setdefault(VALIDATE_ENV, "1")
