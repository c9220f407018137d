"""Interactive (Plotly) figures of the report: trade-off, per-task panels, task map and repair.

Shared rules, so that a reader can read every plot: tokens per step on a log2 axis by
default (ticks at the paper's k = 1, 2, 4, 8 ...), a 95% interval as an error bar on every
accuracy point whose frame carries `ci_low` / `ci_high` (in %), and task-map labels placed
by `labels.place_labels` with leader lines on a fixed-size canvas, so that no two labels
overlap and none is clipped at any page width.
"""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

from parallelbench.analysis import figures
from parallelbench.analysis.curves import ACCURACY_AXIS, TPS_AXIS
from parallelbench.analysis.labels import Box, coincident_groups, joined_label, place_labels
from parallelbench.analysis.taskmap import X_SHORT, Y_SHORT
from parallelbench.display import display_name

#: The task map's canvas in pixels: fixed, so label offsets hold at every page width
#: (it fits the report's narrowest column, an 800 px window).
TASKMAP_SIZE = (660, 560)
TASKMAP_MARGIN = dict(l=70, r=90, t=20, b=100)
TASKMAP_FONT = 11
#: Task-map points closer than this (pixels) are one spot and share one label.
COINCIDENT_PX = 4.0


def shown(value) -> str:
    """A user-given name for Plotly labels: cleaned, cut and escaped (Plotly renders HTML)."""
    return html.escape(display_name(value))


def tps_axis(values, scale: str = "log2") -> dict:
    """Plotly x-axis settings for tokens per step: log2 with ticks 1, 2, 4 ... or linear."""
    if scale == "linear":
        return dict(type="linear", title_text=TPS_AXIS)
    if scale != "log2":
        raise ValueError(f"x scale must be 'log2' or 'linear', not {scale!r}")
    ticks = figures.log2_ticks(values)
    lo, hi = figures.log2_limits(values)
    return dict(
        type="log", range=[np.log10(lo), np.log10(hi)], tickvals=ticks, ticktext=[figures.tick_text(t) for t in ticks],
        title_text=TPS_AXIS + ", log2 scale",
    )


def error_bars(group: pd.DataFrame) -> dict | None:
    """Asymmetric error bars from `ci_low` / `ci_high` (% like `accuracy`); None without them."""
    if not {"ci_low", "ci_high"} <= set(group.columns):
        return None
    low = pd.to_numeric(group["ci_low"], errors="coerce")
    high = pd.to_numeric(group["ci_high"], errors="coerce")
    if low.isna().all() and high.isna().all():
        return None
    acc = group["accuracy"].astype(float)
    return dict(
        type="data", symmetric=False, array=(high - acc).clip(lower=0).fillna(0).tolist(),
        arrayminus=(acc - low).clip(lower=0).fillna(0).tolist(), thickness=1.2, width=3,
    )


def _hover(group: pd.DataFrame) -> list[str]:
    """Per point: the configuration, its interval and its sample count where known."""
    out = []
    for _, row in group.iterrows():
        text = shown(row["config"])
        if "ci_low" in row and pd.notna(row.get("ci_low")) and pd.notna(row.get("ci_high")):
            text += f"<br>95% interval {row['ci_low']:.1f}–{row['ci_high']:.1f}%"
        if "n" in row and pd.notna(row.get("n")):
            text += f"<br>n = {int(row['n'])} samples"
        out.append(text)
    return out


def point_text(group: pd.DataFrame, colour: str, size: int) -> dict:
    """Scatter options: hover text per point, and on a threshold, factor or other adaptive curve
    each point labelled with its swept parameter, as the static figures label them."""
    labels = figures.point_labels(group)
    out = dict(customdata=_hover(group), mode="lines+markers")
    if labels:
        out.update(mode="lines+markers+text", text=[html.escape(t) for t in labels], textposition="top center",
                   textfont=dict(size=size, color=colour), cliponaxis=False)
    return out


