r"""Fast summation: the velocity and the energy in time linear in n, with a chosen error bound.

In gauge coordinates every model of the package is plain USA or SA times a bias
(:mod:`.rhs`):

.. math::

    A_i = \sum_j b_{ij}\, \varphi'(\langle y_i, y_j \rangle)\, y_j, \qquad
    Z_i = \sum_j b_{ij}\, \varphi'(\langle y_i, y_j \rangle),

    v_i = P_{y_i}(A_i / N_i), \qquad N_i = n \text{ (USA) or } Z_i \text{ (SA)}, \qquad
    v_i = 0 \text{ for a frozen token},

and the energy is :math:`E = \sum_i Z_i / (2 \beta n^2)` (attention,
:math:`\varphi(s) = e^{\beta s} / \beta`) or :math:`E = \sum_i \langle y_i, A_i \rangle / (2 n^2)`
(linear profile).  The direct kernel sums :math:`n^2` pairs.  Here
:math:`\varphi'(\langle x, y \rangle) = e^{\beta \langle x, y \rangle}` is replaced by a
truncated separable expansion :math:`K_L(x, y) = \sum_a c_a f_a(x) f_a(y)` of rank :math:`p`
(:mod:`.expansions`: Fourier modes on :math:`S^1`, spherical harmonics on :math:`S^2`, Taylor
monomials in any d), so that

.. math::

    A_i \approx \sum_a c_a f_a(y_i)\, M_a, \qquad M_a = \sum_j b_{ij} f_a(y_j)\, [y_j, 1]

costs :math:`O(n p)` once the moments :math:`M` can be formed without the ``n x n`` bias:

* no bias: :math:`M_a = \sum_j f_a(y_j) [y_j, 1]` is the same for every :math:`i`;
* cosine bias :math:`b_{ij} = \cos(\omega (\xi_i - \xi_j)) = c_i c_j + s_i s_j` with
  :math:`c = \cos(\omega \xi)`, :math:`s = \sin(\omega \xi)`: two moment sets (weighted by
  :math:`c_j` and :math:`s_j`), combined per token with :math:`c_i` and :math:`s_i`;
* distance bias :math:`b_{ij} = e^{-\lambda |\xi_i - \xi_j|}`: with the tokens sorted by
  position, the forward recursion :math:`S_k = e^{-\lambda (\xi_k - \xi_{k-1})} S_{k-1} + g_k`
  (:math:`g_k` the token's feature moment) gives the sum over :math:`j \le k` and the backward
  one the sum over :math:`j > k` (ties have the factor 1); only decays
  :math:`e^{-\lambda d} \le 1` are formed, never :math:`e^{+\lambda \xi}`.

A bias gives its structure by ``separable()`` (:class:`usaav_edu.dynamics.parts.SeparableBias`);
any other bias (a user-defined matrix) has no such structure: :func:`fast_applies` says so.

The error norm.  The projected velocity vanishes at equilibria, so an error relative to each
:math:`|v_i|` means nothing there; the scale of the field is the row mass

.. math::

    m_i = \frac{1}{N_i} \sum_j |b_{ij}|\, \varphi'(\langle y_i, y_j \rangle), \qquad
    \mathrm{err} = \frac{\max_i |\hat v_i - v_i|}{\max_i m_i},

and ``tol`` bounds :math:`\mathrm{err}`.  With :math:`\tau` the truncation bound of the
expansion (:math:`|e^{\beta s} - K_L(s)| \le \tau` on :math:`[-1, 1]`) and
:math:`S_i = \sum_j |b_{ij}|`:

* USA.  :math:`|\hat v_i - v_i| \le \tau S_i / n` (:math:`P_y` does not lengthen vectors).
  Always :math:`m_i \ge e^{-|\beta|} S_i / n`, so :math:`\mathrm{err} \le \tau e^{|\beta|}`.
  When :math:`b \ge 0` is positive semi-definite (no bias; the distance bias, whose kernel
  :math:`e^{-\lambda |t|}` has a positive Fourier transform) and :math:`\beta \ge 0`, Jensen's
  inequality with the weights :math:`b_{ij} / \sum b` and
  :math:`\sum_{ij} b_{ij} \langle y_i, y_j \rangle = \operatorname{tr}(Y^T B Y) \ge 0` give

  .. math::

      \operatorname{mean}_i m_i \ge \frac{\sum_{ij} b_{ij}}{n^2}\,
      e^{\beta \operatorname{tr}(Y^T B Y) / \sum b} \ge \frac{\operatorname{mean}_i S_i}{n},

  so :math:`\mathrm{err} \le \tau \rho` with :math:`\rho = \max_i S_i / \operatorname{mean}_i S_i`
  (1 without bias).  The kernel uses :math:`\tau \min(\rho, e^{|\beta|})` where this holds,
  else :math:`\tau e^{|\beta|}`.
* SA (:math:`b \ge 0`).  :math:`m_i = 1`; with :math:`|A_i| \le Z_i`,
  :math:`|\hat A_i - A_i| \le \tau S_i`, :math:`|\hat Z_i - Z_i| \le \tau S_i` and
  :math:`Z_i \ge e^{-|\beta|} S_i`,

  .. math::

      \Big|\frac{\hat A_i}{\hat Z_i} - \frac{A_i}{Z_i}\Big|
      \le \frac{2 \tau S_i}{\hat Z_i} \le \frac{2 \tau}{e^{-|\beta|} - \tau}.

* The energy, relative to
  :math:`\tilde E = \sum_{ij} |b_{ij}| e^{\beta s_{ij}} / (2 |\beta| n^2)` (:math:`|E|` when
  :math:`b \ge 0`): :math:`|\hat E - E| \le \tau \sum |b| / (2 |\beta| n^2)`, so the relative
  error is at most :math:`\tau` in the semi-definite case (Jensen as above) and
  :math:`\tau e^{|\beta|}` otherwise.
* The linear profile is exact (rank 1), bound 0.

The degree ``L`` is the smallest whose velocity bound is at most ``tol``
(:func:`.expansions.select_degree`).  The bounds are those of the truncation; rounding adds
to them, so ``tol`` below the rounding floor :data:`TOL_FLOOR` (``1e-13``) is refused.  The
coefficients are scaled by ``e^{-|beta|}`` and the factor is applied at the end
(:mod:`.expansions`), so nothing overflows
before the result does.  For d = 3, beta = 1, tol = 1e-10: ``L = 10``, ``p = 121``.

How the sums are computed:

* Chunks.  Tokens are taken ``CH`` at a time (:func:`.compiled.chunk_size`: 256 or 128, chosen by
  measurement).  The chunk's coordinates are copied into a contiguous buffer, its features
  computed row by row (each row a loop over the tokens of the chunk), then the moments (one
  dot product over the chunk per feature and value row, :func:`.compiled.moment_rows`) or the
  sums (four features at a time added into each output row, :func:`.compiled.evaluate_quad`).
  Per thread the memory is ``O(p CH)``: no ``n x p`` matrix is formed (at n = 1e5, d = 3, a process
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
  compiled function (:func:`.compiled.block_task`), so the feature maps are compiled into one
  caller only: a first compilation takes about a third of the time that separate serial and parallel
  drivers took.
* Threads.  The tasks run on Python worker threads (:func:`.compiled.task_pool`, Numba's thread
  count, the caller running one task itself); the compiled task releases the GIL.  Idle workers wait
  on a lock and use no CPU (the concern that ``OMP_WAIT_POLICY=passive`` addresses for the
  direct kernel).  No bias and the cosine bias: one block of tokens per thread for the moments
  (summed afterwards), then one per thread for the sums.  Below ``PARALLEL_MIN_FAST`` tokens
  everything runs in the calling thread.  The distance bias: the forward and the backward
  recursion run in two threads.  (A chunked scan with carries would use more threads, but
  needs a third pass over the features: on two cores it does more work per core.)
* Cost.  At d = 3, beta = 1, tol = 1e-10, n = 1e5 one evaluation does about ``2 n p``
  feature values and ``2 n p d`` multiply-adds, against ``n^2`` pairs for the direct kernel
  (``benchmarks/fast_summation.py`` times both; the README's "Performance" gives the figures).
"""

