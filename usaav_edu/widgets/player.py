"""``TrajectoryPlayer``: a ``SphereView`` that plays a ``Trajectory`` in the browser.

The motion runs client-side, so it also plays in the static book with no kernel: each token
Mesh ``p{i}`` gets a ``VectorKeyframeTrack`` on ``p{i}.position``, all tracks form one
``AnimationClip`` and an ``AnimationAction`` (its play / pause / stop / repeat buttons) runs it.
Keyframe times are the model times ``traj.t``; the action's ``timeScale`` makes the whole run
last ``duration`` seconds of wall time.

Time readout: a bar under the sphere, fixed to the camera, with a bead that moves from t = 0 to
t = t_max as the clip plays, and above it the label "t = 1.25" that reads the same time while
the clip plays, pauses or stops (``time_label``).  Both are driven by keyframe tracks of the
player's own clip, so they work without a kernel and always agree with the tokens drawn.

Frames are subsampled so that one player's embedded widget state stays under ``max_bytes``
(about 1 MB by default): the keyframe data cost about ``22 (n + 1)`` bytes per frame once
base64-encoded in the page, each token about 2.1 kB more (its Mesh and track), the rest of the
scene about 114 kB (of which the time label, its shader and its track, about 6 kB).
"""
from __future__ import annotations

import inspect

import ipywidgets as widgets
import numpy as np
import pythreejs as three

from . import _checks as c
from .colors import CYCLIC_STEPS, PROMPT_PALETTE, project_3d
from .scene import TRAIL_BYTES, SphereView, subsample
from .state import live_kernel

#: bytes of embedded state per token and frame (3 float32 values + 1 float32 time, base64)
BYTES_PER_TOKEN_FRAME = 22
#: bytes of embedded state per token that do not depend on the number of frames (Mesh + track)
BYTES_PER_TOKEN = 2100
#: bytes of embedded state per colour of the drawn tokens (one material for all tokens of a
#: colour): a player of 24 tokens of 24 colours holds 24 materials, one of a single colour one
BYTES_PER_COLOUR = 1_700
#: the most colours tokens are drawn in (the cyclic map of positions has ``CYCLIC_STEPS``)
MAX_COLOURS = max(CYCLIC_STEPS, len(PROMPT_PALETTE))
#: bytes of the rest of the scene (sphere, circles, time bar and its label, controls, layout): a
#: player of one token measures 73 kB
BYTES_FIXED = 76_000

LOOPS = ("LoopRepeat", "LoopOnce", "LoopPingPong")

#: text beside the animation buttons, naming them.  pythreejs draws four icon-only buttons
#: with no label of their own and offers no way to give them one; a tooltip on the action (or
#: on the row that holds it) stops the page's widget manager from rendering the row at all.
#: In the book's pages, _static/widget_labels.js gives each button its accessible name.
BUTTONS_TEXT = "buttons: play, pause, stop, repeat."

# heads-up time bar, in camera coordinates (camera looks down -z)
_BAR_Z = -1.2
_BAR_Y = -0.37
_BAR_HALF = 0.32
#: ticks on the time bar, each numbered with its time
N_TICKS = 5
#: the tick numbers: one line of text in a monospace font, drawn as one sprite under the bar
#: (``_LABEL_SIZE`` pixels high in its texture; a monospace digit is ``_CHAR_WIDTH`` of that wide)
_LABEL_SIZE = 48
_CHAR_WIDTH = 0.6
_LABEL_GAP = 0.034
#: the time label above the bar: its height, and the width of one character (of that height)
_TIME_HEIGHT = 0.04
_TIME_CHAR = 0.6
_TIME_GAP = 0.016


def tick_times(span: float, k: int = N_TICKS) -> np.ndarray:
    """The ``k`` times numbered on the time bar of a run of clip length ``span``:
    ``t_j = j span / (k - 1)``, ``j = 0, ..., k - 1`` (model time since the first frame).

    Parameters
    ----------
    span : float
        Length of the clip (> 0).
    k : int
        Ticks (>= 2).

    Returns
    -------
    ndarray
    """
    span = c.real("span", span, minimum=0.0, strict=True)
    k = c.integer("k", k, minimum=2)
    return span * np.arange(k) / (k - 1)


def tick_labels(span: float, k: int = N_TICKS) -> list[str]:
    """The numbers written under the ticks: ``tick_times(span, k)`` with three significant
    digits (``:.3g``), e.g. ``['0', '2.5', '5', '7.5', '10']`` for ``span = 10``; ``span`` and
    ``k`` as for ``tick_times``.
    """
    return [f"{v:.3g}" for v in tick_times(span, k)]


