r"""The spectral dichotomy of distance-bias kernels (chapter 7 of the book).

Tokens carry positions :math:`\xi` and interact through
:math:`h = b(\xi - \zeta)\, \varphi(\langle x, y \rangle)`.  On ``n`` equally spaced positions
of a circle, :math:`\xi_j = j L / n` (period :math:`L`, default :math:`2 \pi`), with an even
:math:`L`-periodic bias :math:`b`, the bias matrix :math:`B_{ij} = b(\xi_i - \xi_j)` is
circulant and the linear energy diagonalizes in Fourier modes:

.. math::

    E = \frac{1}{2 n^2} \sum_{i,j} b(\xi_i - \xi_j) \langle x_i, x_j \rangle
      = \frac{1}{2} \sum_k \hat b(k)\, |\hat m(k)|^2,

    \hat b(k) = \frac{1}{n} \sum_l b(l L / n)\, e^{-2 \pi i k l / n}, \qquad
    \hat m(k) = \frac{1}{n} \sum_j x_j\, e^{-2 \pi i k \xi_j / L} \in \mathbb{C}^d,

with :math:`\sum_k |\hat m(k)|^2 = 1` (Parseval, since every :math:`|x_j| = 1`).  Hence
:math:`E \le \max_k \hat b(k) / 2`.  A non-negative bias has its largest coefficient at
:math:`k = 0` (the constant profile: collapse); a sign-changing bias such as :math:`\cos` can
put it at :math:`k^* \ne 0`, and then the maximizers are great circles wound :math:`k^*`
times.

Everything here is a small pure function of arrays, plus :func:`phase_diagram`, a cheap
driver that simulates a grid of (bias type, omega, beta) with :func:`usaav_edu.simulate`
and classifies the final states.
"""

import numbers

import numpy as np

from .. import _validate as v
from .. import sphere
from ..particles import experiments
from ..particles.solver import energy_bound, simulate
from . import diagnostics

TWO_PI = 2.0 * np.pi
BIAS_TYPES = ("distance", "cosine")
PHASES = ("collapse", "great circle", "other")


def _frequencies(k):
    """``k`` as an array (its kind and shape are checked by the caller)."""
    return v.as_array("k", k, "a 1-D array of integer frequencies")


