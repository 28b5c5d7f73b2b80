"""``Explorer``: precomputed runs over a small grid of parameters, switched in the browser.

A reader moves a slider and the sphere, the energy plot and the title switch to the run of the
chosen parameter value.  The switching happens in the page itself, so it also works in the
static book with no kernel:

* each run gets one view: an HTML title stating its parameters, a ``TrajectoryPlayer`` (or a
  ``SphereView`` of its last frame) and its energy curve as a PNG ``Image``;
* the views are the children of an ``ipywidgets.Stack``, which shows only its
  ``selected_index``-th child;
* the slider's ``index`` is ``jslink``-ed to the Stack's ``selected_index`` (a two-way widget
  link that the page's widget manager runs, not a Python callback).

With two parameters the Stacks nest: the first slider selects a child of the outer Stack (one
per value of the first parameter), the second is linked to every inner Stack (one child per
value of the second parameter).

The Explorer only draws what it is given: every run comes from ``usaav_edu.simulate``, called
by the chapter or by ``Explorer.from_experiment`` (which builds each system with
``usaav_edu.particles.experiments.setup``).

Page budget: all runs' views share ``max_bytes`` of embedded widget state; each player keeps
as many frames as its share allows (see ``frames_for_budget``; the result is measured with
``embedded_state_bytes``).  Every run is planned before any widget is made, because a saved
notebook embeds every widget the kernel ever made, closed or not.  When even two frames of a
run's tokens do not fit its share, a live kernel draws fewer tokens (each player says so in one
line; a still view's caption names how many it shows); a static page refuses before making any
widget.
"""
from __future__ import annotations

import html
import io
import numbers

import ipywidgets as widgets
import numpy as np

from . import _checks as c
from .colors import token_colors
from .player import (
    BYTES_FIXED,
    BYTES_PER_COLOUR,
    BYTES_PER_TOKEN,
    TrajectoryPlayer,
    _player_bytes,
    _static_page,
    _tokens_within,
)
from .scene import SphereView, subsample
from .state import embedded_state_bytes

#: embedded bytes set aside for the sliders, Stacks, links and layout of the Explorer itself,
#: plus the Stacks' share per run
CONTROL_BYTES = 12_000
CONTROL_BYTES_PER_RUN = 2_500
#: embedded bytes of a run's view besides its sphere, PNG and title text (widgets, layouts, styles)
VIEW_OVERHEAD_BYTES = 8_000
#: bytes kept free in each run's share: a player's own estimate of its size may fall short by
#: about 20 kB (tokens coloured by position, n = 32)
SPHERE_MARGIN_BYTES = 30_000
#: at most this many tokens of a run are drawn (see ``SphereView``)
MAX_TOKENS = 256
#: keywords of ``experiments.setup`` that ``from_experiment`` may put on a grid or fix
SETUP_KEYWORDS = ("name", "n", "d", "beta", "omega", "n_prompts", "lam", "seed")


def close_tree(widget, keep=()) -> None:
    """Close ``widget`` and every widget it refers to (children, layouts, geometries...),
    except those in ``keep`` and what they refer to, so that a discarded view leaves nothing
    in the kernel.  (A saved notebook still keeps the state of every widget ever made, which
    is why the Explorer plans its views before making them.)

    Parameters
    ----------
    widget : ipywidgets.Widget
        The widget to close.
    keep : iterable of ipywidgets.Widget
        Widgets to leave open.
    """
    kept: set[int] = set()

    def refs(w):
        for name in w.keys:
            value = getattr(w, name, None)
            items = value if isinstance(value, (list, tuple)) else \
                (value.values() if isinstance(value, dict) else (value,))
            for item in items:
                if isinstance(item, widgets.Widget):
                    yield item

    def walk(w, seen):
        if id(w) in seen:
            return
        seen.add(id(w))
        for r in refs(w):
            walk(r, seen)

    for k in keep:
        walk(k, kept)
    order: list = []

    def collect(w, seen):
        if id(w) in seen or id(w) in kept:
            return
        seen.add(id(w))
        order.append(w)
        for r in refs(w):
            collect(r, seen)

    collect(widget, set())
    doomed = {id(w) for w in order}
    # links between closed widgets (e.g. a player's time readout) go with them
    from ipywidgets.widgets import widget as registry
    from ipywidgets.widgets.widget_link import Link

    for w in list(registry._instances.values()):
        if isinstance(w, Link) and (id(w.source[0]) in doomed or id(w.target[0]) in doomed):
            order.append(w)
    for w in order:
        w.close()