def readout_format(span: float) -> str:
    """The format of the time label (``time_label_text``): fixed decimals, three significant
    digits at the scale of the run, ``max(0, 2 - floor(log10 span))`` decimals (``.2f`` for a
    run of 8 time units, so that it reads ``1.25``; ``.1f`` for 10 to 99; ``.0f`` from 100).

    Parameters
    ----------
    span : float
        Length of the clip (> 0).

    Returns
    -------
    str
    """
    span = c.real("span", span, minimum=0.0, strict=True)
    return f".{max(0, 2 - int(np.floor(np.log10(span))))}f"


def time_label_text(time: float, span: float) -> str:
    """What the time label of a clip of length ``span`` reads at clip time ``time``:
    ``"t = "`` and the time written with ``readout_format(span)``, e.g. ``"t = 1.25"`` for
    ``time = 1.2504`` and ``span = 8``.

    Parameters
    ----------
    time : float
        Clip time (>= 0).
    span : float
        Length of the clip (> 0).

    Returns
    -------
    str
    """
    time = c.real("time", time, minimum=0.0)
    return f"t = {time:{readout_format(span)}}"


def label_scale(time: float) -> tuple[float, float, float]:
    """The scale of the time label that makes it read clip time ``time``: ``(1, 1, 1 + time)``.
    The label is flat (z = 0), so its z scale changes nothing on screen; its shader reads the
    time back as ``|M e_z| - 1`` from the label's model matrix ``M`` (``label_time``).

    Parameters
    ----------
    time : float
        Clip time (>= 0).

    Returns
    -------
    (float, float, float)
    """
    time = c.real("time", time, minimum=0.0)
    return (1.0, 1.0, 1.0 + time)


def label_time(scale) -> float:
    """The clip time the time label reads at scale ``scale`` (the inverse of ``label_scale``):
    ``scale_z - 1``.

    Parameters
    ----------
    scale : three floats
        The label's scale.

    Returns
    -------
    float
    """
    return float(scale[2]) - 1.0


#: the time label draws its digits as seven segments a..g, bit k of a mask for segment k
#: (a top, b top right, c bottom right, d bottom, e bottom left, f top left, g middle)
SEGMENTS = {"0": 0b0111111, "1": 0b0000110, "2": 0b1011011, "3": 0b1001111, "4": 0b1100110,
            "5": 0b1101101, "6": 0b1111101, "7": 0b0000111, "8": 0b1111111, "9": 0b1101111}

_LABEL_VERTEX = """
varying vec2 vUv;
varying float vTime;
void main() {
  vUv = uv;
  // the label is flat: its z scale, 1 + t, only carries the clip time t
  vTime = length(modelMatrix[2].xyz) - 1.0;
  gl_Position = projectionMatrix * modelViewMatrix * vec4(position, 1.0);
}
"""