import math

import numba
import numpy as np

from ... import _validate as v
from ..parts import is_separable
from . import expansions as ex
from .compiled import (
    BACKWARD,
    FORWARD,
    MOMENTS,
    PARALLEL_MIN_FAST,
    SUMS,
    TaskParams,
    chunk_size,
    finish_velocity,
    gather_sorted,
    run_tasks,
    scatter_sum,
)

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

        The parameters and the result are those of :meth:`sums`.
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
            with np.errstate(over="ignore"):  # inf: out of reach (e^{2 |beta|} overflows)
                return ts * scale * mass
    degree, bound = ex.select_degree(basis, d, beta, tol, factor)
    tau_scaled = float(ex.tail_bounds(basis, beta, degree + 1)[degree])
    return degree, bound, tau_scaled * scale * (1.0 if psd else scale)


def distance_row_sums(xi, lam):
    r"""The row sums :math:`S_i = \sum_j e^{-\lambda |\xi_i - \xi_j|}` of the distance bias.

    For the ``(n,)`` positions ``xi`` and ``lam`` :math:`= \lambda \ge 0`, the ``(n,)`` sums in
    time :math:`O(n \log n)`: two recursions over the sorted positions.
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
    and every gauge (the sums are in gauge coordinates), for the post-LN models that transport
    the values with the gauge.

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
    if getattr(model, "layer_norm", "post") != "post":
        return (f"model {model.name!r} places layer normalization before attention (pre-LN): "
                f"its field, evaluated at the directions of the growing tokens, is dense NumPy "
                f"(usaav_edu.dynamics.prenorm), not a sum of the fast expansion")
    structure = model.bias.separable() if is_separable(model.bias) else None
    if structure is None or structure[0] not in BIASES:
        return (f"model {model.name!r} has a user-defined bias {model.bias!r}: a dense bias "
                f"matrix has no separable structure")
    if not model.linear and abs(model.beta) > 700.0:
        return f"model {model.name!r} has |beta| = {abs(model.beta):g} > 700"
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
    caller): the bias's ``separable()`` gives its kind and parameters.  ``xi``, ``d``, ``tol``
    and ``mobile`` are as in :func:`fast_kernel`.

    Parameters
    ----------
    model : Model
        A model for which :func:`fast_applies` is None.

    Returns
    -------
    FastKernel
    """
    kind, kw = model.bias.separable()
    return FastKernel(d, model.beta, model.linear, model.normalization == "sa", tol=tol,
                      bias=kind, xi=None if kind == "none" else xi, mobile=mobile, **kw)
