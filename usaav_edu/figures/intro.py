"""The intro's visual abstract: three runs that play side by side, one sentence under each.

``visual_abstract(usa, rope, prompts)`` takes three finished runs in d = 3,

* ``usa``: plain attention (model ``usa``, no labels): the tokens collapse to one point;
* ``rope``: rotary positions (model ``rope``, one rotation plane): the gauge coordinates
  ``y_i = R_{xi_i} x_i`` collapse to one point ``u``, so the tokens ``x_i = R_{-xi_i} u`` end on
  the latitude circle ``{x_3 = u_3}``, which the sphere draws;
* ``prompts``: K prompts (model ``prefix_gauge``): the tokens end in K clusters, prompt k's at
  ``G_k^T u``, which the sphere marks;

and returns one box holding three ``TrajectoryPlayer`` s, each with its sentence under it.  The
box wraps: the three stand side by side in a column wide enough for them and one under the
other in a narrow one.  Before drawing, the three claims the sentences make are checked on the
runs (``abstract_facts``, then ``usaav_edu.checks.claim``): a page cannot show a sentence its
run does not bear out.  The runs are the caller's; nothing here integrates.
"""
from __future__ import annotations

import html

import ipywidgets as widgets
import numpy as np

from .. import checks
from ..analysis import diagnostics, maximizers
from ..models.gauges import FrameGauge, IdentityGauge, RopeGauge
from ..widgets import _checks as c
from ..widgets.player import TrajectoryPlayer

#: the abstract's three panels, in order: the keyword argument and the model it needs
PANELS = ("usa", "rope", "prompts")
#: a run has collapsed (to a point, or in gauge coordinates) when its diameter is below this
COLLAPSE_TOL = 1e-6
#: link distance of the clusters of the prompts' run (``diagnostics.clusters``)
CLUSTER_TOL = 1e-3
#: a latitude circle is not a point: the RoPE tokens keep at least this spread
MIN_SPREAD = 0.1
#: canvas of each sphere, in pixels: three panels fit side by side in the book's text column
#: at 1280 px (688 px wide), one under the other at 390 px
SIZE = (210, 200)
#: the widget state of the whole abstract (three players), in bytes
MAX_BYTES = 900_000


def _run(name: str, traj, gauge_type, what: str):
    """``traj`` checked: a Trajectory in d = 3 of a model whose gauge is a ``gauge_type`` and
    whose labels are those of that gauge (no bias that gives plain attention positions)."""
    c.trajectory(traj, name)
    gauge = getattr(traj.model, "gauge", None)
    if not isinstance(gauge, gauge_type) or getattr(traj.model, "labels", None) != gauge.labels:
        raise ValueError(f"{name} must be a run of {what}, got a run of model "
                         f"{getattr(traj.model, 'name', type(traj.model).__name__)!r}")
    if traj.d != 3:
        raise ValueError(f"{name} must be a run in d = 3 (the sphere drawn is S^2), got d = {traj.d}")
    return traj


