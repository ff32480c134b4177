"""Streamlit's hashed static files (its scripts, style sheets and fonts) answered from memory after their first
request (used by dashboard/index_page.py, installed by dashboard/serve.py).

A first visit asks the server for about a hundred of them (the main script's sixty static imports, then each
element's code as it is drawn), and the browser can run the main script only once all its static imports have
arrived. Streamlit's static-file app answers each from disk (a stat, the file opened and read in a worker thread,
a thread hop per 64 KiB chunk): about 4 ms of the server's CPU a file on this 2-core machine, 0.25 s for the sixty,
on the path to the first chart and taken from the page's own CPU when browser and server share the machine
(docs/responsiveness.md). Their names carry their content's hash and Streamlit marks them immutable, so the bytes
of a file never change while the server runs: the first complete 200 answer of each is kept (status, headers, body)
and later requests for it are answered with the same messages. Conditional and range requests, HEAD and every
other answer (the HTML page, 304s, errors) go to the app as before.
"""

from __future__ import annotations

MAX_FILE_BYTES = 8 * 2**20          # a file larger than this is never kept
MAX_TOTAL_BYTES = 64 * 2**20        # nor more than this in all (Streamlit's whole static folder is about 20 MB)
PASS_THROUGH_HEADERS = (b"range", b"if-none-match", b"if-modified-since", b"if-range")


def cacheable(status: int, headers: list[tuple[bytes, bytes]]) -> bool:
    """An answer to keep: 200, marked immutable (a hashed file), not HTML."""
    named = {name.lower(): value for name, value in headers}
    return (status == 200 and b"immutable" in named.get(b"cache-control", b"")
            and not named.get(b"content-type", b"").startswith(b"text/html"))


def with_memory(app):
    """The ASGI `app` with its immutable GET answers kept in memory after the first (see the module's notes)."""
    kept: dict[str, tuple[dict, bytes]] = {}
    size = 0

    async def wrapped(scope, receive, send):
        if scope.get("type") != "http" or scope.get("method") != "GET" or any(
                name.lower() in PASS_THROUGH_HEADERS for name, _ in scope.get("headers") or ()):
            await app(scope, receive, send)
            return
        key = scope.get("root_path", "") + "\0" + scope.get("path", "")
        if key in kept:
            start, body = kept[key]
            await send(start)
            await send({"type": "http.response.body", "body": body, "more_body": False})
            return
        start: dict | None = None
        chunks: list[bytes] | None = []

        async def record(message):
            nonlocal start, chunks, size
            await send(message)
            if chunks is None:
                return
            if message["type"] == "http.response.start":
                if not cacheable(message.get("status", 0), list(message.get("headers") or [])):
                    chunks = None
                    return
                start = message
            elif message["type"] == "http.response.body" and start is not None:
                chunks.append(message.get("body", b""))
                if sum(map(len, chunks)) > MAX_FILE_BYTES:
                    chunks = None
                elif not message.get("more_body", False):
                    body = b"".join(chunks)
                    if size + len(body) <= MAX_TOTAL_BYTES and key not in kept:
                        kept[key] = ({"type": "http.response.start", "status": start["status"],
                                      "headers": list(start.get("headers") or [])}, body)
                        size += len(body)
                    chunks = None
            else:                 # a file answer sent otherwise (e.g. pathsend): not kept
                chunks = None

        await app(scope, receive, record)

    wrapped.kept = kept
    return wrapped
