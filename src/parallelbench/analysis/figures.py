"""Static figures for papers (matplotlib, PNG and SVG): trade-off, per-task panels, task map, repair.

Every axis names its quantity and unit and every plot with more than one series has a
legend, so figures can be dropped into a paper as they are. Tokens per step is drawn on a
log2 axis by default (ticks 1, 2, 4, 8 ..., the paper's k grid; `x_scale="linear"` for the
old look), accuracy points carry their 95% interval as error bars when the frame has
`ci_low` / `ci_high` columns, and task-map labels sit on leader lines where they overlap
nothing.
"""

from __future__ import annotations

import hashlib
import math
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from parallelbench.analysis.curves import ACCURACY_AXIS, TPS_AXIS
from parallelbench.analysis.labels import Box, coincident_groups, joined_label, place_labels
from parallelbench.analysis.taskmap import ACCURACY_LEVEL, DEFINITION, X_AXIS, Y_AXIS
from parallelbench.display import display_name

PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]


def colours(labels) -> dict[str, str]:
    """Stable colour per curve label (sorted order), shared by static and interactive plots."""
    return {label: PALETTE[i % len(PALETTE)] for i, label in enumerate(sorted(set(labels)))}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # a strategy or task name in a script the font lacks draws as boxes; no warning per glyph
    warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from", category=UserWarning)
    return plt


def _label(value, limit: int = 40) -> str:
    """A user-given name as matplotlib text: cleaned, cut, "$" kept literal (not mathtext)."""
    return display_name(value, limit).replace("$", r"\$")


def _marker(kind: str) -> str:
    return {"topk": "o", "adaptive": "s", "oracle": "*"}.get(kind, "o")


def _positive(values) -> np.ndarray:
    v = np.asarray(pd.to_numeric(pd.Series(list(values), dtype=object), errors="coerce"), dtype=float)
    return v[np.isfinite(v) & (v > 0)]


def log2_limits(values) -> tuple[float, float]:
    """Axis limits for tokens per step on a log2 axis: the data's range padded by a fifth of
    a doubling on each side, never tighter than [1, 2] (a single k = 1 point still reads)."""
    v = _positive(values)
    lo, hi = (float(v.min()), float(v.max())) if len(v) else (1.0, 2.0)
    lo, hi = min(lo, 1.0) if lo >= 1.0 else lo, max(hi, 2.0)
    return lo / 2**0.2, hi * 2**0.2


def log2_ticks(values) -> list[float]:
    """Powers of two spanning the data (1, 2, 4, 8 ...; halves below 1 when a point is)."""
    lo, hi = log2_limits(values)
    return [2.0**e for e in range(math.ceil(math.log2(lo)), math.floor(math.log2(hi)) + 1)]


def tick_text(value: float) -> str:
    return f"{value:g}"


def _tps_axis(ax, values, x_scale: str, fontsize: float | None = None) -> None:
    """Tokens per step on log2 (default, ticks at powers of two) or linear scale."""
    if x_scale == "linear":
        return
    if x_scale != "log2":
        raise ValueError(f"x scale must be 'log2' or 'linear', not {x_scale!r}")
    from matplotlib.ticker import FixedLocator, NullLocator

    ax.set_xscale("log", base=2)
    ax.set_xlim(*log2_limits(values))
    ticks = log2_ticks(values)
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([tick_text(t) for t in ticks], fontsize=fontsize)


def _yerr(group: pd.DataFrame):
    """[below, above] distances of the 95% interval from each point; None without ci columns."""
    if not {"ci_low", "ci_high"} <= set(group.columns):
        return None
    acc = group["accuracy"].to_numpy(dtype=float)
    low = pd.to_numeric(group["ci_low"], errors="coerce").to_numpy(dtype=float)
    high = pd.to_numeric(group["ci_high"], errors="coerce").to_numpy(dtype=float)
    if not (np.isfinite(low).any() or np.isfinite(high).any()):
        return None
    below = np.nan_to_num(np.clip(acc - low, 0, None))
    above = np.nan_to_num(np.clip(high - acc, 0, None))
    return np.vstack([below, above])


