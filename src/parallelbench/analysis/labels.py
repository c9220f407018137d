"""Label placement for scatter plots: every label gets its own box, none overlaps another.

Task-map points often sit on top of each other (six tasks at the same centre of mass);
labels written next to each point then pile up into a smear. `place_labels` puts each
label on the nearest free spot around its point (growing rings of candidate offsets) and
the caller draws a leader line from the point to the label. Works in pixels (or points)
with y growing downwards, the convention of both Plotly offsets and screen coordinates;
text size is an estimate from the character count, so callers pass a safety margin.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: Width of one character as a share of the font size (sans-serif average, slightly generous).
CHAR_WIDTH = 0.62
#: Height of one line of text as a share of the font size.
LINE_HEIGHT = 1.35


@dataclass(frozen=True)
class Box:
    """An axis-aligned rectangle in pixels: left, top, right, bottom (y grows downwards)."""

    x0: float
    y0: float
    x1: float
    y1: float

    def overlaps(self, other: "Box", gap: float = 0.0) -> bool:
        return not (
            self.x1 + gap <= other.x0 or other.x1 + gap <= self.x0 or self.y1 + gap <= other.y0 or other.y1 + gap <= self.y0
        )

    def inside(self, area: "Box") -> bool:
        return self.x0 >= area.x0 and self.y0 >= area.y0 and self.x1 <= area.x1 and self.y1 <= area.y1


def text_size(text: str, font_size: float) -> tuple[float, float]:
    """Estimated (width, height) of a label, padding included; lines are separated by "\n"."""
    lines = str(text).split("\n")
    return max(len(line) for line in lines) * CHAR_WIDTH * font_size + 4.0, len(lines) * LINE_HEIGHT * font_size + 2.0


def coincident_groups(points, tolerance: float = 3.0) -> list[list[int]]:
    """Indices of points that sit on one spot (within `tolerance` pixels of each other, chained),
    in order of their first member: seven tasks on one spot become one group, one label."""
    points = [(float(x), float(y)) for x, y in points]
    parent = list(range(len(points)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(len(points)):
        for j in range(i + 1, len(points)):
            if math.hypot(points[i][0] - points[j][0], points[i][1] - points[j][1]) <= tolerance:
                parent[root(j)] = root(i)
    groups: dict[int, list[int]] = {}
    for i in range(len(points)):
        groups.setdefault(root(i), []).append(i)
    return sorted(groups.values(), key=lambda g: g[0])


def joined_label(names, width: int = 30) -> str:
    """One label for several names on one spot: "a, b, c" broken into lines of about `width`
    characters ("\n" between lines); a single name is returned as it is."""
    names = [str(n) for n in names]
    if len(names) == 1:
        return names[0]
    lines: list[str] = []
    current = ""
    for i, name in enumerate(names):
        piece = name + ("," if i < len(names) - 1 else "")
        if current and len(current) + 1 + len(piece) > width:
            lines.append(current)
            current = piece
        else:
            current = f"{current} {piece}" if current else piece
    lines.append(current)
    return "\n".join(lines)


def box_at(cx: float, cy: float, size: tuple[float, float]) -> Box:
    """The box of a label centred on (cx, cy)."""
    w, h = size
    return Box(cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)


def _candidates(size: tuple[float, float], marker: float):
    """Offsets (dx, dy) of a label centre from its point, nearest first: the label's edge
    sits `gap` beyond the marker in 16 directions, on rings further and further out."""
    w, h = size
    for ring in (0, 1, 2, 3, 4, 5, 6, 8, 10, 13, 16):
        gap = marker + 3 + ring * 12
        for i in range(16):
            angle = math.pi / 2 - i * math.pi / 8  # start straight up, then clockwise
            ux, uy = math.cos(angle), -math.sin(angle)
            # push the centre out until the box edge (not its centre) is `gap` away
            reach = min(
                (w / 2) / abs(ux) if abs(ux) > 1e-9 else math.inf,
                (h / 2) / abs(uy) if abs(uy) > 1e-9 else math.inf,
            )
            yield ux * (gap + reach), uy * (gap + reach)


def place_labels(points, texts, area: Box, font_size: float = 11.0, marker: float = 6.0, gap: float = 2.0,
                 obstacles=()):
    """Offsets [(dx, dy)] (pixels, y down) putting each label's centre near its point.

    `points` are pixel positions, `area` the box labels must stay inside, `marker` the
    marker radius that labels keep clear of (every marker, not just their own, and the
    unlabelled points in `obstacles`). Labels
    are placed one by one, points in crowded spots first; a label for which no
    candidate is free takes the one that overlaps least (only with far more labels than
    the plot has room for).
    """
    points = [(float(x), float(y)) for x, y in points]
    sizes = [text_size(str(t), font_size) for t in texts]
    markers = [Box(x - marker, y - marker, x + marker, y + marker) for x, y in [*points, *obstacles]]

    def crowding(i: int) -> float:
        x, y = points[i]
        return -sum(1.0 for (u, v) in points if math.hypot(u - x, v - y) < 60)

    offsets: list[tuple[float, float] | None] = [None] * len(points)
    placed: list[Box] = []
    for i in sorted(range(len(points)), key=lambda j: (crowding(j), points[j])):
        x, y = points[i]
        best, best_cost = None, math.inf
        for dx, dy in _candidates(sizes[i], marker):
            box = box_at(x + dx, y + dy, sizes[i])
            if not box.inside(area):
                continue
            cost = sum(1 for b in placed if box.overlaps(b, gap)) * 10 + sum(1 for m in markers if box.overlaps(m))
            if cost == 0:
                best = (dx, dy)
                break
            if cost < best_cost:
                best, best_cost = (dx, dy), cost
        if best is None:  # nowhere inside the area: keep it just above the point
            best = (0.0, -(marker + sizes[i][1] / 2 + 3))
        offsets[i] = best
        placed.append(box_at(x + best[0], y + best[1], sizes[i]))
    return offsets


def label_boxes(points, offsets, texts, font_size: float = 11.0) -> list[Box]:
    """The boxes `place_labels` reserved: for checking a layout (tests, callers)."""
    return [box_at(x + dx, y + dy, text_size(str(t), font_size)) for (x, y), (dx, dy), t in zip(points, offsets, texts)]
