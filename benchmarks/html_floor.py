"""The rerun floor without Streamlit: one HTML page with the Batch input and one TPOT number refreshed by a fetch,
served by a stdlib http.server (benchmarks/load_sessions.py --html-floor).

It separates Chromium's own per-page cost under twenty sessions from Streamlit's frontend: the same browser, the
same sessions, changes, timing and checks as the rerun ladder (benchmarks/rerun_ladder_app.py), a page of a few
elements and no framework. The page mimics the few attributes load_sessions.py and tests/browser/waits.py read:
an app root `[data-testid="stApp"]` whose data-test-script-state is "running" while its fetch is out and
"notRunning" after the number and the URL are written (data-test-connection-state "CONNECTED"), a label "Batch" on a
number input, and a card with `stMetricLabel` "TPOT" and `stMetricValue`. On Enter the page asks the server
`/tpot?hw=...&batch=...`, writes the answer and puts the batch in its URL (history.replaceState). The server answers
with the TPOT the engine computes for that view (the dashboard's defaults with that device and batch, the page's
default method) in the dashboard's format (dashboard/units.duration), each view computed once.
Run alone: PYTHONPATH=. .venv/bin/python benchmarks/html_floor.py PORT
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>llm-roofline floor</title></head>
<body><div data-testid="stApp" data-test-script-state="notRunning" data-test-connection-state="CONNECTED">
<label for="batch">Batch</label> <input id="batch" type="number" min="1" max="1000000" step="1">
<div><div data-testid="stMetricLabel">TPOT</div><div data-testid="stMetricValue" id="tpot"></div></div>
</div>
<script>
const app = document.querySelector('[data-testid="stApp"]');
const input = document.getElementById('batch');
const shown = document.getElementById('tpot');
const params = new URL(location.href).searchParams;
const hw = params.get('hw') || 'H100-SXM';
async function refresh(batch) {
  app.setAttribute('data-test-script-state', 'running');
  const answer = await fetch(`/tpot?hw=${encodeURIComponent(hw)}&batch=${batch}`);
  shown.textContent = await answer.text();
  const url = new URL(location.href);
  url.searchParams.set('hw', hw);
  url.searchParams.set('batch', batch);
  history.replaceState(null, '', url);
  app.setAttribute('data-test-script-state', 'notRunning');
}
input.value = params.get('batch') || '1';
input.addEventListener('keydown', event => { if (event.key === 'Enter') refresh(input.value); });
refresh(input.value);
</script></body></html>
"""


@functools.cache
def tpot_text(device: str, batch: int) -> str:
    """The dashboard's TPOT card text for the default view with `device` and `batch` (its default method)."""
    import engine
    from dashboard.state import ViewState
    from dashboard.units import duration
    from engine.workload.scenario import Scenario
    state = ViewState(devices=(device,), batch=batch)
    result = engine.estimate(engine.load_hardware(device), engine.load_model(state.model),
                             Scenario(**state.scenario_fields), method=state.method)
    return duration(result.tpot_s)


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/tpot":
            query = urllib.parse.parse_qs(url.query)
            try:
                body, kind = tpot_text(query["hw"][0], int(query["batch"][0])).encode(), "text/plain; charset=utf-8"
            except (KeyError, ValueError) as error:
                self.send_error(400, f"/tpot: {error}")
                return
        elif url.path in ("/", "/health"):
            body, kind = (PAGE if url.path == "/" else "ok").encode(), "text/html; charset=utf-8"
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:   # quiet
        pass


@contextlib.contextmanager
def serve(port: int) -> Iterator[tuple[str, object]]:
    """(url, server process) of this page's server on 127.0.0.1:`port`, in its own process, stopped after."""
    import psutil
    process = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), str(port)], cwd=REPO,
                               env={**__import__("os").environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"})
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    try:
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"html_floor.py exited with status {process.returncode}")
            try:
                urllib.request.urlopen(f"{url}/health", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"html_floor.py did not answer on port {port} within 120 s") from None
                time.sleep(0.2)     # polled until it answers
        yield url, psutil.Process(process.pid)
    finally:
        process.terminate()
        process.wait(timeout=20)


def main(argv=None) -> int:
    port = int((argv or sys.argv[1:])[0])
    sys.path.insert(0, str(REPO))
    tpot_text("H100-SXM", 1)          # warm: the engine imported, the default view estimated
    print(json.dumps({"serving": port}), flush=True)
    http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
