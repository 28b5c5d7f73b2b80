"""``ExperimentDashboard``: move a slider, re-simulate a standard experiment, redraw.

The dashboard builds its system with ``usaav_edu.particles.experiments.setup`` and integrates it with
``usaav_edu.simulate``; it holds no numerics of its own.  Changes are debounced: sliders report
only when released, and changes that arrive within ``debounce`` seconds of each other cause one
re-simulation.  An update simulates, redraws the sphere at the final state and the energy
plot, and then rebuilds the player's keyframes (so play shows the new run).  ``last_timing``
records the cost of each step of the last update, in seconds.

Honesty about the kernel.  The controls re-simulate in Python, so they work only where a Python
kernel runs (JupyterLab, Colab, Binder).  A static page (the built book) shows the widget state
saved when the notebook was executed, and there no Python answers a moved slider.  So a
dashboard built for a static page (``live=False``, or ``live=None`` with the environment variable
``USAAV_EDU_STATIC_PAGE=1``, which the book build sets) disables every control and shows a note
that links to "Running the notebooks"; the picture, the energy plot's title and the disabled
controls then all describe the one run that was saved.  In a live kernel the controls are
enabled and the note is absent.  A static page cannot tell by itself whether a kernel is
attached (the saved state is all it has), which is why the choice is made where the notebook is
executed.

The picture never disagrees with the controls: the energy plot's title names every parameter
of the run on display, and when a re-simulation fails (bad combination, numerical failure) the
controls are set back to that run and the status line says why.
"""
from __future__ import annotations

import asyncio
import html
import time

import ipywidgets as widgets
import numpy as np

from .._validate import float_array
from ..particles import experiments, solver
from . import _checks as c
from .player import TrajectoryPlayer
from .state import STATIC_ENV, live_kernel  # noqa: F401  (the dashboard's public names)

#: (min, max, step) of each control; initial values outside the range are refused
RANGES = {
    "n": (8, 256, 8),
    "beta": (0.1, 8.0, 0.1),
    "omega": (0.25, 4.0, 0.25),
    "n_prompts": (1, 8, 1),
    "seed": (0, 10_000, 1),
}


#: CSS class of a dashboard's root (the browser checks find dashboards by it)
DASHBOARD_CLASS = "usaav-dashboard"

#: where the static note sends the reader (the book's "Running the notebooks" section)
RUNNING_NOTEBOOKS_URL = "widgets.html#running-notebooks"


def static_note(url: str = RUNNING_NOTEBOOKS_URL) -> str:
    """HTML of the note a static dashboard shows in place of working controls.

    Parameters
    ----------
    url : str
        Where the note's link goes.

    Returns
    -------
    str
    """
    url = c.text("url", url)
    return ("<div class='usaav-static-note' role='note' style='font-size:13px;line-height:1.35;"
            "border-left:4px solid #e69f00;background:#fff8e6;padding:6px 8px;margin:4px 0'>"
            "<b>These controls need a running Python kernel.</b> On this page they are disabled "
            "and show the run that was saved with it. To move them, open this notebook in "
            f"Jupyter: see <a href='{html.escape(url, quote=True)}'>Running the notebooks</a>.</div>")


def _ticks(lo: float, hi: float, k: int = 5) -> np.ndarray:
    """About ``k`` round tick values covering [lo, hi]."""
    span = hi - lo
    if not np.isfinite(span) or span <= 0:
        return np.array([lo])
    raw = span / k
    mag = 10 ** np.floor(np.log10(raw))
    step = mag * min((1, 2, 2.5, 5, 10), key=lambda m: abs(m * mag - raw))
    return np.arange(np.ceil(lo / step) * step, hi + 1e-9 * span, step)


