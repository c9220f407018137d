"""Readable plots: log2 tokens-per-step axes, error bars from interval columns, task-map
labels that overlap nothing and stay inside the canvas (interactive and static)."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from parallelbench.analysis import figures, plots
from parallelbench.analysis.curves import curves
from parallelbench.analysis.labels import Box, box_at, label_boxes, place_labels, text_size
from parallelbench.analysis.oracle import oracle_points
from parallelbench.analysis.synthetic import synthetic_frame

# Ten tasks, six of them on one spot: the pile-up the old labels smeared.
CROWDED = pd.DataFrame(
    dict(
        task=[
            "waiting_line/copy", "waiting_line/reverse", "waiting_line/replace_index", "waiting_line/insert_index",
            "waiting_line/remove_index", "puzzle/latin_square", "waiting_line/sort", "waiting_line/shuffle",
            "puzzle/sudoku", "synthetic/copy",
        ],
        category=["waiting_line"] * 5 + ["puzzle", "waiting_line", "waiting_line", "puzzle", "synthetic"],
        parallelizability=[1.0, 1.0, 1.01, 1.0, 1.02, 1.0, 1.3, 2.5, 3.9, 4.0],
        order_slope=[0.0, 0.1, 0.0, 0.05, 0.0, 0.0, -3.0, 8.0, 1.0, 0.0],
        accuracy=[100, 99, 98, 97, 96, 0, 80, 50, 45, 100.0],
        x_groups=1,
        y_groups=1,
    )
)


def _with_intervals(points: pd.DataFrame) -> pd.DataFrame:
    half = 10.0
    return points.assign(ci_low=(points["accuracy"] - half).clip(lower=0), ci_high=(points["accuracy"] + half).clip(upper=100))


@pytest.fixture(scope="module")
def frame():
    return synthetic_frame(samples=4)


def test_tradeoff_and_panels_use_a_log2_axis_with_power_of_two_ticks(frame):
    per_task, averaged = curves(frame)
    _, oracle = oracle_points(frame)
    model = averaged["model"].iloc[0]
    for fig in (plots.tradeoff_plot(averaged, oracle, model), plots.task_panels_plot(per_task, model)):
        spec = json.loads(fig.to_json())
        layout = spec["layout"]
        used = {"xaxis" + t.get("xaxis", "x")[1:] for t in spec["data"] if t.get("x") is not None}
        xaxes = [layout[k] for k in used]
        assert xaxes and all(a["type"] == "log" for a in xaxes)
        for axis in xaxes:
            ticks = axis["tickvals"]
            assert ticks[0] <= 1.0 and all(math.log2(t) == int(math.log2(t)) for t in ticks)
            lo, hi = 10 ** axis["range"][0], 10 ** axis["range"][1]
            assert lo <= averaged["tps"].min() and hi >= averaged["tps"].max()  # nothing clipped
    linear = plots.tradeoff_plot(averaged, oracle, model, x_scale="linear")
    assert json.loads(linear.to_json())["layout"]["xaxis"]["type"] == "linear"
    with pytest.raises(ValueError, match="log2"):
        plots.tps_axis([1, 2], "log10")


def test_error_bars_come_from_interval_columns_and_only_then(frame):
    per_task, averaged = curves(frame)
    _, oracle = oracle_points(frame)
    model = averaged["model"].iloc[0]
    bare = averaged.drop(columns=["ci_low", "ci_high"], errors="ignore")  # curves() now always adds them
    plain = json.loads(plots.tradeoff_plot(bare, oracle.drop(columns=["ci_low", "ci_high"], errors="ignore"), model).to_json())["data"]
    assert all("error_y" not in t or not t["error_y"].get("array") for t in plain)
    boxed = _with_intervals(averaged)
    drawn = json.loads(plots.tradeoff_plot(boxed, oracle, model).to_json())["data"]
    curves_drawn = [t for t in drawn if t["marker"].get("symbol") != "star"]
    for trace in curves_drawn:
        ys = np.asarray(trace["y"], dtype=float) if not isinstance(trace["y"], dict) else None
        err = trace["error_y"]
        assert err["symmetric"] is False
        up, down = np.asarray(err["array"], dtype=float), np.asarray(err["arrayminus"], dtype=float)
        if ys is not None:
            assert np.allclose(ys + up, np.minimum(ys + 10, 100)) and np.allclose(ys - down, np.maximum(ys - 10, 0))
    panels = json.loads(plots.task_panels_plot(_with_intervals(per_task), model).to_json())["data"]
    assert all(t["error_y"]["array"] for t in panels)
    # static figures draw the same bars
    fig = figures.tradeoff_figure(boxed, oracle, model)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and [t for t in ax.get_xticks() if t >= 1][:3] == [1, 2, 4]
    assert any(len(c.get_segments()) for c in ax.collections)  # error-bar line collections
    import matplotlib.pyplot as plt

    plt.close(fig)


def _annotation_boxes(fig):
    """Label boxes of the task map as the browser lays them out: data -> pixels on the fixed
    canvas, plus each annotation's pixel offset, sized by the shared text estimate."""
    spec = json.loads(fig.to_json())
    layout = spec["layout"]
    width, height, m = layout["width"], layout["height"], layout["margin"]
    x0, x1 = layout["xaxis"]["range"]
    y0, y1 = layout["yaxis"]["range"]
    area = Box(m["l"], m["t"], width - m["r"], height - m["b"])
    boxes, markers = [], []
    for note in layout["annotations"]:
        px = area.x0 + (note["x"] - x0) / (x1 - x0) * (area.x1 - area.x0)
        py = area.y0 + (y1 - note["y"]) / (y1 - y0) * (area.y1 - area.y0)
        assert note["showarrow"] and note["axref"] == "pixel"  # a leader line to the point
        boxes.append(box_at(px + note["ax"], py + note["ay"], text_size(note["text"].replace("<br>", "\n"), note["font"]["size"])))
        markers.append(Box(px - 6, py - 6, px + 6, py + 6))
    return boxes, markers, area