def abstract_facts(usa, rope, prompts) -> dict:
    """What the three runs show at their last frame, measured.

    * ``usa_diameter``: ``max_ij |x_i - x_j|`` of the USA run (0 for a collapse);
    * ``rope_gauge_diameter``: the same for the RoPE run's gauge coordinates ``y_i = R_{xi_i} x_i``;
    * ``rope_height``: ``u_3`` of the gauge point ``u`` (the normalized mean of the ``y_i``), the
      height of the latitude circle; ``rope_height_std``: the standard deviation of the tokens'
      heights ``x_{i,3}`` (0 on one latitude circle); ``rope_spread``: RMS distance of the tokens
      to their centroid (``sqrt(1 - u_3^2)`` on the circle);
    * ``prompts_K``: number of prompts; ``prompts_clusters``: clusters of the contents (single
      linkage at ``CLUSTER_TOL``); ``prompts_split``: prompts whose tokens lie in more than one
      cluster; ``prompts_targets``: ``G_k^T u``, one point per prompt, in order of prompt id.

    Parameters
    ----------
    usa, rope, prompts : Trajectory
        Runs of ``models.usa``, ``models.rope`` (one rotation plane) and
        ``models.prefix_gauge``, all in d = 3.

    Returns
    -------
    dict
    """
    usa = _run("usa", usa, IdentityGauge, "models.usa (plain attention, no labels)")
    if getattr(usa.model, "normalization", None) != "usa":
        raise ValueError(f"usa must be a run of models.usa (plain attention, no labels), got "
                         f"normalization {usa.model.normalization!r}")
    rope = _run("rope", rope, RopeGauge, "models.rope")
    prompts = _run("prompts", prompts, FrameGauge, "models.prefix_gauge")
    y = rope.y[-1]
    u = y.mean(axis=0)
    if np.linalg.norm(u) < 1e-12:
        raise ValueError("rope: the gauge coordinates average to 0 at the last frame; the run "
                         "has no gauge point (it has not collapsed)")
    u = u / np.linalg.norm(u)
    xi = np.asarray(prompts.xi)
    ids = np.unique(xi)
    labels = diagnostics.clusters(prompts.final, cluster_tol=CLUSTER_TOL)
    y_p = prompts.y[-1].mean(axis=0)
    norm_p = np.linalg.norm(y_p)
    targets = None
    if norm_p > 1e-12:
        first = np.array([np.flatnonzero(xi == k)[0] for k in ids])
        targets = maximizers.gauge_maximizer(prompts.model, xi, y_p / norm_p)[first]
    return {
        "usa_diameter": diagnostics.diameter(usa.final),
        "usa_t": float(usa.t[-1]),
        "rope_gauge_diameter": diagnostics.diameter(y),
        "rope_height": float(u[2]),
        "rope_height_std": float(np.std(rope.final[:, 2])),
        "rope_spread": diagnostics.spread(rope.final),
        "rope_t": float(rope.t[-1]),
        "prompts_K": int(len(ids)),
        "prompts_clusters": int(labels.max() + 1),
        "prompts_split": [int(k) for k in ids if len(set(labels[xi == k])) != 1],
        "prompts_targets": targets,
        "prompts_t": float(prompts.t[-1]),
    }


def check_facts(f: dict) -> bool:
    """The abstract's three claims, physics only, each a ``checks.claim``: the USA run has
    collapsed; the RoPE run's gauge coordinates have collapsed while its tokens stay spread on
    one latitude circle; the prompts' run ends in exactly K clusters, one per prompt.  True when
    all hold (strict mode raises at the first that does not).

    Parameters
    ----------
    f : dict
        From ``abstract_facts``.

    Returns
    -------
    bool
    """
    ok = [
        checks.claim(f["usa_diameter"] < COLLAPSE_TOL,
                     f"USA collapses to one point: diameter {f['usa_diameter']:.2e} at t = "
                     f"{f['usa_t']:g} is not below {COLLAPSE_TOL:g}; increase t_max"),
        checks.claim(f["rope_gauge_diameter"] < COLLAPSE_TOL,
                     f"RoPE: the gauge coordinates collapse: diameter "
                     f"{f['rope_gauge_diameter']:.2e} at t = {f['rope_t']:g} is not below "
                     f"{COLLAPSE_TOL:g}; increase t_max"),
        checks.claim(f["rope_height_std"] < COLLAPSE_TOL and f["rope_spread"] > MIN_SPREAD,
                     f"RoPE: the tokens end spread on one latitude circle: std of their heights "
                     f"{f['rope_height_std']:.2e} (below {COLLAPSE_TOL:g}?), spread "
                     f"{f['rope_spread']:.3f} (above {MIN_SPREAD:g}?) at t = {f['rope_t']:g}; "
                     f"increase t_max, or take another seed if the gauge point lies near a pole "
                     f"(u_3 = {f['rope_height']:.3f})"),
        checks.claim(f["prompts_clusters"] == f["prompts_K"] and not f["prompts_split"],
                     f"{f['prompts_K']} prompts end in {f['prompts_K']} clusters, one per prompt: "
                     f"found {f['prompts_clusters']} clusters at t = {f['prompts_t']:g}, prompts "
                     f"split over several: {f['prompts_split']}; increase t_max"),
    ]
    return all(ok)


