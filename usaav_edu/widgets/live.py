r"""Live views: the particle system re-simulated in the reader's browser, with no kernel.

``LiveView(model, ...)`` is an element of class ``usaav-live`` whose settings travel as JSON
(``data-usaav-live``).  In the built book, the page also holds the browser integrator
``_static/live/usaav_live.mjs`` (the package's formulas for six models, RK4 with the
retraction; held to :func:`usaav_edu.simulate` by ``tests/test_live_module.py``) and three.js:
the reader moves a slider over its whole range, presses play, draws new tokens, and the page
re-simulates

.. math::

    \dot y_i = P_{y_i}\Big(\frac{1}{N_i} \sum_j b_{ij}\, \varphi'(\langle y_i, y_j\rangle)\,
    y_j\Big), \qquad y_i = G(\xi_i)\, x_i,

from ``n`` tokens drawn uniformly on the sphere, at the package's default RK4 step
(:func:`usaav_edu.particles.solver.default_dt`).  The tokens are the browser's own draw (its
seed is not NumPy's); every other number is the package's.

In a running notebook the element shows a line that says where it plays; use
:class:`usaav_edu.widgets.Explorer` or :func:`usaav_edu.simulate` there.
"""
from __future__ import annotations

import html
import itertools
import json

from .. import _validate as v
from ..sphere import random_frames
from . import _checks as c
from .colors import CYCLIC_STEPS, PLAIN_COLOR, PROMPT_PALETTE, cyclic_color

__all__ = ["LiveView", "SLIDERS", "MODELS", "N_MAX"]

MODELS = ("usa", "sa", "rope", "distance_bias", "cosine_bias", "prefix_gauge")
"""The models the browser integrator runs."""

LABELS = {"rope": "position", "distance_bias": "position", "cosine_bias": "position",
          "prefix_gauge": "prompt"}

N_MAX = 256
"""The most tokens a live view draws (the frame rate is measured at this n: README)."""

SLIDERS = {
    "beta": {"label": "β", "description": "beta, the inverse temperature", "min": 0.1,
             "max": 4.0, "step": 0.01, "limits": (0.1, 10.0)},
    "omega": {"label": "ω", "description": "omega, the frequency", "min": 0.0, "max": 2.5,
              "step": 0.01, "limits": (0.0, 10.0)},
    "lam": {"label": "λ", "description": "lambda, the decay rate of the distance bias",
            "min": 0.0, "max": 2.0, "step": 0.01, "limits": (0.0, 10.0)},
    "prompts": {"label": "K", "description": "K, the number of prompts", "min": 1, "max": 8,
                "step": 1, "limits": (1, 8)},
    "n": {"label": "n", "description": "n, the number of tokens", "min": 8, "max": N_MAX,
          "step": 1, "limits": (8, N_MAX)},
}
"""The sliders a live view can show: label, screen-reader description, default range, step and
the limits a view's ``ranges`` may reach."""

BIASES = {"cosine_bias": "cosine, cos(ω(ξ − ζ))", "distance_bias": "distance, exp(−λ|ξ − ζ|)"}

_ids = itertools.count(1)


def _range(name, spec, ranges):
    lo, hi = spec["min"], spec["max"]
    if name in ranges:
        pair = ranges[name]
        if isinstance(pair, (str, bytes)) or len(pair) != 2:
            raise TypeError(f"ranges[{name!r}] must be a pair (min, max), got {v.shown(pair)}")
        lo = v.real_scalar(f"ranges[{name!r}][0]", pair[0], minimum=spec["limits"][0])
        hi = v.real_scalar(f"ranges[{name!r}][1]", pair[1], maximum=spec["limits"][1])
        if not lo < hi:
            raise ValueError(f"ranges[{name!r}] must have min < max, got {v.shown(pair)}")
    return lo, hi