def tradeoff_plot(averaged: pd.DataFrame, oracle_avg: pd.DataFrame, model: str, x_scale: str = "log2"):
    """Task-averaged accuracy against tokens per step for one model, oracle as a star."""
    import plotly.graph_objects as go

    palette = figures.colours(averaged["curve"])
    fig = go.Figure()
    points = averaged[averaged["model"] == model]
    for curve, group in points.groupby("curve", sort=True):
        group = group.sort_values("tps")
        kind = str(group["strategy_kind"].iloc[0])
        fig.add_trace(
            go.Scatter(
                x=group["tps"], y=group["accuracy"], name=shown(figures.curve_legend(curve, group)),
                marker=dict(symbol="square" if kind == "adaptive" else "circle", size=8, color=palette[curve]),
                line=dict(color=palette[curve]), error_y=error_bars(group),
                hovertemplate="%{customdata}<br>%{x:.2f} tokens/step<br>%{y:.1f}% accuracy<extra></extra>",
                **point_text(group, palette[curve], 10),
            )
        )
    stars = oracle_avg[oracle_avg["model"] == model] if len(oracle_avg) else oracle_avg
    for _, row in stars.iterrows():
        fig.add_trace(
            go.Scatter(
                x=[row["tps"]], y=[row["accuracy"]], mode="markers", name=shown(row["curve"]),
                marker=dict(symbol="star", size=18, color="gold", line=dict(color="black", width=1)),
                hovertemplate="oracle<br>%{x:.2f} tokens/step<br>%{y:.1f}% accuracy<extra></extra>",
            )
        )
    xs = list(points["tps"]) + list(stars["tps"] if len(stars) else [])
    fig.update_layout(
        title=f"Speed-quality trade-off: {shown(model)}", yaxis_title=ACCURACY_AXIS,
        yaxis_range=[-4, 104], legend_title_text="strategy", height=460, margin=dict(l=60, r=20, t=50, b=60),
    )
    fig.update_xaxes(**tps_axis(xs, x_scale))
    return fig


#: Per-task panels: three columns of fixed size, so titles and tick labels never collide
#: at any page width (the figure fits the report's column in an 800 px window).
PANEL_COLUMNS = 3
PANEL_SIZE = (180, 170)
PANEL_GAP = (36, 60)  # pixels between panels: room for tick labels and the next title
PANELS_MARGIN = dict(l=55, r=15, t=85, b=50)


