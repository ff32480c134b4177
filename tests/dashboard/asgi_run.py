"""Run one ASGI request to completion in tests, whatever event loop the test's thread already has.

Playwright's sync API (the browser tests' session fixture) keeps an event loop running in the main thread of a test
worker for the rest of the session, so `asyncio.run` there fails ("cannot be called from a running event loop")
when a browser test ran earlier on the same worker. A thread of its own has no loop: the request runs there."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor


def run_request(app, scope: dict, receive, send) -> None:
    """Run `app(scope, receive, send)` on a fresh event loop in a thread of its own and wait for it."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(asyncio.run, app(scope, receive, send)).result(timeout=60)