class LiveView:
    """A live explorable of the static book: sliders, play and pause, a new seed, in the page.

    Parameters
    ----------
    model : {"usa", "sa", "rope", "distance_bias", "cosine_bias", "prefix_gauge"}
        The model (``usaav_edu.widgets.live.MODELS``); with ``biases``, the bias shown first.
    d : int
        Dimension, 2 or 3.
    n : int
        Tokens at the start, 8 to 256 (``usaav_edu.widgets.live.N_MAX``); the reader moves
        it with the slider "n".
    beta, omega, lam : float
        The model's parameters where no slider moves them (and the sliders' first values):
        ``omega`` is RoPE's frequency or the cosine bias's, ``lam`` the distance bias's rate.
    prompts : int
        The number of prompts K of a prefix gauge, 1 to 8; token i has prompt ``i % K`` and
        the frames are ``usaav_edu.sphere.random_frames(K, d, seed=frame_seed)``.
    t_max : float
        The time a run plays to.
    seed : int
        The first draw of tokens (the button "new seed" moves to the next).
    frame_seed : int
        The seed of the prompts' frames.
    sliders : sequence of str
        The parameters the reader moves, among ``"beta"``, ``"omega"``, ``"lam"`` and
        ``"prompts"`` (``usaav_edu.widgets.live.SLIDERS``); the slider ``"n"`` is always there.
    ranges : dict or None
        ``{name: (min, max)}`` within the limits of ``usaav_edu.widgets.live.SLIDERS``.
    biases : sequence of str or None
        ``("cosine_bias", "distance_bias")`` adds a menu that switches between the two biases
        (positions ``2 pi i / n``).
    title : str or None
        The caption above the view (by default the model's name).
    width, height : int
        The canvas in pixels.

    Raises
    ------
    TypeError, ValueError
        For an argument of the wrong kind or value, named in the message.
    """

    def __init__(self, model: str = "usa", *, d: int = 3, n: int = 32, beta: float = 1.0,
                 omega: float = 1.0, lam: float = 1.0, prompts: int = 3, t_max: float = 20.0,
                 seed: int = 0, frame_seed: int = 0, sliders=("beta",), ranges=None,
                 biases=None, title: str | None = None, width: int = 460, height: int = 400):
        if not isinstance(model, str) or model not in MODELS:
            raise ValueError(f"model must be one of {MODELS}, got {v.shown(model)}")
        d = v.integer("d", d, minimum=2)
        if d > 3:
            raise ValueError(f"d must be 2 or 3, got {d}")
        n = v.integer("n", n, minimum=SLIDERS["n"]["min"])
        if n > N_MAX:
            raise ValueError(f"n must be at most {N_MAX}, got {n}")
        values = {"n": n, "beta": v.real_scalar("beta", beta),
                  "omega": v.real_scalar("omega", omega),
                  "lam": v.real_scalar("lam", lam, minimum=0.0),
                  "prompts": v.integer("prompts", prompts, minimum=1)}
        if values["beta"] == 0 and model != "cosine_bias":
            raise ValueError("beta must not be 0")
        if values["prompts"] > SLIDERS["prompts"]["max"]:
            raise ValueError(f"prompts must be at most {SLIDERS['prompts']['max']}, got {prompts}")
        t_max = v.real_scalar("t_max", t_max, minimum=0.0, strict=True)
        if isinstance(sliders, (str, bytes)):
            raise TypeError(f"sliders must be a sequence of names, got {v.shown(sliders)}")
        sliders = list(sliders)
        for name in sliders:
            if name not in SLIDERS or name == "n":
                raise ValueError(f"sliders must name parameters among "
                                 f"{[k for k in SLIDERS if k != 'n']}, got {v.shown(name)}")
        if len(set(sliders)) != len(sliders):
            raise ValueError(f"sliders must not repeat a name, got {sliders}")
        ranges = {} if ranges is None else ranges
        if not isinstance(ranges, dict):
            raise TypeError(f"ranges must be a dict or None, got {type(ranges).__name__}")
        for name in ranges:
            if name not in sliders and name != "n":
                raise ValueError(f"ranges names {name!r}, which is not a slider of this view")
        if biases is not None:
            biases = list(biases)
            if sorted(biases) != sorted(BIASES) or model not in BIASES or d != 3:
                raise ValueError(f"biases must be {tuple(BIASES)} (in any order) with model one of "
                                 f"them and d = 3, got biases={v.shown(biases)}, "
                                 f"model={model!r}, d={d}")
            values["bias"] = model
        specs = []
        for name in [*sliders, "n"]:
            lo, hi = _range(name, SLIDERS[name], ranges)
            if not lo <= values[name] <= hi:
                raise ValueError(f"{name} = {values[name]:g} is outside the range of its slider, "
                                 f"[{lo:g}, {hi:g}]")
            spec = {k: val for k, val in SLIDERS[name].items() if k != "limits"}
            specs.append({**spec, "name": name, "min": lo, "max": hi})
        if model == "prefix_gauge":
            top = int(max([values["prompts"]]
                          + [s["max"] for s in specs if s["name"] == "prompts"]))
            frames = {str(k): random_frames(k, d, seed=v.integer("frame_seed", frame_seed,
                                                                 minimum=0)).tolist()
                      for k in range(1, top + 1)}
        else:
            frames = None
        self.config = {
            "id": f"usaav-live-{next(_ids)}", "model": model, "d": d, "tMax": t_max,
            "seed": v.integer("seed", seed, minimum=0), "labels": LABELS.get(model, "none"),
            "values": values, "sliders": specs, "frames": frames,
            "biases": None if biases is None else [[b, BIASES[b]] for b in biases],
            "title": c.text("title", title, optional=True) or f"live: {model.replace('_', ' ')}",
            "width": v.integer("width", width, minimum=100),
            "height": v.integer("height", height, minimum=100),
            "colors": {"plain": PLAIN_COLOR, "prompts": list(PROMPT_PALETTE),
                       "cyclic": [cyclic_color(k / CYCLIC_STEPS) for k in range(CYCLIC_STEPS)]},
        }

    def _repr_html_(self) -> str:
        cfg = self.config
        data = html.escape(json.dumps(cfg, separators=(",", ":")), quote=True)
        return (f'<div class="usaav-live" id="{cfg["id"]}" role="group" '
                f'aria-label="{html.escape(cfg["title"])}" data-usaav-live="{data}">'
                f'<p class="usaav-live-fallback">{html.escape(cfg["title"])}: a live view. It '
                "re-simulates the tokens in the pages of the book, with no kernel; in a "
                "notebook, run usaav_edu.simulate or an Explorer instead.</p></div>")

    def __repr__(self) -> str:
        cfg = self.config
        moved = ", ".join(s["name"] for s in cfg["sliders"])
        return f"LiveView({cfg['model']!r}, d={cfg['d']}, sliders: {moved})"