class EnergyPlot:
    """Energy against time, drawn as inline SVG in an ``ipywidgets.HTML`` (fast to redraw,
    and it shows in the static page).  ``width`` and ``height`` are in pixels, >= 100."""

    def __init__(self, width: int = 320, height: int = 260):
        self.width = c.integer("width", width, minimum=100)
        self.height = c.integer("height", height, minimum=100)
        self.html = widgets.HTML()
        self.t = self.energy = np.zeros(0)

    def draw(self, t, energy, bound=None, title: str = ""):
        """Draw ``energy`` against ``t`` (finite, of one length >= 2, t increasing from first to
        last) and, when ``bound`` is a number, a dashed line at ``bound``.

        Parameters
        ----------
        t, energy : array_like
            Times and energies.
        bound : float or None
            The upper bound to draw.
        title : str
            The plot's title.

        Raises
        ------
        TypeError, ValueError
            For arrays of the wrong shape, order or values.
        """
        t = float_array("t", t, ndim=1)
        e = float_array("energy", energy, ndim=1)
        if t.shape != e.shape or t.size < 2:
            raise ValueError(f"t and energy must have one length >= 2, got shapes {t.shape} and {e.shape}")
        if np.any(np.diff(t) < 0) or not t[-1] > t[0]:
            raise ValueError("t must be non-decreasing with t[-1] > t[0]")
        if bound is not None:
            bound = c.real("bound", bound)
        title = c.text("title", title)
        self.t, self.energy = t, e
        w, h = self.width, self.height
        left, right, top, bottom = 58, 12, 26, 38
        values = e
        if bound is not None:
            values = np.append(values, bound)
        lo, hi = float(values.min()), float(values.max())
        pad = 0.06 * (hi - lo) if hi > lo else 0.05 * max(abs(hi), 1.0)
        lo, hi = lo - pad, hi + pad
        t0, t1 = float(t[0]), float(t[-1])

        def sx(v):
            return left + (w - left - right) * (np.asarray(v) - t0) / (t1 - t0)

        def sy(v):
            return top + (h - top - bottom) * (hi - np.asarray(v)) / (hi - lo)

        parts = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{w}' height='{h}' "
                 f"font-family='sans-serif' font-size='11'>",
                 f"<rect x='{left}' y='{top}' width='{w - left - right}' "
                 f"height='{h - top - bottom}' fill='white' stroke='#888'/>"]
        for v in _ticks(t0, t1):
            x = sx(v)
            parts.append(f"<line x1='{x:.1f}' x2='{x:.1f}' y1='{top}' y2='{h - bottom}' "
                         f"stroke='#eee'/><text x='{x:.1f}' y='{h - bottom + 14}' "
                         f"text-anchor='middle'>{v:g}</text>")
        for v in _ticks(lo, hi):
            y = sy(v)
            parts.append(f"<line x1='{left}' x2='{w - right}' y1='{y:.1f}' y2='{y:.1f}' "
                         f"stroke='#eee'/><text x='{left - 4}' y='{y + 4:.1f}' "
                         f"text-anchor='end'>{v:.4g}</text>")
        if bound is not None:
            y = sy(bound)
            parts.append(f"<line x1='{left}' x2='{w - right}' y1='{y:.1f}' y2='{y:.1f}' "
                         f"stroke='black' stroke-dasharray='5,4'/><text x='{w - right - 4}' "
                         f"y='{y - 4:.1f}' text-anchor='end'>upper bound</text>")
        pts = " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(sx(t), sy(e), strict=True))
        parts.append(f"<polyline points='{pts}' fill='none' stroke='#1f5fa8' stroke-width='2'/>")
        parts.append(f"<text x='{(left + w - right) / 2:.0f}' y='{h - 6}' "
                     f"text-anchor='middle'>t</text>")
        parts.append(f"<text x='14' y='{(top + h - bottom) / 2:.0f}' text-anchor='middle' "
                     f"transform='rotate(-90 14 {(top + h - bottom) / 2:.0f})'>energy</text>")
        parts.append(f"<text x='{left}' y='16' font-size='12'>{html.escape(title)}</text></svg>")
        self.html.value = "".join(parts)


