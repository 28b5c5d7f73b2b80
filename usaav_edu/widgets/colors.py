"""Token colours and the 3-D projection shared by every view.

A token's colour shows its auxiliary variable:

* ``labels == "none"``: one colour for every token;
* ``labels == "position"``: a hue wheel.  Distinct positions, sorted, are spread evenly around
  the wheel, ``hue_k = k / m`` for the k-th of m distinct positions, so neighbouring positions
  get neighbouring hues and the wheel closes (the last position sits one step before the first,
  as positions that cover a whole rotation period do).  Hues are rounded to ``HUE_STEPS`` steps
  so that a scene needs at most that many materials (this keeps the embedded page state small);
* ``labels == "prompt"``: a fixed categorical palette indexed by the prompt id.

Every view (pythreejs and matplotlib) calls :func:`token_colors` and :func:`project_3d`, so the
live sphere, the static book and the printed figures agree.
"""
from __future__ import annotations

import colorsys
from dataclasses import dataclass

import numpy as np

from .. import _validate as v
from . import _checks as c

#: colour of every token when there is no auxiliary variable
PLAIN_COLOR = "#1f5fa8"

#: categorical palette for prompt ids (ids beyond its length wrap around)
PROMPT_PALETTE = (
    "#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd",
    "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f",
)

LABEL_KINDS = ("none", "position", "prompt")

#: number of distinct hues used for positions
HUE_STEPS = 32


def _hex(rgb) -> str:
    r, g, b = (int(round(255 * float(np.clip(c, 0.0, 1.0)))) for c in rgb)
    return f"#{r:02x}{g:02x}{b:02x}"


def hue_color(hue: float) -> str:
    """Hex colour of a hue (a finite number, taken mod 1: hues form a wheel), rounded to
    ``HUE_STEPS`` steps, as used for positions."""
    hue = c.real("hue", hue)
    step = round(hue % 1.0 * HUE_STEPS) % HUE_STEPS
    return _hex(colorsys.hsv_to_rgb(step / HUE_STEPS, 0.85, 0.9))


@dataclass(frozen=True)
class LegendEntry:
    """One legend row: a colour swatch and its text."""

    color: str
    text: str


def _check_labels(labels: str) -> str:
    if not isinstance(labels, str) or labels not in LABEL_KINDS:
        raise ValueError(f"labels must be one of {LABEL_KINDS}, got {labels!r}")
    return labels


def _check_xi(xi, labels: str) -> np.ndarray:
    """The labels as a 1-D array: any values for "none", finite numbers for "position",
    non-negative integers for "prompt"."""
    _check_labels(labels)
    if xi is None or isinstance(xi, (str, bytes)):
        raise TypeError(f"xi must be a 1-D array of labels, got {type(xi).__name__}")
    xi = np.asarray(xi)
    if xi.ndim != 1:
        raise ValueError(f"xi must be a 1-D array of labels, got shape {xi.shape}")
    if labels == "none":
        return xi
    if xi.dtype == bool or not np.issubdtype(xi.dtype, np.number) or np.iscomplexobj(xi):
        raise TypeError(f"{labels} labels xi must be real numbers, got dtype {xi.dtype}")
    if not np.all(np.isfinite(xi)):
        raise ValueError(f"{labels} labels xi must be finite (no NaN or inf)")
    if labels == "prompt":
        ids = xi.astype(np.int64)
        if np.any(ids != xi) or np.any(ids < 0):
            raise ValueError("prompt labels xi must be non-negative integers")
        return ids
    return xi.astype(float)


def token_colors(xi, labels: str) -> list[str]:
    """Hex colour of every token, from its label ``xi`` and the label kind.

    Parameters
    ----------
    xi : array of shape (n,)
        The tokens' auxiliary variables (positions or prompt ids).
    labels : {"none", "position", "prompt"}
        What ``xi`` means.
    """
    xi = _check_xi(xi, labels)
    n = xi.shape[0]
    if labels == "none":
        return [PLAIN_COLOR] * n
    if labels == "prompt":
        return [PROMPT_PALETTE[k % len(PROMPT_PALETTE)] for k in xi]
    values = np.unique(xi)
    rank = np.searchsorted(values, xi)
    return [hue_color(k / len(values)) for k in rank]


def legend_entries(xi, labels: str, max_rows: int = 10) -> list[LegendEntry]:
    """Legend rows for the colours of :func:`token_colors`: one per prompt (beyond ``max_rows``
    prompts, the first ``max_rows - 1`` and a row counting the others), or up to five sample
    positions."""
    xi = _check_xi(xi, labels)
    max_rows = c.integer("max_rows", max_rows, minimum=1)
    if labels == "none":
        return [LegendEntry(PLAIN_COLOR, f"all {xi.shape[0]} tokens (no label)")]
    if labels == "prompt":
        ids = np.unique(xi)
        rows = [LegendEntry(PROMPT_PALETTE[k % len(PROMPT_PALETTE)],
                            f"prompt {k} ({int(np.sum(xi == k))} tokens)") for k in ids]
        if len(rows) > max_rows:
            rest = len(rows) - (max_rows - 1)
            rows = rows[:max_rows - 1] + [LegendEntry("#ffffff", f"... and {rest} more prompts")]
        return rows
    values = np.unique(xi)
    picks = np.unique(np.linspace(0, len(values) - 1, min(len(values), 5, max_rows)).round().astype(int))
    return [LegendEntry(hue_color(k / len(values)), f"position {values[k]:.3g}") for k in picks]


def project_3d(x, coords=(0, 1, 2)) -> np.ndarray:
    """Points of S^{d-1} as 3-D points to draw.

    * d = 3: unchanged.
    * d = 2: the circle is drawn as the equator, (x1, x2) -> (x1, x2, 0).
    * d > 3: orthogonal projection onto the coordinates ``coords`` (default the first three,
      (x1, x2, x3)).  Projected points lie inside the unit ball; their distance from the centre
      is the norm of the kept part.  For RoPE in d = 4 with rotation planes (e1, e2), (e3, e4)
      a token with block radii (r1, r2) lands on the cylinder of radius r1 around the x3-axis,
      and an orbit on the torus shows as a wavy curve.

    ``x`` has shape (..., d), any finite vectors (the views pass points of the sphere); the
    result has shape (..., 3).  ``coords`` is always checked, and used for d > 3.
    """
    coords = c.coords(coords)
    x = v.float_array("x", x)
    if x.ndim < 1 or x.shape[-1] < 2:
        raise ValueError(f"x must have a last axis of length d >= 2, got shape {x.shape}")
    d = x.shape[-1]
    if d == 2:
        return np.concatenate([x, np.zeros(x.shape[:-1] + (1,))], axis=-1)
    if d == 3:
        return x.copy()
    if max(coords) >= d:
        raise ValueError(f"coords must be three distinct coordinates in 0..{d - 1}, got {coords}")
    return x[..., list(coords)]
