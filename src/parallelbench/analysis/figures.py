"""Static figures for papers (matplotlib, PNG and SVG): trade-off, per-task panels, task map.

Every axis names its quantity and unit and every plot with more than one series has a
legend, so figures can be dropped into a paper as they are.
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
from parallelbench.analysis.taskmap import X_AXIS, Y_AXIS
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


def tradeoff_figure(averaged: pd.DataFrame, oracle: pd.DataFrame, model: str):
    """Task-averaged accuracy against tokens per step for one model, oracle as stars (figure 7)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    points = averaged[averaged["model"] == model]
    palette = colours(points["curve"])
    for curve, group in points.groupby("curve", sort=True):
        group = group.sort_values("tps")
        kind = str(group["strategy_kind"].iloc[0])
        ax.plot(group["tps"], group["accuracy"], marker=_marker(kind), color=palette[curve], label=_label(curve))
    stars = oracle[oracle["model"] == model] if len(oracle) else oracle
    for _, row in stars.iterrows():
        ax.plot([row["tps"]], [row["accuracy"]], marker="*", markersize=16, linestyle="none", color="gold", markeredgecolor="black", label=_label(row["curve"]))
    ax.set_xlabel(TPS_AXIS)
    ax.set_ylabel(ACCURACY_AXIS)
    ax.set_title(f"Speed-quality trade-off, {_label(model)} (task-averaged)")
    ax.set_ylim(-2, 102)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    return fig


def task_panels_figure(per_task: pd.DataFrame, model: str):
    """One panel per task, accuracy against tokens per step per curve (paper figure 4)."""
    plt = _pyplot()
    points = per_task[per_task["model"] == model]
    tasks = sorted(points["task"].unique())
    cols = min(5, max(1, len(tasks)))
    rows = max(1, math.ceil(len(tasks) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(3.0 * cols, 2.6 * rows + 0.8), squeeze=False)
    palette = colours(points["curve"])
    handles = {}
    for ax, task in zip(axes.flat, tasks):
        for curve, group in points[points["task"] == task].groupby("curve", sort=True):
            group = group.sort_values("tps")
            kind = str(group["strategy_kind"].iloc[0])
            (line,) = ax.plot(group["tps"], group["accuracy"], marker=_marker(kind), markersize=4, color=palette[curve], label=_label(curve))
            handles[curve] = line
        ax.set_title(_label(task), fontsize=9)
        ax.set_xlabel(TPS_AXIS, fontsize=6)
        ax.set_ylabel(ACCURACY_AXIS, fontsize=7)
        ax.set_ylim(-2, 102)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(tasks):]:
        ax.axis("off")
    if handles:
        fig.legend(list(handles.values()), [_label(c) for c in handles], loc="lower center", ncol=min(5, len(handles)), fontsize=7)
    fig.suptitle(f"Accuracy per task, {_label(model)}", fontsize=11)
    fig.tight_layout(rect=(0, 0.08 if handles else 0, 1, 0.96))
    return fig


def taskmap_figure(tmap: pd.DataFrame):
    """Scatter of tasks: parallelizability (reversed axis, right = harder) against order preference."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    shown = tmap.dropna(subset=["parallelizability", "order_slope"])
    categories = sorted(shown["category"].astype(str).unique())
    palette = colours(categories)
    for category in categories:
        group = shown[shown["category"].astype(str) == category]
        ax.scatter(group["parallelizability"], group["order_slope"], color=palette[category], label=_label(category) if category else "tasks", s=40)
        for _, row in group.iterrows():
            ax.annotate(_label(row["task"], 30), (row["parallelizability"], row["order_slope"]), fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.axhline(0.0, color="grey", linewidth=0.8)
    ax.invert_xaxis()
    ax.set_xlabel(X_AXIS, fontsize=8)
    ax.set_ylabel(Y_AXIS, fontsize=8)
    ax.set_title("Task map")
    if categories:
        ax.legend(fontsize=8, title="category")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def save(fig, out_dir: Path, stem: str) -> list[Path]:
    """Write `stem`.png and `stem`.svg; closes the figure."""
    plt = _pyplot()
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / f"{stem}.png", out_dir / f"{stem}.svg"]
    fig.savefig(paths[0], dpi=150)
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


def write_figures(out_dir: Path, per_task: pd.DataFrame, averaged: pd.DataFrame, oracle: pd.DataFrame, tmap: pd.DataFrame) -> list[Path]:
    """All static figures the data supports; returns the files written."""
    out_dir = Path(out_dir)
    written: list[Path] = []
    names = file_names(averaged["model"].unique()) if len(averaged) else {}
    for model in sorted(averaged["model"].unique()) if len(averaged) else []:
        written += save(tradeoff_figure(averaged, oracle, model), out_dir, f"tradeoff_{names[model]}")
        written += save(task_panels_figure(per_task, model), out_dir, f"tasks_{names[model]}")
    if len(tmap) and np.isfinite(tmap[["parallelizability", "order_slope"]].to_numpy(dtype=float)).all(axis=1).any():
        written += save(taskmap_figure(tmap), out_dir, "taskmap")
    return written
