"""What a Batch rerun sends the browser (issue 13): every websocket message of a rerun, decoded, counted and sized.

One Chromium context opens the default view (or --path) and waits until the page has settled; then it sets Batch (or
with --input the Input or Output tokens) to A, B and A again (each waited for as load_sessions.py waits) while
Playwright records every websocket frame the page receives and sends. Each received frame is a Streamlit `ForwardMsg` (protobuf), decoded with Streamlit's own proto:
per rerun it prints the messages by kind (an element by its type, a block, script start and end, ...), their count
and bytes, and then, element by element (its delta path), which elements were sent with other bytes the second time
Batch was A than the first (same view, so a difference is content that changes on every rerun without need: ids,
keys, timestamps) and which changed between A and B (what a new value has to change).
Load average printed before and after (the counts and sizes do not depend on it).
Run: PYTHONPATH=. .venv/bin/python benchmarks/rerun_deltas.py [--path '/?chart=all'] [--values 40 41] [--show 12]
     [--input in]
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from streamlit.proto.ForwardMsg_pb2 import ForwardMsg  # noqa: E402

from benchmarks.browser_bench import dashboard, INPUTS, load_printed  # noqa: E402
from tests.browser.waits import (CHROMIUM, CHROMIUM_ARGS, charts_drawn, POLL_MS, TIMEOUT_MS, url_param_is,  # noqa: E402
                                 wait_idle)


def kind_of(message: ForwardMsg) -> str:
    """A received message's kind: an element's or a block's type for a delta, else the message's own field."""
    which = message.WhichOneof("type")
    if which == "delta":
        delta = message.delta
        part = delta.WhichOneof("type")
        if part == "new_element":
            element = delta.new_element
            inner = element.WhichOneof("type")
            if inner == "bidi_component":
                return f"element:bidi_component({element.bidi_component.component_name.split('.')[-1]})"
            return f"element:{inner}"
        if part == "add_block":
            return f"block:{delta.add_block.WhichOneof('type') or 'vertical'}"
        return f"delta:{part}"
    return which or "empty"


def decode(frames: list) -> list[dict]:
    """The received frames of one rerun, decoded: kind, delta path, bytes and the delta's own bytes."""
    decoded = []
    for payload in frames:
        if not isinstance(payload, (bytes, bytearray)):
            decoded.append({"kind": "text", "path": (), "bytes": len(payload), "body": payload.encode()})
            continue
        message = ForwardMsg.FromString(bytes(payload))
        path = tuple(message.metadata.delta_path)
        kind = kind_of(message)
        body = message.delta.SerializeToString() if message.WhichOneof("type") == "delta" else b""
        if message.WhichOneof("type") == "ref_hash":
            kind = "ref_hash (a cached message, sent by reference)"
        decoded.append({"kind": kind, "path": path, "bytes": len(payload), "body": body})
    return decoded


def summary(name: str, decoded: list[dict], sent: list) -> None:
    counts, sizes = collections.Counter(), collections.Counter()
    for item in decoded:
        counts[item["kind"]] += 1
        sizes[item["kind"]] += item["bytes"]
    print(f"\n{name}: {len(decoded)} messages received, {sum(sizes.values()):,} bytes; "
          f"{len(sent)} sent, {sum(len(s) for s in sent):,} bytes")
    for kind, count in sorted(counts.items(), key=lambda kv: -sizes[kv[0]]):
        print(f"  {kind:<58} {count:4d}  {sizes[kind]:>9,} bytes")


def by_path(decoded: list[dict]) -> dict:
    return {item["path"]: item for item in decoded if item["path"]}


def differences(first: list[dict], second: list[dict], show: int) -> list:
    """Delta paths whose bytes differ between two reruns (or that only one of them sent)."""
    one, two = by_path(first), by_path(second)
    changed = []
    for path in sorted(set(one) | set(two)):
        a, b = one.get(path), two.get(path)
        if a is None or b is None or a["body"] != b["body"]:
            changed.append((path, (a or b)["kind"], a["bytes"] if a else 0, b["bytes"] if b else 0))
    for path, kind, size_a, size_b in changed[:show]:
        print(f"  {'.'.join(map(str, path)):<16} {kind:<50} {size_a:>8,} -> {size_b:>8,} bytes")
    if len(changed) > show:
        print(f"  ... and {len(changed) - show} more")
    return changed


def record_reruns(url: str, values, param: str = "batch") -> list[tuple[str, list[dict], list]]:
    """(name, decoded frames received, frames sent) of the first visit to `url` and of the input `param` (URL
    parameter) set to A, B, A."""
    from playwright.sync_api import sync_playwright
    received, sent, reruns = [], [], []

    def listen(socket):
        socket.on("framereceived", lambda payload: received.append(payload))
        socket.on("framesent", lambda payload: sent.append(payload))

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_context(viewport={"width": 1440, "height": 900}).new_page()
        page.on("websocket", listen)
        page.goto(url, wait_until="commit")
        page.wait_for_function(charts_drawn(1), polling=50, timeout=TIMEOUT_MS)
        wait_idle(page, TIMEOUT_MS)
        reruns.append(("first visit", decode(received), list(sent)))
        field = page.get_by_label(INPUTS[param], exact=True)
        for value in (values[0], values[1], values[0]):
            received.clear()
            sent.clear()
            field.fill(str(value))
            field.press("Enter")
            page.wait_for_function(url_param_is(param, str(value)), polling=POLL_MS, timeout=TIMEOUT_MS)
            wait_idle(page, TIMEOUT_MS)
            reruns.append((f"rerun, {INPUTS[param]} {value}", decode(received), list(sent)))
        browser.close()
    return reruns


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", default="/", help="the view to open (default: the default view)")
    parser.add_argument("--url", help="a dashboard already running")
    parser.add_argument("--input", choices=tuple(INPUTS), default="batch",
                        help="the sidebar input the reruns change, by its URL parameter (batch, in, out)")
    parser.add_argument("--values", type=int, nargs=2, default=(40, 41), help="the input's values A and B (A, B, A)")
    parser.add_argument("--show", type=int, default=40, help="changed elements listed at most")
    args = parser.parse_args(argv)
    with load_printed(), dashboard(args.url) as (url, _):
        reruns = record_reruns(url + args.path, args.values, args.input)
    for name, decoded, frames in reruns:
        summary(name, decoded, frames)
    a1, b, a2 = (decoded for _, decoded, _ in reruns[1:])
    label = INPUTS[args.input]
    print(f"\nelements sent with other bytes, {label} {args.values[0]} twice (same view: needless changes):")
    same = differences(a1, a2, args.show)
    print(f"  {len(same)} of {len(by_path(a2))} delta paths")
    print(f"\nelements sent with other bytes, {label} {args.values[0]} -> {args.values[1]}:")
    new = differences(a1, b, args.show)
    print(f"  {len(new)} of {len(by_path(b))} delta paths")
    return 0


if __name__ == "__main__":
    sys.exit(main())