def tradeoff_figure(averaged: pd.DataFrame, oracle: pd.DataFrame, model: str, x_scale: str = "log2"):
    """Task-averaged accuracy against tokens per step for one model, oracle as stars (figure 7)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    points = averaged[averaged["model"] == model]
    palette = colours(points["curve"])
    for curve, group in points.groupby("curve", sort=True):
        group = group.sort_values("tps")
        kind = str(group["strategy_kind"].iloc[0])
        ax.errorbar(
            group["tps"], group["accuracy"], yerr=_yerr(group), marker=_marker(kind), color=palette[curve],
            label=curve_legend(curve, group), capsize=2, elinewidth=0.8,
        )
    stars = oracle[oracle["model"] == model] if len(oracle) else oracle
    for _, row in stars.iterrows():
        ax.plot([row["tps"]], [row["accuracy"]], marker="*", markersize=16, linestyle="none", color="gold", markeredgecolor="black", label=_label(row["curve"]))
    _tps_axis(ax, list(points["tps"]) + list(stars["tps"] if len(stars) else []), x_scale)
    ax.set_xlabel(TPS_AXIS + (", log2 scale" if x_scale == "log2" else ""))
    ax.set_ylabel(ACCURACY_AXIS)
    ax.set_title(f"Speed-quality trade-off, {_label(model)} (task-averaged)")
    ax.set_ylim(-4, 104)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    label_curve_points(fig, ax, points)
    return fig


def curve_legend(curve: str, group: pd.DataFrame) -> str:
    """A curve's legend entry; adaptive curves name the parameter their point labels give
    (static and interactive figures alike)."""
    label = _label(curve)
    if "knob" not in group or str(group["strategy_kind"].iloc[0]) == "topk":
        return label
    keys = sorted({knob.split("=", 1)[0] for knob in group["knob"].astype(str) if knob and "," not in knob})
    return f"{label} (points: {', '.join(keys)})" if keys else label


def task_panels_figure(per_task: pd.DataFrame, model: str, x_scale: str = "log2"):
    """One panel per task, accuracy against tokens per step per curve (paper figure 4)."""
    plt = _pyplot()
    points = per_task[per_task["model"] == model]
    tasks = sorted(points["task"].unique())
    cols = min(5, max(1, len(tasks)))
    rows = max(1, math.ceil(len(tasks) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(3.0 * cols, 2.6 * rows + 0.8), squeeze=False)
    palette = colours(points["curve"])
    handles = {}
    legends: dict[str, str] = {}
    for ax, task in zip(axes.flat, tasks):
        for curve, group in points[points["task"] == task].groupby("curve", sort=True):
            group = group.sort_values("tps")
            kind = str(group["strategy_kind"].iloc[0])
            drawn = ax.errorbar(
                group["tps"], group["accuracy"], yerr=_yerr(group), marker=_marker(kind), markersize=4,
                color=palette[curve], label=curve_legend(curve, group), capsize=1.5, elinewidth=0.7,
            )
            legends[curve] = curve_legend(curve, group)
            handles[curve] = drawn.lines[0]
        ax.set_title(_label(task), fontsize=9)
        _tps_axis(ax, points["tps"], x_scale, fontsize=7)
        ax.set_xlabel("tokens per step" + (" (log2)" if x_scale == "log2" else ""), fontsize=7)
        ax.set_ylabel(ACCURACY_AXIS, fontsize=7)
        ax.set_ylim(-4, 104)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(tasks):]:
        ax.axis("off")
    if handles:
        fig.legend(list(handles.values()), [legends[c] for c in handles], loc="lower center", ncol=min(5, len(handles)), fontsize=7)
    fig.suptitle(f"Accuracy per task, {_label(model)}", fontsize=11)
    fig.tight_layout(rect=(0, 0.08 if handles else 0, 1, 0.96))
    for ax, task in zip(axes.flat, tasks):
        label_curve_points(fig, ax, points[points["task"] == task], fontsize=5.0)
    return fig


#: Task-map marker shape (an index into each figure's list of shapes) of the built-in families,
#: the same in every report; other categories take the next free shapes in sorted order.
CATEGORY_SHAPES = {"waiting_line": 0, "text_writing": 1, "puzzle": 2, "synthetic": 3, "structured": 4}


def category_shapes(categories) -> dict[str, int]:
    """Category -> shape index: the built-in families' fixed ones, then the rest in sorted order."""
    out = {c: CATEGORY_SHAPES[c] for c in categories if c in CATEGORY_SHAPES}
    rest = sorted(set(categories) - set(out))
    out.update({c: len(CATEGORY_SHAPES) + i for i, c in enumerate(rest)})
    return out


