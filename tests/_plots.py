"""Checks shared by the plot tests: PNG size, text inside the figure, legend texts."""

from __future__ import annotations

import struct

#: A text may touch the figure's edge: window extents are rounded to whole pixels.
EDGE_TOLERANCE_PX = 1.0


def png_size(path) -> tuple[int, int]:
    """(width, height) [pixel] from a PNG's IHDR chunk (PNG spec, section 11.2.2)."""
    with open(path, "rb") as fh:
        data = fh.read(24)
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


def outside_figure(fig) -> list[str]:
    """Every drawn label, title, tick label, legend and colour bar that leaves the figure.

    Draws the figure (constrained layout runs), then compares with the figure's bbox: each
    Text's window extent (titles, axis labels, legend texts, figure texts) and each Axes' tight
    bbox, which holds the tick labels actually drawn, and each legend's frame.
    """
    from matplotlib.text import Text

    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    box = fig.bbox
    tol = EDGE_TOLERANCE_PX

    def out(b):
        return b.x0 < box.x0 - tol or b.y0 < box.y0 - tol or b.x1 > box.x1 + tol or b.y1 > box.y1 + tol

    bad = []
    texts = list(fig.texts)
    if getattr(fig, "_suptitle", None) is not None:
        texts.append(fig._suptitle)
    legends = list(fig.legends)
    for ax in fig.axes:
        texts += [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label, *ax.texts]
        if ax.get_legend() is not None:
            legends.append(ax.get_legend())
        if ax.get_visible() and out(ax.get_tightbbox(renderer)):
            bad.append(f"axes {ax.get_label() or ax.get_title()!r}: {ax.get_tightbbox(renderer)}")
    for leg in legends:
        texts += list(leg.get_texts()) + [leg.get_title()]
        if out(leg.get_window_extent(renderer)):
            bad.append(f"legend {leg.get_title().get_text()!r}")
    for t in texts:
        drawn = isinstance(t, Text) and t.get_visible() and t.get_text().strip()
        if drawn and out(t.get_window_extent(renderer)):
            bad.append(f"text {t.get_text()!r}: {t.get_window_extent(renderer)}")
    return bad


def legend_texts(fig) -> list[str]:
    """Texts of every legend of the figure (figure legends first)."""
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    return [t.get_text() for leg in legends for t in leg.get_texts()]
