"""Fast summation: the velocity and the energy in time linear in n, with a chosen error bound.

In gauge coordinates every model of the package is plain USA or SA times a bias
(:mod:`.rhs`)::

    A_i = sum_j b_ij phi'(<y_i, y_j>) y_j,
    Z_i = sum_j b_ij phi'(<y_i, y_j>),
    v_i = P_{y_i}(A_i / N_i),    N_i = n (USA)  or  Z_i (SA),
    v_i = 0 for a frozen token,

and the energy is ``E = sum_i Z_i / (2 beta n^2)`` (attention, ``phi(s) = e^{beta s} / beta``)
or ``E = sum_i <y_i, A_i> / (2 n^2)`` (linear profile).  The direct kernel sums ``n^2`` pairs.
Here ``phi'(<x, y>) = e^{beta <x, y>}`` is replaced by a truncated separable expansion
``K_L(x, y) = sum_a c_a f_a(x) f_a(y)`` of rank ``p`` (:mod:`.expansions`: Fourier modes on
S^1, spherical harmonics on S^2, Taylor monomials in any d), so that

    A_i ~ sum_a c_a f_a(y_i) M_a,    M_a = sum_j b_ij f_a(y_j) [y_j, 1]

costs ``O(n p)`` once the moments ``M`` can be formed without the ``n x n`` bias:

* no bias: ``M_a = sum_j f_a(y_j) [y_j, 1]`` is the same for every ``i``;
* cosine bias ``b_ij = cos(omega (xi_i - xi_j)) = c_i c_j + s_i s_j`` with ``c = cos(omega xi)``,
  ``s = sin(omega xi)``: two moment sets (weighted by ``c_j`` and ``s_j``), combined per token
  with ``c_i`` and ``s_i``;
* distance bias ``b_ij = exp(-lam |xi_i - xi_j|)``: with the tokens sorted by position, the
  forward recursion ``S_k = exp(-lam (xi_k - xi_{k-1})) S_{k-1} + g_k`` (``g_k`` the token's
  feature moment) gives the sum over ``j <= k`` and the backward one the sum over ``j > k``
  (ties have the factor 1); only decays ``exp(-lam d) <= 1`` are formed, never
  ``exp(+lam xi)``.

A bias gives its structure by ``separable()`` (:class:`usaav_edu.dynamics.parts.SeparableBias`);
any other bias (a user-defined matrix) has no such structure: :func:`fast_applies` says so.

The error norm.  The projected velocity vanishes at equilibria, so an error relative to each
``|v_i|`` means nothing there; the scale of the field is the row mass ::

    m_i = (1 / N_i) sum_j |b_ij| phi'(<y_i, y_j>),
    err = max_i |v^_i - v_i| / max_i m_i,

and ``tol`` bounds ``err``.  With ``tau`` the truncation bound of the expansion
(``|e^{beta s} - K_L(s)| <= tau`` on ``[-1, 1]``) and ``S_i = sum_j |b_ij|``:

* USA.  ``|v^_i - v_i| <= tau S_i / n`` (``P_y`` does not lengthen vectors).  Always
  ``m_i >= e^{-|beta|} S_i / n``, so ``err <= tau e^{|beta|}``.  When ``b >= 0`` is positive
  semi-definite (no bias; the distance bias, whose kernel ``e^{-lam |t|}`` has a positive
  Fourier transform) and ``beta >= 0``, Jensen's inequality with the weights ``b_ij / sum b``
  and ``sum_ij b_ij <y_i, y_j> = tr(Y^T B Y) >= 0`` give
  ``mean_i m_i >= (sum_ij b_ij / n^2) e^{beta tr(Y^T B Y) / sum b} >= mean_i S_i / n``, so
  ``err <= tau rho`` with ``rho = max_i S_i / mean_i S_i`` (1 without bias).  The kernel
  uses ``tau min(rho, e^{|beta|})`` where this holds, else ``tau e^{|beta|}``.
* SA (``b >= 0``).  ``m_i = 1``; with ``|A_i| <= Z_i``, ``|A^_i - A_i| <= tau S_i``,
  ``|Z^_i - Z_i| <= tau S_i`` and ``Z_i >= e^{-|beta|} S_i`` ::

      |A^_i / Z^_i - A_i / Z_i| <= 2 tau S_i / Z^_i
                                <= 2 tau / (e^{-|beta|} - tau).

* The energy, relative to ``E~ = sum_ij |b_ij| e^{beta s_ij} / (2 |beta| n^2)`` (``|E|`` when
  ``b >= 0``): ``|E^ - E| <= tau sum |b| / (2 |beta| n^2)``, so the relative error is at most
  ``tau`` in the semi-definite case (Jensen as above) and ``tau e^{|beta|}`` otherwise.
* The linear profile is exact (rank 1), bound 0.

The degree ``L`` is the smallest whose velocity bound is at most ``tol``
(:func:`.expansions.select_degree`).  The bounds are those of the truncation; rounding adds
to them, so ``tol`` below the rounding floor :data:`TOL_FLOOR` (``1e-13``) is refused.  The
coefficients are scaled by ``e^{-|beta|}`` and the factor is applied at the end
(:mod:`.expansions`), so nothing overflows
before the result does.  For d = 3, beta = 1, tol = 1e-10: ``L = 10``, ``p = 121``.

How the sums are computed:

* Chunks.  Tokens are taken ``CH`` at a time (:func:`chunk_size`: 256 or 128, chosen by
  measurement).  The chunk's coordinates are copied into a contiguous buffer, its features
  computed row by row (each row a loop over the tokens of the chunk), then the moments (one
  dot product over the chunk per feature and value row, :func:`moment_rows`) or the sums (four
  features at a time added into each output row, :func:`evaluate_quad`).  Per thread the
  memory is ``O(p CH)``: no ``n x p`` matrix is formed (at n = 1e5, d = 3, a process
  evaluating all three biases peaks at 190 MB).
* Two passes.  The features are computed twice, once for the moments and once for the sums;
  keeping them (``8 n p`` bytes, 97 MB at n = 1e5) would cost as much memory traffic as the
  recomputation.
* Vectorization.  Every inner loop is a counted loop over contiguous slices indexed from 0,
  compiled with the fast-math flags that allow reassociation (``reassoc``, ``contract``,
  ``arcp``, ``nsz``, ``afn``) but not ``nnan``/``ninf``, so a ``nan`` state gives a ``nan``
  velocity as in the direct kernel.  Each loop kernel vectorizes when compiled on its own, so
  that the process that compiles them runs as fast as one that loads them from the cache
  (``tests/test_fastsum.py`` checks this in a fresh process, as ``tests/test_kernel.py`` does
  for the direct kernel).
* One compiled task.  Moments, sums and the two distance-bias scans are the four modes of one
  compiled function (:func:`block_task`), so the feature maps are compiled into one caller
  only: a first compilation takes about a third of the time that separate serial and parallel
  drivers took.
* Threads.  The tasks run on Python worker threads (:func:`task_pool`, Numba's thread count,
  the caller running one task itself); the compiled task releases the GIL.  Idle workers wait
  on a lock and use no CPU (the concern that ``OMP_WAIT_POLICY=passive`` addresses for the
  direct kernel).  No bias and the cosine bias: one block of tokens per thread for the moments
  (summed afterwards), then one per thread for the sums.  Below ``PARALLEL_MIN_FAST`` tokens
  everything runs in the calling thread.  The distance bias: the forward and the backward
  recursion run in two threads.  (A chunked scan with carries would use more threads, but
  needs a third pass over the features: on two cores it does more work per core.)
* Cost.  At d = 3, beta = 1, tol = 1e-10, n = 1e5 one evaluation does about ``2 n p``
  feature values and ``2 n p d`` multiply-adds: 37 ms of CPU time on the project's machine,
  about 20 ms on two free cores, against about 7 s for the direct kernel
  (``benchmarks/fast_summation.py``; measured while the machine was shared).
"""

