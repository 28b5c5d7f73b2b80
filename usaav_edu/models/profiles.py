"""Profiles ``phi``: the third part of a kernel (the energy of Definition 1.2 (ch1-def-energy)).

* :class:`ExpProfile`: attention, ``phi(s) = e^{beta s} / beta`` (``beta != 0``); at
  ``beta = 0`` it stands for its limit up to a constant, ``phi(s) = s``.  For ``beta < 0``
  the weights ``phi'(s) = e^{beta s}`` are largest for the farthest tokens; ``phi`` still
  increases (so collapse still maximizes the energy) but is concave;
* :class:`LinearProfile`: ``phi(s) = s``.

The kernel needs ``phi'``, which is ``e^{beta s}`` or 1, so the profiles are a
closed set (the Numba kernel computes ``phi'`` itself).  ``phi`` and ``dphi`` take the inner
products ``s = <y_i, y_j>`` (array_like) and give an ndarray of their shape.
"""

from dataclasses import dataclass, fields

import numpy as np

from .. import _validate as v
from ._part import params_kind

BETA_MAX = 700.0  # e^beta overflows a double near beta = 709.8
BETA_MIN = 1e-300  # a nonzero |beta| below this makes phi = e^{beta s} / beta overflow


def check_beta(beta):
    """The inverse temperature ``beta`` as a float with ``beta = 0`` or
    ``BETA_MIN <= |beta| <= BETA_MAX``.

    A TypeError or ValueError, naming ``beta``, if it is not a real number in that range.
    """
    beta = v.real_scalar("beta", beta, minimum=-BETA_MAX, maximum=BETA_MAX)
    if 0.0 < abs(beta) < BETA_MIN:
        raise ValueError(f"beta must be 0 (the linear limit) or at least {BETA_MIN:g} in absolute "
                         f"value, so that phi = e^(beta s) / beta stays finite; got {beta!r}")
    return beta


class _ProfileBase:
    """What the two profiles share: ``phi``, ``phi'`` and ``params``, from ``beta`` and ``linear``.

    The linear profile is the attention profile's limit at ``beta = 0``, so one formula serves.
    """

    def phi(self, s):
        """``phi(s) = e^{beta s} / beta``, or ``s`` itself where the profile is linear."""
        s = np.asarray(s, dtype=np.float64)
        if self.linear:
            return s.copy()
        return np.exp(self.beta * s) / self.beta

    def dphi(self, s):
        """``phi'(s) = e^{beta s}``, or 1 where the profile is linear."""
        s = np.asarray(s, dtype=np.float64)
        if self.linear:
            return np.ones_like(s)
        return np.exp(self.beta * s)

    def params(self):
        """The JSON description read back by :func:`~usaav_edu.models.profiles.profile_from_params`.

        Returns
        -------
        dict
            ``{"kind": ..., its parameters}``, JSON-serializable.
        """
        return {"kind": self.kind, **{f.name: getattr(self, f.name) for f in fields(self)}}


@dataclass(frozen=True)
class ExpProfile(_ProfileBase):
    """The attention profile ``phi(s) = e^{beta s} / beta``.

    Parameters
    ----------
    beta : float
        The inverse temperature, 0 (the linear limit) or ``1e-300 <= |beta| <= 700``.

    Raises
    ------
    TypeError, ValueError
        If ``beta`` is out of range (:func:`~usaav_edu.models.profiles.check_beta`).
    """

    beta: float = 1.0
    kind = "exp"

    def __post_init__(self):
        object.__setattr__(self, "beta", check_beta(self.beta))

    @property
    def linear(self):
        """True at ``beta = 0``, where ``phi'`` is constant."""
        return self.beta == 0.0


@dataclass(frozen=True)
class LinearProfile(_ProfileBase):
    """The linear profile ``phi(s) = s`` (``beta`` reads 0, its place in the attention family)."""

    kind = "linear"
    linear = True
    beta = 0.0


def check_profile(profile):
    """``profile`` itself if it is an :class:`ExpProfile` or a :class:`LinearProfile`.

    Parameters
    ----------
    profile : object

    Returns
    -------
    ExpProfile or LinearProfile

    Raises
    ------
    TypeError
        Otherwise (the kernel computes ``phi'`` itself, so only these two are possible).
    """
    from .user_profile import UserProfile  # a profile of one's own (it imports this module)

    if not isinstance(profile, (ExpProfile, LinearProfile, UserProfile)):
        raise TypeError(f"profile must be ExpProfile(beta), LinearProfile() or "
                        f"UserProfile(dphi), got {v.shown(profile)}")
    return profile


def profile_from_params(p):
    """The profile, ExpProfile or LinearProfile, described by ``p`` (the output of its ``params()``).

    ``p = {"kind": "exp", "beta": ...}`` or ``{"kind": "linear"}``;
    the shared key check refuses an unknown kind and a missing or extra
    key (TypeError, ValueError).
    """
    kind = params_kind(p, "profile", {"exp": {"beta"}, "linear": set()})
    return ExpProfile(p["beta"]) if kind == "exp" else LinearProfile()
