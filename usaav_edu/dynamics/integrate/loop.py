"""The frame loop: a state advanced from frame time to frame time by a stepper and a controller.

For frame times ``t_0 < t_1 < ... < t_F`` the loop calls ``stepper.advance`` from ``t_{f-1}`` to
``t_f`` (every call lands on ``t_f`` exactly), carries the step it proposes to the next frame,
shares one step budget and one :class:`~.steppers.Workspace` between the calls, and after each
frame calls ``on_frame(f, state, advance)``.  It stops at the first call that does not end
with ``Outcome.OK`` and returns what happened as a :class:`FrameRun`; what a failure means
(raise, or return the frames so far) is the caller's decision.
"""

from enum import Enum
from typing import NamedTuple

from .steppers import Outcome, Workspace

__all__ = ["FrameRun", "Status", "run_frames"]


class Status(Enum):
    """How a run of :func:`usaav_edu.simulate` or :func:`usaav_edu.meanfield.solver.solve`
    ended (the ``status`` of a :class:`~usaav_edu.Trajectory` or a density trajectory);
    ``status.message`` says what it means.

    A run that does not complete raises (an :class:`usaav_edu.errors.IntegrationError`, or for
    a density an :class:`usaav_edu.errors.UnresolvedError`), or, with ``on_failure="return"``,
    returns the frames computed so far with one of the other statuses: ``MAX_STEPS`` and
    ``FAILED`` from the particle solver, ``UNRESOLVED`` from the density solver (whose failed
    integrations always raise).
    """

    COMPLETED = "the run reached t_max"
    MAX_STEPS = ("the adaptive stepper used all max_steps steps before t_max: the frames end "
                 "before t_max")
    FAILED = ("the integration failed (a state that is not finite, a step size that underflowed "
              "or an energy that fell): the frames end before t_max")
    UNRESOLVED = ("the density sharpened beyond what the grid resolves (collapse): the frames end "
                  "before t_max")

    @property
    def message(self):
        """The meaning of the status, one sentence."""
        return self.value


class FrameRun(NamedTuple):
    """The end of a :func:`run_frames` call.

    Attributes
    ----------
    outcome : Outcome
        ``Outcome.OK`` if every frame was reached, else the outcome of the call that stopped.
    frames : int
        The number of frames reached, counting the first (``len(times)`` on success).
    t : float
        The time reached.
    h : float
        The step the stepper proposes next.
    accepted, rejected, n_rhs : int
        Steps accepted and rejected, right-hand-side evaluations, over all the calls.
    last : Advance
        The result of the last ``advance`` call (None if there was none).
    """

    outcome: Outcome
    frames: int
    t: float
    h: float
    accepted: int
    rejected: int
    n_rhs: int
    last: object = None


def run_frames(state, times, h, stepper, field, control, controller=None, on_frame=None,
               work=None):
    """Advance ``state`` in place through the frame times ``times``.

    Parameters
    ----------
    state : ndarray
        The state at ``times[0]``, changed in place.
    times : sequence of float
        Increasing frame times.
    h : float
        The first step to try (the fixed step of a fixed-step method).
    stepper : FixedStepper or AdaptiveStepper
        The method (:data:`~.steppers.METHODS`).
    field : callable
        The velocity field and its state contract (:mod:`.steppers`).
    control : Control
        Tolerances, the step budget of the whole run (``max_steps``, shared by the frames; not
        applied to a fixed-step method) and the per-step callback ``report``.
    controller : Controller or None
        The step-size controller (None: the stepper's default with ``control.h_min``).
    on_frame : callable or None
        Called as ``on_frame(f, state, advance)`` when frame ``f`` (``1 .. F``) is reached; a
        true return value ends the loop with ``Outcome.STOPPED``.  It may raise.
    work : Workspace or None
        Stage buffers (made here if None); see :class:`~.steppers.Workspace`.

    Returns
    -------
    FrameRun
    """
    if work is None:
        work = Workspace(stepper.tableau, state)
    budget = control.max_steps if stepper.adaptive else None
    accepted = rejected = n_rhs = 0
    res = None
    for f in range(1, len(times)):
        step_control = control if budget is None else control._replace(
            max_steps=budget - accepted - rejected)
        res = stepper.advance(state, times[f - 1], times[f], h, field, step_control, controller,
                              work)
        accepted, rejected, n_rhs = accepted + res.accepted, rejected + res.rejected, n_rhs + res.n_rhs
        if res.outcome is not Outcome.OK:
            return FrameRun(res.outcome, f, res.t, res.h, accepted, rejected, n_rhs, res)
        h = res.h
        if on_frame is not None and on_frame(f, state, res):
            return FrameRun(Outcome.STOPPED, f + 1, res.t, h, accepted, rejected, n_rhs, res)
    t_end = times[-1] if res is None else res.t
    return FrameRun(Outcome.OK, len(times), t_end, h, accepted, rejected, n_rhs, res)