def sentences(f: dict) -> tuple[str, str, str]:
    """The sentence under each sphere, from the measured facts (``abstract_facts``)."""
    k = f["prompts_K"]
    return (
        "Plain attention: the tokens collapse to a single point.",
        "Rotary positions (RoPE): each token ends at its own place on one latitude circle.",
        f"{k} prompts: the tokens end in {k} clusters, one per prompt.",
    )


def _panel(player, sentence: str, width: int) -> widgets.VBox:
    """One sphere with its sentence under it.  The player keeps its canvas (with its time bar
    and label), its buttons and its caption (the run's parameters); the legend and the line on
    the buttons are left out (the sentence says what the colours and the play button show),
    and its rows wrap in the panel's width."""
    for row in player.children:
        if isinstance(row, widgets.HBox):
            row.layout.flex_flow = "row wrap"
    player.legend.layout.display = "none"
    player.time_info.layout.display = "none"
    text = widgets.HTML(f"<p style='margin:4px 0 0 0;line-height:1.35'>{html.escape(sentence)}</p>",
                        layout=widgets.Layout(width="100%"))
    return widgets.VBox([player, text], layout=widgets.Layout(
        flex="1 1 0", min_width=f"{width}px", max_width=f"{width + 16}px", margin="0 3px 12px 3px"),
        _dom_classes=["usaav-abstract-panel"])


def visual_abstract(usa, rope, prompts, *, size=SIZE, duration: float = 6.0,
                    max_bytes: int = MAX_BYTES) -> widgets.Box:
    """The three runs as players in one wrapping box, a sentence under each.

    The claims are checked first (``check_facts``); the RoPE sphere draws the latitude circle
    ``{x_3 = u_3}``, the prompts' sphere marks the targets ``G_k^T u``.

    Parameters
    ----------
    usa, rope, prompts : Trajectory
        As for ``abstract_facts``.
    size : (int, int)
        Width and height of each canvas, in pixels (>= 120 each).
    duration : float
        Seconds of wall time each run plays.
    max_bytes : int
        Budget of the whole abstract's widget state; each player gets a third of it, and its
        frames are subsampled to fit (``TrajectoryPlayer``).

    Returns
    -------
    ipywidgets.Box
        Children: three panels (a ``VBox`` each), whose first child is the ``TrajectoryPlayer``.
    """
    if np.ndim(size) != 1 or len(size) != 2:
        raise ValueError(f"size must be (width, height) in pixels, got {c.shown(size)}")
    width = c.integer("size[0] (width)", size[0], minimum=120)
    height = c.integer("size[1] (height)", size[1], minimum=120)
    duration = c.real("duration", duration, minimum=0.0, strict=True)
    max_bytes = c.integer("max_bytes", max_bytes, minimum=3)
    f = abstract_facts(usa, rope, prompts)
    check_facts(f)
    players = []
    for traj, title in ((usa, "plain attention"), (rope, "RoPE"),
                        (prompts, f"{f['prompts_K']} prompts")):
        players.append(TrajectoryPlayer(traj, duration=duration, max_bytes=max_bytes // 3,
                                        width=width, height=height, title=title))
    players[1].add_latitude_circle(f["rope_height"])
    if f["prompts_targets"] is not None:
        players[2].add_targets(f["prompts_targets"])
    panels = [_panel(p, s, width) for p, s in zip(players, sentences(f), strict=True)]
    return widgets.Box(panels, layout=widgets.Layout(
        display="flex", flex_flow="row wrap", justify_content="center", align_items="flex-start",
        width="100%"), _dom_classes=["usaav-abstract"])