def _coefficients(name, value):
    """``value`` as a finite real or complex array (Fourier coefficients)."""
    arr = v.as_array(name, value, "an array of real or complex numbers")
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.number)):
        raise TypeError(f"{name} must hold real or complex numbers, got dtype {arr.dtype}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return arr


# ---------------------------------------------------------------------- positions
def circle_positions(n, period=TWO_PI):
    """``n`` equally spaced positions ``xi_j = j * period / n``, j = 0 .. n-1.

    Parameters
    ----------
    n : int
        Number of positions, >= 1.
    period : float
        The period ``L``, > 0.

    Returns
    -------
    ndarray
        ``(n,)`` positions.
    """
    n = v.integer("n", n, minimum=1)
    period = v.real_scalar("period", period, minimum=0.0, strict=True)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is reported below
        xi = period * np.arange(n) / n
    if not np.all(np.isfinite(xi)):
        raise ValueError(f"period = {period:g} is too large: j * period overflows")
    return xi


# ---------------------------------------------------------------------- Fourier coefficients
def bias_fourier(b, n, period=TWO_PI):
    """Fourier coefficients ``hat b(k)`` of a bias sampled on ``n`` equally spaced positions.

    ``hat b(k) = (1/n) sum_{l=0}^{n-1} b(l L / n) e^{-2 pi i k l / n}`` for the integer
    frequencies ``k = -(n//2) .. (n-1)//2`` (the eigenvalues of the circulant matrix
    ``B_ij = b(xi_i - xi_j)``, divided by n).

    Parameters
    ----------
    b : callable
        Vectorized: ``b(dxi)`` for an array of position differences; it should be
        even and ``period``-periodic (only its samples ``b(l L / n)`` are used).
    n : int
        Number of positions, >= 1.
    period : float
        The period L of the positions, > 0.

    Returns
    -------
    k : (n,) int array
        Frequencies in increasing order.
    bhat : (n,) array
        Coefficients (real when the samples are even, ``b(lL/n) = b((n-l)L/n)``;
        complex otherwise).
    """
    if not callable(b):
        raise TypeError(f"b must be a callable b(dxi), got {type(b).__name__}")
    n = v.integer("n", n, minimum=1)
    period = v.real_scalar("period", period, minimum=0.0, strict=True)
    samples = np.asarray(b(period * np.arange(n) / n), dtype=np.complex128)
    if samples.shape != (n,):
        raise ValueError(f"b must return one value per position difference, shape ({n},), got {samples.shape}")
    if not np.all(np.isfinite(samples)):
        raise ValueError("b must return finite values")
    bhat = np.fft.fft(samples) / n
    k = np.fft.fftfreq(n, 1.0 / n).round().astype(np.int64)
    order = np.argsort(k, kind="stable")
    k, bhat = k[order], bhat[order]
    if np.allclose(samples, np.roll(samples[::-1], 1), rtol=0.0, atol=1e-14 * max(1.0, np.abs(samples).max())):
        bhat = bhat.real.copy()
    return k, bhat


def top_frequency(k, bhat):
    """The frequency ``k* >= 0`` of the largest real coefficient (ties: the smallest ``|k|``).

    Parameters
    ----------
    k : array_like
        ``(K,)`` integer frequencies.
    bhat : array_like
        ``(K,)`` coefficients ``hat b(k)`` (real parts are compared).

    Returns
    -------
    k_star : int
        The frequency.
    bhat_max : float
        Its coefficient, the largest.

    References
    ----------
    The book's chapter 7: Theorem 7.2 (ch7-thm-fourier) and Theorem 7.3 (ch7-thm-circle).
    """
    k = _frequencies(k)
    if k.dtype == bool or not np.issubdtype(k.dtype, np.integer):
        raise TypeError(f"k must be an array of integer frequencies, got dtype {k.dtype}")
    bhat = _coefficients("bhat", bhat)
    if k.ndim != 1 or bhat.shape != k.shape:
        raise ValueError(f"k and bhat must be 1-D arrays of one shape, got {k.shape} and {bhat.shape}")
    if k.size == 0:
        raise ValueError("k must not be empty")
    if np.iscomplexobj(bhat):
        if np.max(np.abs(bhat.imag)) > 1e-12 * max(1.0, np.max(np.abs(bhat))):
            raise ValueError("bhat must be real (an even bias); got complex coefficients")
        bhat = bhat.real
    top = bhat.max()
    ties = np.flatnonzero(bhat >= top - 1e-12 * max(1.0, abs(top)))
    k_star = int(np.min(np.abs(k[ties])))
    return k_star, float(top)


# ---------------------------------------------------------------------- the mean profile
def _tokens_at(x, xi):
    """The ``(n, d)`` unit vectors ``x`` and their ``(n,)`` positions ``xi``, checked."""
    x = v.points_on_sphere("x", x)
    xi = v.float_array("xi", xi, ndim=1)
    if xi.shape != (x.shape[0],):
        raise ValueError(f"xi must have shape ({x.shape[0]},) (one position per token), got {xi.shape}")
    return x, xi


def mean_profile(x, xi):
    """The mean profile ``m(xi) = E[x | xi]`` of an empirical law of tokens.

    Returns ``(positions, m)``: the distinct positions in increasing order and, for each,
    the mean of the tokens at that position (not normalized: ``|m| < 1`` when the tokens at
    one position disagree, ``|m| = 1`` when they coincide).

    Parameters
    ----------
    x : array_like
        ``(n, d)`` unit vectors.
    xi : array_like
        ``(n,)`` positions.
    """
    x, xi = _tokens_at(x, xi)
    pos, inverse = np.unique(xi, return_inverse=True)
    m = np.zeros((pos.shape[0], x.shape[1]))
    np.add.at(m, inverse, x)
    m /= np.bincount(inverse, minlength=pos.shape[0])[:, None]
    return pos, m


def profile_fourier(x, xi, k, period=TWO_PI):
    """``hat m(k) = (1/n) sum_j x_j e^{-2 pi i k xi_j / L}`` for each integer frequency in ``k``.

    This is the Fourier transform of the mean profile ``m(xi)`` weighted by the empirical
    position law.

    Parameters
    ----------
    x, xi : array_like
        As in :func:`mean_profile`.
    k : array_like
        Integer frequencies.
    period : float
        The period ``L``, > 0.

    Returns
    -------
    ndarray
        ``(len(k), d)`` complex.

    References
    ----------
    The book's chapter 7: Theorem 7.2 (ch7-thm-fourier), whose Fourier variables these are.
    """
    x, xi = _tokens_at(x, xi)
    k = _frequencies(k)
    if k.ndim != 1 or not np.issubdtype(k.dtype, np.integer):
        raise TypeError(f"k must be a 1-D array of integer frequencies, got dtype {k.dtype}, shape {k.shape}")
    period = v.real_scalar("period", period, minimum=0.0, strict=True)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is reported below
        angle = -2.0 * np.pi * np.outer(k, xi) / period
    if not np.all(np.isfinite(angle)):
        raise ValueError(f"2 pi k xi / period overflows (|xi| up to {np.max(np.abs(xi)):g}, period = {period:g})")
    return np.exp(1j * angle) @ x / x.shape[0]


def fourier_energy(bhat, mhat):
    """``1/2 sum_k hat b(k) |hat m(k)|^2``: the linear-profile energy in Fourier variables.

    ``bhat`` has shape (K,), ``mhat`` shape (K, d) (same frequencies in the same order).

    Parameters
    ----------
    bhat : array_like
        ``(K,)`` bias coefficients.
    mhat : array_like
        ``(K, d)`` profile coefficients.

    Returns
    -------
    float

    References
    ----------
    The book's chapter 7: Theorem 7.2 (ch7-thm-fourier).
    """
    bhat = _coefficients("bhat", bhat)
    mhat = _coefficients("mhat", mhat)
    if bhat.ndim != 1 or mhat.ndim != 2 or mhat.shape[0] != bhat.shape[0]:
        raise ValueError(f"bhat must have shape (K,) and mhat shape (K, d), got {bhat.shape} and {mhat.shape}")
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is reported below
        power = np.sum(np.abs(mhat) ** 2, axis=1)
        energy = float(np.real(np.sum(bhat * power)) / 2.0)
    if not np.isfinite(energy):
        raise ValueError("bhat and mhat are too large: sum_k bhat(k) |mhat(k)|^2 overflows "
                         "(for unit tokens |mhat(k)| <= 1)")
    return energy


# ---------------------------------------------------------------------- shape of a configuration
def singular_values(x):
    """Singular values of the ``(n, d)`` token matrix X, in decreasing order.

    ``X^T X = sum_i x_i x_i^T``; its eigenvalues sum to n.  A Dirac has ``(sqrt n, 0, ...)``;
    a uniform great circle (n >= 3 equally spaced) has ``(sqrt(n/2), sqrt(n/2), 0, ...)``.

    Parameters
    ----------
    x : array_like
        ``(n, d)`` unit vectors.

    Returns
    -------
    ndarray
        ``(min(n, d),)``, decreasing.
    """
    x = v.points_on_sphere("x", x)
    return np.linalg.svd(x, compute_uv=False)


def great_circle_singular_values(n, d):
    """The singular values ``(sqrt(n/2), sqrt(n/2), 0, ..., 0)`` of a uniform great circle in R^d.

    Parameters
    ----------
    n : int
        Number of points of the circle, >= 3.
    d : int
        Dimension, >= 2.

    Returns
    -------
    ndarray
        ``(d,)``: :func:`singular_values` of such a circle, with zeros up to d when d > n.
    """
    n = v.integer("n", n, minimum=3)
    d = v.integer("d", d, minimum=2)
    s = np.zeros(d)
    s[:2] = np.sqrt(n / 2.0)
    return s


def winding_number(x, xi, period=TWO_PI):
    """The frequency ``k >= 0`` carrying most of the profile's power ``|hat m(k)|^2 + |hat m(-k)|^2``.

    For ``x_j = a cos(k xi_j) + c sin(k xi_j)`` on ``n > 2k`` equally spaced positions it is ``k``;
    for a Dirac it is 0.

    Parameters
    ----------
    x, xi, period
        The tokens, their positions and the period, as in :func:`profile_fourier`.

    Returns
    -------
    int
        The winding ``k >= 0``.
    """
    x = v.points_on_sphere("x", x)
    n = x.shape[0]
    ks = np.arange(-(n // 2), (n - 1) // 2 + 1)
    power = np.sum(np.abs(profile_fourier(x, xi, ks, period)) ** 2, axis=1)
    folded = {}
    for k, p in zip(np.abs(ks), power, strict=True):
        folded[int(k)] = folded.get(int(k), 0.0) + float(p)
    return max(sorted(folded), key=lambda k: folded[k])


def classify(x, collapse_tol=1e-2, planar_tol=0.05):
    """Name the shape of a final configuration: ``"collapse"``, ``"great circle"`` or ``"other"``.

    * collapse: the spread ``sqrt(1 - |mean|^2)`` is below ``collapse_tol``;
    * great circle: not collapsed, and the normalized singular values ``s / sqrt(n)`` satisfy
      ``s_3 < planar_tol`` (the tokens lie in a plane through 0, so on a great circle) and
      ``s_1 - s_2 < planar_tol`` (they are balanced around it, as cos and sin are);
    * other: anything else (several clusters, a partly formed circle, ...).

    Parameters
    ----------
    x : array_like
        ``(n, d)`` unit vectors.
    collapse_tol : float
        Spread below which the state is a collapse.
    planar_tol : float
        Tolerance on the normalized singular values of a great circle.

    Returns
    -------
    str
        One of ``PHASES``.

    References
    ----------
    The book's chapter 7: Theorem 7.3 (ch7-thm-circle), the great circles.
    """
    x = v.points_on_sphere("x", x)
    collapse_tol = v.real_scalar("collapse_tol", collapse_tol, minimum=0.0, strict=True)
    planar_tol = v.real_scalar("planar_tol", planar_tol, minimum=0.0, strict=True)
    m = x.mean(axis=0)
    if np.sqrt(max(0.0, 1.0 - m @ m)) < collapse_tol:
        return "collapse"
    s = singular_values(x) / np.sqrt(x.shape[0])
    s3 = s[2] if s.shape[0] > 2 else 0.0
    if s3 < planar_tol and s[0] - s[1] < planar_tol:
        return "great circle"
    return "other"


# ---------------------------------------------------------------------- phase diagram
def bias_model(bias, omega, beta):
    """The model of one phase-diagram cell.

    ``bias="distance"``: ``b = exp(-omega |dxi|)`` (omega plays the role of the decay rate lam);
    ``bias="cosine"``: ``b = cos(omega dxi)``.  The profile is ``e^{beta s}/beta``, which is the
    linear kernel ``phi(s) = s`` at ``beta = 0``.  The models are those of the experiments
    ``distance_bias`` and ``cosine_bias`` of :data:`usaav_edu.particles.experiments.EXPERIMENTS`.

    Parameters
    ----------
    bias : {"distance", "cosine"}
        The bias.
    omega : float
        Its rate or frequency, >= 0.
    beta : float
        Inverse temperature, >= 0.

    Returns
    -------
    Model
        The experiment's model, with the exponential profile.

    Raises
    ------
    TypeError, ValueError
        For bad arguments, naming them.

    References
    ----------
    The book's chapter 7 (biases and their phases).
    """
    v.choice("bias", bias, BIAS_TYPES)
    omega = v.real_scalar("omega", omega, minimum=0.0)
    beta = v.real_scalar("beta", beta, minimum=0.0)
    experiment = experiments.get(f"{bias}_bias")
    return experiment.model(beta=beta, lam=omega, omega=omega, profile="exp")


def phase_diagram(biases=BIAS_TYPES, omegas=(0.2, 1.0, 2.0), betas=(0.0, 1.0), n=32, d=3,
                  t_max=40.0, seed=0, method="dopri5"):
    """Simulate every cell (bias, omega, beta) and return one dict of final diagnostics per cell.

    All cells share the positions ``xi_j = 2 pi j / n`` and the initial state
    ``sphere.uniform(n, d, seed)``.  Each row holds: ``bias``, ``omega``, ``beta``, ``phase``
    (:func:`classify`), ``spread``, ``sv`` (normalized singular values ``s / sqrt(n)``),
    ``winding`` (:func:`winding_number`), ``energy``, ``energy_bound`` and ``b_negative``
    (whether some pair has ``b(xi_i - xi_j) < 0``).  Cost: ``len(biases) * len(omegas) *
    len(betas)`` runs of n tokens to ``t_max``; keep n small.

    Parameters
    ----------
    biases : sequence of str
        Names from ``BIAS_TYPES``.
    omegas, betas : sequence of float
        The grid (see :func:`bias_model`).
    n : int
        Tokens, >= 3.
    d : int
        Dimension, >= 3.
    t_max : float
        Length of every run, > 0.
    seed : int
        Seed of the shared initial state.
    method : {"rk4", "dopri5"}
        The stepper.

    Returns
    -------
    list of dict

    Raises
    ------
    TypeError, ValueError
        For a bad argument, naming it (``seed`` and ``method`` are checked by the simulation).

    References
    ----------
    The book's chapter 7: the dichotomy (ch7-cor-dichotomy) that the phases show, from
    Theorem 7.2 (ch7-thm-fourier) and Theorem 7.3 (ch7-thm-circle).
    """
    if isinstance(biases, str) or not all(isinstance(b, str) for b in biases):
        raise TypeError(f"biases must be a sequence of names from {BIAS_TYPES}, got {v.shown(biases)}")
    for b in biases:
        v.choice("biases", b, BIAS_TYPES)
    for name, seq in (("omegas", omegas), ("betas", betas)):
        if isinstance(seq, (str, bytes)) or not all(isinstance(s, numbers.Real) for s in seq) or len(seq) == 0:
            raise TypeError(f"{name} must be a non-empty sequence of real numbers, got {v.shown(seq)}")
    n = v.integer("n", n, minimum=3)
    d = v.integer("d", d, minimum=3)
    t_max = v.real_scalar("t_max", t_max, minimum=0.0, strict=True)
    xi = circle_positions(n)
    x0 = sphere.uniform(n, d, seed=seed)
    rows = []
    for bias in biases:
        for omega in omegas:
            for beta in betas:
                model = bias_model(bias, omega, beta)
                traj = simulate(model, x0, xi, t_max=t_max, method=method, n_frames=2, seed=seed)
                xf = traj.final
                rows.append({
                    "bias": bias, "omega": float(omega), "beta": float(beta),
                    "phase": classify(xf),
                    "spread": diagnostics.spread(xf),
                    "sv": singular_values(xf) / np.sqrt(n),
                    "winding": winding_number(xf, xi),
                    "energy": float(traj.energy[-1]),
                    "energy_bound": float(energy_bound(model, xi)),
                    "b_negative": bool(np.any(model.bias_matrix(xi) < 0.0)),
                })
    return rows
