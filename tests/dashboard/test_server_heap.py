"""The server spends no full garbage collection per script run (issue 13, 20 sessions): Streamlit's collection after
every run is off in .streamlit/config.toml, and the start-up heap is frozen after the first run, so Python's own
full collections skip it."""

from __future__ import annotations

import gc
import tomllib

from streamlit import config
from streamlit.testing.v1 import AppTest

from tests.conftest import REPO


def test_the_server_config_turns_off_the_collection_after_every_run():
    settings = tomllib.loads((REPO / ".streamlit" / "config.toml").read_text())
    assert settings["runner"]["postScriptGC"] is False


def test_after_a_run_the_start_up_heap_is_frozen_and_the_config_is_read():
    app = AppTest.from_file(str(REPO / "dashboard" / "app.py"), default_timeout=180).run()
    assert not app.exception
    assert config.get_option("runner.postScriptGC") is False
    assert gc.get_freeze_count() > 10_000            # the engine, pandas and plotly objects of the first run
