"""dashboard/static_cache.py: Streamlit's immutable static files are answered from memory after their first request
(issue 14: the server's CPU per first visit), with the same status, headers and bytes; every other answer still
comes from Streamlit's static-file app."""

from __future__ import annotations

import asyncio

from dashboard import static_cache
from tests.dashboard.asgi_run import run_request

IMMUTABLE = b"public, immutable, max-age=31536000"


def answer(app, path="/static/js/index.abc.js", method="GET", headers=()):
    """The messages `app` sends for one request."""
    sent, received = [], []

    async def receive():            # the request, then nothing until the client leaves (it never does here)
        if received:
            await asyncio.Event().wait()
        received.append(True)
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)
    run_request(app, {"type": "http", "method": method, "path": path, "root_path": "", "headers": list(headers)},
                    receive, send)
    return sent


def counting(status=200, content_type=b"application/javascript", cache_control=IMMUTABLE,
             chunks=(b"let a = 1;", b" let b = 2;")):
    """An ASGI app answering every request with `chunks` (its path in the first), counting the requests it answers."""
    calls = []

    async def app(scope, receive, send):
        calls.append(scope["path"])
        body = [scope["path"].encode() + chunks[0], *chunks[1:]]
        headers = [(b"content-type", content_type), (b"content-length", str(sum(map(len, body))).encode()),
                   (b"etag", b'"e1"')] + ([(b"cache-control", cache_control)] if cache_control else [])
        await send({"type": "http.response.start", "status": status, "headers": headers})
        for index, chunk in enumerate(body):
            await send({"type": "http.response.body", "body": chunk, "more_body": index < len(body) - 1})
    app.calls = calls
    return app


def joined(messages):
    """(status, headers, the whole body) of one answer's messages."""
    start, *bodies = messages
    assert not bodies[-1].get("more_body", False)
    return start["status"], start["headers"], b"".join(message["body"] for message in bodies)


def test_an_immutable_file_is_answered_from_memory_after_its_first_request_with_the_same_answer():
    inner = counting()
    app = static_cache.with_memory(inner)
    first, second, third = (answer(app) for _ in range(3))
    assert inner.calls == ["/static/js/index.abc.js"]                    # the app answered once
    expected = (200, None, b"/static/js/index.abc.jslet a = 1; let b = 2;")
    for messages in (first, second, third):
        status, headers, body = joined(messages)
        assert (status, body) == (expected[0], expected[2])
        assert dict(headers)[b"content-length"] == str(len(expected[2])).encode()
        assert headers == first[0]["headers"]                              # etag, cache-control kept
    assert len(second) == 2                                               # one body message from memory


def test_each_path_is_kept_on_its_own():
    inner = counting()
    app = static_cache.with_memory(inner)
    for path in ("/static/js/a.js", "/static/css/b.css", "/static/js/a.js", "/static/css/b.css"):
        assert joined(answer(app, path))[2].startswith(path.encode())
    assert inner.calls == ["/static/js/a.js", "/static/css/b.css"]


def test_other_answers_always_come_from_the_app():
    cases = {"the page": counting(content_type=b"text/html", cache_control=b"no-cache"),
             "html marked immutable": counting(content_type=b"text/html"),
             "not immutable": counting(cache_control=None),
             "not found": counting(status=404)}
    for name, inner in cases.items():
        app = static_cache.with_memory(inner)
        for _ in range(3):
            answer(app)
        assert len(inner.calls) == 3, name


def test_head_range_and_conditional_requests_go_to_the_app_and_are_not_kept():
    inner = counting()
    app = static_cache.with_memory(inner)
    answer(app, method="HEAD")
    for header in (b"range", b"if-none-match", b"if-modified-since", b"If-Range"):
        answer(app, headers=[(header, b"x")])
    assert len(inner.calls) == 5 and app.kept == {}
    answer(app)
    answer(app)
    assert len(inner.calls) == 6                                          # a plain GET is kept as before


def test_a_file_above_the_limit_is_not_kept(monkeypatch):
    monkeypatch.setattr(static_cache, "MAX_FILE_BYTES", 20)
    inner = counting()
    app = static_cache.with_memory(inner)
    assert joined(answer(app))[2] == joined(answer(app))[2]
    assert len(inner.calls) == 2 and app.kept == {}


def test_streamlits_own_static_files_answer_from_memory(tmp_path):
    """Streamlit's static-file app over a folder: the second answer comes from memory (the file changed on disk in
    between still answers with its first bytes: hashed names never change content while a server runs)."""
    from streamlit.web.server.starlette.starlette_static_routes import create_streamlit_static_handler
    (tmp_path / "index.html").write_text("<html><head></head></html>")
    (tmp_path / "static").mkdir()
    script = tmp_path / "static" / "main.1234.js"
    script.write_bytes(b"console.log(1);")
    app = static_cache.with_memory(create_streamlit_static_handler(str(tmp_path), None))
    status, headers, body = joined(answer(app, "/static/main.1234.js"))
    assert (status, body) == (200, b"console.log(1);") and b"immutable" in dict(headers)[b"cache-control"]
    script.write_bytes(b"console.log(2);")
    assert joined(answer(app, "/static/main.1234.js")) == (status, headers, body)
    page = joined(answer(app, "/"))
    assert page[0] == 200 and page[2].startswith(b"<html>") and list(app.kept) == ["\0/static/main.1234.js"]
