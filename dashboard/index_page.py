"""Streamlit's page (index.html) with the charts' Plotly bundle preloaded from its head (used by dashboard/serve.py).

On a first visit the browser otherwise asks for the bundle only once the page's first element has arrived and its
element code has loaded (dashboard/preload.py: a script in an st.html element), queued behind the sidebar's element
code on a server that is still running the session's first script: seconds after navigation on a busy machine, and
then 0.2-2 s to fetch. Preloaded by the page itself (`plotly_view.EARLY_TAG`, `<link rel="preload" as="script">`),
it is fetched beside Streamlit's own scripts from the first moment of the visit and evaluated when the preload
element's loader adds its script, as before (the browser takes the preloaded file: one fetch). Nothing on screen
changes, and the browser evaluates nothing earlier than before (evaluated early, it delayed Streamlit's own work).

The head also carries the style that stills Streamlit's loading placeholders and the running man
(dashboard/preload.py's `STILL_STYLE`): from the first element only, the page's skeleton and the elements'
placeholders shimmered for the seconds before it, each frame painted and composited (the software compositor's CPU to
the first chart 0.55 -> 0.17 s, docs/responsiveness.md).

`with_early_plotly(app)` wraps the ASGI app that serves Streamlit's static files: every HTML answer to a GET gets the
tag before `</head>` (its Content-Length set to match; no ETag, as the file's no longer describes it), and the
vendored folder is registered with the running server first (`plotly_view.serve_bundle`), so the tag's URL answers
from the very first visit. Inside it, Streamlit's hashed files are answered from memory after their first request
(dashboard/static_cache.py).
"""

from __future__ import annotations

from dashboard import plotly_view, preload, static_cache

HEAD_END = b"</head>"
# the bundle's preload, then the style that stills the loading placeholders and the running man (dashboard/preload.py)
# from the page's first frame: before the first element brings the same style, the page skeleton and the elements'
# placeholders would shimmer, each frame painted and composited
HEAD_TAGS = plotly_view.EARLY_TAG + preload.STILL_TAG


def inject(html: bytes, tag: str = HEAD_TAGS) -> bytes:
    """The page with `tag` right before its `</head>` (once; a page without a head, or with the tag, unchanged)."""
    if tag.encode() in html or HEAD_END not in html:
        return html
    return html.replace(HEAD_END, tag.encode() + HEAD_END, 1)


def with_early_plotly(app):
    """The ASGI `app` with every text/html answer to a GET carrying the Plotly tag (other answers untouched)."""

    async def wrapped(scope, receive, send):
        if scope.get("type") != "http" or scope.get("method") != "GET":
            await app(scope, receive, send)
            return
        plotly_view.serve_bundle()
        start: dict | None = None
        body: list[bytes] = []

        async def capture(message):
            nonlocal start
            if message["type"] == "http.response.start":
                headers = dict(message.get("headers") or [])
                if not headers.get(b"content-type", b"").startswith(b"text/html"):
                    await send(message)
                    return
                start = message
                return
            if start is None or message["type"] != "http.response.body":
                await send(message)
                return
            body.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            page = inject(b"".join(body))
            headers = [(name, value) for name, value in start.get("headers") or []
                       if name.lower() not in (b"content-length", b"etag")]
            await send({**start, "headers": headers + [(b"content-length", str(len(page)).encode())]})
            await send({"type": "http.response.body", "body": page, "more_body": False})

        await app(scope, receive, capture)

    return wrapped


def install() -> None:
    """Have Streamlit's server wrap its static-file app with `with_early_plotly` (call before it starts). A
    Streamlit without that module (another server) is left as it is: the preload element still loads the bundle."""
    try:
        from streamlit.web.server.starlette import starlette_static_routes as routes
    except ImportError:
        return
    make = routes.create_streamlit_static_handler
    if getattr(make, "early_plotly", False):
        return

    def create_streamlit_static_handler(*args, **kwargs):
        # hashed files answered from memory after their first request (dashboard/static_cache.py)
        return with_early_plotly(static_cache.with_memory(make(*args, **kwargs)))
    create_streamlit_static_handler.early_plotly = True
    routes.create_streamlit_static_handler = create_streamlit_static_handler