def test_taskmap_labels_never_overlap_and_stay_inside(frame):
    fig = plots.taskmap_plot(CROWDED)
    spec = json.loads(fig.to_json())
    assert spec["layout"]["xaxis"]["range"][0] > spec["layout"]["xaxis"]["range"][1]  # reversed: harder on the right
    boxes, markers, area = _annotation_boxes(fig)
    # the six tasks on one spot share one label; every task is named in exactly one label
    labels = [note["text"].replace("<br>", " ") for note in spec["layout"]["annotations"]]
    assert len(boxes) == len(CROWDED) - 5
    for task in CROWDED["task"]:
        assert sum(task in label.replace(",", " ").split() for label in labels) == 1, task
    shared = [label for label in labels if "waiting_line/copy" in label][0]
    assert all(t in shared for t in CROWDED["task"][:6]) and "waiting_line/sort" not in shared
    for i, a in enumerate(boxes):
        assert a.inside(area), f"label {i} clipped"
        for b in boxes[i + 1:]:
            assert not a.overlaps(b)
        assert not any(a.overlaps(mk) for mk in markers)
    # accuracy level is the marker colour, on a fixed 0-100 scale with a colour bar
    colours = [c for t in spec["data"] if t.get("showlegend") is False for c in t["marker"]["color"]]
    assert sorted(colours) == sorted(CROWDED["accuracy"].tolist())
    assert any(t["marker"].get("showscale") for t in spec["data"])
    assert plots.taskmap_plot(CROWDED.assign(order_slope=np.nan)) is None


def test_static_taskmap_labels_never_overlap_measured_by_matplotlib():
    import matplotlib.pyplot as plt

    fig = figures.taskmap_figure(CROWDED)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    names = set(CROWDED["task"])
    texts = [a for a in ax.texts if any(n in a.get_text() for n in names)]
    assert len(texts) == len(CROWDED) - 5  # six tasks on one spot, one label
    for task in names:
        assert sum(task in t.get_text().replace(",", " ").split() for t in texts) == 1, task
    from matplotlib.text import Text

    extents = [Text.get_window_extent(t, renderer) for t in texts]  # the text alone, not its leader line
    inner = ax.get_window_extent(renderer)
    for i, a in enumerate(extents):
        assert inner.x0 <= a.x0 and a.x1 <= inner.x1 and inner.y0 <= a.y0 and a.y1 <= inner.y1, texts[i].get_text()
        for b in extents[i + 1:]:
            assert not a.overlaps(b)
    # the definition is printed under the plot, inside the figure
    notes = [t for t in fig.texts if "centre of mass" in t.get_text()]
    assert notes and all(fig.bbox.contains(*t.get_window_extent(renderer).p0) for t in notes)
    plt.close(fig)


def test_place_labels_on_a_single_spot():
    points = [(100.0, 100.0)] * 8
    texts = [f"task number {i}" for i in range(8)]
    area = Box(0, 0, 400, 300)
    offsets = place_labels(points, texts, area)
    boxes = label_boxes(points, offsets, texts)
    assert all(b.inside(area) for b in boxes)
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])


def test_static_figures_label_every_adaptive_point_with_its_parameter(frame, tmp_path):
    import matplotlib.pyplot as plt

    per_task, averaged = curves(frame)
    _, oracle = oracle_points(frame)
    model = averaged["model"].iloc[0]
    fig = figures.tradeoff_figure(averaged, oracle, model)
    texts = [t.get_text() for t in fig.axes[0].texts]
    thresholds = ["0.5", "0.6", "0.7", "0.8", "0.9", "1.0"]
    assert sorted(t for t in texts if t in thresholds) == thresholds  # one label per threshold point
    assert not any(t.startswith("k=") or t in {"1", "2", "4", "8"} for t in texts)  # top-k points: x is k
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "confidence-threshold (points: threshold)" in legend
    paths = figures.save(fig, tmp_path, "tradeoff")
    svg = paths[1].read_text(encoding="utf-8")
    assert all(f">{t}<" in svg for t in thresholds)  # the SVG keeps the labels as text
    panels = figures.task_panels_figure(per_task, model)
    for ax in panels.axes[: per_task["task"].nunique()]:
        assert sorted(t.get_text() for t in ax.texts if t.get_text() in thresholds) == thresholds
    plt.close(panels)


def test_interactive_figures_label_adaptive_points_as_the_static_ones(frame):
    """Issue 34 item 6: the Plotly trade-off and per-task figures write each adaptive point's
    parameter beside it (threshold=0.9 -> 0.9), top-k points none, legends as the static ones."""
    per_task, averaged = curves(frame)
    _, oracle = oracle_points(frame)
    model = averaged["model"].iloc[0]
    thresholds = ["0.5", "0.6", "0.7", "0.8", "0.9", "1.0"]
    for fig in (plots.tradeoff_plot(averaged, oracle, model), plots.task_panels_plot(per_task, model)):
        spec = json.loads(fig.to_json())
        labelled = [t for t in spec["data"] if "text" in (t.get("mode") or "")]
        assert labelled and all(t["name"] == "confidence-threshold (points: threshold)" for t in labelled)
        for trace in labelled:
            assert sorted(trace["text"]) == thresholds  # one label per point, the static figures' text
            assert all("threshold" in h for h in trace["customdata"])  # hover keeps the configuration
        topk = [t for t in spec["data"] if t.get("name", "").startswith(("random", "confidence-topk"))]
        assert topk and not any("text" in (t.get("mode") or "") for t in topk)
