"""`trace anatomy replay --html`: one self-contained file, and a real
browser draws its chart (headless Chromium, installed by this test's
fixture where it may be; skipped, with the reason, where it cannot)."""
from __future__ import annotations

import json
import re

import pytest

from tests import anatomy_demo
from tests.browser import Png, ensure_chromium, screenshot
from tests.helpers import cli

_RECT = re.compile(r'<g class="bar" data-turn="(\d+)"[^>]*>(.*?)</g>', re.DOTALL)
_SLICE = re.compile(r'<rect class="slice" data-slice="(\w+)" x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" '
                    r'height="([\d.]+)" fill="#([0-9a-f]{6})"/>')


@pytest.fixture
def report(tmp_path):
    transcript = tmp_path / "session.jsonl"
    session = anatomy_demo.write(transcript)
    assert cli("ingest", "--no-embed", str(transcript)).code == 0
    html = tmp_path / "report.html"
    run = cli("anatomy", "replay", "--session", session, "--html", str(html))
    assert run.code == 0, run.err
    return html


@pytest.fixture(scope="module")
def chromium():
    path, why = ensure_chromium()
    if path is None:
        pytest.skip(why)
    return path


def test_the_report_is_one_self_contained_file(report):
    page = report.read_text()
    assert page.startswith("<!doctype html>")
    # nothing is fetched: no links, no external scripts, images or fonts, no URL but the SVG namespace
    assert not re.search(r"<link|<img|<iframe|src=|@import|url\(", page)
    assert set(re.findall(r"https?://[^\s\"'<>]+", page)) <= {"http://www.w3.org/2000/svg"}
    data = json.loads(re.search(r'<script type="application/json" id="anatomy-data">(.*?)</script>', page,
                                re.DOTALL).group(1))
    turns = data["turns"]
    assert len(turns) == len(_RECT.findall(page)) == 20
    compacted = [t["turn"] for t in turns if t["compaction"]]
    assert compacted == [15] and page.count('class="compaction"') == 1
    assert turns[0]["events"] and turns[0]["a4"]["workspaceFileBytes"] > 0
    assert any(t["a4"]["topicTransition"] for t in turns)


def test_a_browser_draws_the_bars(report, chromium, tmp_path):
    png = tmp_path / "report.png"
    screenshot(chromium, report, png, width=1280, height=720, fragment="turn=3")
    image = Png(png)
    page = report.read_text()
    svg = re.search(r'<svg id="anatomy-chart"[^>]*data-page-left="(\d+)" data-page-top="(\d+)"', page)
    left, top = int(svg.group(1)), int(svg.group(2))
    checked = 0
    for turn, body in _RECT.findall(page):
        for slice_, x, y, w, h, fill in _SLICE.findall(body):
            x, y, w, h = float(x), float(y), float(w), float(h)
            if h < 6 or w < 4:
                continue                                   # too thin to sample away from its edges
            px, py = int(left + x + w / 2), int(top + y + h / 2)
            if py >= image.height:
                continue
            want = tuple(int(fill[i:i + 2], 16) for i in (0, 2, 4))
            got = image.pixel(px, py)
            assert got != (255, 255, 255), f"call {turn}'s {slice_} bar is blank at ({px}, {py})"
            assert all(abs(a - b) <= 40 for a, b in zip(got, want)), (turn, slice_, got, want)
            checked += 1
    assert checked >= 30
    # between the bars the page is blank: the check above would have told bars from background
    x0 = left + float(_SLICE.search(page).group(2)) - 3
    assert image.pixel(int(x0), top + 60) == (255, 255, 255)
