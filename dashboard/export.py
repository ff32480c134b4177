"""Exports: static images (PNG/SVG/PDF through kaleido + Chromium), a PPTX deck, table downloads.

Static images need a Chromium-family browser: kaleido 1.x drives one over a pipe. We never
download a browser; we point kaleido at the one installed (Debian's `chromium` package,
`/usr/bin/chromium`), or at `$BROWSER_PATH` when set (the variable kaleido's choreographer
honours too). One browser session is started on the first export and kept warm for the
process (about 3 s to start, then about 0.25 s per figure), so a deck of N charts does not
start Chromium N times. Without Chromium, `figure_bytes` raises `ExportUnavailable` with a
plain reason and the chart toolbar's camera button (see `toolbar_config`) still gives PNGs.

Nothing here imports streamlit.
"""

from __future__ import annotations

import asyncio
import atexit
import io
import os
import re
import shutil
import threading
import time
from typing import Optional, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard.charts.theme import FIGURE_SIZE
from engine import neutralise_table, to_safe_csv

FORMATS = ("png", "svg", "pdf")
BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
DEBIAN_CHROMIUM = "/usr/bin/chromium"
NO_BROWSER_REASON = (
    "Static image export needs Chromium; install Debian's chromium package (apt-get install chromium) "
    "or set BROWSER_PATH to a Chrome/Chromium binary. The chart toolbar's camera button still downloads PNG."
)
START_TIMEOUT_S = 60
RENDER_TIMEOUT_S = 90
RETRY_AFTER_FAILURE_S = 60  # a browser that would not start is not retried on every rerun
TABS = 4                    # browser tabs rendering at once (a deck's charts render side by side)


class ExportUnavailable(RuntimeError):
    """Static export cannot run here (no browser, or no kaleido); the message says why."""


def _is_executable(path: Optional[str]) -> bool:
    return bool(path) and os.path.isfile(path) and os.access(path, os.X_OK)


LOOKUP_TTL_S = 60.0    # a browser lookup is reused this long for the same BROWSER_PATH and PATH (every chart asks)
_LOOKUPS: dict = {}


def chromium_path() -> Optional[str]:
    """The browser kaleido will drive, or None.

    `$BROWSER_PATH` wins when set (and must then exist: a wrong explicit path is not silently
    replaced by another browser); else the first Chromium/Chrome on PATH; else /usr/bin/chromium.
    The answer is reused for LOOKUP_TTL_S while BROWSER_PATH and PATH stay the same.
    """
    key = (os.environ.get("BROWSER_PATH"), os.environ.get("PATH"))
    checked = _LOOKUPS.get(key)
    if checked is not None and time.monotonic() - checked[0] < LOOKUP_TTL_S:
        return checked[1]
    found = _look_for_browser()
    _LOOKUPS[key] = (time.monotonic(), found)
    return found


def _look_for_browser() -> Optional[str]:
    explicit = os.environ.get("BROWSER_PATH")
    if explicit:
        return explicit if _is_executable(explicit) else None
    for name in BROWSER_NAMES:
        found = shutil.which(name)
        if _is_executable(found):
            return found
    return DEBIAN_CHROMIUM if _is_executable(DEBIAN_CHROMIUM) else None


def _kaleido_missing() -> Optional[str]:
    try:
        import kaleido  # noqa: F401
    except ImportError:
        return "Static image export needs the kaleido package (pip install 'kaleido>=1'). " \
               "The chart toolbar's camera button still downloads PNG."
    return None


def static_export_available() -> tuple[bool, str]:
    """(True, browser path) when PNG/SVG/PDF export can run, else (False, a plain-language reason)."""
    missing = _kaleido_missing()
    if missing:
        return False, missing
    path = chromium_path()
    if path is None:
        explicit = os.environ.get("BROWSER_PATH")
        if explicit:
            return False, f"BROWSER_PATH={explicit!r} is not an executable browser. {NO_BROWSER_REASON}"
        return False, NO_BROWSER_REASON
    if _SESSION.failed_path == path and time.monotonic() - _SESSION.failed_at < RETRY_AFTER_FAILURE_S:
        return False, _SESSION.failure
    return True, path


def _kaleido_class():
    """kaleido's Kaleido, its tabs reloaded behind the renders rather than before each image is returned.

    kaleido reloads a tab after each render (a clean page for the next figure) and returns the image only once the
    reload is done; here the image returns at once and the tab goes back to the queue when its reload is done (a
    deck's five charts on four tabs: 1.96 -> 1.49 s, medians of six alternated pairs at load 12,
    docs/responsiveness.md).
    A reload that fails marks the browser broken: the next export starts a fresh one. A kaleido without the hook
    (another version) is used as it comes."""
    import kaleido
    if not hasattr(kaleido.Kaleido, "_return_kaleido_tab"):
        return kaleido.Kaleido

    class ReloadBehind(kaleido.Kaleido):
        broken = False

        async def _return_kaleido_tab(self, tab) -> None:
            reload = asyncio.ensure_future(super()._return_kaleido_tab(tab))
            self.__dict__.setdefault("reloading", set()).add(reload)     # referenced until done
            reload.add_done_callback(self._reloaded)

        def _reloaded(self, reload) -> None:
            self.reloading.discard(reload)
            if reload.cancelled() or reload.exception() is not None:
                self.broken = True
    return ReloadBehind


