"""The benchmark leaderboard page in a real browser: a small suite (COMPAS × two missingness scenarios × two
imputers × two learners × 3 splits) is run with ``fairmiss bench``, and its ``leaderboard.html`` is opened from
disk in headless Chromium (Debian's ``chromium``, as in ``test_browser.py``), driven over the DevTools protocol
with the network switched off.

What is asserted is what a reader gets from the rendered page: per ranked metric the heat map (a row per
candidate, a column per dataset · scenario, coloured exactly where the difference is marked ``*``), the rank plot
and one table per dataset × scenario with every candidate; one trade-off front per dataset × scenario; every figure
an inline ``<svg>`` drawn at a real size whose title (the SVG ``<title>`` and its visible heading) names the
dataset, the scenario and the metrics, with every candidate plotted and no text or mark outside the figure; the
page requests nothing but itself (no external script, style sheet, image or font), renders offline, and logs no
console error; a screenshot is a real, non-blank PNG. Without Chromium this test FAILS, it does not skip.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from test_browser import CHROMIUM_FLAGS, _chromium

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from badinput import make_project, mirror_dir  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.browser]

DATASET = "compas_000"
SCENARIOS = ["mcar20", "mar30"]
CANDIDATES = ["median+lr", "median+tree_d3", "mean+lr", "mean+tree_d3"]
METRICS = {"accuracy": "max", "equalized_odds_difference": "min"}
SUITE = {
    "suite": "browser_check",
    "description": "Two imputers and two learners on COMPAS under two missingness scenarios.",
    "seed": 2026,
    "datasets": [{"name": DATASET}],
    "scenarios": [{"kind": "mcar", "name": "mcar20", "rates": {"priors_count": 0.2, "c_charge_degree": 0.2}},
                  {"kind": "mar", "name": "mar30", "columns": ["priors_count"], "drivers": ["age_cat_Less-than-25"],
                   "rate": 0.3}],
    "candidates": {"imputers": [{"kind": "median"}, {"kind": "mean"}],
                   "learners": [{"kind": "logistic_regression", "name": "lr"},
                                {"kind": "decision_tree", "name": "tree_d3", "max_depth": 3}]},
    "reference": "median+lr",
    "splits": {"n_splits": 3, "test_size": 0.3},
    "rank_by": METRICS,
    "fairness_metric": "equalized_odds_difference",
}

# What the rendered page holds, read in the browser after layout: figures with their titles, the extent of every
# mark and text against the figure's box, tables with their cells' text and computed background, and every
# attribute or style that could make the page fetch something.
_READ_PAGE = r"""(() => {
  const inside = (b, r) => b.left >= r.left - 0.5 && b.top >= r.top - 0.5 &&
                           b.right <= r.right + 0.5 && b.bottom <= r.bottom + 0.5;
  const svgs = [...document.querySelectorAll('svg')].map(s => {
    const r = s.getBoundingClientRect();
    return {cls: s.getAttribute('class'), data: {...s.dataset}, shown: [r.width, r.height],
            title: s.querySelector(':scope > title') ? s.querySelector(':scope > title').textContent : null,
            heading: s.querySelector(':scope > text') ? s.querySelector(':scope > text').textContent : null,
            candidates: [...s.querySelectorAll('circle[data-candidate]')].map(c => c.dataset.candidate),
            outside: [...s.querySelectorAll('text, circle, line, polyline, rect')]
                       .filter(el => !inside(el.getBoundingClientRect(), r)).map(el => el.outerHTML.slice(0, 160))};
  });
  const tables = [...document.querySelectorAll('table')].map(t => ({
    cls: t.className, data: {...t.dataset}, caption: t.caption ? t.caption.textContent : null,
    rows: [...t.rows].map(r => [...r.cells].map(c => ({text: c.innerText, bg: getComputedStyle(c).backgroundColor})))}));
  const fetching = [];
  for (const el of document.querySelectorAll('*')) {
    for (const a of el.attributes) {
      const n = a.name.toLowerCase();
      const res = ['src', 'srcset', 'data', 'poster', 'background', 'xlink:href'].includes(n) ||
                  (n === 'href' && el.tagName.toLowerCase() !== 'a') || (n === 'style' && /url\(|@import/i.test(a.value));
      if (res && !/^(#|data:)/i.test(a.value.trim())) fetching.push(`<${el.tagName.toLowerCase()} ${n}="${a.value}">`);
    }
  }
  for (const st of document.querySelectorAll('style'))
    if (/url\(|@import/i.test(st.textContent)) fetching.push('<style> with url() or @import');
  return JSON.stringify({title: document.title, svgs, tables, fetching,
                         scripts: document.querySelectorAll('script').length,
                         h2: [...document.querySelectorAll('h2')].map(h => h.textContent)});
})()"""


class _DevTools:
    """Headless Chromium with one page, driven over the DevTools protocol (a websocket): commands in order,
    the page's events kept."""

    def __init__(self, exe: str, profile: Path):
        from websockets.sync.client import connect

        self.proc = subprocess.Popen([exe, *CHROMIUM_FLAGS, "--window-size=1400,1000", f"--user-data-dir={profile}",
                                      "--remote-debugging-port=0", "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        active = profile / "DevToolsActivePort"
        t0 = time.time()
        while not (active.is_file() and len(active.read_text().split()) == 2):
            if self.proc.poll() is not None or time.time() - t0 > 60:
                self.close()
                raise AssertionError(f"Chromium did not open its DevTools port (exit {self.proc.returncode})")
            time.sleep(0.1)
        port = active.read_text().split()[0]
        import urllib.request

        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30) as r:
            page = next(t for t in json.load(r) if t["type"] == "page")
        self.ws = connect(page["webSocketDebuggerUrl"], max_size=None, open_timeout=30)
        self.events: list[dict] = []
        self._id = 0

    def send(self, method: str, **params) -> dict:
        self._id += 1
        self.ws.send(json.dumps({"id": self._id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv(timeout=60))
            if msg.get("id") == self._id:
                assert "error" not in msg, (method, msg["error"])
                return msg["result"]
            self.events.append(msg)

    def wait_for(self, method: str, timeout: float = 60) -> None:
        t0 = time.time()
        while not any(e.get("method") == method for e in self.events):
            assert time.time() - t0 < timeout, f"no {method} within {timeout} s"
            self.events.append(json.loads(self.ws.recv(timeout=timeout)))

    def close(self) -> None:
        if getattr(self, "ws", None) is not None:
            self.ws.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=30)


def _exception_text(details: dict) -> str:
    return f"{details.get('text', '')} {details.get('exception', {}).get('description', '')}".strip()


def _open_offline(exe: str, url: str, profile: Path) -> dict:
    """The page at ``url`` rendered with the network off: what :data:`_READ_PAGE` reads, every URL the page
    asked for, and its console errors and uncaught exceptions."""
    dt = _DevTools(exe, profile)
    try:
        for domain in ("Page", "Network", "Runtime", "Log"):
            dt.send(f"{domain}.enable")
        dt.send("Network.emulateNetworkConditions", offline=True, latency=0, downloadThroughput=-1,
                uploadThroughput=-1)
        dt.send("Page.navigate", url=url)
        dt.wait_for("Page.loadEventFired")
        page = json.loads(dt.send("Runtime.evaluate", expression=_READ_PAGE, returnByValue=True)["result"]["value"])
        ev = dt.events
        page["requests"] = [e["params"]["request"]["url"] for e in ev if e.get("method") == "Network.requestWillBeSent"]
        page["errors"] = ([_exception_text(e["params"]["exceptionDetails"]) for e in ev
                           if e.get("method") == "Runtime.exceptionThrown"]
                          + [str(e["params"]["args"]) for e in ev if e.get("method") == "Runtime.consoleAPICalled"
                             and e["params"]["type"] in ("error", "assert")]
                          + [e["params"]["entry"]["text"] for e in ev if e.get("method") == "Log.entryAdded"
                             and e["params"]["entry"]["level"] == "error"])
        return page
    finally:
        dt.close()


@pytest.fixture(scope="module")
def leaderboard(tmp_path_factory) -> tuple[Path, dict]:
    """The suite run by ``fairmiss bench`` in a scratch project: its leaderboard page and JSON."""
    proj = make_project(tmp_path_factory.mktemp("leaderboard"))
    (proj / "browser_check.yaml").write_text(yaml.safe_dump(SUITE, sort_keys=False))
    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "FAIRMISS_RAW_DIR")}
    env.update(FAIRMISS_DATA_MIRROR=str(mirror_dir()), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    r = subprocess.run([sys.executable, "-m", "flows.cli", "bench", "browser_check.yaml", "--results-dir", "out"],
                       cwd=proj, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"{r.stdout[-3000:]}\n{r.stderr[-5000:]}"
    out = proj / "out" / "bench" / "browser_check"
    return out / "leaderboard.html", json.loads((out / "leaderboard.json").read_text())


def test_harness_sees_requests_and_console_errors(tmp_path):
    """The checks below can fail: a page with an external image and a failing script is caught on both."""
    page = tmp_path / "external.html"
    page.write_text("<!doctype html><html><body><img src='https://example.org/logo.png'>"
                    "<script>console.error('broken'); undefinedFunction();</script></body></html>")
    seen = _open_offline(_chromium(), page.as_uri(), tmp_path / "profile")
    assert "https://example.org/logo.png" in seen["requests"], seen["requests"]
    assert seen["fetching"] == ["<img src=\"https://example.org/logo.png\">"]
    assert any("broken" in e for e in seen["errors"]) and any("undefinedFunction" in e for e in seen["errors"]), \
        seen["errors"]


def test_leaderboard_page_in_chromium(leaderboard, tmp_path):
    import numpy as np
    from matplotlib.image import imread

    path, doc = leaderboard
    assert doc["candidates"] == CANDIDATES and doc["n_failed"] == 0
    exe = _chromium()
    url = path.as_uri()
    page = _open_offline(exe, url, tmp_path / "profile")

    # self-contained: it asks for nothing but itself, nothing in it would fetch, no script, no console error
    assert page["requests"] == [url], page["requests"]
    assert page["fetching"] == [] and page["scripts"] == 0 and page["errors"] == [], page
    assert page["title"] == "Leaderboard: browser_check"

    blocks = [(DATASET, s) for s in SCENARIOS]
    svgs, tables = page["svgs"], page["tables"]
    # every figure is drawn at a real size, titled alike for the reader (heading) and assistive tools (<title>),
    # and nothing in it (text, point, interval) falls outside it
    for s in svgs:
        assert s["shown"][0] > 100 and s["shown"][1] > 100, s
        assert s["title"] and s["heading"] == s["title"], s
        assert s["outside"] == [], (s["title"], s["outside"])
    for metric, direction in METRICS.items():
        # the heat map: a column per dataset · scenario, a row per candidate, coloured where marked *
        (heat,) = [t for t in tables if t["cls"] == "heat" and t["data"]["metric"] == metric]
        assert metric in heat["caption"] and doc["reference"] in heat["caption"]
        head, *rows = heat["rows"]
        assert sorted(c["text"].replace("\n", " ") for c in head[1:]) == sorted(f"{d} {s}" for d, s in blocks)
        assert [r[0]["text"] for r in rows] == CANDIDATES
        white = "rgb(255, 255, 255)"
        for r in rows:
            for c in r[1:]:
                assert c["text"] and c["text"] != "–", (metric, r[0]["text"])
                assert (c["bg"] != white) == ("*" in c["text"]), (metric, r[0]["text"], c)
        # the rank plot: titled with the metric, every candidate plotted
        (ranks,) = [s for s in svgs if s["cls"] == "ranks" and s["data"]["metric"] == metric]
        assert metric in ranks["title"] and "All datasets × scenarios" in ranks["title"]
        assert sorted(ranks["candidates"]) == sorted(CANDIDATES)
        # the overall ranks and one table per dataset × scenario, each with every candidate
        (overall,) = [t for t in tables if t["cls"] == "overall" and t["data"]["metric"] == metric]
        assert sorted(r[0]["text"] for r in overall["rows"][1:]) == sorted(CANDIDATES)
        for d, s in blocks:
            (block,) = [t for t in tables if t["cls"] == "block" and t["data"] == {"dataset": d, "scenario": s,
                                                                                   "metric": metric}]
            assert block["caption"].startswith(f"{d} · {s} · {metric}"), block["caption"]
            assert sorted(r[0]["text"].removeprefix("≈ ") for r in block["rows"][1:]) == sorted(CANDIDATES)
    # one front per dataset × scenario, titled with both, and with both metrics; every candidate plotted
    fronts = [s for s in svgs if s["cls"] == "front"]
    assert sorted((f["data"]["dataset"], f["data"]["scenario"]) for f in fronts) == sorted(blocks)
    for f in fronts:
        d, s = f["data"]["dataset"], f["data"]["scenario"]
        assert f["title"] == f"{d} · {s}: accuracy against equalized_odds_difference", f["title"]
        assert sorted(f["candidates"]) == sorted(CANDIDATES)
    assert len(svgs) == len(fronts) + len(METRICS)  # no figure beyond those

    # a screenshot as the command line takes it: a real PNG of the window's size, not one flat colour
    shot = tmp_path / "leaderboard.png"
    r = subprocess.run([exe, *CHROMIUM_FLAGS, "--window-size=1400,1000", f"--user-data-dir={tmp_path / 'shot'}",
                        f"--screenshot={shot}", url], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and shot.is_file(), r.stderr[-2000:]
    img = imread(shot)
    assert img.shape[:2] == (1000, 1400)
    assert len(np.unique(img[..., :3].reshape(-1, 3), axis=0)) > 10 and float(np.std(img[..., :3])) > 0.02