def taskmap_figure(tmap: pd.DataFrame):
    """Tasks by parallelizability (reversed x, right = harder) and order preference, coloured
    by accuracy level, each label on a leader line where it overlaps no other label or
    marker; the definition is printed under the plot."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.6, 6.4))
    fig.subplots_adjust(left=0.12, right=0.86, top=0.92, bottom=0.27)
    shown = tmap.dropna(subset=["parallelizability", "order_slope"]).reset_index(drop=True)
    categories = shown["category"].astype(str) if "category" in shown else pd.Series("", index=shown.index)
    level = shown["accuracy"].astype(float) if "accuracy" in shown else pd.Series(np.nan, index=shown.index)
    markers = ["o", "s", "D", "^", "P", "X", "p", "v"]
    shapes = category_shapes(categories.unique())
    scatter = None
    for j, category in enumerate(sorted(categories.unique())):
        mask = categories == category
        scatter = ax.scatter(
            shown.loc[mask, "parallelizability"], shown.loc[mask, "order_slope"], c=level[mask].fillna(-1), cmap="viridis",
            vmin=0, vmax=100, marker=markers[shapes[category] % len(markers)], s=55, edgecolors="#333", linewidths=0.6,
            label=_label(category) if category else "tasks", zorder=3,
        )
    ax.axhline(0.0, color="grey", linewidth=0.8)
    x = shown["parallelizability"].to_numpy(dtype=float)
    y = shown["order_slope"].to_numpy(dtype=float)

    def padded(v, pad):
        lo, hi = float(v.min()), float(v.max())
        span = hi - lo if hi > lo else max(abs(hi), 1.0)
        return lo - pad * span, hi + pad * span

    ax.set_xlim(*reversed(padded(x, 0.08)))  # reversed: harder-to-parallelize tasks on the right
    ax.set_ylim(*padded(y, 0.12))
    ax.set_xlabel(X_AXIS, fontsize=8)
    ax.set_ylabel(Y_AXIS, fontsize=8)
    ax.set_title("Task map")
    ax.grid(alpha=0.3)
    if scatter is not None:
        bar = fig.colorbar(scatter, ax=ax, fraction=0.05, pad=0.02)
        bar.set_label(ACCURACY_LEVEL, fontsize=7)
        bar.ax.tick_params(labelsize=7)
        legend = ax.legend(fontsize=7, title="category (marker shape)", title_fontsize=7, loc="upper left", bbox_to_anchor=(0.0, -0.13), ncol=4, frameon=False)
        for handle in getattr(legend, "legend_handles", None) or getattr(legend, "legendHandles", []):
            if hasattr(handle, "set_array"):
                handle.set_array(None)  # colour is accuracy, not category: grey in the legend
            handle.set_facecolor("#bbbbbb")
    label_taskmap(fig, ax, shown["task"], x, y)
    fig.text(0.02, 0.015, "\n".join(_wrap(DEFINITION, 130)), fontsize=6.5, color="#333", va="bottom", ha="left")
    return fig


REPAIR_X = "accuracy when the last original mask was filled (%)"
REPAIR_Y = "final accuracy (%)"


def repair_figure(table: pd.DataFrame, model: str):
    """Unmask vs final accuracy of one model's editing strategy configs, one point per task, 95%
    intervals both ways; points above the diagonal were repaired more than broken. The legend
    sits under the axes with every config whole; tasks on one spot share one label."""
    plt = _pyplot()
    rows = table[table["model"] == model]
    configs = sorted(rows["config"].unique())
    fig, ax = plt.subplots(figsize=(6.4, 6.0 + 0.22 * len(configs)))
    palette = colours(rows["config"])
    ax.plot([0, 100], [0, 100], linestyle="--", color="#999", linewidth=0.9, label="no net repair (final = unmask)")
    for config in configs:
        group = rows[rows["config"] == config]
        x, y = 100 * group["unmask"].to_numpy(float), 100 * group["final"].to_numpy(float)
        xerr = np.vstack([np.nan_to_num(np.clip(x - 100 * group["unmask_low"].to_numpy(float), 0, None)),
                          np.nan_to_num(np.clip(100 * group["unmask_high"].to_numpy(float) - x, 0, None))])
        yerr = np.vstack([np.nan_to_num(np.clip(y - 100 * group["final_low"].to_numpy(float), 0, None)),
                          np.nan_to_num(np.clip(100 * group["final_high"].to_numpy(float) - y, 0, None))])
        ax.errorbar(x, y, xerr=xerr, yerr=yerr, marker="o", linestyle="none", color=palette[config],
                    label=_label(config, 120), capsize=2, elinewidth=0.7)
    ax.set_xlim(-4, 104)
    ax.set_ylim(-4, 104)
    ax.set_aspect("equal")
    ax.set_xlabel(REPAIR_X)
    ax.set_ylabel(REPAIR_Y)
    ax.set_title(f"Does editing repair? {_label(model)} (one point per task)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12), frameon=False)
    fig.tight_layout()
    points = rows[np.isfinite(rows["unmask"].to_numpy(float)) & np.isfinite(rows["final"].to_numpy(float))]
    if len(points):
        x, y = 100 * points["unmask"].to_numpy(float), 100 * points["final"].to_numpy(float)
        pts, _ = _display_points(fig, ax, x, y)
        groups = coincident_groups(pts, COINCIDENT_PT)
        names = [display_name(t, 24) for t in points["task"]]
        texts = [joined_label(list(dict.fromkeys(names[i] for i in g))) for g in groups]
        anchors = [g[0] for g in groups]
        annotate_points(fig, ax, x[anchors], y[anchors], texts, fontsize=6.0, marker=3.5, gap=0.8)
    return fig


def _wrap(text: str, width: int) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width)


TASKMAP_LABEL_PT = 7.0
#: Task-map points closer than this (points, 1/72 inch) are one spot and share one label.
COINCIDENT_PT = 3.0


def _display_points(fig, ax, x, y) -> tuple[list[tuple[float, float]], Box]:
    """Data coordinates -> (points with y growing downwards, the axes' box), as labels.py works.
    Needs the final layout (after `tight_layout`); no full draw is made (a draw per panel is slow)."""
    ax.get_xlim(), ax.get_ylim()  # settle lazy autoscaling before reading the transform
    scale = 72.0 / fig.dpi  # pixels -> points
    bbox = ax.get_window_extent()
    height = fig.bbox.height
    pts = [(px * scale, (height - py) * scale) for px, py in ax.transData.transform(np.column_stack([x, y]))] if len(x) else []
    area = Box(bbox.x0 * scale + 2, (height - bbox.y1) * scale + 2, bbox.x1 * scale - 2, (height - bbox.y0) * scale - 2)
    return pts, area


def annotate_points(fig, ax, x, y, texts, *, fontsize: float, marker: float = 5.0, gap: float = 1.5,
                    avoid: list[tuple[float, float]] | None = None) -> list:
    """Write `texts[i]` next to point (x[i], y[i]) on a short leader line, each at the nearest
    spot where it overlaps no other label and no marker (`avoid`: more data points to keep
    clear of) and stays inside the axes. Texts may hold several lines ("\n")."""
    pts, area = _display_points(fig, ax, x, y)
    others, _ = _display_points(fig, ax, *zip(*avoid)) if avoid else ([], area)
    offsets = place_labels(pts, list(texts), area, font_size=fontsize, marker=marker, gap=gap, obstacles=others)
    out = []
    for xi, yi, text, (dx, dy) in zip(x, y, texts, offsets):
        out.append(
            ax.annotate(
                text.replace("$", r"\$"), (xi, yi), xytext=(dx, -dy), textcoords="offset points", fontsize=fontsize,
                ha="center", va="center", arrowprops=dict(arrowstyle="-", color="#888", linewidth=0.6, shrinkA=0, shrinkB=4),
                bbox=dict(boxstyle="square,pad=0.1", fc="white", ec="none", alpha=0.8), zorder=4,
            )
        )
    return out


def label_taskmap(fig, ax, tasks, x, y) -> list:
    """Annotate the task map: one label per spot (tasks on one spot share it, their names
    joined over a few lines), on a leader line, overlapping no other label and staying in the axes."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    fig.canvas.draw()  # the colour bar and legend settle the axes box
    pts, _ = _display_points(fig, ax, x, y)
    groups = coincident_groups(pts, COINCIDENT_PT)
    names = [display_name(t, 30) for t in tasks]
    anchors = [g[0] for g in groups]
    texts = [joined_label([names[i] for i in g]) for g in groups]
    return annotate_points(fig, ax, x[anchors], y[anchors], texts, fontsize=TASKMAP_LABEL_PT)


def label_curve_points(fig, ax, points: pd.DataFrame, fontsize: float = 6.0) -> list:
    """Label every point of a threshold, factor or other adaptive curve with its swept
    parameter (`knob`, e.g. threshold=0.9); top-k points need none (x is k itself)."""
    if "knob" not in points or points.empty:
        return []
    adaptive = points[(points["strategy_kind"].astype(str) != "topk") & (points["knob"].astype(str) != "")]
    adaptive = adaptive[np.isfinite(adaptive["tps"].astype(float)) & np.isfinite(adaptive["accuracy"].astype(float))]
    if adaptive.empty:
        return []
    texts = [knob_text(k) for k in adaptive["knob"]]
    rest = points.drop(index=adaptive.index)
    avoid = list(zip(rest["tps"].astype(float), rest["accuracy"].astype(float)))
    return annotate_points(fig, ax, adaptive["tps"].to_numpy(float), adaptive["accuracy"].to_numpy(float), texts,
                           fontsize=fontsize, marker=3.5, gap=0.8, avoid=avoid)


def point_labels(group: pd.DataFrame) -> list[str] | None:
    """The label of each point of a threshold, factor or other adaptive curve (its swept
    parameter, as `label_curve_points` writes it), or None for a top-k curve (x is k itself)."""
    if "knob" not in group or group.empty or str(group["strategy_kind"].iloc[0]) == "topk":
        return None
    texts = [knob_text(k) if str(k) not in ("", "nan", "None") else "" for k in group["knob"]]
    return texts if any(texts) else None


def knob_text(knob: str) -> str:
    """`threshold=0.9` -> `0.9` (the legend names the parameter); `a=1,b=2` stays whole."""
    parts = str(knob).split(",")
    return parts[0].split("=", 1)[-1] if len(parts) == 1 else str(knob)


def save(fig, out_dir: Path, stem: str) -> list[Path]:
    """Write `stem`.png and `stem`.svg; closes the figure."""
    plt = _pyplot()
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / f"{stem}.png", out_dir / f"{stem}.svg"]
    fig.savefig(paths[0], dpi=150)
    with plt.rc_context({"svg.fonttype": "none"}):  # text stays text: searchable and editable in the SVG
        fig.savefig(paths[1])
    plt.close(fig)
    return paths


