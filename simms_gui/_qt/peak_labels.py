"""m/z labels on stick spectra that never overlap each other or what else is in the plot.

Labels are placed greedily in screen space, strongest peaks first: a label is
tried above its peak's tip (below it for a downward spectrum), then beside the
tip (right, left), never away from it; the first position
whose box lies inside the data area and touches no label placed before and no
*obstacle* (legend, captions) is kept, otherwise the peak goes unlabelled.  So
the labels thin out by intensity as the plot gets crowded or small.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyqtgraph as pg
from PyQt6 import QtCore, QtGui

__all__ = [
    "LabelCandidate",
    "label_candidates",
    "place_peak_labels",
    "scene_rect",
    "sticks_blocker",
]


class LabelCandidate:
    """A peak that may get a label: position (view coordinates), text, colour."""

    __slots__ = ("color", "mz", "text", "y")

    def __init__(self, mz: float, y: float, text: str, color: object) -> None:
        self.mz, self.y, self.text, self.color = float(mz), float(y), text, color


def scene_rect(item: pg.GraphicsObject) -> QtCore.QRectF:
    """The box an item covers, in scene coordinates."""
    return item.mapRectToScene(item.boundingRect())


def _positions(up: bool) -> list[tuple[tuple[float, float], float]]:
    """(anchor, offset in label heights away from the tip) tried in order.

    Only positions touching the tip: a label stacked away from its peak is
    ambiguous in a crowded spectrum, so such a peak goes unlabelled instead.
    """
    vertical = (0.5, 1.0) if up else (0.5, 0.0)
    beside = (0.0, 1.0) if up else (0.0, 0.0)
    beside_left = (1.0, 1.0) if up else (1.0, 0.0)
    return [(vertical, 0.0), (beside, 0.0), (beside_left, 0.0)]


def place_peak_labels(
    plot: pg.PlotItem,
    candidates: Sequence[LabelCandidate],
    *,
    limit: int,
    obstacles: Sequence[QtCore.QRectF] = (),
    placed: list[QtCore.QRectF] | None = None,
    font_size: float = 8.0,
    blocked: Callable[[QtCore.QRectF, LabelCandidate], bool] | None = None,
) -> list[pg.TextItem]:
    """Add up to ``limit`` labels to ``plot``, in the order of ``candidates``.

    Parameters
    ----------
    plot : pyqtgraph.PlotItem
        Target plot; labels are added to it (and returned).
    candidates : sequence of LabelCandidate
        Peaks in order of priority (strongest first); ``y`` > 0 labels go above
        the tip, ``y`` < 0 below.
    limit : int
        Most labels placed.
    obstacles : sequence of QRectF
        Scene rectangles no label may touch (legend, captions).
    placed : list of QRectF, optional
        Scene rectangles of labels placed before (e.g. the other spectrum's);
        extended with the new labels' boxes.
    font_size : float, default 8
        Point size of the labels.
    blocked : callable, optional
        ``blocked(view_rect, candidate)``: True when the label's box (in view,
        i.e. data, coordinates) covers something else drawn, e.g. other sticks.

    Returns
    -------
    list of pyqtgraph.TextItem
        The labels placed (already in ``plot``); each has ``peak_position``, the
        tip it labels (view coordinates).
    """
    vb = plot.getViewBox()
    area = scene_rect(vb)
    placed = [] if placed is None else placed
    labels: list[pg.TextItem] = []
    if area.width() < 10 or area.height() < 10 or limit <= 0:
        return labels
    _, pixel_height = vb.viewPixelSize()
    font = QtGui.QFont()
    font.setPointSizeF(font_size)
    for candidate in candidates:
        if len(labels) >= limit:
            break
        up = candidate.y >= 0
        label = pg.TextItem(candidate.text, color=candidate.color)
        label.setFont(font)
        label.textItem.document().setDocumentMargin(1.0)
        label.setZValue(20)
        label.peak_position = QtCore.QPointF(candidate.mz, candidate.y)  # the tip labelled
        plot.addItem(label)
        kept = False
        for anchor, steps in _positions(up):
            label.setAnchor(anchor)
            height = label.textItem.boundingRect().height()
            shift = steps * height * pixel_height
            label.setPos(candidate.mz, candidate.y + (shift if up else -shift))
            label.updateTransform(force=True)
            box = scene_rect(label)
            if not area.contains(box):
                continue
            if any(box.intersects(other) for other in (*placed, *obstacles)):
                continue
            if blocked is not None and blocked(vb.mapSceneToView(box).boundingRect(), candidate):
                continue
            kept = True
            break
        if kept:
            placed.append(box)
            labels.append(label)
        else:
            plot.removeItem(label)
    return labels


def label_candidates(
    mz: np.ndarray,
    relative: np.ndarray,
    colors: np.ndarray,
    *,
    sign: float,
    window: tuple[float, float],
    min_relative: float = 2.0,
    decimals: int = 4,
) -> list[LabelCandidate]:
    """Peaks inside the m/z ``window`` of at least ``min_relative`` %, strongest first."""
    lo, hi = window
    visible = np.flatnonzero((mz >= lo) & (mz <= hi) & (relative >= min_relative))
    order = visible[np.argsort(-relative[visible], kind="stable")]
    return [
        LabelCandidate(mz[k], np.sign(sign) * relative[k], f"{mz[k]:.{decimals}f}", colors[k])
        for k in order
    ]


def sticks_blocker(
    mz: np.ndarray, heights: np.ndarray
) -> Callable[[QtCore.QRectF, LabelCandidate], bool]:
    """A ``blocked`` test for :func:`place_peak_labels`: does a box cover another stick?

    ``heights`` are signed (negative: downward sticks); a candidate's own stick
    never blocks its label.
    """
    order = np.argsort(mz, kind="stable")
    mz, heights = np.asarray(mz, dtype=np.float64)[order], np.asarray(heights)[order]

    def blocked(rect: QtCore.QRectF, candidate: LabelCandidate) -> bool:
        lo, hi = np.searchsorted(mz, [rect.left(), rect.right()])
        if hi <= lo:
            return False
        x, h = mz[lo:hi], heights[lo:hi]
        own = np.abs(x - candidate.mz) < 1e-9
        top = np.maximum(h, 0.0)
        bottom = np.minimum(h, 0.0)
        covers = (top >= rect.top()) & (bottom <= rect.bottom())
        return bool(np.any(covers & ~own))

    return blocked
