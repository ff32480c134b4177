"""dashboard/index_page.py: the server's page asks for the charts' Plotly bundle in its head (issue 14: the browser
fetches it from the first moment of a visit), and nothing else the server answers changes."""

from __future__ import annotations

from dashboard import index_page, plotly_view, preload
from tests.dashboard.asgi_run import run_request

PAGE = b'<!DOCTYPE html><html><head><meta charset="UTF-8" /><title>Streamlit</title></head><body></body></html>'
TAG = b'<link rel="preload" href="component/dashboard.plotly_view.plotly_assets/plotly-cartesian.min.js" as="script">'


def test_the_tag_preloads_the_bundle_the_loader_fetches_as_a_script():
    assert plotly_view.EARLY_TAG.encode() == TAG                      # written out: a preload of that file, as a script
    assert plotly_view.BUNDLE_URL in plotly_view.LOADER               # the loader's script: the same URL, one fetch


def test_the_head_stills_the_page_skeleton_and_the_placeholders_as_the_first_element_does(monkeypatch):
    sent = []
    monkeypatch.setattr(preload.st, "html", lambda body, **kwargs: sent.append(body))
    preload.preload_plotly()
    assert len(sent) == 1 and preload.STILL_STYLE in sent[0]           # the first element: the same rules
    style = preload.STILL_TAG
    assert style.startswith("<style>") and style.endswith("</style>") and style.count("<style>") == 1
    for testid in ("stSkeleton", "stSkeletonElement", "stAppSkeleton", "stStatusWidgetRunningIcon"):
        assert f'[data-testid="{testid}"]' in style


def test_inject_puts_the_tag_once_right_before_the_head_ends():
    page = index_page.inject(PAGE)
    style = preload.STILL_TAG.encode()
    assert page == PAGE.replace(b"</title></head>", b"</title>" + TAG + style + b"</head>")
    assert index_page.inject(page) == page                            # once
    assert index_page.inject(b"<html><body>no head</body></html>") == b"<html><body>no head</body></html>"


def answer(app, method="GET", path="/"):
    """The messages `app` sends for one request."""
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)
    run_request(app, {"type": "http", "method": method, "path": path, "headers": []}, receive, send)
    return sent


def serving(content_type: bytes, chunks: list[bytes]):
    """An ASGI app answering every request with `chunks` as the body, an ETag and a Content-Length."""
    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", content_type), (b"etag", b'"abc"'),
                                (b"content-length", str(sum(map(len, chunks))).encode())]})
        for index, chunk in enumerate(chunks):
            await send({"type": "http.response.body", "body": chunk, "more_body": index < len(chunks) - 1})
    return app


def test_an_html_answer_gets_the_tag_with_its_length_and_no_stale_etag(monkeypatch):
    registered = []
    monkeypatch.setattr(plotly_view, "serve_bundle", lambda: registered.append(True))
    start, body = answer(index_page.with_early_plotly(serving(b"text/html; charset=utf-8", [PAGE[:40], PAGE[40:]])))
    headers = dict(start["headers"])
    assert body["body"] == index_page.inject(PAGE) and not body["more_body"]
    assert headers[b"content-length"] == str(len(PAGE) + len(TAG) + len(preload.STILL_TAG.encode())).encode()
    assert b"etag" not in headers and headers[b"content-type"] == b"text/html; charset=utf-8"
    assert registered == [True]                                       # the tag's URL answers from the first visit


def test_other_answers_pass_unchanged(monkeypatch):
    monkeypatch.setattr(plotly_view, "serve_bundle", lambda: None)
    script = serving(b"application/javascript", [b"let a = '</head>';", b" let b = 1;"])
    assert answer(index_page.with_early_plotly(script)) == answer(script)
    page = serving(b"text/html", [PAGE])
    assert answer(index_page.with_early_plotly(page), method="HEAD") == answer(page, method="HEAD")


def test_install_wraps_the_static_files_of_streamlits_server_once(monkeypatch):
    from streamlit.web.server.starlette import starlette_static_routes as routes
    original = routes.create_streamlit_static_handler
    monkeypatch.setattr(routes, "create_streamlit_static_handler", original)     # put back after the test
    index_page.install()
    index_page.install()
    wrapped = routes.create_streamlit_static_handler
    assert wrapped is not original and wrapped.early_plotly
    monkeypatch.setattr(index_page, "with_early_plotly", lambda app: ("wrapped", app))
    monkeypatch.setattr(index_page.static_cache, "with_memory", lambda app: ("from memory", app))
    monkeypatch.setattr(routes, "create_streamlit_static_handler", wrapped)
    made = routes.create_streamlit_static_handler(directory=str(plotly_view.VENDOR), base_url=None)
    assert made[0] == "wrapped" and made[1][0] == "from memory"          # the page's tags; hashed files kept
    assert type(made[1][1]).__name__ == "_StreamlitStaticFiles"                             # not wrapped twice
