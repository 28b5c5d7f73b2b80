"""Every exception the package raises on purpose, in one place.

* :class:`IntegrationError` a run that failed while it ran: a state that is no longer finite,
  a step size that underflowed, an energy that fell where theory says it rises;
* :class:`StepTooLargeError` a fixed step beyond the stability bound, refused before the run;
* :class:`UnresolvedError` a density that sharpened beyond what its grid resolves (collapse);
* :class:`WorkEstimateError` a run refused before it starts because its estimated time or
  memory exceeds the limit (the message gives the estimate and what to change);
* :class:`FastSummationRefused` ``summation="fast"`` asked of a model where fast summation does
  not apply (the reason is given);
* :class:`SchedulerUnreachable` no Dask scheduler answers at the address given;
* :class:`ClaimFailed` a claim of the book that the computation does not bear out.

Wrong arguments raise the built-in ``TypeError`` and ``ValueError``, with a message that names
the argument and what was expected (``usaav_edu._validate``).  :class:`WorkEstimateError`
and :class:`StepTooLargeError` are ``ValueError`` too: they refuse an argument (``t_max``,
``n``, ``dt``) before any work is done.
"""

__all__ = ["IntegrationError", "StepTooLargeError", "UnresolvedError", "WorkEstimateError",
           "FastSummationRefused", "SchedulerUnreachable", "ClaimFailed"]


class IntegrationError(RuntimeError):
    """The integration failed: a non-finite state or a step size underflow."""


class StepTooLargeError(IntegrationError, ValueError):
    """An RK4 step beyond the stability bound of the model's rates, refused before the run.

    Both an :class:`IntegrationError` (the integration it would start fails: such runs have
    always been reported as one) and a ``ValueError`` (the argument ``dt`` is refused before any
    work, as the other refusals of :func:`usaav_edu.simulate` are).
    """


class UnresolvedError(IntegrationError):
    """The density sharpened beyond what the grid resolves (collapse).

    Attributes
    ----------
    t : float
        The time at which the tail or the negative values crossed their thresholds.
    partial : usaav_edu.meanfield.solver.DensityTrajectory
        The frames computed before that time (status ``Status.UNRESOLVED``).
    """

    def __init__(self, message, t, partial):
        super().__init__(message)
        self.t = t
        self.partial = partial


class WorkEstimateError(ValueError):
    """A run refused before it starts: its estimated time or memory is beyond the limit.

    Attributes
    ----------
    seconds : float or None
        The estimated wall time of the run, when time is what was exceeded.
    nbytes : float or None
        The estimated memory (or disk) of the run, when that is what was exceeded.
    """

    def __init__(self, message, *, seconds=None, nbytes=None):
        super().__init__(message)
        self.seconds = seconds
        self.nbytes = nbytes


class FastSummationRefused(ValueError):
    """``summation="fast"`` asked for a model where it does not apply; ``reason`` says why."""

    def __init__(self, reason):
        self.reason = reason
        super().__init__(f"summation='fast' does not apply: {reason}. Use summation='direct' "
                         f"(or 'auto', which falls back to it).")


class SchedulerUnreachable(OSError):
    """No Dask scheduler answers at the address given as ``client`` (``address``, ``reason``)."""

    def __init__(self, address, reason):
        self.address, self.reason = address, reason
        super().__init__(f"client: no Dask scheduler answers at {address} ({reason})")


class ClaimFailed(AssertionError):
    """A claim of the book that the computation does not bear out."""