def _close_new_widgets(before: set) -> None:
    """Close every widget made since the registry held the model ids ``before`` (what a
    construction that failed half-way left behind)."""
    from ipywidgets.widgets import widget as registry

    for model_id in [k for k in registry._instances if k not in before]:
        w = registry._instances.get(model_id)
        if w is not None:
            w.close()


def _registered() -> set:
    from ipywidgets.widgets import widget as registry

    return set(registry._instances)


def value_label(value) -> str:
    """How a parameter value is shown on the slider and in the titles: numbers with ``:g``,
    strings as they are.

    Parameters
    ----------
    value : number or str
        A parameter value.

    Returns
    -------
    str
    """
    if isinstance(value, str):
        return value
    return f"{float(value):g}" if not isinstance(value, numbers.Integral) else str(int(value))


def _grid_value(name: str, value):
    """A grid value: a finite real number or a non-empty string (not a bool)."""
    if isinstance(value, str):
        if not value:
            raise ValueError(f"{name} must be a non-empty string or a number, got ''")
        return value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number or a string, got {type(value).__name__} {c.shown(value)}")
    if not np.isfinite(float(value)):
        raise ValueError(f"{name} must be finite, got {c.shown(value)}")
    return value.item() if isinstance(value, np.generic) else value


def sorted_axis(values: list) -> list:
    """The values of one slider, left to right: increasing when they are all numbers; in the
    order given when any is a string (names such as "distance", "cosine" have no order).

    Parameters
    ----------
    values : list
        Distinct numbers or strings.

    Returns
    -------
    list
    """
    if all(not isinstance(v, str) for v in values):
        return sorted(values, key=float)
    return list(values)


def _labels(labels, parameters: tuple[str, ...]) -> tuple[str, ...]:
    """The name shown for each parameter: ``labels`` (None, a dict parameter -> name, or one
    name per parameter), the parameter itself where none is given."""
    if labels is None:
        return parameters
    if isinstance(labels, str):
        labels = (labels,)
    if isinstance(labels, dict):
        unknown = [k for k in labels if k not in parameters]
        if unknown:
            raise ValueError(f"labels names {unknown[0]!r}, which is not among the parameters "
                             f"{parameters}")
        labels = tuple(labels.get(p, p) for p in parameters)
    if not isinstance(labels, (tuple, list)) or len(labels) != len(parameters):
        raise TypeError(f"labels must be a dict {{parameter: name}} or {len(parameters)} "
                        f"name(s), one per parameter {parameters}, got {c.shown(labels)}")
    for k, lab in enumerate(labels):
        if not isinstance(lab, str) or not lab.strip():
            raise TypeError(f"labels[{k}] must be a non-empty string, got {c.shown(lab)}")
    return tuple(labels)


def _parameters(value) -> tuple[str, ...]:
    if isinstance(value, str):
        value = (value,)
    if not isinstance(value, (tuple, list)) or not 1 <= len(value) <= 2:
        raise TypeError(f"parameters must be one name or a tuple of two names, got {c.shown(value)}")
    for k, p in enumerate(value):
        if not isinstance(p, str) or not p.strip():
            raise TypeError(f"parameters[{k}] must be a non-empty string, got {c.shown(p)}")
    if len(value) == 2 and value[0] == value[1]:
        raise ValueError(f"parameters must be two different names, got {tuple(value)!r}")
    return tuple(value)


def grid_axes(runs: dict, parameters: tuple[str, ...]) -> list[list]:
    """The values of each parameter, increasing (numbers; strings in the order of first
    appearance in ``runs``, see ``sorted_axis``); checks that ``runs`` covers the full grid
    (every combination, once) with at least two values each.

    Parameters
    ----------
    runs : dict
        Runs keyed by a value (one parameter) or a tuple of values (two).
    parameters : tuple of str
        The parameter names.

    Returns
    -------
    list of list
        The values of each parameter.

    Raises
    ------
    ValueError
        If the runs do not cover the grid.
    """
    axes: list[list] = [[] for _ in parameters]
    keys = []
    for key in runs:
        if len(parameters) == 1:
            if isinstance(key, tuple):
                raise TypeError(f"runs keys must be single values of {parameters[0]}, got the tuple {key!r}")
            parts: tuple = (key,)
        else:
            if not isinstance(key, tuple) or len(key) != 2:
                raise TypeError(f"runs keys must be pairs ({parameters[0]}, {parameters[1]}), got {key!r}")
            parts = key
        parts = tuple(_grid_value(f"{p} in runs key {key!r}", v) for p, v in zip(parameters, parts, strict=True))
        keys.append(parts)
        for axis, v in zip(axes, parts, strict=True):
            if v not in axis:
                axis.append(v)
    axes = [sorted_axis(axis) for axis in axes]
    for p, axis in zip(parameters, axes, strict=True):
        if len(axis) < 2:
            raise ValueError(f"runs must hold at least two values of {p} (a slider needs a choice), "
                             f"got {c.shown(axis)}")
        labels = [value_label(v) for v in axis]
        if len(set(labels)) != len(labels):
            raise ValueError(f"values of {p} must read differently on the slider, got labels {labels}")
    if len(parameters) == 2:
        missing = [(a, b) for a in axes[0] for b in axes[1] if (a, b) not in set(keys)]
        if missing:
            raise ValueError(f"runs must cover the full grid of {parameters[0]} x {parameters[1]}; "
                             f"missing {missing[:4]}")
    return axes