_LABEL_FRAGMENT = """
// "t = 12.34" in CELLS characters: 't', ' ', '=', ' ', INT_DIGITS digits, '.', DECIMALS digits
varying vec2 vUv;
varying float vTime;

float pow10(float k) {
  float p = 1.0;
  for (int j = 0; j < 12; j++) {
    if (float(j) >= k) break;
    p *= 10.0;
  }
  return p;
}

float bit(float mask, float k) {
  return mod(floor((mask + 0.5) / exp2(k)), 2.0);
}

float segment(vec2 p, vec2 a, vec2 b) {
  vec2 pa = p - a, ba = b - a;
  float h = clamp(dot(pa, ba) / dot(ba, ba), 0.0, 1.0);
  return length(pa - ba * h);
}

float mask(float d) {
  MASKS
  return 0.0;
}

// distance from p (x in [0, CHAR], y in [0, 1] of one character) to the lit segments of mask m
float sevenSegments(vec2 p, float m) {
  float x0 = 0.2 * CHAR, x1 = 0.8 * CHAR;
  float dist = 1e3;
  if (bit(m, 0.0) > 0.5) dist = min(dist, segment(p, vec2(x0, 0.9), vec2(x1, 0.9)));
  if (bit(m, 1.0) > 0.5) dist = min(dist, segment(p, vec2(x1, 0.9), vec2(x1, 0.5)));
  if (bit(m, 2.0) > 0.5) dist = min(dist, segment(p, vec2(x1, 0.5), vec2(x1, 0.1)));
  if (bit(m, 3.0) > 0.5) dist = min(dist, segment(p, vec2(x0, 0.1), vec2(x1, 0.1)));
  if (bit(m, 4.0) > 0.5) dist = min(dist, segment(p, vec2(x0, 0.1), vec2(x0, 0.5)));
  if (bit(m, 5.0) > 0.5) dist = min(dist, segment(p, vec2(x0, 0.5), vec2(x0, 0.9)));
  if (bit(m, 6.0) > 0.5) dist = min(dist, segment(p, vec2(x0, 0.5), vec2(x1, 0.5)));
  return dist;
}

void main() {
  float cell = floor(vUv.x * CELLS);
  vec2 p = vec2(fract(vUv.x * CELLS) * CHAR, vUv.y);
  float value = floor(max(vTime, 0.0) * pow10(DECIMALS) + 0.5);   // the time, rounded
  float dist = 1e3;
  float n = cell - 4.0;                                          // place in the number
  if (cell < 0.5) {                                               // 't'
    dist = min(min(segment(p, vec2(0.4 * CHAR, 0.9), vec2(0.4 * CHAR, 0.1)),
                   segment(p, vec2(0.4 * CHAR, 0.1), vec2(0.8 * CHAR, 0.1))),
               segment(p, vec2(0.15 * CHAR, 0.62), vec2(0.75 * CHAR, 0.62)));
  } else if (cell > 1.5 && cell < 2.5) {                          // '='
    dist = min(segment(p, vec2(0.2 * CHAR, 0.35), vec2(0.8 * CHAR, 0.35)),
               segment(p, vec2(0.2 * CHAR, 0.65), vec2(0.8 * CHAR, 0.65)));
  } else if (n > -0.5 && n < INT_DIGITS - 0.5) {                 // integer digits
    float place = INT_DIGITS - 1.0 - n + DECIMALS;
    float p10 = pow10(place);
    if (place < DECIMALS + 0.5 || value + 0.5 >= p10) {           // no leading zeros
      dist = sevenSegments(p, mask(mod(floor((value + 0.5) / p10), 10.0)));
    }
  } else if (DECIMALS > 0.5 && n > INT_DIGITS - 0.5 && n < INT_DIGITS + 0.5) {   // '.'
    dist = length(p - vec2(0.5 * CHAR, 0.1));
  } else if (n > INT_DIGITS + 0.5) {                              // decimals
    float place = DECIMALS - (n - INT_DIGITS);
    dist = sevenSegments(p, mask(mod(floor((value + 0.5) / pow10(place)), 10.0)));
  }
  float alpha = 1.0 - smoothstep(0.07, 0.11, dist);
  if (alpha < 0.01) discard;
  gl_FragColor = vec4(0.2, 0.2, 0.2, alpha);
}
"""


def _compact_glsl(source: str) -> str:
    """``source`` without its comments, indentation and blank lines (the page carries the
    shader's text once per label)."""
    lines = (line.split("//")[0].strip() for line in source.splitlines())
    return "\n".join(line for line in lines if line)


def _label_cells(span: float) -> tuple[int, int, int]:
    """``(cells, integer digits, decimals)`` of the time label of a clip of length ``span``:
    ``"t = "``, the integer digits of ``span`` written with ``readout_format(span)``, and its
    point and decimals."""
    fmt = readout_format(span)
    decimals = int(fmt[1:-1])
    integer = len(f"{span:{fmt}}".split(".")[0])
    return 4 + integer + (1 + decimals if decimals else 0), integer, decimals


def time_label(span: float, name: str = "tclock", start: float = 0.0,
               material: three.ShaderMaterial | None = None) -> three.Mesh:
    """The label "t = 1.25" above the time bar: a flat Mesh whose shader writes, in seven
    segment digits, the clip time carried by its z scale (``label_scale``), with the
    decimals of ``readout_format(span)``.  A keyframe track on ``{name}.scale``
    (``time_bar_tracks``) makes it read the clip's time while it plays; before the first play
    (and after stop) it reads ``start``.

    Parameters
    ----------
    span : float
        Length of the clip (> 0).
    name : str
        Name of the label (its track addresses ``{name}.scale``).
    start : float
        Clip time the label reads before the first play.
    material : pythreejs.ShaderMaterial or None
        The material of another label of the same ``span`` to share (the page then carries
        the shader once), or None for a new one.

    Returns
    -------
    pythreejs.Mesh
    """
    cells, integer, decimals = _label_cells(span)
    width = cells * _TIME_CHAR * _TIME_HEIGHT
    if material is None:
        material = _label_material(cells, integer, decimals)
    return three.Mesh(three.PlaneGeometry(width=width, height=_TIME_HEIGHT), material,
                      name=name, frustumCulled=False,
                      position=(float(-_BAR_HALF + width / 2),
                                _BAR_Y + 0.012 + _TIME_GAP + _TIME_HEIGHT / 2, _BAR_Z),
                      scale=label_scale(start))