import math
import os
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numba
import numpy as np
from numba import njit

from ... import _validate as v
from ..parts import is_separable
from . import expansions as ex

BIASES = ("none", "cosine", "distance")

TOL_FLOOR = 1e-13
"""The smallest ``tol`` a :class:`FastKernel` accepts: the rounding floor of its sums.

The truncation bound can be made as small as one likes, the computed sums cannot: each moment
adds ``n`` terms (chunk sums of up to ``CH = 256`` terms, then the chunks) and each velocity
adds ``p`` feature terms of either sign, so the rounding error relative to the row mass is
about ``(CH + n / CH + p) eps`` at worst: ``1e-13`` (450 eps) covers a rank ``p`` of a few
hundred at n = 10^5, while the error measured against direct summation is a few ``1e-16``
(the worst case is rarely reached, but it is the only bound that holds).  A ``tol`` below the
floor would be recorded as an ``error_bound`` no double-precision run attains; it is refused,
and a run's recorded bound is at least the floor (:func:`usaav_edu.simulate`).
"""


class FastKernel:
    """The velocity and energy of a model in gauge coordinates by truncated expansion.

    Parameters
    ----------
    d : int
        The dimension (tokens on S^{d-1}), ``>= 2``.
    beta : float
        The inverse temperature, ``|beta| <= 700`` (ignored when ``linear``).
    linear : bool
        Constant ``phi'`` (linear profile or ``beta = 0``).
    sa : bool
        SA normalization (``N_i = Z_i``); needs a non-negative bias.
    tol : float
        The bound of the relative velocity error ``err`` (module docstring), in
        ``[TOL_FLOOR, 1)``.
    bias : {"none", "cosine", "distance"}
        The bias.
    xi : array_like or None
        ``(n,)`` positions, needed by the cosine and distance biases.
    omega : float or None
        The cosine bias's frequency.
    lam : float or None
        The distance bias's decay rate, ``>= 0``.
    mobile : array_like of bool or None
        ``(n,)`` the tokens that move (None: all).

    Attributes
    ----------
    mobile : ndarray of bool
        The mask of the tokens that move, ``np.ones(1, bool)`` when all do (as in
        :class:`.rhs.KernelParams`; the steppers' retraction reads it with ``has_frozen``).
    has_frozen : bool
        Some token is frozen.
    degree : int
        The truncation degree ``L``.
    bound : float
        The guaranteed bound of ``err`` (truncation), ``<= tol``.
    energy_bound : float
        The bound of the energy's relative error ``|E^ - E| / E~`` (module docstring).
    rank : int
        The number of features ``p``.
    basis : str
        ``"fourier"``, ``"harmonic"``, ``"taylor"`` or ``"linear"``.

    Raises
    ------
    TypeError, ValueError
        Naming the argument, for bad input; ValueError if ``tol`` is out of reach or below
        the rounding floor :data:`TOL_FLOOR`.
    """

    def __init__(self, d, beta, linear, sa, tol=1e-10, bias="none", xi=None, omega=None,
                 lam=None, mobile=None):
        self.d = v.integer("d", d, minimum=2)
        self.beta = v.real_scalar("beta", beta)
        if abs(self.beta) > 700.0:
            raise ValueError(f"beta must satisfy |beta| <= 700, got {self.beta:g}")
        for name, flag in (("linear", linear), ("sa", sa)):
            if not isinstance(flag, (bool, np.bool_)):
                raise TypeError(f"{name} must be True or False, got {flag!r}")
        self.linear = bool(linear) or self.beta == 0.0
        self.sa = bool(sa)
        self.tol = v.real_scalar("tol", tol, minimum=0.0, strict=True)
        if self.tol >= 1.0:
            raise ValueError(f"tol must be < 1, got {self.tol:g}")
        if self.tol < TOL_FLOOR:
            raise ValueError(f"tol = {self.tol:g} is below the rounding floor {TOL_FLOOR:g} of "
                             f"fast summation: its sums of rank-many terms over n tokens are "
                             f"rounded to about that, so no smaller error bound holds in double "
                             f"precision. Use tol >= {TOL_FLOOR:g}, or summation='direct' (exact "
                             f"to rounding)")
        self.bias = v.choice("bias", bias, BIASES)
        self.xi = self._positions(xi)
        self.n = None if self.xi is None else self.xi.shape[0]
        self.omega = self.lam = None
        if self.bias == "cosine":
            if omega is None:
                raise ValueError("omega must be given for bias 'cosine'")
            self.omega = v.real_scalar("omega", omega)
            if self.sa:
                raise ValueError("sa needs a non-negative bias (the row sums divide), got bias "
                                 "'cosine'")
        elif omega is not None:
            raise ValueError(f"omega must be None unless bias is 'cosine' (bias {self.bias!r})")
        if self.bias == "distance":
            if lam is None:
                raise ValueError("lam must be given for bias 'distance'")
            self.lam = v.real_scalar("lam", lam, minimum=0.0)
        elif lam is not None:
            raise ValueError(f"lam must be None unless bias is 'distance' (bias {self.bias!r})")
        mask = self._mobile(mobile)
        self.has_frozen = mask is not None
        self.mobile = mask if self.has_frozen else np.ones(1, dtype=np.bool_)
        self.basis = ex.basis_for(self.d, self.linear)
        self._plan()
        self._compiled_plan()

    # ------------------------------------------------------------------ set-up
    def _positions(self, xi):
        if self.bias == "none":
            return None  # the labels do not enter (prompt ids of a prefix gauge, or none)
        if xi is None:
            raise ValueError(f"xi must be given for bias {self.bias!r}")
        arr = v.float_array("xi", xi, ndim=1)
        return np.ascontiguousarray(arr)

    def _mobile(self, mobile):
        if mobile is None:
            return None
        m = np.asarray(mobile)
        if m.dtype != np.bool_ or m.ndim != 1:
            raise ValueError(f"mobile must be a 1-D boolean array, got dtype {m.dtype}, shape "
                             f"{m.shape}")
        if self.n is not None and m.shape[0] != self.n:
            raise ValueError(f"mobile must have shape ({self.n},) to match xi, got {m.shape}")
        return None if bool(m.all()) else np.ascontiguousarray(m)

    def _row_sum_ratio(self):
        """``rho = max_i S_i / mean_i S_i``, ``S_i = sum_j b_ij``, for the non-negative biases."""
        if self.bias == "none" or self.xi.shape[0] == 0:
            return 1.0
        s = distance_row_sums(self.xi, self.lam)
        return float(np.max(s) / np.mean(s))

    def _plan(self):
        if self.linear:
            self.degree, self.bound, self.energy_bound = 0, 0.0, 0.0
            self.coef = np.ones(1)
            self.rank = 1
            return
        psd = self.bias in ("none", "distance") and self.beta >= 0.0
        ratio = self._row_sum_ratio() if psd and not self.sa else 1.0
        self.degree, self.bound, self.energy_bound = degree_plan(
            self.basis, self.d, self.beta, self.tol, self.sa, psd, ratio)
        self.coef = ex.coefficients(self.basis, self.d, self.beta, self.degree)
        self.rank = self.coef.shape[0]

    def _compiled_plan(self):
        """The arrays of the compiled sums (feature tree, bias weights, sorted order)."""
        self.code = ex.BASIS_CODE[self.basis]
        if self.basis == "taylor":
            parent, var, factor, _ = ex.monomial_tree(self.d, self.degree)
        else:
            parent, var, factor = np.zeros(1, np.int64), np.zeros(1, np.int64), np.zeros(1)
        self.tree = (parent, var, factor)
        self.ch = chunk_size(self.rank)
        self.ws = np.zeros((0, 1 if self.n is None else max(self.n, 1)))
        self.order = None
        self.dec = np.zeros(1)
        if self.bias == "cosine":
            x0 = self.xi - np.median(self.xi) if self.xi.size else self.xi
            self.ws = np.ascontiguousarray(np.vstack([np.cos(self.omega * x0),
                                                      np.sin(self.omega * x0)]))
        elif self.bias == "distance":
            self.order = np.argsort(self.xi, kind="stable").astype(np.int64)
            xs = self.xi[self.order]
            self.dec = np.zeros(xs.shape[0])
            self.dec[1:] = np.exp(-self.lam * np.diff(xs))

    # ------------------------------------------------------------------ evaluation
    def _check_state(self, yt, name="yt"):
        if not isinstance(yt, np.ndarray) or yt.dtype != np.float64 or yt.ndim != 2:
            raise TypeError(f"{name} must be a float64 array of shape (d, n)")
        if yt.shape[0] != self.d:
            raise ValueError(f"{name} must have {self.d} rows (d = {self.d}), got {yt.shape[0]}")
        n = yt.shape[1]
        if self.n is not None and n != self.n:
            raise ValueError(f"{name} must have {self.n} columns (one per token), got {n}")
        if self.has_frozen and self.mobile.shape[0] != n:
            raise ValueError(f"{name} must have {self.mobile.shape[0]} columns to match mobile, "
                             f"got {n}")
        return n

    def sums(self, yt, need_z=True):
        """The scaled sums ``R = e^{-|beta|} [A; Z]`` by the expansion.

        ``R[:d, i] ~ e^{-|beta|} sum_j b_ij phi'(<y_i, y_j>) y_j`` and (``need_z``)
        ``R[d, i] ~ e^{-|beta|} sum_j b_ij phi'(<y_i, y_j>)`` (no scaling for the linear profile).

        Parameters
        ----------
        yt : ndarray
            ``(d, n)`` float64 unit vectors.
        need_z : bool
            Also the row sums ``Z``.

        Returns
        -------
        ndarray
            ``(d + 1, n)`` if ``need_z`` else ``(d, n)``.
        """
        n = self._check_state(yt)
        yt = np.ascontiguousarray(yt)  # the compiled code is specialized for C order
        nq = self.d + 1 if need_z else self.d
        res = np.empty((nq, n))
        if n == 0:
            return res
        p = self.rank
        tp = TaskParams(self.ws, nq, self.code, self.degree, self.tree, self.coef, self.ch,
                        self.dec)
        if self.bias == "distance":
            ys = np.empty_like(yt)
            gather_sorted(yt, self.order, ys)
            both = np.empty((2, nq, n))
            run_tasks((FORWARD, BACKWARD), ((0, n, 0), (0, n, 1)), ys, tp,
                      np.zeros((2, p, nq)), np.zeros((p, nq)), both)
            scatter_sum(both[0], both[1], self.order, res)
            return res
        nb = max(1, numba.get_num_threads()) if n >= PARALLEL_MIN_FAST else 1
        bounds = [((n * b) // nb, (n * (b + 1)) // nb, 0) for b in range(nb)]
        width = max(1, self.ws.shape[0]) * nq
        moms = np.zeros((nb, p, width))
        cm = np.zeros((p, width))
        out = res[None]
        run_tasks((MOMENTS,) * nb, bounds, yt, tp, moms, cm, out)
        np.multiply(moms.sum(axis=0), self.coef[:, None], out=cm)
        run_tasks((SUMS,) * nb, bounds, yt, tp, moms, cm, out)
        return res

    def sums_reference(self, yt, need_z=True):
        """:meth:`sums` by plain NumPy (dense features, Python loops for the distance bias).

        Parameters
        ----------
        yt : ndarray
            ``(d, n)`` float64 unit vectors.
        need_z : bool
            Also the row sums ``Z``.

        Returns
        -------
        ndarray
            ``(d + 1, n)`` if ``need_z`` else ``(d, n)``.
        """
        n = self._check_state(yt)
        f = ex.features_reference(self.basis, self.degree, yt)
        g = np.vstack([yt, np.ones((1, n))]) if need_z else yt
        cf = self.coef[:, None] * f
        if self.bias == "none":
            return (f @ g.T).T @ cf
        if self.bias == "cosine":
            x0 = self.xi - np.median(self.xi) if n else self.xi
            c, s = np.cos(self.omega * x0), np.sin(self.omega * x0)
            return c * ((f @ (g * c).T).T @ cf) + s * ((f @ (g * s).T).T @ cf)
        order = np.argsort(self.xi, kind="stable")
        xs = self.xi[order]
        out = np.zeros((g.shape[0], n))
        state = np.zeros((f.shape[0], g.shape[0]))
        for k in range(n):  # forward, inclusive
            j = order[k]
            if k:
                state *= math.exp(-self.lam * (xs[k] - xs[k - 1]))
            state += np.outer(f[:, j], g[:, j])
            out[:, j] += cf[:, j] @ state
        state[:] = 0.0
        for k in range(n - 2, -1, -1):  # backward, exclusive
            j, j1 = order[k], order[k + 1]
            state = math.exp(-self.lam * (xs[k + 1] - xs[k])) * (state + np.outer(f[:, j1],
                                                                                   g[:, j1]))
            out[:, j] += cf[:, j] @ state
        return out

    def __call__(self, yt, out):
        """The velocity ``out[:, i] = P_{y_i}(A_i / N_i)`` (0 for a frozen token).

        Same contract as :class:`.integrators.GaugeField`; ``N_i = n`` (USA) or ``Z_i`` (SA),
        with ``A`` and ``Z`` from the expansion (module docstring).

        Parameters
        ----------
        yt : ndarray
            ``(d, n)`` C-contiguous float64 gauge coordinates.
        out : ndarray
            ``(d, n)`` float64, overwritten.

        Returns
        -------
        ndarray
            ``out``.

        Raises
        ------
        TypeError, ValueError
            If the arrays have the wrong type or shape.
        """
        n = self._check_state(yt)
        if not isinstance(out, np.ndarray) or out.shape != yt.shape or out.dtype != np.float64:
            raise ValueError(f"out must be a float64 array of shape {yt.shape}")
        r = self.sums(yt, need_z=self.sa)
        if n:
            finish_velocity(yt, r, self.sa, self.scale / n, self.mobile, self.has_frozen,
                            out)
        return out

    @property
    def scale(self):
        """``e^{|beta|}``, the factor of the scaled sums (1 for the linear profile)."""
        return 1.0 if self.linear else math.exp(abs(self.beta))

    def energy(self, yt):
        """The particle energy ``E_h``, the same quantity as :func:`.energy.energy_gauge`.

        ``E = sum_i Z_i / (2 beta n^2)`` (attention) or ``sum_i <y_i, A_i> / (2 n^2)``
        (linear), with the sums from the expansion; relative error at most
        ``energy_bound`` (module docstring).

        Parameters
        ----------
        yt : ndarray
            ``(d, n)`` float64 gauge coordinates.

        Returns
        -------
        float

        Raises
        ------
        OverflowError
            If E exceeds the double range.
        """
        n = self._check_state(yt)
        if n == 0:
            return 0.0
        if self.linear:
            r = self.sums(yt, need_z=False)
            return float(np.sum(r * yt)) / (2.0 * n * n)
        r = self.sums(yt, need_z=True)
        m = float(np.sum(r[self.d])) / (2.0 * self.beta * n * n)
        e = m * self.scale
        if not math.isfinite(e):
            raise OverflowError(f"the energy E_h = e^|beta| * {m:.6g} (beta = {self.beta:g}) "
                                f"exceeds the largest double")
        return e


def degree_plan(basis, d, beta, tol, sa, psd, ratio=1.0):
    """``(L, bound, energy_bound)``: the smallest degree whose velocity bound is at most ``tol``.

    The velocity bound of a truncation bound ``tau`` (module docstring): ``2 tau / (e^{-|beta|}
    - tau)`` for SA; ``tau e^{|beta|} min(rho, e^{|beta|})`` for USA with a positive
    semi-definite bias (``psd``, ``rho`` the row-sum ratio ``ratio``), else
    ``tau e^{2 |beta|}`` (``tau`` is scaled by ``e^{-|beta|}``, :mod:`.expansions`).

    Parameters
    ----------
    basis : str
        The expansion (:func:`.expansions.basis_for`), not ``"linear"``.
    d : int
        The dimension.
    beta : float
        The inverse temperature.
    tol : float
        The velocity tolerance.
    sa : bool
        SA normalization.
    psd : bool
        ``b >= 0`` positive semi-definite and ``beta >= 0``.
    ratio : float
        ``rho = max_i S_i / mean_i S_i`` (read for USA with ``psd`` only).

    Returns
    -------
    tuple
        ``(degree, bound, energy_bound)``.

    Raises
    ------
    ValueError
        If ``tol`` is out of reach (:func:`.expansions.select_degree`).
    """
    b = abs(beta)
    scale = math.exp(b)
    if sa:
        def factor(ts):
            den = math.exp(-2.0 * b) - ts
            with np.errstate(divide="ignore", invalid="ignore"):
                return np.where(den > 0.0, 2.0 * ts / np.where(den > 0, den, 1.0), np.inf)
    else:
        mass = min(ratio, scale) if psd else scale
        def factor(ts):
            return ts * scale * mass
    degree, bound = ex.select_degree(basis, d, beta, tol, factor)
    tau_scaled = float(ex.tail_bounds(basis, beta, degree + 1)[degree])
    return degree, bound, tau_scaled * scale * (1.0 if psd else scale)


def distance_row_sums(xi, lam):
    """``S_i = sum_j exp(-lam |xi_i - xi_j|)`` in time ``O(n log n)`` (two recursions).

    Parameters
    ----------
    xi : ndarray
        ``(n,)`` positions.
    lam : float
        ``>= 0``.

    Returns
    -------
    ndarray
        ``(n,)``.
    """
    n = xi.shape[0]
    order = np.argsort(xi, kind="stable")
    xs = xi[order]
    dec = np.exp(-lam * np.diff(xs))
    fwd = np.empty(n)
    bwd = np.empty(n)
    acc = 0.0
    for k in range(n):
        acc = (acc * dec[k - 1] if k else 0.0) + 1.0
        fwd[k] = acc
    acc = 0.0
    for k in range(n - 1, -1, -1):
        bwd[k] = acc
        if k:
            acc = dec[k - 1] * (acc + 1.0)
    s = np.empty(n)
    s[order] = fwd + bwd
    return s


def fast_applies(model):
    """Why fast summation does not apply to ``model``, or None if it does.

    It applies to every bias that gives a separable form fast summation knows (its
    ``separable()``: none, cosine, distance; every built-in bias), both profiles, USA and SA,
    and every gauge (the sums are in gauge coordinates), for the models that transport the
    values with the gauge.

    Parameters
    ----------
    model : Model
        The model.

    Returns
    -------
    str or None
        The reason, one sentence, or None.
    """
    if not getattr(model, "rotate_values", True):
        return (f"model {model.name!r} rotates queries and keys but not values: it is evaluated "
                f"in content coordinates with dense matrices, not as a sum in gauge coordinates")
    structure = model.bias.separable() if is_separable(model.bias) else None
    if structure is None or structure[0] not in BIASES:
        return (f"model {model.name!r} has a user-defined bias {model.bias!r}: a dense bias "
                f"matrix has no separable structure")
    if not model.linear and model.beta > 700.0:
        return f"model {model.name!r} has beta = {model.beta:g} > 700"
    return None


def fast_kernel(model, xi, d, tol, mobile=None):
    """The :class:`FastKernel` of a model's built-in parts.

    Parameters
    ----------
    model : Model
        The model (``model.bias``, ``model.beta``, ``model.linear``, ``model.normalization``).
    xi : ndarray
        ``(n,)`` checked labels (positions for the cosine and distance biases).
    d : int
        The dimension.
    tol : float
        The velocity tolerance.
    mobile : ndarray of bool or None
        ``(n,)`` the tokens that move.

    Returns
    -------
    FastKernel

    Raises
    ------
    ValueError
        With the reason (:func:`fast_applies`) and the advice to use ``summation="direct"``,
        when fast summation does not apply.
    """
    reason = fast_applies(model)
    if reason is not None:
        raise ValueError(f"summation='fast' does not apply: {reason}; use summation=\"direct\"")
    return build_fast_kernel(model, xi, d, tol, mobile)


def build_fast_kernel(model, xi, d, tol, mobile=None):
    """The :class:`FastKernel` of a model where fast summation applies (not checked again).

    :func:`fast_kernel` without the question :func:`fast_applies` (asked once per run by the
    caller): the bias's ``separable()`` gives its kind and parameters.

    Parameters
    ----------
    model : Model
        A model for which :func:`fast_applies` is None.
    xi : ndarray
        ``(n,)`` checked labels.
    d : int
        The dimension.
    tol : float
        The velocity tolerance.
    mobile : ndarray of bool or None
        ``(n,)`` the tokens that move.

    Returns
    -------
    FastKernel
    """
    kind, kw = model.bias.separable()
    return FastKernel(d, model.beta, model.linear, model.normalization == "sa", tol=tol,
                      bias=kind, xi=None if kind == "none" else xi, mobile=mobile, **kw)


# ---------------------------------------------------------------------- compiled sums
# Tokens are processed in chunks of ``CH`` columns: the chunk's coordinates are copied into a
# contiguous buffer, its features computed into a ``(p, CH)`` buffer (:mod:`.expansions`), and
# the moments and the evaluation are loops over the tokens of the chunk (vectorized).  Memory:
# per thread ``O(p CH)``, never an ``n x p`` matrix.
CHUNK_BYTES = 1 << 25
"""The largest feature buffer of one thread (32 MB, reached only by large monomial maps)."""
PARALLEL_MIN_FAST = 2048
"""Below this many tokens the sums run on one thread."""


def chunk_size(p):
    """Tokens per chunk: 256 for up to 256 features, else 128, fewer where ``8 p CH`` would
    exceed ``CHUNK_BYTES`` (at least 16).

    Measured (CPU time of one evaluation, n = 1e5): d = 3, p = 121: 42, 38, 37, 37 ms for
    64, 128, 256, 512 tokens; d = 4, p = 1001: 420, 303, 204, 177, 199 ms for 16, 32, 64, 128,
    256 tokens.  Longer loops over the tokens outweigh a buffer beyond the L2 cache.

    Parameters
    ----------
    p : int
        Number of features.

    Returns
    -------
    int
    """
    ch = 256 if p <= 256 else 128
    while ch > 16 and p * ch * 8 > CHUNK_BYTES:
        ch //= 2
    return ch


@njit(cache=True, fastmath=ex.FLAGS)
def load_chunk(yt, j0, m, ybuf):
    """Copy the columns ``j0 .. j0 + m - 1`` of ``yt`` into ``ybuf[:, :m]`` (contiguous rows).

    Parameters
    ----------
    yt : ndarray
        ``(d, n)``.
    j0, m : int
        First column and count.
    ybuf : ndarray
        ``(d, >= m)``, overwritten.

    Returns
    -------
    None
    """
    for k in range(yt.shape[0]):
        src = yt[k, j0:j0 + m]
        dst = ybuf[k, :m]
        for j in range(m):
            dst[j] = src[j]


@njit(cache=True, fastmath=ex.FLAGS)
def moment_rows(f, p, g, nq, m, mom):
    """Add a chunk's moments: ``mom[a, q] += sum_j f[a, j] g[q, j]`` (``j < m``).

    One dot product per entry, over the tokens of the chunk (rows in the L1 cache).  Fusing the
    value rows into one loop (several accumulators) measured slower.

    Parameters
    ----------
    f : ndarray
        ``(>= p, >= m)`` features.
    p : int
        Number of features.
    g : ndarray
        ``(>= nq, >= m)`` the weighted values ``[w y, w]`` of the tokens.
    nq : int
        Number of value rows.
    m : int
        Tokens in the chunk.
    mom : ndarray
        ``(p, nq)``, updated.

    Returns
    -------
    None
    """
    for a in range(p):
        fa = f[a, :m]
        for q in range(nq):
            gq = g[q, :m]
            s = 0.0
            for j in range(m):
                s += fa[j] * gq[j]
            mom[a, q] += s


@njit(cache=True, fastmath=ex.FLAGS)
def evaluate_rows(f, p, cm, nq, m, r):
    """A chunk's sums: ``r[q, j] = sum_a cm[a, q] f[a, j]`` (``j < m``).

    Four features at a time into up to four value rows per loop over the tokens, so that each
    output row is loaded and stored once per four features.

    Parameters
    ----------
    f : ndarray
        ``(>= p, >= m)`` features.
    p : int
        Number of features.
    cm : ndarray
        ``(p, nq)`` the coefficients times the moments.
    nq : int
        Number of value rows.
    m : int
        Tokens in the chunk.
    r : ndarray
        ``(>= nq, >= m)``, overwritten in columns ``0 .. m-1``.

    Returns
    -------
    None
    """
    for q in range(nq):
        rq = r[q, :m]
        for j in range(m):
            rq[j] = 0.0
    c = np.zeros((4, 4))
    for q0 in range(0, nq, 4):
        nr = min(4, nq - q0)
        for a0 in range(0, p, 4):
            na = min(4, p - a0)
            for u in range(4):
                for w in range(4):
                    c[u, w] = cm[a0 + u, q0 + w] if (u < na and w < nr) else 0.0
            evaluate_quad(f[a0, :m], f[a0 + min(1, na - 1), :m], f[a0 + min(2, na - 1), :m],
                          f[a0 + min(3, na - 1), :m], c, r, q0, nr, m)


@njit(cache=True, fastmath=ex.FLAGS)
def evaluate_quad(f0, f1, f2, f3, c, r, q0, nr, m):
    """``r[q0 + w, j] += sum_u c[u, w] f_u[j]`` for ``w < nr`` (four feature rows).

    Parameters
    ----------
    f0, f1, f2, f3 : ndarray
        ``(m,)`` feature rows (a repeated row has zero coefficients).
    c : ndarray
        ``(4, 4)`` coefficients (zero where unused).
    r : ndarray
        Output rows, updated.
    q0, nr : int
        First output row and count (``<= 4``).
    m : int
        Tokens.

    Returns
    -------
    None
    """
    for w in range(nr):
        rw = r[q0 + w, :m]
        c0 = c[0, w]
        c1 = c[1, w]
        c2 = c[2, w]
        c3 = c[3, w]
        for j in range(m):
            rw[j] += c0 * f0[j] + c1 * f1[j] + c2 * f2[j] + c3 * f3[j]


@njit(cache=True, fastmath=ex.FLAGS)
def value_rows(ybuf, m, w, weighted, j0, nq, g):
    """The value rows of a chunk for one weight set: ``g = [w y_1, ..., w y_d, (w)]``.

    Parameters
    ----------
    ybuf : ndarray
        ``(d, >= m)`` the chunk's coordinates.
    m : int
        Tokens in the chunk.
    w : ndarray
        ``(n,)`` weights (read at ``j0 + j``) if ``weighted``.
    weighted : bool
        False: ``w = 1``.
    j0 : int
        The chunk's first token.
    nq : int
        ``d`` or ``d + 1`` (with the row of weights).
    g : ndarray
        ``(>= nq, >= m)`` rows, overwritten.

    Returns
    -------
    None
    """
    d = ybuf.shape[0]
    for k in range(nq):
        gk = g[k, :m]
        if k < d:
            yk = ybuf[k, :m]
            if weighted:
                wk = w[j0:j0 + m]
                for j in range(m):
                    gk[j] = wk[j] * yk[j]
            else:
                for j in range(m):
                    gk[j] = yk[j]
        elif weighted:
            wk = w[j0:j0 + m]
            for j in range(m):
                gk[j] = wk[j]
        else:
            for j in range(m):
                gk[j] = 1.0


@njit(cache=True, fastmath=ex.FLAGS)
def transpose_rows(f, p, m, ft):
    """``ft[j, a] = f[a, j]`` for ``a < p``, ``j < m``.

    Parameters
    ----------
    f : ndarray
        ``(>= p, >= m)``.
    p, m : int
        Sizes.
    ft : ndarray
        ``(>= m, >= p)``, overwritten.

    Returns
    -------
    None
    """
    for a in range(p):
        fa = f[a]
        for j in range(m):
            ft[j, a] = fa[j]


@njit(cache=True, fastmath=ex.FLAGS)
def scan_forward_token(state, fk, coef, dec, gk, nq, out):
    """One token of the forward recursion: ``S <- dec S + f_k g_k``, then the token's sums.

    ``out[q] = sum_a c_a f_a S[q, a]`` with the updated state.

    Parameters
    ----------
    state : ndarray
        ``(nq, p)`` the state ``S`` (row ``q``: value ``q`` of the moments), updated.
    fk : ndarray
        ``(p,)`` the token's features.
    coef : ndarray
        ``(p,)`` coefficients.
    dec : float
        ``exp(-lam (xi_k - xi_{k-1}))`` (0 for the first token).
    gk : ndarray
        ``(nq,)`` the token's values ``[y_k, 1]``.
    nq : int
        Value rows.
    out : ndarray
        ``(nq,)``, overwritten.

    Returns
    -------
    None
    """
    p = fk.shape[0]
    for q in range(nq):
        sq = state[q]
        g = gk[q]
        s = 0.0
        for a in range(p):
            x = dec * sq[a] + fk[a] * g
            sq[a] = x
            s += coef[a] * fk[a] * x
        out[q] = s


@njit(cache=True, fastmath=ex.FLAGS)
def scan_backward_token(state, fk, coef, dec, gk, nq, out):
    """One token of the backward recursion: the token's sums, then ``S <- dec (S + f_k g_k)``.

    ``out[q] = sum_a c_a f_a S[q, a]`` with the state before the update.

    Parameters
    ----------
    state : ndarray
        ``(nq, p)`` the state (the tokens after this one), updated.
    fk : ndarray
        ``(p,)`` the token's features.
    coef : ndarray
        ``(p,)`` coefficients.
    dec : float
        ``exp(-lam (xi_k - xi_{k-1}))``.
    gk : ndarray
        ``(nq,)`` the token's values.
    nq : int
        Value rows.
    out : ndarray
        ``(nq,)``, overwritten.

    Returns
    -------
    None
    """
    p = fk.shape[0]
    for q in range(nq):
        sq = state[q]
        g = gk[q]
        s = 0.0
        for a in range(p):
            s += coef[a] * fk[a] * sq[a]
            sq[a] = dec * (sq[a] + fk[a] * g)
        out[q] = s


MOMENTS, SUMS, FORWARD, BACKWARD = 0, 1, 2, 3
"""The tasks of :func:`block_task`."""


class TaskParams(NamedTuple):
    """What every task of one evaluation shares (:func:`block_task`), a record Numba accepts.

    Attributes
    ----------
    ws : ndarray
        ``(S, n)`` weight sets, ``S = 0`` for none.
    nq : int
        Value rows per set.
    code : int
        The feature map (:data:`.expansions.BASIS_CODE`).
    degree : int
        Its degree.
    tree : tuple
        ``(parent, var, factor)`` of the Taylor map.
    coef : ndarray
        ``(p,)`` scaled coefficients.
    ch : int
        Tokens per chunk.
    dec : ndarray
        ``(n,)`` decays of the scans (any array otherwise).
    """

    ws: np.ndarray
    nq: int
    code: int
    degree: int
    tree: tuple
    coef: np.ndarray
    ch: int
    dec: np.ndarray


@njit(cache=True, nogil=True, fastmath=ex.FLAGS)
def block_task(mode, yt, j0, j1, tp, mom, cm, res):
    """One task over the tokens ``j0 .. j1 - 1``, chunk by chunk (features computed once each).

    With ``f_a`` the features, ``w_s`` the weight sets (``ws`` with no rows: one set ``w = 1``)
    and ``g_s = [w_s y, w_s]`` (``nq = d`` or ``d + 1`` rows)::

        MOMENTS   mom[a, s nq + q] += sum_j f_a(y_j) g_s[q, j]
        SUMS      res[q, j] = sum_s w_s[j] sum_a cm[a, s nq + q] f_a(y_j)
        FORWARD   res[q, k] = sum_a c_a f_a(y_k) S_k[a, q],
                  S_k = dec[k] S_{k-1} + f(y_k) g_k
        BACKWARD  res[q, k] = sum_a c_a f_a(y_k) T_k[a, q],
                  T_{k-1} = dec[k] (T_k + f(y_k) g_k)

    (the scans over tokens sorted by position, ``T_{n-1} = 0``).  One function for the four
    tasks, so that the feature maps are compiled into one caller only.

    Parameters
    ----------
    mode : int
        :data:`MOMENTS`, :data:`SUMS`, :data:`FORWARD` or :data:`BACKWARD`.
    yt : ndarray
        ``(d, n)`` coordinates (sorted by position for the scans).
    j0, j1 : int
        The tokens of the task (all of them for a scan).
    tp : TaskParams
        The weight sets ``ws``, value rows ``nq``, feature map, coefficients, chunk size and
        decays.
    mom : ndarray
        ``(p, max(S, 1) nq)`` moments, updated by MOMENTS.
    cm : ndarray
        ``(p, max(S, 1) nq)`` coefficients times moments, read by SUMS.
    res : ndarray
        ``(nq, n)`` output of SUMS and the scans (its columns ``j0 .. j1 - 1``).

    Returns
    -------
    None
    """
    ws, nq, code, degree, tree, coef, ch, dec = tp
    d = yt.shape[0]
    p = coef.shape[0]
    weighted = ws.shape[0] > 0
    nsets = ws.shape[0] if weighted else 1
    ybuf = np.empty((d, ch))
    f = np.empty((p, ch))
    scratch = np.empty((7, ch))
    g = np.empty((nq, ch))
    r = np.empty((nsets * nq, ch))
    part = np.empty((p, nq))
    scan = mode == FORWARD or mode == BACKWARD
    if scan:
        ft = np.empty((ch, p))
        state = np.zeros((nq, p))
    else:
        ft = np.empty((1, 1))
        state = np.empty((1, 1))
    gk = np.ones(nq)
    out = np.empty(nq)
    unit = np.ones(1)
    nchunks = (j1 - j0 + ch - 1) // ch
    for cc in range(nchunks):
        c = nchunks - 1 - cc if mode == BACKWARD else cc
        c0 = j0 + c * ch
        m = min(ch, j1 - c0)
        load_chunk(yt, c0, m, ybuf)
        ex.chunk_features(code, ybuf[:, :m], degree, tree[0], tree[1], tree[2], f, scratch)
        if mode == MOMENTS:
            for s in range(nsets):
                value_rows(ybuf, m, ws[s] if weighted else unit, weighted, c0, nq, g)
                part[:, :] = 0.0
                moment_rows(f, p, g, nq, m, part)
                for a in range(p):
                    for q in range(nq):
                        mom[a, s * nq + q] += part[a, q]
        elif mode == SUMS:
            evaluate_rows(f, p, cm, nsets * nq, m, r)
            for q in range(nq):
                dst = res[q, c0:c0 + m]
                if not weighted:
                    src = r[q, :m]
                    for j in range(m):
                        dst[j] = src[j]
                else:
                    for j in range(m):
                        dst[j] = 0.0
                    for s in range(nsets):
                        src = r[s * nq + q, :m]
                        wk = ws[s, c0:c0 + m]
                        for j in range(m):
                            dst[j] += wk[j] * src[j]
        else:
            transpose_rows(f, p, m, ft)
            for jj in range(m):
                j = m - 1 - jj if mode == BACKWARD else jj
                k = c0 + j
                for q in range(d):
                    gk[q] = ybuf[q, j]
                if mode == BACKWARD:
                    scan_backward_token(state, ft[j], coef, dec[k], gk, nq, out)
                else:
                    scan_forward_token(state, ft[j], coef, dec[k], gk, nq, out)
                for q in range(nq):
                    res[q, k] = out[q]


def run_tasks(modes, bounds, yt, tp, moms, cm, res):
    """Run the tasks ``t`` (:func:`block_task`), one per thread, and wait for them.

    Task ``t`` has the mode ``modes[t]`` and the tokens ``bounds[t][0] .. bounds[t][1] - 1``;
    it adds its moments to ``moms[t]`` and writes its sums to ``res[bounds[t][2]]`` (the scans
    one each, the SUMS tasks their own columns of one).  The first task runs in the calling
    thread, the others in :func:`task_pool`'s threads (the compiled task releases the GIL).

    Parameters
    ----------
    modes : sequence of int
        ``T`` modes.
    bounds : sequence of tuple
        ``T`` triples: first token, end, output slot.
    yt : ndarray
        ``(d, n)`` coordinates.
    tp : TaskParams
        What the tasks share.
    moms : ndarray
        ``(T, p, K)`` moments, updated.
    cm : ndarray
        ``(p, K)`` coefficients times moments.
    res : ndarray
        ``(R, nq, n)`` outputs.

    Returns
    -------
    None
    """
    def task(t):
        j0, j1, slot = bounds[t]
        block_task(modes[t], yt, j0, j1, tp, moms[t], cm, res[slot])

    others = [task_pool().submit(task, t) for t in range(1, len(modes))]
    task(0)
    for fut in others:
        fut.result()


_POOL = []
# A forked child has the pool object but not its threads: it builds its own at its first use.
os.register_at_fork(after_in_child=_POOL.clear)


def task_pool():
    """The worker threads of :func:`run_tasks` (created at the first use).

    As many workers as Numba's thread count minus one (the caller runs a task too).  Idle
    workers wait on a lock and use no CPU, so they never compete with other work on a busy
    machine (the concern of the direct kernel's ``OMP_WAIT_POLICY``).

    Returns
    -------
    concurrent.futures.ThreadPoolExecutor
    """
    if not _POOL:
        _POOL.append(ThreadPoolExecutor(max_workers=max(1, numba.get_num_threads() - 1),
                                        thread_name_prefix="usaav-fastsum"))
    return _POOL[0]


@njit(cache=True, fastmath=ex.FLAGS)
def gather_sorted(yt, order, ys):
    """``ys[:, k] = yt[:, order[k]]``.

    Parameters
    ----------
    yt : ndarray
        ``(d, n)``.
    order : ndarray
        ``(n,)`` int64 permutation.
    ys : ndarray
        ``(d, n)``, overwritten.

    Returns
    -------
    None
    """
    for k in range(yt.shape[0]):
        src = yt[k]
        dst = ys[k]
        for j in range(order.shape[0]):
            dst[j] = src[order[j]]


@njit(cache=True, fastmath=ex.FLAGS)
def scatter_sum(res_f, res_b, order, res):
    """``res[:, order[k]] = res_f[:, k] + res_b[:, k]``.

    Parameters
    ----------
    res_f, res_b : ndarray
        ``(nq, n)`` in sorted order.
    order : ndarray
        ``(n,)`` int64.
    res : ndarray
        ``(nq, n)``, overwritten.

    Returns
    -------
    None
    """
    for q in range(res.shape[0]):
        rq = res[q]
        fq = res_f[q]
        bq = res_b[q]
        for k in range(order.shape[0]):
            rq[order[k]] = fq[k] + bq[k]


@njit(cache=True, fastmath=ex.FLAGS)
def finish_velocity(yt, res, sa, factor, mobile, has_frozen, out):
    """``out_i = P_{y_i}(A_i) / N_i`` from ``res = e^{-|beta|} [A; Z]``; 0 for a frozen token.

    ``USA: out_i = factor (a_i - <y_i, a_i> y_i)`` with ``factor = e^{|beta|} / n``;
    ``SA: out_i = (a_i - <y_i, a_i> y_i) / z_i`` (the scale cancels).

    Parameters
    ----------
    yt : ndarray
        ``(d, n)``.
    res : ndarray
        ``(d + 1, n)`` (SA) or ``(d, n)`` scaled sums.
    sa : bool
        SA normalization.
    factor : float
        ``e^{|beta|} / n`` (USA).
    mobile : ndarray
        ``(n,)`` bool, read if ``has_frozen``.
    has_frozen : bool
        Some token is frozen.
    out : ndarray
        ``(d, n)``, overwritten.

    Returns
    -------
    None
    """
    d, n = yt.shape
    dot = np.zeros(n)
    for k in range(d):
        yk = yt[k]
        rk = res[k]
        for i in range(n):
            dot[i] += yk[i] * rk[i]
    if sa:
        z = res[d]
        for k in range(d):
            yk = yt[k]
            rk = res[k]
            ok = out[k]
            for i in range(n):
                ok[i] = (rk[i] - dot[i] * yk[i]) / z[i]
    else:
        for k in range(d):
            yk = yt[k]
            rk = res[k]
            ok = out[k]
            for i in range(n):
                ok[i] = (rk[i] - dot[i] * yk[i]) * factor
    if has_frozen:
        for i in range(n):
            if not mobile[i]:
                for k in range(d):
                    out[k, i] = 0.0
