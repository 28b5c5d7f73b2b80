"""What the solver and the fast summation ask of a model's parts (gauge, bias, profile).

A model is ``h((x, xi), (y, zeta)) = b(xi, zeta) phi(<G(xi) x, G(zeta) y>)`` (Definition 3.1
(ch3-def-av) of the book).  Its parts are described here by what is asked of them, as
:class:`typing.Protocol` classes; the concrete parts live in :mod:`usaav_edu.models`, above this
folder, and satisfy them.  Two levels each:

* :class:`Gauge`, :class:`Bias`: the least a part of one's own must give, its matrices
  (``matrices(xi) -> (n, d, d)`` orthogonal, ``matrix(xi) -> (n, n)`` symmetric); the model
  checks them once per run and the direct kernel consumes them.
* :class:`BuiltInGauge`, :class:`SeparableBias`: what a part gives besides, so that no matrix
  need be formed: its labels, its own rotation, its dimension check; for a bias its sign and
  size (:class:`BiasFacts`), the factor of the energy bound and the structure fast summation
  reads (:meth:`SeparableBias.separable`: the kind and its parameters, for
  :class:`usaav_edu.dynamics.fastsum.kernel.FastKernel`).
* :class:`Profile`: ``phi``, ``phi'`` and the inverse temperature; the compiled kernels compute
  ``phi'`` themselves from ``beta`` and ``linear``, so only the built-in profiles run.

:func:`missing` names what a part lacks of a protocol, for the messages that refuse it.
"""

from typing import NamedTuple, Protocol, runtime_checkable

__all__ = ["BiasFacts", "NO_BIAS", "Gauge", "BuiltInGauge", "Bias", "SeparableBias", "Profile",
           "missing", "is_separable"]


class BiasFacts(NamedTuple):
    """What the solver needs to know of a run's bias ``b_ij = b(xi_i, xi_j)``.

    The step size, the stiffness estimate and the energy check read ``max |b_ij|`` and the
    sign of the entries; a :class:`~usaav_edu.dynamics.parts.SeparableBias` gives them without the ``n x n`` matrix.

    Attributes
    ----------
    has_bias : bool
        False for ``b = 1``.
    max_abs : float
        ``max_ij |b_ij|`` (at least ``1e-300``; 1 for ``b = 1``).
    negative : bool
        True when some ``b_ij < 0`` (or, when read from a formula, may be: borderline cases
        count as negative).
    """

    has_bias: bool
    max_abs: float
    negative: bool


NO_BIAS = BiasFacts(False, 1.0, False)
"""The facts of ``b = 1``."""


@runtime_checkable
class Gauge(Protocol):
    """A gauge ``G: A -> O(d)``: the least it must give."""

    def matrices(self, xi):
        """``(n, d, d)`` orthogonal matrices ``G(xi_i)``."""


@runtime_checkable
class BuiltInGauge(Gauge, Protocol):
    """A gauge that rotates on its own, checks its labels and its dimension.

    Attributes
    ----------
    kind : str
        Its name in ``params()``.
    labels : {"none", "position", "prompt"}
        What ``xi`` means.
    identity : bool
        ``G = I``: the pair rotations ``G_i^T G_j`` are the identity.
    """

    kind: str
    labels: str
    identity: bool

    def apply(self, x, xi, inverse=False):
        """``G(xi_i) x_i`` (or the transposes), ``(..., n, d)``."""

    def check_labels(self, xi):
        """Raise ValueError if the labels make the gauge overflow."""

    def check_dimension(self, d, name, model):
        """Raise ValueError, naming the argument ``name`` and the model, if ``d`` does not fit."""

    def params(self):
        """The JSON description of the gauge."""


@runtime_checkable
class Bias(Protocol):
    """A bias ``b(xi, zeta)``: the least it must give."""

    def matrix(self, xi):
        """The ``(n, n)`` symmetric matrix ``b(xi_i, xi_j)``."""


@runtime_checkable
class SeparableBias(Bias, Protocol):
    """A bias known by its formula: sign, size, energy factor and structure without ``n x n``.

    Attributes
    ----------
    kind : str
        Its name in ``params()``.
    constant : bool
        ``b = 1`` (no bias: the labels do not enter, no matrix is formed).
    nonnegative : bool
        ``b >= 0`` for every labels (the SA normalization divides by the row sums).
    """

    kind: str
    constant: bool
    nonnegative: bool

    def facts(self, xi):
        """The :class:`BiasFacts` of the labels ``xi``, in ``O(n log n)``."""

    def bound_factor(self, xi):
        """``mean(B)`` if ``B >= 0``, else ``lambda_max(B) / n`` (the energy bound's factor)."""

    def check_labels(self, xi):
        """Raise ValueError if the labels make the bias overflow."""

    def separable(self):
        """``(kind, parameters)`` for fast summation, or None if it has no separable form."""

    def params(self):
        """The JSON description of the bias."""


@runtime_checkable
class Profile(Protocol):
    """A profile ``phi``: ``phi``, ``phi'``, and ``beta``, ``linear`` for the compiled kernels."""

    beta: float
    linear: bool

    def phi(self, s):
        """``phi(s)``."""

    def dphi(self, s):
        """``phi'(s)``."""

    def params(self):
        """The JSON description of the profile."""


def missing(part, protocol):
    """The names of ``protocol``'s members that ``part`` lacks (methods must be callable).

    Parameters
    ----------
    part : object
    protocol : type
        One of the protocols of this module.

    Returns
    -------
    list of str
        In the order the protocol declares them; empty when ``part`` satisfies it.
    """
    lacks = []
    for klass in reversed(protocol.__mro__):
        if not getattr(klass, "_is_protocol", False) or klass is Protocol:
            continue
        for name in getattr(klass, "__annotations__", {}):
            if name not in lacks and not hasattr(part, name):
                lacks.append(name)
        for name, member in vars(klass).items():
            if callable(member) and not name.startswith("_") and name not in lacks \
                    and not callable(getattr(part, name, None)):
                lacks.append(name)
    return lacks


def is_separable(bias):
    """Whether ``bias`` gives its facts and structure by formula (a :class:`SeparableBias`).

    Parameters
    ----------
    bias : object

    Returns
    -------
    bool
    """
    return not missing(bias, SeparableBias)
