"""Open the report in Debian's headless Chromium: plots must render and leaderboard rows be there."""

import re
import subprocess
from pathlib import Path

import pytest

from parallelbench.analysis.report import build_report
from parallelbench.analysis.synthetic import synthetic_frame

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--virtual-time-budget=5000",
]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's headless chromium at /usr/bin/chromium (apt-get install chromium)"),
]


def _chromium(profile: Path, *args: str) -> subprocess.CompletedProcess:
    command = [str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("browser-report")
    return build_report(synthetic_frame(samples=4), out, source="synthetic frame (browser test)", static_figures=False)


def test_plots_render_and_leaderboard_rows_are_there(report, tmp_path):
    result = _chromium(tmp_path / "profile", "--dump-dom", report.as_uri())
    dom = result.stdout
    assert result.returncode == 0 and "<html" in dom, result.stderr[-2000:]
    plot_ids = re.findall(r'<div id="((?:tradeoff|tasks|taskmap)[^"]*)" class="plotly-graph-div', report.read_text(encoding="utf-8"))
    assert len(plot_ids) == 3  # trade-off, per-task panels, task map
    for plot_id in plot_ids:
        filled = re.search(rf'<div id="{re.escape(plot_id)}"[^>]*class="[^"]*js-plotly-plot[^"]*"', dom)
        assert filled, f"plot {plot_id} was not drawn by plotly.js"
    assert dom.count('class="main-svg"') >= 2 * len(plot_ids)
    assert dom.count('class="lb-row"') == 8
    assert "confidence-threshold" in dom
    # rendered SVG axis titles and legend entries
    assert "tokens per step (tokens / forward pass)" in dom and "accuracy (%)" in dom
    assert dom.count('class="legend"') >= len(plot_ids)


def test_screenshot_is_kept(report, tmp_path):
    shot = tmp_path / "report-screenshot.png"
    result = _chromium(tmp_path / "profile", f"--screenshot={shot}", "--window-size=1400,3000", report.as_uri())
    assert shot.exists(), result.stderr[-2000:]
    from matplotlib.image import imread

    pixels = imread(shot)
    assert pixels.shape[:2] == (3000, 1400)
    assert pixels.std() > 0.05  # not a blank page


MEASURE = """<script>window.addEventListener('load', function () {
  var out = [];
  document.querySelectorAll('table.aup, table.leaderboard').forEach(function (t) {
    var r = t.getBoundingClientRect();
    out.push([t.className, t.scrollWidth, t.clientWidth, Math.round(r.right)].join(':'));
  });
  var pre = document.createElement('pre'); pre.id = 'measured'; pre.textContent = out.join(' ');
  document.body.appendChild(pre);
});</script>"""


def test_aup_table_fits_a_1400_px_page_with_12_tasks_and_16_strategies(tmp_path):
    """Tasks as rows and numbered strategies as columns, with intervals: no horizontal scrolling at 1400 px."""
    import pandas as pd

    parts = []
    for model in ("synthetic-dllm", "py:a_rather_long_module_name.factories:build_the_model"):
        base = synthetic_frame(samples=3, model=model)
        parts += [base.assign(task=base["task"] + f"_{i}") for i in range(3)]
    page = build_report(pd.concat(parts, ignore_index=True), tmp_path / "out", static_figures=False)
    html = page.read_text(encoding="utf-8")
    assert html.count('class="lb-row"') == 16 and "PB rule: site" in html
    measured = page.with_name("measured.html")
    measured.write_text(html.replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    result = _chromium(tmp_path / "profile", "--window-size=1400,3000", "--dump-dom", measured.as_uri())
    found = re.search(r'<pre id="measured">([^<]*)</pre>', result.stdout)
    assert found, result.stderr[-2000:]
    tables = [item.split(":") for item in found.group(1).split()]
    aup = [t for t in tables if t[0] == "aup"]
    assert len(aup) == 2  # 16 strategies, 8 per table
    for _, scroll, client, right in aup:
        assert int(scroll) <= int(client) and int(right) <= 1400, tables