def _label_material(cells: int, integer: int, decimals: int) -> three.ShaderMaterial:
    """The shader of a time label of ``cells`` characters, ``integer`` digits before the
    point and ``decimals`` after it."""
    masks = "\n  ".join(f"if (d < {int(ch) + 0.5}) return {float(m)};"
                         for ch, m in SEGMENTS.items())
    return three.ShaderMaterial(
        vertexShader=_compact_glsl(_LABEL_VERTEX),
        fragmentShader=_compact_glsl(_LABEL_FRAGMENT.replace("MASKS", masks)),
        defines={"CELLS": f"{cells:.1f}", "INT_DIGITS": f"{integer:.1f}",
                 "DECIMALS": f"{decimals:.1f}", "CHAR": f"{_TIME_CHAR:.3f}"},
        transparent=True, depthTest=False, depthWrite=False)


def bead_position(time: float, span: float) -> tuple[float, float, float]:
    """Where the bead of the time bar stands at clip time ``time`` of a clip of length
    ``span``: ``u = -L + 2 L time / span`` along the bar of half length ``L``.

    Parameters
    ----------
    time, span : float
        Clip time and clip length.

    Returns
    -------
    (float, float, float)
        In camera coordinates.
    """
    return (float(-_BAR_HALF + 2 * _BAR_HALF * time / span), _BAR_Y, _BAR_Z)


def bead_time(position, span: float) -> float:
    """The clip time at which the bead stands at ``position`` (the inverse of
    ``bead_position``).

    Parameters
    ----------
    position : three floats
        The bead's position, in camera coordinates.
    span : float
        Length of the clip.

    Returns
    -------
    float
    """
    return float((position[0] + _BAR_HALF) / (2 * _BAR_HALF) * span)


def controls_row(action, info) -> widgets.HBox:
    """The row under a player's canvas: its play buttons and the line that names them,
    wrapping onto further lines in a narrow column.  (The time is read on the canvas: the bead
    on the numbered bar and the label above it.)

    Parameters
    ----------
    action : pythreejs.AnimationAction
        The play / pause / stop / repeat buttons.
    info : ipywidgets.HTML
        The line about the buttons and the run.

    Returns
    -------
    ipywidgets.HBox
    """
    info.layout.flex = "1 1 220px"
    info.layout.min_width = "0"
    return widgets.HBox([action, info],
                        layout=widgets.Layout(align_items="center", flex_flow="row wrap",
                                              max_width="100%"))


def time_bar(span: float, clock_name: str = "clock", start: float = 0.0,
             label_material: three.ShaderMaterial | None = None):
    """The heads-up time bar of a player, in camera coordinates: the bar, ``N_TICKS`` ticks
    numbered with ``tick_labels(span)`` (one text sprite under the bar), the time label
    ``t{clock_name}`` above it (``time_label``) and the red bead named ``clock_name``, both
    at ``start``.  ``time_bar_tracks`` moves them with a clip.

    Parameters
    ----------
    span : float
        Length of the clip (> 0).
    clock_name : str
        Name of the bead (its keyframe track addresses ``{clock_name}.position``).
    start : float
        Clip time at which the bead stands before the first play.
    label_material : pythreejs.ShaderMaterial or None
        Passed to ``time_label`` (the material of another bar of the same ``span``).

    Returns
    -------
    (list, pythreejs.Mesh)
        The objects of the bar, the bead last, and the bead.
    """
    # the bar and its ticks: one set of line segments (one object in the page, not six)
    pairs = [[[-_BAR_HALF, _BAR_Y, _BAR_Z], [_BAR_HALF, _BAR_Y, _BAR_Z]]] + [
        [[u, _BAR_Y - 0.012, _BAR_Z], [u, _BAR_Y + 0.012, _BAR_Z]]
        for u in np.linspace(-_BAR_HALF, _BAR_HALF, N_TICKS)]
    lines = three.LineSegments(
        geometry=three.BufferGeometry(attributes={"position": three.BufferAttribute(
            array=np.asarray(pairs, dtype=np.float32).reshape(-1, 3), normalized=False)}),
        material=three.LineBasicMaterial(color="#555555"), name="bar")
    labels = tick_labels(span)
    cell = max(len(s) for s in labels) + 4             # characters per tick, label centred
    text = "".join(s.center(cell) for s in labels)
    # the tick centres are (j + 1/2) cell characters from the left: the line spans 2 L N / (N - 1)
    width = 2 * _BAR_HALF * N_TICKS / (N_TICKS - 1)
    aspect = (_LABEL_SIZE + 2) / (_CHAR_WIDTH * _LABEL_SIZE * len(text) + 2)
    numbers = three.Sprite(
        material=three.SpriteMaterial(
            map=three.TextTexture(string=text, size=_LABEL_SIZE, color="#333333",
                                  fontFace="monospace", squareTexture=False,
                                  # a text texture is not a power of two: no mipmaps
                                  minFilter="LinearFilter", generateMipmaps=False),
            transparent=True, depthTest=False),
        scale=(width, width * aspect, 1.0), position=(0.0, _BAR_Y - _LABEL_GAP, _BAR_Z),
        name="ticks")
    clock = three.Mesh(three.SphereGeometry(radius=0.014, widthSegments=12, heightSegments=8),
                       three.MeshBasicMaterial(color="#d62728"), name=clock_name,
                       position=bead_position(start, span))
    label = time_label(span, f"t{clock_name}", start, label_material)
    return [lines, numbers, label, clock], clock


