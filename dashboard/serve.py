"""Start the dashboard's server warm: `python -m dashboard.serve [streamlit run options]`.

`streamlit run dashboard/app.py` imports nothing of the app until the first visitor arrives, so the first session's
first run also imports the dashboard and the engine (pandas, plotly's figure classes: about 1.5 s of CPU here) and
builds its first figure through code paths run for the first time. This launcher does that work before the server
starts answering: it imports the app's modules, estimates the default view with the engine (whose cache the
sessions share, being the same process) and builds its roofline once (plotly imports its figure classes on first
use), then hands over to `streamlit run dashboard/app.py` with the given options. Nothing it builds is shown: the
dashboard's own Streamlit caches fill on the first visit as before. It also has the server's page ask for the charts'
Plotly bundle in its head (dashboard/index_page.py), so a first visit fetches and evaluates it early.
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

APP = Path(__file__).resolve().parent / "app.py"


def warm() -> float:
    """Import the app's modules and run the default view's estimate and roofline once; the seconds it took."""
    started = time.perf_counter()
    # st.cache_data checks its options against a storage that exists only once the server runs, and says so for
    # every cached function it decorates before then; the caches themselves are made in the server, on first use
    # (imported first: Streamlit's get_logger sets the level when it makes the logger, on the module's import)
    from streamlit.runtime.caching import cache_data_api
    quiet = logging.getLogger(cache_data_api.__name__)
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        return _warm(started)
    finally:
        quiet.setLevel(level)


def _warm(started: float) -> float:
    import engine
    from dashboard import carry, charts, data, session, sidebar  # noqa: F401  the modules app.py imports
    from dashboard.context import kernels_frame
    from dashboard.state import ViewState
    from dashboard.views import (accuracy, compare, compare_models, explore, hardware, overview,  # noqa: F401
                                 serving, sweeps)

    view = ViewState()
    hardware_spec = engine.load_hardware(view.devices[0])
    model = engine.load_model(view.model)
    scenario = engine.Scenario(**view.scenario_fields)
    results = {}
    for method in dict.fromkeys((view.method, "roofline", "realistic")):      # the headline and the one beside it
        results[method] = engine.estimate(hardware_spec, model, scenario, method=method)
    figure = charts.roofline_figure(engine.roofline_ceilings(hardware_spec),
                                    kernels_frame({hardware_spec.name: results[view.method]}))
    figure.to_dict()
    return time.perf_counter() - started


def main(argv: list[str] | None = None, app: Path = APP) -> int:
    """Warm, then `streamlit run <app> <argv>` (`app`: the dashboard's; benchmarks/first_chart_ladder.py serves
    another script the same way)."""
    options = sys.argv[1:] if argv is None else argv
    seconds = warm()
    print(f"llm-roofline: warmed in {seconds:.1f} s (modules imported, default view estimated); starting Streamlit",
          file=sys.stderr, flush=True)
    from dashboard import index_page
    index_page.install()          # the page asks for the charts' Plotly bundle in its head (dashboard/index_page.py)
    from streamlit.web import cli
    sys.argv = ["streamlit", "run", str(app), *options]
    return cli.main()


if __name__ == "__main__":
    sys.exit(main())