def _bounded(clean: str, original: str, limit: int) -> str:
    """`clean` cut to `limit` UTF-8 bytes; a cut (or emptied) name gets a hash of the original
    so that two long names sharing a prefix still get two files."""
    if clean and len(clean.encode("utf-8")) <= limit:
        return clean
    digest = hashlib.sha1(original.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    while len(clean.encode("utf-8")) > limit - 11:
        clean = clean[: max(0, len(clean) - max(1, (len(clean.encode("utf-8")) - limit + 11) // 4))]
    return f"{clean}_{digest}" if clean else f"unnamed_{digest}"


def safe_name(text: str) -> str:
    """A file-name-safe version of a model or task name: letters, digits, "-_." only, no
    leading dot ("..", ".hidden"), at most 80 bytes."""
    text = str(text)
    clean = "".join(c if c.isalnum() or c in "-_." else "_" for c in text).strip("_").lstrip(".")
    if not text:
        return "unnamed"
    return _bounded(clean, text, 80)


def file_names(values, make=None) -> dict:
    """{value: file name} by `make` (default `safe_name`); values whose names collide
    ("a/b" and "a_b", "a\\x00b") get a hash of their own so no file overwrites another."""
    make = make or safe_name
    names = {v: make(v) for v in values}
    taken = Counter(names.values())
    for v, name in names.items():
        if taken[name] > 1:
            names[v] = f"{name}_{hashlib.sha1(str(v).encode('utf-8', 'surrogatepass')).hexdigest()[:10]}"
    return names


def file_stem(text: str) -> str:
    """A label such as "confidence-topk[k=2]" as one file name, kept readable: no path
    separator, control character or leading dot, at most 120 bytes."""
    text = str(text)
    clean = "".join("_" if c in '/\\<>"|?*' or not c.isprintable() else c for c in text).strip().lstrip(".")
    return _bounded(clean, text, 120) if text else "unnamed"


def write_figures(
    out_dir: Path, per_task: pd.DataFrame, averaged: pd.DataFrame, oracle: pd.DataFrame, tmap: pd.DataFrame, x_scale: str = "log2",
    repair: pd.DataFrame | None = None,
) -> list[Path]:
    """All static figures the data supports (`repair`: `analysis.repair.repair_table`); returns the files written."""
    out_dir = Path(out_dir)
    written: list[Path] = []
    names = file_names(averaged["model"].unique()) if len(averaged) else {}
    for model in sorted(averaged["model"].unique()) if len(averaged) else []:
        written += save(tradeoff_figure(averaged, oracle, model, x_scale), out_dir, f"tradeoff_{names[model]}")
        written += save(task_panels_figure(per_task, model, x_scale), out_dir, f"tasks_{names[model]}")
    if len(tmap) and np.isfinite(tmap[["parallelizability", "order_slope"]].to_numpy(dtype=float)).all(axis=1).any():
        written += save(taskmap_figure(tmap), out_dir, "taskmap")
    if repair is not None and len(repair):
        repair_names = file_names(repair["model"].unique())
        for model in sorted(repair["model"].unique()):
            written += save(repair_figure(repair, model), out_dir, f"repair_{repair_names[model]}")
    return written