class ExperimentDashboard(widgets.VBox):
    """Controls for a standard experiment, a ``TrajectoryPlayer`` and the energy plot.

    Parameters
    ----------
    name : str
        Initial experiment (see ``usaav_edu.particles.experiments.setup``).
    n, beta, omega, n_prompts, seed : int or float
        Initial control values, within the controls' ranges
        ``RANGES`` (n in [8, 256], beta in [0.1, 8], omega in [0.25, 4], n_prompts in [1, 8],
        seed in [0, 10000]); a value outside is refused, not moved to the nearest end.
    d : int
        Dimension, >= 2 (the generalized RoPE experiment always uses d = 4).
    t_max : float
        Length of every run (finite, > 0).
    n_frames : int
        Frames stored by ``simulate`` (>= 2; the player subsamples them to its page budget).
    debounce : float
        Seconds to wait for further changes before re-simulating (finite, >= 0; 0: at once).
    player : dict
        Keyword arguments for the ``TrajectoryPlayer``.
    live : bool or None
        True: controls enabled (a Python kernel answers them).  False: a static page; controls
        disabled and a note pointing to "Running the notebooks".  None (default): read the
        environment variable ``USAAV_EDU_STATIC_PAGE`` (see
        :func:`~usaav_edu.widgets.state.live_kernel`).
    help_url : str
        Link of the static note (default the book's "Running the notebooks" section).
    """

    def __init__(self, name: str = "rope", *, n: int = 64, beta: float = 1.0,
                 omega: float = 1.0, n_prompts: int = 3, seed: int = 0, d: int = 3,
                 t_max: float = 20.0, n_frames: int = 101, debounce: float = 0.3,
                 player: dict | None = None, live: bool | None = None,
                 help_url: str = RUNNING_NOTEBOOKS_URL, **kwargs):
        c.keywords(type(self), kwargs)
        names = [value for _, value in experiments.choices()]
        if name not in names:
            raise ValueError(f"name must be one of {names}, got {c.shown(name)}")
        start = {"n": c.integer("n", n), "beta": c.real("beta", beta), "omega": c.real("omega", omega),
                 "n_prompts": c.integer("n_prompts", n_prompts), "seed": c.integer("seed", seed)}
        for key, value in start.items():
            lo, hi, _ = RANGES[key]
            if not lo <= value <= hi:
                raise ValueError(f"{key} must lie in [{lo:g}, {hi:g}] (the range of its control), got {value:g}")
        self.d = c.integer("d", d, minimum=2)
        self.t_max = c.real("t_max", t_max, minimum=0.0, strict=True)
        self.n_frames = c.integer("n_frames", n_frames, minimum=2)
        self.debounce = c.real("debounce", debounce, minimum=0.0)
        if player is not None and not isinstance(player, dict):
            raise TypeError(f"player must be a dict of TrajectoryPlayer keywords, got {type(player).__name__}")
        if player is not None:
            c.keywords(TrajectoryPlayer, player, "player (TrajectoryPlayer keywords)")
        self.live = live_kernel(live)
        help_url = c.text("help_url", help_url)
        super().__init__(**kwargs)
        self.add_class(DASHBOARD_CLASS)
        self._pending = None
        self._restoring = False
        self.last_timing: dict[str, float] = {}
        self.updates = 0

        self._make_controls(name, start, help_url)

        self.trajectory = self.simulate()
        self._shown = self.params()         # the parameters of the run on display
        self.player = TrajectoryPlayer(self.trajectory, **{"frame": -1, **(player or {})})
        self.energy = EnergyPlot()
        self._draw_energy()
        self._sync_enabled()
        self.status.value = self._status_text()
        self.children = [
            self.note,
            widgets.HBox([widgets.VBox(self.controls + [self.status],
                                       layout=widgets.Layout(flex="0 0 310px")),
                          self.energy.html],
                         layout=widgets.Layout(flex_flow="row wrap")),
            self.player,
        ]
        for control in self.controls:
            control.observe(self._on_change, names="value")

    def _make_controls(self, name: str, start: dict, help_url: str) -> None:
        """The experiment dropdown, the parameter controls at ``start``, the status line and the
        static note (shown only without a live kernel)."""
        style = {"description_width": "70px"}
        lay = widgets.Layout(width="300px")
        self.model = widgets.Dropdown(options=experiments.choices(), value=name,
                                      description="model",
                                      tooltip="experiment to simulate", style=style, layout=lay)

        def bounds(key):
            lo, hi, step = RANGES[key]
            return dict(value=start[key], min=lo, max=hi, step=step)

        self.beta = widgets.FloatSlider(**bounds("beta"), description="beta",
                                        tooltip="inverse temperature beta of the attention",
                                        continuous_update=False, style=style, layout=lay)
        self.n = widgets.IntSlider(**bounds("n"), description="tokens n",
                                   tooltip="number of tokens n", continuous_update=False, style=style, layout=lay)
        self.seed = widgets.BoundedIntText(**bounds("seed"), description="seed",
                                       tooltip="random seed of the initial tokens", style=style,
                                       layout=lay)
        self.omega = widgets.FloatSlider(**bounds("omega"), description="omega",
                                         tooltip="rotation frequency omega of the positions",
                                         continuous_update=False, style=style, layout=lay)
        self.n_prompts = widgets.IntSlider(**bounds("n_prompts"), description="prompts",
                                           tooltip="number of prompts", continuous_update=False, style=style, layout=lay)
        self.status = widgets.HTML()
        self.note = widgets.HTML(static_note(help_url) if not self.live else "",
                                 layout=widgets.Layout(display=None if not self.live else "none"))
        self.controls = [self.model, self.beta, self.n, self.seed, self.omega, self.n_prompts]

    # ------------------------------------------------------------------ model
    def params(self) -> dict:
        """The current control values, as ``experiments.setup`` keywords."""
        name = self.model.value
        fixed = experiments.get(name).fixed_dimension
        return dict(name=name, n=int(self.n.value), d=fixed or self.d,
                    beta=float(self.beta.value), omega=float(self.omega.value),
                    n_prompts=int(self.n_prompts.value), seed=int(self.seed.value))

    # Interactive accuracy: adaptive Dormand-Prince at rtol 1e-6 follows the default RK4 run to
    # about 1e-6 (invisible on the sphere) with about half the right-hand-side evaluations, and
    # adapts its step when a large beta makes the system stiff.
    SOLVER = {"method": "dopri5", "rtol": 1e-6, "atol": 1e-8}

    def simulate(self):
        """Set up and integrate the experiment of the current controls (package calls only)."""
        p = self.params()
        model, x0, xi = experiments.setup(**p)
        return solver.simulate(model, x0, xi, t_max=self.t_max, n_frames=self.n_frames,
                           seed=p["seed"], **self.SOLVER)

    def _bound(self, traj):

        xi = traj.xi if getattr(traj.model, "labels", "none") != "none" else None
        try:
            bound = float(solver.energy_bound(traj.model, xi, n=traj.x.shape[1]))
        except (ValueError, TypeError, ArithmeticError):  # a bound is a nicety; the plot works without it
            return None
        return bound if np.isfinite(bound) else None

    def run_title(self, p: dict | None = None) -> str:
        """Title naming every parameter the run on display (or the run ``p``) depends on.

        Parameters
        ----------
        p : dict or None
            A run's parameters (:meth:`params`); None: the run on display.

        Returns
        -------
        str
        """
        p = self._shown if p is None else p
        reads = experiments.get(p["name"]).parameters
        parts = [f"n = {p['n']}"] + [f"{key} = {p[key]:g}" for key in ("beta", "omega", "n_prompts")
                                     if key in reads] + [f"seed = {p['seed']}"]
        return f"{p['name']}: " + ", ".join(parts)

    def _draw_energy(self):
        traj = self.trajectory
        self.energy.draw(traj.t, traj.energy, self._bound(traj), title=self.run_title())

    # ---------------------------------------------------------------- updates
    def _on_change(self, change=None):
        if self._restoring:
            return
        self._sync_enabled()
        if self.debounce <= 0:
            self.update()
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:          # no event loop (plain Python): update at once
            self.update()
            return
        if self._pending is not None:
            self._pending.cancel()
        self.status.value = ("<i>waiting for more changes; the picture still shows "
                             f"{html.escape(self.run_title())}</i>")
        self._pending = loop.call_later(self.debounce, self._fire)

    def _fire(self):
        self._pending = None
        self.update()

    def update(self):
        """Re-simulate with the current controls and redraw the sphere and the energy."""
        t0 = time.perf_counter()
        wanted = self.params()
        try:
            traj = self.simulate()
        except (ValueError, TypeError, ArithmeticError) as err:
            self._restore_controls()
            self.status.value = (
                f"<span style='color:#b00'>{html.escape(self.run_title(wanted))} failed: "
                f"{html.escape(str(err))}; the controls are set back to the run on display</span>")
            return
        t1 = time.perf_counter()
        self.trajectory, self._shown = traj, wanted
        self.player.show(traj, frame=-1, animate=False)
        self._draw_energy()
        t2 = time.perf_counter()
        self.last_timing = {"simulate": t1 - t0, "draw": t2 - t1, "total": t2 - t0}
        self.updates += 1
        self.status.value = self._status_text()
        # the keyframes for the play button follow once the new state is on screen
        try:
            asyncio.get_running_loop().call_soon(self._rebuild_animation)
        except RuntimeError:
            self._rebuild_animation()

    def _rebuild_animation(self):
        t0 = time.perf_counter()
        self.player.rebuild_animation()
        self.last_timing["animation"] = time.perf_counter() - t0

    def _restore_controls(self):
        """Set the controls back to the run on display (without re-simulating)."""
        p = self._shown
        self._restoring = True
        try:
            self.model.value = p["name"]
            for key in ("n", "beta", "omega", "n_prompts", "seed"):
                getattr(self, key).value = p[key]
        finally:
            self._restoring = False
        self._sync_enabled()

    def _sync_enabled(self):
        # without a kernel nothing answers the controls: all disabled (the note says why);
        # with one, a control the experiment does not read is greyed out rather than ignored
        if not self.live:
            for control in self.controls:
                control.disabled = True
            return
        reads = experiments.get(self.model.value).parameters
        self.model.disabled = self.n.disabled = self.seed.disabled = False
        self.beta.disabled = "beta" not in reads
        self.omega.disabled = "omega" not in reads
        self.n_prompts.disabled = "n_prompts" not in reads

    def _status_text(self) -> str:
        p = self.params()
        timing = ""
        if self.last_timing:
            timing = (f"; last update {1000 * self.last_timing['total']:.0f} ms "
                      f"(simulate {1000 * self.last_timing['simulate']:.0f} ms)")
        return (f"<span style='font-size:12px'>{html.escape(p['name'])}: n = {p['n']}, "
                f"d = {self.trajectory.x.shape[2]}, seed = {p['seed']}, t_max = {self.t_max:g}"
                f"{timing}</span>")