class _BrowserSession:
    """One kaleido browser kept open on its own event-loop thread, shared by every export.

    Exports are serialised by a lock (Streamlit runs each user session in its own thread).
    If the browser dies, the next export starts a fresh one.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.loop: Optional[asyncio.AbstractEventLoop] = None
        self.thread: Optional[threading.Thread] = None
        self.kaleido = None
        self.path: Optional[str] = None
        self.failed_path: Optional[str] = None
        self.failed_at = 0.0
        self.failure = ""

    def _call(self, coroutine, timeout: float):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def _start(self, path: str) -> None:
        async def open_browser():
            browser = _kaleido_class()(n=TABS, timeout=RENDER_TIMEOUT_S, mathjax=False, path=path)
            await browser.open()
            return browser

        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="kaleido-browser", daemon=True)
        self.thread.start()
        try:
            self.kaleido = self._call(open_browser(), START_TIMEOUT_S)
        except Exception as error:  # the browser would not start: say so, plainly
            self._stop()
            self.failed_path, self.failed_at, self.failure = path, time.monotonic(), (
                f"Chromium at {path} did not start ({type(error).__name__}: {error}). {NO_BROWSER_REASON}")
            raise ExportUnavailable(self.failure) from error
        self.path, self.failed_path = path, None

    def _stop(self) -> None:
        if self.kaleido is not None and self.loop is not None:
            try:
                self._call(self.kaleido.close(), 20)
            except Exception:  # closing a dead browser may fail; the process is gone either way
                pass
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self.loop.stop)
            if self.thread is not None:
                self.thread.join(5)
            if not self.loop.is_running():
                self.loop.close()
        self.loop = self.thread = self.kaleido = self.path = None

    def render(self, path: str, figure: dict, options: dict) -> bytes:
        return self.render_many(path, [figure], options)[0]

    def render_many(self, path: str, figures: Sequence[dict], options: dict) -> list[bytes]:
        """Each figure's bytes, in order; up to TABS render at the same time in the one browser."""
        async def all_of():
            return await asyncio.gather(*(self.kaleido.calc_fig(figure, opts=options) for figure in figures))

        with self.lock:
            for attempt in (1, 2):
                if self.kaleido is None or self.path != path or getattr(self.kaleido, "broken", False):
                    self._stop()
                    self._start(path)
                try:
                    return list(self._call(all_of(), RENDER_TIMEOUT_S * max(1, len(figures) // TABS + 1) + 10))
                except Exception:
                    self._stop()  # a crashed or wedged browser: retry once on a fresh one
                    if attempt == 2:
                        raise
        raise AssertionError("unreachable")

    def close(self) -> None:
        with self.lock:
            self._stop()


_SESSION = _BrowserSession()
atexit.register(_SESSION.close)


def close_browser() -> None:
    """Stop the warm export browser (it restarts on the next export)."""
    _SESSION.close()


def figure_bytes(fig: go.Figure, fmt: str = "png", scale: float = 2,
                 width: int = FIGURE_SIZE[0], height: int = FIGURE_SIZE[1]) -> bytes:
    """The figure as PNG, SVG or PDF bytes, `width` x `height` layout px (PNG pixels x `scale`).

    Raises ExportUnavailable (with the reason) when kaleido or Chromium is missing.
    """
    return figures_bytes([fig], fmt, scale, width, height)[0]


def figures_bytes(figs: Sequence[go.Figure], fmt: str = "png", scale: float = 2,
                  width: int = FIGURE_SIZE[0], height: int = FIGURE_SIZE[1]) -> list[bytes]:
    """figure_bytes for several figures at once, rendered side by side in the warm browser (a deck's slides)."""
    fmt = fmt.lower()
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {FORMATS}, got {fmt!r}")
    available, path_or_reason = static_export_available()
    if not available:
        raise ExportUnavailable(path_or_reason)
    figures = [fig.to_dict() if hasattr(fig, "to_dict") else dict(fig) for fig in figs]
    options = dict(format=fmt, width=int(width), height=int(height), scale=float(scale))
    return _SESSION.render_many(path_or_reason, figures, options)


def slug(text: str) -> str:
    """'Roofline: H100-SXM vs A100' -> 'roofline-h100-sxm-vs-a100' (safe file name)."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "chart"


def toolbar_config(filename: str, fmt: str = "png") -> dict:
    """Plotly `config` for st.plotly_chart: the toolbar camera downloads a 2x slide-size image.

    Plotly's camera button takes one format per config (png, svg, jpeg or webp); PNG at
    1280 x 720 x scale 2 (2560 x 1440 px) by default; pass fmt="svg" for vector output.
    """
    if fmt not in ("png", "svg", "jpeg", "webp"):
        raise ValueError(f"fmt must be png, svg, jpeg or webp, got {fmt!r}")
    return {
        "displaylogo": False,
        "toImageButtonOptions": {"format": fmt, "filename": slug(filename), "width": FIGURE_SIZE[0],
                                 "height": FIGURE_SIZE[1], "scale": 2},
        "modeBarButtonsToRemove": ["lasso2d", "select2d"],
    }


def table_csv(df: pd.DataFrame) -> bytes:
    """The table as UTF-8 CSV (no index column); text a spreadsheet would run as a formula (`=`, `+`,
    `-`, `@`, tab, CR first) gets a leading `'` and a CR inside text is quoted (engine.common.table_safety,
    OWASP's CSV-injection advice)."""
    return to_safe_csv(df).encode("utf-8")


def _sheet_name(name: str) -> str:
    return re.sub(r"[\[\]:*?/\\]", "_", name)[:31] or "sheet"


def table_xlsx(df: pd.DataFrame, sheet_name: str = "kernels") -> bytes:
    """The table as an .xlsx workbook (header row frozen, columns sized to their header).

    Excel has no infinity: infinite values (e.g. the intensity of a kernel that moves no bytes)
    are written as the text "inf". Text that would run as a formula is neutralised as in table_csv.
    """
    from openpyxl.utils import get_column_letter

    out = neutralise_table(df)
    for column in out.columns:
        if pd.api.types.is_float_dtype(out[column]) and np.isinf(out[column].to_numpy(dtype=float)).any():
            out[column] = out[column].astype(object).where(~np.isinf(out[column].to_numpy(dtype=float)), "inf")
    buffer = io.BytesIO()
    name = _sheet_name(sheet_name)
    with pd.ExcelWriter(buffer, engine="openpyxl") as writer:
        out.to_excel(writer, sheet_name=name, index=False)
        sheet = writer.sheets[name]
        sheet.freeze_panes = "A2"
        for position, column in enumerate(out.columns, start=1):
            sheet.column_dimensions[get_column_letter(position)].width = max(10, min(40, len(str(column)) + 2))
    return buffer.getvalue()


def _without_title(fig: go.Figure) -> dict:
    """A plain copy of the figure without its title and subtitle, its top margin 30 px (the slide's title replaces
    them): the JSON of a go.Figure copy with those three properties updated, a tenth of the time (nothing is
    validated again)."""
    figure = fig.to_dict()
    layout = figure.setdefault("layout", {})
    title = layout.get("title")
    if isinstance(title, dict):
        title.pop("text", None)
        if isinstance(title.get("subtitle"), dict):
            title["subtitle"].pop("text", None)
    layout.setdefault("margin", {})["t"] = 30
    return figure


def deck_pptx(slides: Sequence[tuple[str, go.Figure]], scenario_summary: str, title: str = "llm-roofline") -> bytes:
    """A 16:9 PowerPoint deck: a title slide with the scenario, then one chart per slide.

    Each chart slide has the given title, the chart as a PNG at 2x (2560 x 1440 px; the figure's
    own title is dropped, the slide title replaces it) and the scenario summary as a footer.
    Raises ExportUnavailable when static export cannot run.
    """
    from pptx import Presentation
    from pptx.dml.color import RGBColor
    from pptx.util import Inches, Pt

    available, reason = static_export_available()
    if not available:
        raise ExportUnavailable(reason)
    deck = Presentation()
    deck.slide_width, deck.slide_height = Inches(13.333), Inches(7.5)
    margin = Inches(0.5)
    full_width = deck.slide_width - 2 * margin

    cover = deck.slides.add_slide(deck.slide_layouts[0])
    cover.shapes.title.text = title
    cover.shapes.title.left, cover.shapes.title.width = margin, full_width
    cover.shapes.title.top, cover.shapes.title.height = Inches(2.2), Inches(1.5)
    subtitle = cover.placeholders[1]
    subtitle.left, subtitle.width, subtitle.top, subtitle.height = margin, full_width, Inches(3.9), Inches(1.6)
    subtitle.text = scenario_summary

    pictures = figures_bytes([_without_title(fig) for _, fig in slides], "png", scale=2, width=FIGURE_SIZE[0],
                             height=FIGURE_SIZE[1]) if slides else []
    for (slide_title, fig), png in zip(slides, pictures):
        slide = deck.slides.add_slide(deck.slide_layouts[5])  # title only
        heading = slide.shapes.title
        heading.text = slide_title
        heading.left, heading.top, heading.width, heading.height = margin, Inches(0.2), full_width, Inches(0.8)
        heading.text_frame.paragraphs[0].font.size = Pt(30)
        image_height = Inches(5.85)
        image_width = int(image_height * FIGURE_SIZE[0] / FIGURE_SIZE[1])
        slide.shapes.add_picture(io.BytesIO(png), int((deck.slide_width - image_width) / 2), Inches(1.05),
                                 width=image_width, height=image_height)
        footer = slide.shapes.add_textbox(margin, Inches(6.95), full_width, Inches(0.4)).text_frame
        footer.text = scenario_summary
        footer.paragraphs[0].font.size = Pt(12)
        footer.paragraphs[0].font.color.rgb = RGBColor(0x55, 0x55, 0x55)
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()