def time_bar_tracks(times, span: float, clock_name: str = "clock") -> list:
    """The keyframe tracks that move a time bar (``time_bar(span, clock_name)``) with a clip
    whose keyframes stand at clip times ``times``: the bead at ``bead_position(t_k, span)``, and
    the label's scale at ``label_scale(0)`` and ``label_scale(span)`` (two keys: it is linear in
    the clip time), so that at every clip time t (interpolated linearly, as the animation
    mixer does) the bead stands at t and the label reads t.

    Parameters
    ----------
    times : array of float
        Clip times of the keyframes, increasing, from 0 to ``span``.
    span : float
        Length of the clip (> 0).
    clock_name : str
        Name of the bead.

    Returns
    -------
    list of pythreejs.VectorKeyframeTrack
        The bead's track, then the label's.
    """
    times = np.asarray(times, dtype=np.float32)
    bead = np.array([bead_position(tk, span) for tk in times], dtype=np.float32)
    # the label's scale is linear in the clip time: its two ends hold it exactly
    ends = np.array([0.0, span], dtype=np.float32)
    scale = np.array([label_scale(tk) for tk in ends], dtype=np.float32)
    return [three.VectorKeyframeTrack(name=f"{clock_name}.position", times=times,
                                      values=bead.ravel()),
            three.VectorKeyframeTrack(name=f"t{clock_name}.scale", times=ends,
                                      values=scale.ravel())]


def frames_for_budget(n_tokens: int, n_frames: int, max_bytes: int = 900_000,
                      max_frames: int | None = None, colours: int | None = None) -> int:
    """How many frames a player of ``n_tokens`` tokens can embed within ``max_bytes``.

    ``min(k, max_frames, n_frames)`` with ``k`` the frames that fit; ValueError when fewer
    than two frames fit.

    Parameters
    ----------
    n_tokens : int
        Tokens drawn.
    n_frames : int
        Frames available.
    max_bytes : int
        The page budget.
    max_frames : int or None
        A cap of the caller's.
    colours : int or None
        Colours of the drawn tokens (from 1 to ``n_tokens``); None: as many as can be, the
        smaller of ``n_tokens`` and ``MAX_COLOURS``.

    Returns
    -------
    int

    Raises
    ------
    ValueError
        When fewer than two frames fit.
    """
    n_tokens = c.integer("n_tokens", n_tokens, minimum=1)
    if colours is not None:
        colours = c.integer("colours", colours, minimum=1)
        if colours > n_tokens:
            raise ValueError(f"colours must be at most n_tokens={n_tokens} (each token has one "
                             f"colour), got {colours}")
    return _frames_within(*_player_bytes(n_tokens, colours), n_frames, max_bytes, max_frames,
                         f"{n_tokens} tokens")


def _player_bytes(m: int, colours: int | None = None) -> tuple[int, int]:
    """Embedded bytes ``(fixed, per_frame)`` of a player of ``m`` tokens in ``colours`` colours
    (no trails): the scene, the tokens and their materials once,
    ``BYTES_FIXED + BYTES_PER_TOKEN m + BYTES_PER_COLOUR colours``, and each keyframe of the m
    token tracks and the clock, ``BYTES_PER_TOKEN_FRAME (m + 1)``.  ``colours`` None: the most
    a player of m tokens can have, ``min(m, MAX_COLOURS)``."""
    colours = min(m, MAX_COLOURS) if colours is None else colours
    return (BYTES_FIXED + BYTES_PER_TOKEN * m + BYTES_PER_COLOUR * colours,
            BYTES_PER_TOKEN_FRAME * (m + 1))


