"""``TrajectoryPlayer``: a ``SphereView`` that plays a ``Trajectory`` in the browser.

The motion runs client-side, so it also plays in the static book with no kernel: each token
Mesh ``p{i}`` gets a ``VectorKeyframeTrack`` on ``p{i}.position``, all tracks form one
``AnimationClip`` and an ``AnimationAction`` (its play / pause / stop / repeat buttons) runs it.
Keyframe times are the model times ``traj.t``; the action's ``timeScale`` makes the whole run
last ``duration`` seconds of wall time.

Time readout: a bar under the sphere, fixed to the camera, with a bead that moves from t = 0 to
t = t_max as the clip plays (this works without a kernel), and a number field linked in the
browser to the action's time (it shows the time at which the reader paused or stopped).

Frames are subsampled so that one player's embedded widget state stays under ``max_bytes``
(about 1 MB by default): the keyframe data cost about ``22 (n + 1)`` bytes per frame once
base64-encoded in the page, each token about 2.1 kB more (its Mesh and track), the rest of the
scene about 110 kB.
"""
from __future__ import annotations

import ipywidgets as widgets
import numpy as np
import pythreejs as three

from .state import live_kernel
from . import _checks as c
from .colors import project_3d
from .scene import TRAIL_BYTES, SphereView, polyline, subsample

#: bytes of embedded state per token and frame (3 float32 values + 1 float32 time, base64)
BYTES_PER_TOKEN_FRAME = 22
#: bytes of embedded state per token that do not depend on the number of frames (Mesh + track)
BYTES_PER_TOKEN = 2100
#: bytes of the rest of the scene (materials, circles, controls, layout)
BYTES_FIXED = 110_000

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


def frames_for_budget(n_tokens: int, n_frames: int, max_bytes: int = 900_000,
                      max_frames: int | None = None) -> int:
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

    Returns
    -------
    int

    Raises
    ------
    ValueError
        When fewer than two frames fit.
    """
    n_tokens = c.integer("n_tokens", n_tokens, minimum=1)
    return _frames_within(*_player_bytes(n_tokens), n_frames, max_bytes, max_frames,
                         f"{n_tokens} tokens")


def _player_bytes(m: int) -> tuple[int, int]:
    """Embedded bytes ``(fixed, per_frame)`` of a player of ``m`` tokens (no trails): the scene
    and the tokens once, ``BYTES_FIXED + BYTES_PER_TOKEN m``, and each keyframe of the m token
    tracks and the clock, ``BYTES_PER_TOKEN_FRAME (m + 1)``."""
    return BYTES_FIXED + BYTES_PER_TOKEN * m, BYTES_PER_TOKEN_FRAME * (m + 1)


def _frames_within(fixed, per_frame, n_frames, max_bytes, max_frames, what, advice=""):
    """``min(k, max_frames, n_frames)`` for the most frames ``k`` with
    ``fixed + k * per_frame <= max_bytes`` (the budget rule of every view that embeds frames).

    Parameters
    ----------
    fixed, per_frame : int
        Bytes of the view once and per frame.
    n_frames : int
        Frames available (checked, >= 1).
    max_bytes : int
        The budget (checked, >= 1).
    max_frames : int or None
        A cap of the caller's (checked, >= 2).
    what : str
        What is drawn, for the message.
    advice : str
        Appended to the message.

    Returns
    -------
    int

    Raises
    ------
    ValueError
        When fewer than two frames fit.
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
        self.time_readout = widgets.FloatText(
            description="t (paused)", disabled=True,
            tooltip="model time at which the animation was paused or stopped", layout=widgets.Layout(width="180px"),
            style={"description_width": "70px"})
        self.time_info = widgets.HTML()
        self._link = None
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
        bar = polyline(np.array([[-_BAR_HALF, _BAR_Y, _BAR_Z], [_BAR_HALF, _BAR_Y, _BAR_Z]]),
                       color="#555555")
        ticks = [polyline(np.array([[u, _BAR_Y - 0.012, _BAR_Z], [u, _BAR_Y + 0.012, _BAR_Z]]),
                          color="#555555") for u in np.linspace(-_BAR_HALF, _BAR_HALF, 5)]
        self.clock = three.Mesh(three.SphereGeometry(radius=0.014, widthSegments=12,
                                                     heightSegments=8),
                                three.MeshBasicMaterial(color="#d62728"), name="clock",
                                position=(-_BAR_HALF, _BAR_Y, _BAR_Z))
        self.hud = three.Group(children=[bar, *ticks, self.clock], name="hud")
        self.camera.children = list(self.camera.children) + [self.hud]

    def _live_budget(self, trajectory, kwargs: dict) -> dict:
        """``kwargs`` with ``max_tokens`` lowered where two frames of every drawn token do not
        fit ``max_bytes`` (a live kernel; see ``_tokens_within``), and ``budget_note`` set."""
        shape = np.shape(getattr(trajectory, "x", None))
        if len(shape) != 3 or min(shape) < 1:
            return kwargs                          # SphereView names what is wrong with it
        max_tokens = c.integer("max_tokens", kwargs.get(
            "max_tokens", SphereView.__init__.__kwdefaults__["max_tokens"]), minimum=1)
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
        room = self.max_bytes - BYTES_FIXED - BYTES_PER_TOKEN * m
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
        if animate and getattr(self, "clock", None) is not None:
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
        k = frames_for_budget(n, n_frames, self.max_bytes - self.trail_bytes, self.max_frames)
        idx = subsample(n_frames, k)
        times = (t[idx] - t[0]).astype(np.float32)
        span = float(times[-1]) if times[-1] > 0 else 1.0
        p = project_3d(x[idx], self.coords).astype(np.float32)        # (k, n, 3)
        tracks = [three.VectorKeyframeTrack(name=f"p{i}.position", times=times,
                                            values=np.ascontiguousarray(p[:, i, :]).ravel())
                  for i in range(n)]
        u = -_BAR_HALF + 2 * _BAR_HALF * times / span
        clock = np.stack([u, np.full_like(u, _BAR_Y), np.full_like(u, _BAR_Z)], axis=1)
        tracks.append(three.VectorKeyframeTrack(name="clock.position", times=times,
                                                values=clock.astype(np.float32).ravel()))
        clip = three.AnimationClip(tracks=tracks, duration=span)
        mixer = three.AnimationMixer(self.scene)
        action = three.AnimationAction(mixer, clip, self.scene, loop=self.loop,
                                       timeScale=span / self.duration,
                                       clampWhenFinished=True)
        old = (self.action, self.tracks, self._link)
        self.action, self.tracks, self.frame_indices = action, tracks, idx
        if self._link is not None:
            self._link.unlink()
        self._link = widgets.jsdlink((action, "time"), (self.time_readout, "value"))
        self.time_readout.value = 0.0
        self.time_info.value = (
            f"<span style='font-size:12px'>{BUTTONS_TEXT} "
            f"Press &#9654; to play t = {t[0]:g} to {t[-1]:g} "
            f"({len(idx)} of {n_frames} frames, {self.duration:g} s); the red bead on the bar "
            f"marks the time</span>")
        self.children = [self.children[0],
                         widgets.HBox([action, self.time_readout, self.time_info],
                                      layout=widgets.Layout(align_items="center")),
                         self.caption] + ([self.budget_label] if self.budget_label is not None else [])
        old_action, old_tracks, _ = old
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
