"""Token colours and the 3-D projection shared by every view.

A token's colour shows its auxiliary variable:

* ``labels == "none"``: one colour for every token;
* ``labels == "position"``: a cyclic colour map.  Distinct positions, sorted, are spread evenly
  around the map, phase ``k / m`` for the k-th of m distinct positions, so neighbouring positions
  get neighbouring colours and the map closes (the last position sits one step before the first,
  as positions that cover a whole rotation period do).  Phases are rounded to ``CYCLIC_STEPS``
  steps so that a scene needs at most that many materials (this keeps the embedded page state
  small);
* ``labels == "prompt"``: the Okabe-Ito qualitative palette indexed by the prompt id.

Both maps are chosen to stay readable with red-green colour blindness (deuteranopia,
protanopia), which removes most of the red-green opponent axis (CIELAB a*) and keeps lightness
L* and the blue-yellow axis b*:

* the prompt palette is the eight colours of Okabe & Ito, *Color Universal Design* (2002/2008),
  reordered so that the first few prompts get the most distinct colours and the pale yellow
  comes late;
* the cyclic map is a circle in the (L*, b*) plane of CIELAB at a* = 0,
  ``L* = 56 + 26 cos(2 pi phase)``, ``b* = 34 sin(2 pi phase)``: light grey, sand, dark olive,
  charcoal, slate blue, sky blue and back.  Only the two axes that dichromats keep carry the
  phase, so a deuteranope or protanope sees nearly the same loop as everyone else, and equal
  phase steps are roughly equal colour steps.  (An HSV hue wheel runs along the red-green axis:
  to a deuteranope its red, yellow and green thirds look alike.)

Every view (pythreejs and matplotlib) calls :func:`token_colors` and :func:`project_3d`, so the
live sphere, the static book and the printed figures agree.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _validate as v
from . import _checks as c

#: colour of every token when there is no auxiliary variable
PLAIN_COLOR = "#1f5fa8"

#: Okabe-Ito palette for prompt ids (ids beyond its length wrap around): orange, sky blue,
#: bluish green, blue, vermillion, reddish purple, yellow, black
PROMPT_PALETTE = (
    "#e69f00", "#56b4e9", "#009e73", "#0072b2", "#d55e00", "#cc79a7", "#f0e442", "#000000",
)

LABEL_KINDS = ("none", "position", "prompt")

#: number of distinct colours used for positions
CYCLIC_STEPS = 32

#: the cyclic map's circle in CIELAB: centre lightness, lightness radius, b* radius
CYCLIC_LAB = (56.0, 26.0, 34.0)

# sRGB (D65) primaries: linear RGB -> CIE XYZ (IEC 61966-2-1)
_RGB_TO_XYZ = np.array([[0.4124564, 0.3575761, 0.1804375],
                        [0.2126729, 0.7151522, 0.0721750],
                        [0.0193339, 0.1191920, 0.9503041]])
_WHITE_XYZ = _RGB_TO_XYZ.sum(axis=1)


def _hex(rgb) -> str:
    r, g, b = (int(round(255 * float(np.clip(c, 0.0, 1.0)))) for c in rgb)
    return f"#{r:02x}{g:02x}{b:02x}"


def lab_to_srgb(lab) -> np.ndarray:
    """sRGB components in [0, 1] of a CIELAB colour (D65 white).

    ``f = (L* + 16) / 116`` gives ``fy = f``, ``fx = f + a* / 500``, ``fz = f - b* / 200``; then
    ``X / Xn = fx^3`` (or ``3 (6/29)^2 (fx - 4/29)`` below ``6/29``), likewise Y and Z; linear
    RGB is the inverse sRGB matrix applied to XYZ; each component ``u`` is encoded as
    ``12.92 u`` (``u <= 0.0031308``) or ``1.055 u^(1/2.4) - 0.055``.  A colour outside the sRGB
    gamut raises ValueError (no silent clipping).

    Parameters
    ----------
    lab : array_like
        ``(L*, a*, b*)``.

    Returns
    -------
    ndarray
        ``(3,)`` in ``[0, 1]``.

    Raises
    ------
    ValueError
        If the colour lies outside the sRGB gamut.
    """
    lab = v.float_array("lab", lab)
    if lab.shape != (3,):
        raise ValueError(f"lab must be (L*, a*, b*), got shape {lab.shape}")
    L, a, b = lab
    fy = (L + 16.0) / 116.0
    f = np.array([fy + a / 500.0, fy, fy - b / 200.0])
    delta = 6.0 / 29.0
    t = np.where(f > delta, f ** 3, 3 * delta ** 2 * (f - 4.0 / 29.0))
    rgb = np.linalg.solve(_RGB_TO_XYZ, t * _WHITE_XYZ)
    if np.any(rgb < -1e-9) or np.any(rgb > 1 + 1e-9):
        raise ValueError(f"lab = {tuple(float(u) for u in lab)} lies outside the sRGB gamut")
    rgb = np.clip(rgb, 0.0, 1.0)
    return np.where(rgb <= 0.0031308, 12.92 * rgb, 1.055 * rgb ** (1 / 2.4) - 0.055)


def cyclic_color(phase: float) -> str:
    """Hex colour of a phase on the cyclic map (a finite number, taken mod 1), rounded to
    ``CYCLIC_STEPS`` steps, as used for positions: CIELAB
    ``(L*, a*, b*) = (56 + 26 cos(2 pi phase), 0, 34 sin(2 pi phase))``.

    Parameters
    ----------
    phase : float
        A finite number.

    Returns
    -------
    str
        ``"#rrggbb"``.
    """
    phase = c.real("phase", phase)
    step = round(phase % 1.0 * CYCLIC_STEPS) % CYCLIC_STEPS
    theta = 2 * np.pi * step / CYCLIC_STEPS
    centre, r_light, r_yellow = CYCLIC_LAB
    return _hex(lab_to_srgb([centre + r_light * np.cos(theta), 0.0, r_yellow * np.sin(theta)]))


@dataclass(frozen=True)
class LegendEntry:
    """One legend row: a colour swatch and its text."""

    color: str
    text: str


def _check_labels(labels: str) -> str:
    if not isinstance(labels, str) or labels not in LABEL_KINDS:
        raise ValueError(f"labels must be one of {LABEL_KINDS}, got {v.shown(labels)}")
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
    return [cyclic_color(k / len(values)) for k in rank]


def legend_entries(xi, labels: str, max_rows: int = 10) -> list[LegendEntry]:
    """Legend rows for the colours of :func:`token_colors`: one per prompt (beyond ``max_rows``
    prompts, the first ``max_rows - 1`` and a row counting the others), or up to five sample
    positions.

    Parameters
    ----------
    xi : array_like or None
        ``(n,)`` labels.
    labels : {"none", "position", "prompt"}
        What the labels mean.
    max_rows : int
        The most rows.

    Returns
    -------
    list of LegendEntry
        ``(colour, text)`` rows.
    """
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
    return [LegendEntry(cyclic_color(k / len(values)), f"position {values[k]:.3g}") for k in picks]


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

    Parameters
    ----------
    x : array_like
        ``(..., d)`` unit vectors.
    coords : tuple of int
        Three distinct coordinates, for d > 3.

    Returns
    -------
    ndarray
        ``(..., 3)``.
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