def _frames_within(fixed, per_frame, n_frames, max_bytes, max_frames, what, advice=""):
    """``min(k, max_frames, n_frames)`` for the most frames ``k`` with
    ``fixed + k * per_frame <= max_bytes`` (the budget rule of every view that embeds frames):
    ``fixed`` and ``per_frame`` are the view's bytes once and per frame, ``n_frames`` (>= 1),
    ``max_bytes`` (>= 1) and ``max_frames`` (None or >= 2) are checked, and a ValueError naming
    ``what`` and ending with ``advice`` says when fewer than two frames fit.
    """
    n_frames = c.integer("n_frames", n_frames, minimum=1)
    max_bytes = c.integer("max_bytes", max_bytes, minimum=1)
    if max_frames is not None:
        max_frames = c.integer("max_frames", max_frames, minimum=2)
    k = int((max_bytes - fixed) // per_frame)
    if k < 2:
        raise ValueError(f"max_bytes={max_bytes} is too small for {what} (two frames need "
                         f"{fixed + 2 * per_frame}){advice}")
    if max_frames is not None:
        k = min(k, max_frames)
    return min(k, n_frames)


#: keyframes a view in a live kernel keeps, where it can, when it draws fewer tokens to fit
LIVE_MIN_FRAMES = 24


def _static_page() -> bool:
    """Whether this execution writes a static page (``USAAV_EDU_STATIC_PAGE=1``)."""
    return not live_kernel()


def _tokens_within(cost, n_tokens, n_frames, max_bytes, max_frames, what, advice=""):
    """``(m, k, note)``: the tokens ``m <= n_tokens`` and frames ``k`` a view draws within
    ``max_bytes``, where ``cost(m) = (fixed, per_frame)`` are its bytes for ``m`` drawn tokens.

    The page budget belongs to the static page.  All ``n_tokens`` tokens, and the frames
    ``_frames_within`` allows, whenever two frames fit.  When they do not, a static page
    (``USAAV_EDU_STATIC_PAGE=1``) raises ValueError as ``_frames_within`` does (its author
    chooses what the page shows); a live kernel does not: it draws the most tokens ``m`` for
    which ``min(n_frames, max_frames, LIVE_MIN_FRAMES)`` frames fit (else two), and ``note``
    says so in one line ('' when every token is drawn).  ValueError in both when not even one
    token fits with two frames (``max_bytes`` below what the view itself costs).

    Parameters
    ----------
    cost : callable
        ``m -> (fixed, per_frame)`` bytes, increasing in ``m``.
    n_tokens : int
        Tokens the view would draw (>= 1).
    n_frames, max_bytes, max_frames, what, advice
        As for ``_frames_within``.

    Returns
    -------
    (int, int, str)
    """
    n_tokens = c.integer("n_tokens", n_tokens, minimum=1)
    try:
        return n_tokens, _frames_within(*cost(n_tokens), n_frames, max_bytes, max_frames, what,
                                        advice), ""
    except ValueError:
        if _static_page():
            raise

    def fits(m, k):
        fixed, per_frame = cost(m)
        return fixed + k * per_frame <= max_bytes

    want = max(2, min(n_frames, LIVE_MIN_FRAMES, max_frames or LIVE_MIN_FRAMES))
    for k_wanted in dict.fromkeys((want, 2)):
        if not fits(1, k_wanted):
            continue
        lo, hi = 1, n_tokens                      # the most tokens m with fits(m, k_wanted)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if fits(mid, k_wanted) else (lo, mid - 1)
        k = _frames_within(*cost(lo), n_frames, max_bytes, max_frames, what, advice)
        return lo, k, (f"max_bytes={max_bytes} holds {lo} of the {n_tokens} tokens with {k} "
                       f"frames: the view draws those (raise max_bytes to see all)")
    fixed, per_frame = cost(1)
    raise ValueError(f"max_bytes={max_bytes} is too small for {what}: not even one token fits "
                     f"(two frames need {fixed + 2 * per_frame}){advice}")


class TrajectoryPlayer(SphereView):
    """Play a ``Trajectory`` on the sphere (client-side keyframe animation).

    Parameters
    ----------
    trajectory : Trajectory
        What to play.  The view starts at its first frame; press play.
    duration : float
        Seconds of wall time for the whole run (finite, > 0).
    max_bytes : int
        Budget for the embedded state of this widget; frames are subsampled to fit, and in a
        live kernel tokens too when two frames of all of them do not (``budget_note`` then
        says so; a static page refuses instead).
    max_frames : int, optional
        Upper bound (>= 2) on the number of frames (keyframes) kept.
    loop : {"LoopRepeat", "LoopOnce", "LoopPingPong"}
        What happens at the end of the run.
    Other keyword arguments go to ``SphereView``.
    """

    def __init__(self, trajectory, *, duration: float = 8.0, max_bytes: int = 900_000,
                 max_frames: int | None = None, loop: str = "LoopRepeat", frame: int = 0,
                 **kwargs):
        c.keywords(type(self), kwargs)
        c.trajectory(trajectory)
        self.duration = c.real("duration", duration, minimum=0.0, strict=True)
        self.max_bytes = c.integer("max_bytes", max_bytes, minimum=1)
        self.max_frames = None if max_frames is None else c.integer("max_frames", max_frames, minimum=2)
        if loop not in LOOPS:
            raise ValueError(f"loop must be one of {LOOPS}, got {c.shown(loop)}")
        self.loop = loop
        self.action = None
        self.frame_indices = np.array([], dtype=int)
        self.tracks: list[three.VectorKeyframeTrack] = []
        self.time_info = widgets.HTML()
        self.frame = c.integer("frame", frame)
        self.budget_note = ""
        self.budget_label = None        # a one-line note, made only when tokens are dropped
        if not _static_page():
            kwargs = self._live_budget(trajectory, kwargs)
        super().__init__(trajectory, frame=self.frame, **kwargs)
        self._build_clock()
        self._build_animation()

    # ------------------------------------------------------------- time bar
    def _build_clock(self):
        # the bar's numbers and the bead's place depend on the run: _build_animation fills it
        self.clock = None
        self.hud = three.Group(name="hud")
        self.camera.children = list(self.camera.children) + [self.hud]

    def _live_budget(self, trajectory, kwargs: dict) -> dict:
        """``kwargs`` with ``max_tokens`` lowered where two frames of every drawn token do not
        fit ``max_bytes`` (a live kernel; see ``_tokens_within``), and ``budget_note`` set."""
        x = getattr(trajectory, "x", None)
        shape: tuple[int, ...] = () if x is None else np.shape(x)
        if len(shape) != 3 or min(shape) < 1:
            return kwargs                          # SphereView names what is wrong with it
        default = inspect.signature(SphereView.__init__).parameters["max_tokens"].default
        max_tokens = c.integer("max_tokens", kwargs.get("max_tokens", default), minimum=1)
        trails = bool(kwargs.get("trails", False))

        def cost(m):
            fixed, per_frame = _player_bytes(m)
            # the trails take at most a third of what is left (``_trail_budget``), and at
            # least one segment per token
            trail = max(64 * m, min(TRAIL_BYTES, (self.max_bytes - fixed) / 3)) if trails else 0
            return fixed + int(trail), per_frame

        m = min(shape[1], max_tokens)
        drawn, _, self.budget_note = _tokens_within(cost, m, shape[0], self.max_bytes,
                                                    self.max_frames, f"{m} tokens")
        if drawn < m:
            self.budget_label = widgets.HTML(f"<span style='font-size:12px;color:#8a4b00'>"
                                             f"{self.budget_note}</span>")
            kwargs = {**kwargs, "max_tokens": drawn}
        return kwargs

    def _trail_budget(self, m: int) -> float:
        # trails share the player's budget with the keyframes: at most a third of what is left
        room = self.max_bytes - _player_bytes(m)[0]
        return max(0.0, min(super()._trail_budget(m), room / 3))

    # ------------------------------------------------------------ animation
    def show(self, trajectory, frame: int | None = None, animate: bool = True):
        """Draw frame ``frame`` (default: the player's ``frame``) of ``trajectory``, and
        rebuild the animation unless ``animate`` is false (then call ``rebuild_animation``).

        Parameters
        ----------
        trajectory : Trajectory
            The run.
        frame : int or None
            The frame drawn.
        animate : bool
            Rebuild the animation.
        """
        animate = c.flag("animate", animate)
        super().show(trajectory, frame=self.frame if frame is None else frame)
        if animate and getattr(self, "hud", None) is not None:
            self._build_animation()

    def rebuild_animation(self):
        """Rebuild the keyframe tracks from the trajectory on display."""
        self._build_animation()

    def _build_animation(self):
        traj = self.trajectory
        x = np.asarray(traj.x)
        t = np.asarray(traj.t, dtype=float)
        x = x[:, self.token_index]
        n_frames, n = x.shape[:2]
        k = frames_for_budget(n, n_frames, self.max_bytes - self.trail_bytes, self.max_frames,
                              colours=len(set(self._colors)))
        idx = subsample(n_frames, k)
        times = (t[idx] - t[0]).astype(np.float32)
        span = float(times[-1]) if times[-1] > 0 else 1.0
        p = project_3d(x[idx], self.coords).astype(np.float32)        # (k, n, 3)
        tracks = [three.VectorKeyframeTrack(name=f"p{i}.position", times=times,
                                            values=np.ascontiguousarray(p[:, i, :]).ravel())
                  for i in range(n)]
        # the view opens at the frame on display: the bead stands at its time, and so does the
        # action (a play then starts from t = 0)
        start = float(min(max(t[self.shown_frame] - t[0], 0.0), span))
        old_hud = list(self.hud.children)
        hud, self.clock = time_bar(span, "clock", start)
        self.hud.children = hud
        for obj in old_hud:
            obj.close()
        tracks += time_bar_tracks(times, span, "clock")
        clip = three.AnimationClip(tracks=tracks, duration=span)
        mixer = three.AnimationMixer(self.scene)
        action = three.AnimationAction(mixer, clip, self.scene, loop=self.loop,
                                       timeScale=span / self.duration,
                                       clampWhenFinished=True, time=start)
        old = (self.action, self.tracks)
        self.action, self.tracks, self.frame_indices = action, tracks, idx
        self.time_info.value = (
            f"<span style='font-size:12px'>{BUTTONS_TEXT} "
            f"Press &#9654; to play t = {t[0]:g} to {t[-1]:g} "
            f"({len(idx)} of {n_frames} frames, {self.duration:g} s); the red bead on the bar "
            f"and the label above it mark the time</span>")
        self.children = [self.children[0],
                         controls_row(action, self.time_info),
                         self.caption] + ([self.budget_label] if self.budget_label is not None else [])
        old_action, old_tracks = old
        if old_action is not None:
            old_clip, old_mixer = old_action.clip, old_action.mixer
            old_action.close()
            old_clip.close()
            old_mixer.close()
            for track in old_tracks:
                track.close()

    @property
    def keyframes(self) -> np.ndarray:
        """(k, n, 3) token positions held by the tracks, frame by frame."""
        vals = [np.asarray(tr.values).reshape(-1, 3) for tr in self.tracks
                if tr.name.startswith("p")]
        return np.stack(vals, axis=1)

    @property
    def keyframe_times(self) -> np.ndarray:
        """Times of the keyframes (model time, starting at 0)."""
        return np.asarray(self.tracks[0].times, dtype=float)

    @property
    def bead_time(self) -> float:
        """The clip time (model time since the first frame) at which the bead stands before
        the first play: the time of the frame on display."""
        return bead_time(self.clock.position, float(self.keyframe_times[-1]) or 1.0)

    @property
    def label(self):
        """The time label above the bar (``time_label``), a ``pythreejs.Mesh``."""
        return next(o for o in self.hud.children if o.name == "tclock")

    def _clip_time(self, time):
        """The keyframe times and ``time`` checked to lie in ``[0, clip length]``."""
        times = self.keyframe_times
        return times, c.bounded_real("time", time, 0.0, float(times[-1]) + 1e-6)

    def label_text(self, time: float) -> str:
        """What the time label reads at clip time ``time`` of a play: its scale track
        interpolated linearly in time, as the browser's animation mixer does, read back with
        ``label_time`` and written with ``time_label_text``.

        Parameters
        ----------
        time : float
            Clip time, in ``[0, clip length]``.

        Returns
        -------
        str
        """
        times, time = self._clip_time(time)
        track = next(tr for tr in self.tracks if tr.name == "tclock.scale")
        z = np.asarray(track.values, dtype=float).reshape(-1, 3)[:, 2]
        shown = label_time((1.0, 1.0, np.interp(time, np.asarray(track.times, dtype=float), z)))
        return time_label_text(max(shown, 0.0), float(times[-1]) or 1.0)

    def keyframe_state(self, time: float) -> np.ndarray:
        """(n, 3) token positions the clip shows at clip time ``time``: the keyframes
        interpolated linearly in time, as the browser's animation mixer does.

        ``time`` is a clip time, as in :meth:`label_text`; returns an ndarray.
        """
        times, time = self._clip_time(time)
        key = self.keyframes
        j = int(np.clip(np.searchsorted(times, time, side="right") - 1, 0, len(times) - 1))
        if j == len(times) - 1:
            return key[j].astype(float)
        w = (time - times[j]) / (times[j + 1] - times[j])
        return ((1 - w) * key[j] + w * key[j + 1]).astype(float)