def energy_png(trajectory, others=(), *, width: float = 3.6, height: float = 2.6,
               dpi: int = 80, title: str = "") -> bytes:
    """PNG of the energy of ``trajectory`` against time (coloured), over the energies of
    ``others`` (light grey, for comparison); made with matplotlib off screen.

    Parameters
    ----------
    trajectory : Trajectory
        The run to draw.
    others : sequence of Trajectory
        Runs drawn in grey.
    width, height : float
        Size in inches.
    dpi : int
        Resolution.
    title : str
        The plot's title.

    Returns
    -------
    bytes
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=dpi)
    ax = fig.add_subplot()
    for k, other in enumerate(others):
        t, e = c.energy_series(other, f"others[{k}]")
        ax.plot(t, e, color="#c8c8c8", linewidth=1.0)
    t, e = c.energy_series(trajectory)
    ax.plot(t, e, color="#1f5fa8", linewidth=2.0)
    ax.set_xlabel("t")
    ax.set_ylabel("energy")
    ax.grid(alpha=0.3)
    if title:
        ax.set_title(title, fontsize=9)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


class Explorer(widgets.VBox):
    """Precomputed runs over a grid of one or two parameters, chosen with sliders in the page.

    Parameters
    ----------
    runs : dict
        ``{value: Trajectory}`` for one parameter, ``{(value1, value2): Trajectory}`` for two
        (every combination present).  Values are numbers or strings, at least two per
        parameter; a slider lists numbers increasing left to right (whatever the order of the
        dict: each run stays with its key), strings in the order of the dict.
    parameters : str or (str, str)
        Names of the parameters (the keys of ``runs`` are their values).
    max_bytes : int
        Budget for the whole Explorer's embedded widget state (default 2.5 MB); the runs share
        it equally.  ValueError when even two frames per run do not fit.
    play : bool
        True: each run is a ``TrajectoryPlayer`` (press play to watch it), opening at its last
        frame with the bead at the end of its time bar; False: a ``SphereView`` of the last
        frame.
    duration : float
        Seconds of wall time for each player's run (finite, > 0).
    width, height : int
        Canvas size of each sphere, in pixels.
    caption : str, optional
        Shown above the sliders (e.g. what to look for).
    max_tokens : int
        At most this many tokens of each run are drawn (evenly spaced in index, as
        ``SphereView`` draws them; its caption says how many): fewer tokens leave room for
        more runs or more frames in ``max_bytes``.
    labels : str, sequence of str or dict, optional
        The name of each parameter as the sliders and titles show it, e.g.
        ``{"omega": "λ (decay rate)"}``: one name per parameter, or a dict from parameter to
        name (the others keep their own); by default the parameter names.

    Attributes
    ----------
    axes : list of lists
        The values of each parameter, in slider order; ``labels``: the names shown;
        ``sliders``, ``stacks`` (outer first),
        ``links`` (the ``jslink`` widgets); ``views[i]`` / ``views[i][j]``: the run views, in
        slider order; ``parts[key]``: the ``title``, ``sphere`` and ``energy`` widgets of the run
        ``runs[key]``; ``run_bytes[key]``: embedded bytes of its view.
    """

    def __init__(self, runs, parameters="beta", *, max_bytes: int = 2_500_000, play: bool = True,
                 duration: float = 8.0, width: int = 380, height: int = 340,
                 caption: str | None = None, labels=None, max_tokens: int = MAX_TOKENS,
                 **kwargs):
        c.keywords(type(self), kwargs)
        if not isinstance(runs, dict):
            raise TypeError(f"runs must be a dict {{parameter value: Trajectory}}, got {type(runs).__name__}")
        parameters = _parameters(parameters)
        self.labels = _labels(labels, parameters)
        axes = grid_axes(runs, parameters)
        for key, traj in runs.items():
            c.trajectory(traj, f"runs[{key!r}]")
            c.energy_series(traj, f"runs[{key!r}]")
        max_bytes = c.integer("max_bytes", max_bytes, minimum=1)
        play = c.flag("play", play)
        duration = c.real("duration", duration, minimum=0.0, strict=True)
        width = c.integer("width", width, minimum=1)
        height = c.integer("height", height, minimum=1)
        caption = c.text("caption", caption, optional=True)
        self.max_tokens = c.integer("max_tokens", max_tokens, minimum=1)
        self.parameters, self.axes, self.max_bytes, self.play = parameters, axes, max_bytes, play
        self.runs = dict(runs)
        caption_html = (None if caption is None else
                        f"<div style='font-size:13px'>{html.escape(caption)}</div>")
        share = ((max_bytes - CONTROL_BYTES - len(caption_html or "")) // len(runs)
                 - CONTROL_BYTES_PER_RUN)
        # Plan every run before making any widget: a saved notebook keeps every widget ever
        # made, closed or not, so nothing may be built on trial and thrown away.
        plans = {key: self._plan(key, share) for key in runs}
        before = _registered()
        super().__init__(**kwargs)
        self.add_class("usaav-explorer")
        self.run_bytes: dict = {}
        self.parts: dict = {}
        built = []
        try:
            for key in runs:
                built.append(self._build(plans[key], share, duration, width, height))
        except ValueError:
            _close_new_widgets(before)  # leave no half-built explorer in the kernel
            raise
        outer, inner_stacks = self._stack_views(dict(zip(runs, built, strict=True)))
        self._add_sliders(outer, inner_stacks)
        head = []
        if caption_html:
            head.append(widgets.HTML(caption_html))
        note = widgets.HTML(
            "<span style='font-size:12px;color:#555'>precomputed runs: the slider switches "
            "between them in the page (no kernel needed)</span>")
        self.children = [*head, widgets.HBox([widgets.VBox(self.sliders), note],
                                             layout=widgets.Layout(align_items="center",
                                                                   flex_flow="row wrap")),
                         outer]

    def _stack_views(self, by_key: dict) -> tuple:
        """``views`` in slider order and their ``stacks``: one Stack for one parameter, an
        outer Stack of inner Stacks (one per value of the first parameter) for two.  Returns
        the outer Stack and the inner ones."""
        axes = self.axes
        if len(self.parameters) == 1:
            self.views = [by_key[v] for v in axes[0]]
            outer = widgets.Stack(children=self.views, selected_index=0)
            self.stacks = [outer]
            inner_stacks = []
        else:
            self.views = [[by_key[(a, b)] for b in axes[1]] for a in axes[0]]
            inner_stacks = [widgets.Stack(children=row, selected_index=0) for row in self.views]
            outer = widgets.Stack(children=inner_stacks, selected_index=0)
            self.stacks = [outer, *inner_stacks]
        self.stack = outer
        return outer, inner_stacks

    def _add_sliders(self, outer, inner_stacks: list) -> None:
        """One ``SelectionSlider`` per parameter, ``jslink``-ed in the page to its Stacks."""
        style = {"description_width": "initial"}
        self.sliders = []
        for p, axis in zip(self.labels, self.axes, strict=True):
            values = [value_label(v) for v in axis]
            slider = widgets.SelectionSlider(
                options=[(lab, k) for k, lab in enumerate(values)], index=0, description=p,
                tooltip=(f"choose {p} among {', '.join(values)}: the sphere, the energy plot "
                         f"and the title switch to that precomputed run"),
                continuous_update=True, style=style,
                layout=widgets.Layout(width="420px", max_width="100%"))
            self.sliders.append(slider)
        # The Stack is the link's source: a link starts by copying its source to its target,
        # and a Stack's selected_index is always in the page state, while a slider's index of 0
        # (its default) is left out of pages exported without defaults.
        self.links = [widgets.jslink((outer, "selected_index"), (self.sliders[0], "index"))]
        for inner in inner_stacks:
            self.links.append(widgets.jslink((inner, "selected_index"), (self.sliders[1], "index")))

    # ------------------------------------------------------------------ views
    def title_text(self, parts) -> str:
        """The title of the run with parameter values ``parts`` (one per parameter).

        Parameters
        ----------
        parts : tuple
            One value per parameter.

        Returns
        -------
        str
        """
        return ", ".join(f"{p} = {value_label(v)}" for p, v in zip(self.labels, parts, strict=True))

    def _plan(self, key, share: int) -> dict:
        """What the view of ``runs[key]`` will hold and the room left for its sphere; ValueError
        when the sphere does not fit (checked before any widget is made)."""
        traj = self.runs[key]
        parts = key if len(self.parameters) == 2 else (key,)
        n, d = traj.x.shape[1], traj.x.shape[2]
        title = self.title_text(parts)
        context = (f"{getattr(traj.model, 'name', 'run')}, n = {n}, d = {d}, "
                   f"t = {float(traj.t[0]):g} to {float(traj.t[-1]):g}")
        head = (f"<div class='usaav-explorer-title' style='font-size:14px'><b>{html.escape(title)}"
                f"</b> <span style='color:#555'>({html.escape(context)})</span></div>")
        others = [o for o in self.runs.values() if o is not traj]
        png = energy_png(traj, others, title=f"energy, {title}")
        room = (share - 4 * (len(png) + 2) // 3 - len(head) - VIEW_OVERHEAD_BYTES
                - SPHERE_MARGIN_BYTES)
        index = subsample(n, self.max_tokens)
        drawn = len(index)
        colours = len(set(token_colors(traj.xi, getattr(traj.model, "labels", "none"))[i]
                          for i in index))
        fits = True
        if self.play:
            # a live kernel's player draws fewer tokens where two frames of all do not fit (and
            # says so); a static page refuses
            try:
                _tokens_within(lambda m: _player_bytes(m, min(m, colours)), drawn,
                               traj.x.shape[0], max(room, 1), None, f"{drawn} tokens")
            except ValueError:
                fits = False
        elif room < _player_bytes(drawn, colours)[0]:
            fit = (room - BYTES_FIXED) // (BYTES_PER_TOKEN + BYTES_PER_COLOUR)
            if _static_page() or fit < 1:
                fits = False
            else:
                drawn = fit                               # its caption names the count
        if not fits:
            need = "two frames" if self.play else "a view of the last frame"
            raise ValueError(
                f"max_bytes={self.max_bytes} is too small for {len(self.runs)} runs of {n} tokens: "
                f"each run gets {share} bytes, in which {need} of run {key!r} do not fit; raise "
                f"max_bytes, use fewer runs or fewer tokens")
        return {"key": key, "title": title, "head": head, "png": png, "room": room,
                "tokens": drawn}

    def _build(self, plan: dict, share: int, duration: float, width: int, height: int):
        key, traj = plan["key"], self.runs[plan["key"]]
        head = widgets.HTML(plan["head"])
        # (no tooltip: the page's ImageView fails to render an Image that has one)
        energy = widgets.Image(value=plan["png"], format="png",
                               layout=widgets.Layout(width=f"{int(3.6 * 80)}px", max_width="100%"))
        room = plan["room"]
        for _ in range(3):
            sphere = (TrajectoryPlayer(traj, max_bytes=room, duration=duration, frame=-1,
                                       width=width, height=height, max_tokens=self.max_tokens)
                      if self.play else
                      SphereView(traj, width=width, height=height, max_tokens=plan["tokens"]))
            box = widgets.VBox([head, widgets.HBox([sphere, energy],
                                                   layout=widgets.Layout(flex_flow="row wrap"))])
            size = embedded_state_bytes(box)
            if size <= share or not self.play:
                break
            # SPHERE_MARGIN_BYTES covers the players' estimate of their size; should it
            # fall short, rebuild with fewer frames
            close_tree(box, keep=(head, energy))
            room -= size - share + 2_000
        if size > share:
            raise ValueError(f"the view of run {key!r} takes {size} bytes, over its share {share} "
                             f"of max_bytes={self.max_bytes}; raise max_bytes or use fewer tokens")
        self.run_bytes[key] = size
        self.parts[key] = {"title": head, "sphere": sphere, "energy": energy}
        return box

    # ------------------------------------------------------------ constructor
    @classmethod
    def from_experiment(cls, grid: dict, *, fixed: dict | None = None, t_max: float = 20.0,
                        n_frames: int = 101, solver: dict | None = None, **kwargs):
        """Simulate a standard experiment over ``grid`` and explore the runs.

        ``grid`` maps one or two keywords of ``usaav_edu.particles.experiments.setup`` (``name``,
        ``n``, ``d``, ``beta``, ``omega``, ``n_prompts``, ``lam``, ``seed``) to the values
        to try; ``fixed`` gives the other keywords (``name`` must be in one of them).  Each
        run is ``simulate(*setup(**fixed, **point), t_max=t_max, n_frames=n_frames, seed=seed,
        **solver)``; a grid over a keyword that an experiment does not read is refused (its
        runs would all be the same).  Other keyword arguments go to ``Explorer``.

        Example: ``Explorer.from_experiment({"beta": [0.5, 1, 2, 4]}, fixed={"name": "usa"})``.

        Parameters
        ----------
        grid : dict
            One or two setup keywords to lists of values.
        fixed : dict or None
            The other setup keywords.
        t_max : float
            Length of every run.
        n_frames : int
            Frames stored per run.
        solver : dict or None
            Other keywords of ``simulate``.
        **kwargs
            Passed to ``Explorer``.

        Returns
        -------
        Explorer

        Raises
        ------
        TypeError, ValueError
            For a bad grid, before anything is simulated.
        """
        from ..particles import experiments
        from ..particles import solver as package_solver

        c.keywords(cls, kwargs, "Explorer.from_experiment()")
        if not isinstance(grid, dict) or not 1 <= len(grid) <= 2:
            raise TypeError(f"grid must be a dict of one or two setup keywords to lists of values, "
                            f"got {c.shown(grid)}")
        fixed = {} if fixed is None else fixed
        if not isinstance(fixed, dict):
            raise TypeError(f"fixed must be a dict of setup keywords, got {type(fixed).__name__}")
        solver = {} if solver is None else solver
        if not isinstance(solver, dict):
            raise TypeError(f"solver must be a dict of simulate keywords, got {type(solver).__name__}")
        for key in solver:
            if key in ("t_max", "n_frames", "seed", "xi", "x0", "model"):
                raise ValueError(f"solver must not set {key!r} (it is given by the explorer or the grid)")
        for where, keys in (("grid", grid), ("fixed", fixed)):
            for key in keys:
                if key not in SETUP_KEYWORDS:
                    raise ValueError(f"{where} keys must be among {SETUP_KEYWORDS}, got {key!r}")
        both = set(grid) & set(fixed)
        if both:
            raise ValueError(f"{sorted(both)} appear both in grid and in fixed")
        if "name" not in grid and "name" not in fixed:
            raise ValueError("give the experiment's name in fixed (or on the grid), e.g. fixed={'name': 'rope'}")
        for key, values in grid.items():
            if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__iter__"):
                raise TypeError(f"grid[{key!r}] must be a list of values, got {values!r}")
        t_max = c.real("t_max", t_max, minimum=0.0, strict=True)
        n_frames = c.integer("n_frames", n_frames, minimum=2)
        names = list(grid)
        values = [list(grid[k]) for k in names]
        points = [(a,) for a in values[0]] if len(names) == 1 else \
            [(a, b) for a in values[0] for b in values[1]]
        for key, vals in zip(names, values, strict=True):
            labels = [value_label(_grid_value(f"grid[{key!r}] values", v)) for v in vals]
            if len(set(labels)) != len(labels):
                raise ValueError(f"grid[{key!r}] must list distinct values, got {vals!r}")
            if len(vals) < 2:
                raise ValueError(f"grid[{key!r}] must list at least two values (a slider needs a "
                                 f"choice), got {c.shown(vals)}")
        for point in points:
            setup_kw = {**fixed, **dict(zip(names, point, strict=True))}
            name = setup_kw["name"]
            if name not in experiments.NAMES:
                raise ValueError(f"name must be one of {experiments.NAMES}, got {name!r}")
            for key in names:
                if key not in ("name", "n", "seed") and key not in experiments.get(name).parameters:
                    raise ValueError(f"the {name} experiment does not read {key!r}: a grid over "
                                     f"it would show the same run {len(grid[key])} times")
        runs = {}
        for point in points:
            setup_kw = {**fixed, **dict(zip(names, point, strict=True))}
            model, x0, xi = experiments.setup(**setup_kw)
            traj = package_solver.simulate(model, x0, xi, t_max=t_max, n_frames=n_frames,
                               seed=setup_kw.get("seed", 0), **solver)
            runs[point[0] if len(names) == 1 else point] = traj
        return cls(runs, tuple(names), **kwargs)