def task_panels_plot(per_task: pd.DataFrame, model: str, x_scale: str = "log2"):
    """One panel per task (the paper's figure 4), shared colours and legend below."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    palette = figures.colours(per_task["curve"])
    points = per_task[per_task["model"] == model]
    tasks = sorted(points["task"].unique())
    cols = min(PANEL_COLUMNS, len(tasks))
    rows = -(-len(tasks) // cols)
    fig = make_subplots(
        rows=rows, cols=cols, subplot_titles=[html.escape(display_name(t, 30)) for t in tasks],
        horizontal_spacing=PANEL_GAP[0] / (cols * PANEL_SIZE[0] + (cols - 1) * PANEL_GAP[0]),
        vertical_spacing=PANEL_GAP[1] / (rows * PANEL_SIZE[1] + (rows - 1) * PANEL_GAP[1]) if rows > 1 else 0.0,
    )
    seen = set()
    curve_ids = {c: i for i, c in enumerate(sorted(points["curve"].unique()))}
    axis = tps_axis(points["tps"], x_scale)
    axis.pop("title_text")
    for i, task in enumerate(tasks):
        r, c = i // cols + 1, i % cols + 1
        for curve, group in points[points["task"] == task].groupby("curve", sort=True):
            group = group.sort_values("tps")
            fig.add_trace(
                go.Scatter(
                    x=group["tps"], y=group["accuracy"], name=shown(figures.curve_legend(curve, group)),
                    legendgroup=f"c{curve_ids[curve]}", showlegend=curve not in seen,
                    marker=dict(color=palette[curve], size=6), line=dict(color=palette[curve]),
                    error_y=error_bars(group),
                    hovertemplate="%{customdata}<br>%{x:.2f} tokens/step<br>%{y:.1f}%<extra></extra>",
                    **point_text(group, palette[curve], 8),
                ),
                row=r, col=c,
            )
            seen.add(curve)
        fig.update_xaxes(**axis, tickfont_size=10, row=r, col=c)
        fig.update_yaxes(range=[-4, 104], tickfont_size=10, title_text=ACCURACY_AXIS if c == 1 else None, row=r, col=c)
    for i in range(len(tasks), rows * cols):  # empty cells of the last row draw nothing
        fig.update_xaxes(visible=False, row=i // cols + 1, col=i % cols + 1)
        fig.update_yaxes(visible=False, row=i // cols + 1, col=i % cols + 1)
    fig.update_annotations(font_size=11)  # the subplot titles
    legend_rows = len(curve_ids) // 2 + 1
    m = dict(PANELS_MARGIN, b=PANELS_MARGIN["b"] + 24 * legend_rows)
    inner = (cols * PANEL_SIZE[0] + (cols - 1) * PANEL_GAP[0], rows * PANEL_SIZE[1] + (rows - 1) * PANEL_GAP[1])
    fig.update_layout(
        title=dict(text=f"Per task: {shown(model)}<br><sup>x: {TPS_AXIS}" + (", log2 scale" if x_scale == "log2" else "") + "</sup>", font_size=14),
        width=m["l"] + m["r"] + inner[0], height=m["t"] + m["b"] + inner[1], autosize=False, margin=m,
        legend=dict(title_text="strategy", orientation="h", x=0, y=-30 / inner[1], yanchor="top"),
    )
    return fig


def _padded_range(values, pad: float = 0.08) -> list[float]:
    lo, hi = float(np.min(values)), float(np.max(values))
    span = hi - lo if hi > lo else max(abs(hi), 1.0)
    return [lo - pad * span, hi + pad * span]


def taskmap_plot(tmap: pd.DataFrame):
    """Tasks by parallelizability (reversed x) and order preference, coloured by accuracy
    level, one label per task on a leader line; None when no task has both coordinates."""
    import plotly.graph_objects as go

    data = tmap.dropna(subset=["parallelizability", "order_slope"]).reset_index(drop=True)
    if data.empty:
        return None
    width, height = TASKMAP_SIZE
    m = TASKMAP_MARGIN
    x_range = _padded_range(data["parallelizability"])
    y_range = _padded_range(data["order_slope"], 0.12)
    area = Box(m["l"], m["t"], width - m["r"], height - m["b"])

    def pixel(x: float, y: float) -> tuple[float, float]:
        # reversed x axis: the largest value on the left
        px = area.x0 + (x_range[1] - x) / (x_range[1] - x_range[0]) * (area.x1 - area.x0)
        py = area.y0 + (y_range[1] - y) / (y_range[1] - y_range[0]) * (area.y1 - area.y0)
        return px, py

    names = [display_name(t, 32) for t in data["task"]]
    pixels = [pixel(x, y) for x, y in zip(data["parallelizability"], data["order_slope"])]
    # tasks on one spot share one label (a fan of leader lines to one point reads as noise)
    groups = coincident_groups(pixels, COINCIDENT_PX)
    anchors = [g[0] for g in groups]
    texts = [joined_label([names[i] for i in g]) for g in groups]
    offsets = place_labels([pixels[i] for i in anchors], texts, area, font_size=TASKMAP_FONT, marker=6.0)
    accuracy = data["accuracy"] if "accuracy" in data else pd.Series(np.nan, index=data.index)
    categories = data["category"].astype(str) if "category" in data else pd.Series("", index=data.index)
    symbols = ["circle", "square", "diamond", "triangle-up", "cross", "x", "pentagon", "star-triangle-up"]
    shapes = figures.category_shapes(categories.unique())
    fig = go.Figure()
    for j, category in enumerate(sorted(categories.unique())):
        rows = data[categories == category]
        level = accuracy[categories == category]
        fig.add_trace(
            go.Scatter(
                x=rows["parallelizability"], y=rows["order_slope"], mode="markers", showlegend=False,
                customdata=np.stack([[shown(t) for t in rows["task"]], [f"{a:.1f}" if a == a else "–" for a in level]], axis=-1),
                marker=dict(
                    size=12, symbol=symbols[shapes[category] % len(symbols)], color=level.fillna(-1).tolist(), cmin=0, cmax=100,
                    colorscale="Viridis", line=dict(color="#333", width=0.8), showscale=j == 0,
                    colorbar=dict(title=dict(text="accuracy<br>level (%)", side="top"), len=0.8, x=1.02, thickness=12),
                ),
                hovertemplate="%{customdata[0]}<br>x %{x:.2f}<br>y %{y:.2f}<br>accuracy level %{customdata[1]}%<extra></extra>",
            )
        )
    for j, category in enumerate(sorted(categories.unique())):  # legend entries: shape only (colour is accuracy)
        fig.add_trace(
            go.Scatter(
                x=[None], y=[None], mode="markers", name=shown(category) if category else "tasks", hoverinfo="skip",
                marker=dict(size=10, symbol=symbols[shapes[category] % len(symbols)], color="#bbbbbb", line=dict(color="#333", width=0.8)),
            )
        )
    annotations = [
        dict(
            x=data["parallelizability"].iloc[i], y=data["order_slope"].iloc[i], xref="x", yref="y",
            text="<br>".join(html.escape(line) for line in text.split("\n")), showarrow=True, arrowhead=0,
            arrowwidth=0.8, arrowcolor="#888", ax=dx, ay=dy, axref="pixel", ayref="pixel", xanchor="center",
            yanchor="middle", font=dict(size=TASKMAP_FONT), bgcolor="rgba(255,255,255,0.85)", borderpad=1, standoff=6,
        )
        for i, text, (dx, dy) in zip(anchors, texts, offsets)
    ]
    fig.add_hline(y=0, line_color="grey", line_width=1)
    fig.update_layout(
        width=width, height=height, autosize=False, margin=m, annotations=annotations,
        legend=dict(title_text="category (shape):", orientation="h", y=-0.17, yanchor="top", x=0, font_size=10),
        xaxis=dict(title_text=X_SHORT, range=[x_range[1], x_range[0]], title_font_size=11),
        yaxis=dict(title_text=Y_SHORT, range=y_range, title_font_size=11),
    )
    return fig


def repair_plot(table: pd.DataFrame, model: str):
    """Unmask vs final accuracy (%) of one model's editing strategy configs, one point per task,
    95% intervals both ways, the diagonal final = unmask (`figures.repair_figure` as a Plotly figure)."""
    import plotly.graph_objects as go

    rows = table[table["model"] == model]
    palette = figures.colours(rows["config"])
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[0, 100], y=[0, 100], mode="lines", name="no net repair (final = unmask)",
                             line=dict(color="#999", dash="dash", width=1), hoverinfo="skip"))
    for config, group in rows.groupby("config", sort=True):
        x, y = 100 * group["unmask"].astype(float), 100 * group["final"].astype(float)
        hover = [
            f"{shown(config)}<br>{shown(r['task'])}<br>unmask {100 * r['unmask']:.1f}% "
            f"({100 * r['unmask_low']:.1f}–{100 * r['unmask_high']:.1f})<br>final {100 * r['final']:.1f}% "
            f"({100 * r['final_low']:.1f}–{100 * r['final_high']:.1f})<br>repaired {100 * r['repaired']:.1f}%, "
            f"broken {100 * r['broken']:.1f}%<br>edits {r['edits']:.2f} per row<br>n = {int(r['rows'])} rows"
            for _, r in group.iterrows()
        ]
        fig.add_trace(go.Scatter(
            x=x, y=y, mode="markers+text", name=shown(config), text=[shown(t) for t in group["task"]],
            textposition="top center", textfont=dict(size=9), marker=dict(size=9, color=palette[config]),
            hovertext=hover, hoverinfo="text",
            error_x=dict(type="data", symmetric=False, array=(100 * group["unmask_high"].astype(float) - x).clip(lower=0)
                         .fillna(0).tolist(), arrayminus=(x - 100 * group["unmask_low"].astype(float)).clip(lower=0)
                         .fillna(0).tolist(), thickness=1, width=2),
            error_y=dict(type="data", symmetric=False, array=(100 * group["final_high"].astype(float) - y).clip(lower=0)
                         .fillna(0).tolist(), arrayminus=(y - 100 * group["final_low"].astype(float)).clip(lower=0)
                         .fillna(0).tolist(), thickness=1, width=2),
        ))
    fig.update_layout(
        height=520, margin=dict(l=60, r=20, t=20, b=60), legend=dict(font_size=10),
        xaxis=dict(title_text=figures.REPAIR_X, range=[-4, 104]),
        yaxis=dict(title_text=figures.REPAIR_Y, range=[-4, 104], scaleanchor="x", scaleratio=1),
    )
    return fig
