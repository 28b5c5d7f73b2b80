"""Fast summation: the velocity and the energy in time linear in n, with a chosen error bound.

In gauge coordinates every model of the package is plain USA or SA times a bias
(:mod:`.rhs`)::

    A_i = sum_j b_ij phi'(<y_i, y_j>) y_j,     Z_i = sum_j b_ij phi'(<y_i, y_j>),
    v_i = P_{y_i}(A_i / N_i),   N_i = n (USA)  or  Z_i (SA),   v_i = 0 for a frozen token,

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

Any other bias (a user-defined matrix) has no such structure: :func:`fast_applies` says so.

The error norm.  The projected velocity vanishes at equilibria, so an error relative to each
``|v_i|`` means nothing there; the scale of the field is the row mass ::

    m_i = (1 / N_i) sum_j |b_ij| phi'(<y_i, y_j>),     err = max_i |v^_i - v_i| / max_i m_i,

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

      |A^_i / Z^_i - A_i / Z_i| <= 2 tau S_i / Z^_i <= 2 tau / (e^{-|beta|} - tau).

* The energy, relative to ``E~ = sum_ij |b_ij| e^{beta s_ij} / (2 |beta| n^2)`` (``|E|`` when
  ``b >= 0``): ``|E^ - E| <= tau sum |b| / (2 |beta| n^2)``, so the relative error is at most
  ``tau`` in the semi-definite case (Jensen as above) and ``tau e^{|beta|}`` otherwise.
* The linear profile is exact (rank 1), bound 0.

The degree ``L`` is the smallest whose velocity bound is at most ``tol``
(:func:`.expansions.select_degree`).  The bounds are those of the truncation; rounding adds
about ``1e-16`` times the rank and is not part of them.  The coefficients are scaled by
``e^{-|beta|}`` and the factor is applied at the end (:mod:`.expansions`), so nothing overflows
before the result does.
"""

import math

import numpy as np

from .. import _validate as v
from ..biases import CosineBias, DistanceBias, NoBias
from . import expansions as ex

BIASES = ("none", "cosine", "distance")


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
        The bound of the relative velocity error ``err`` (module docstring), in ``(0, 1)``.
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
        Naming the argument, for bad input; ValueError if ``tol`` is out of reach.
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
        self.mobile = self._mobile(mobile)
        self.basis = ex.basis_for(self.d, self.linear)
        self._plan()

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
        b = abs(self.beta)
        if self.linear:
            self.degree, self.bound, self.energy_bound = 0, 0.0, 0.0
            self.coef = np.ones(1)
            self.rank = 1
            return
        psd = self.bias in ("none", "distance") and self.beta >= 0.0
        scale = math.exp(b)
        if self.sa:
            def factor(ts):
                den = math.exp(-2.0 * b) - ts
                with np.errstate(divide="ignore", invalid="ignore"):
                    return np.where(den > 0.0, 2.0 * ts / np.where(den > 0, den, 1.0), np.inf)
        else:
            mass = min(self._row_sum_ratio(), scale) if psd else scale
            def factor(ts):
                return ts * scale * mass
        self.degree, self.bound = ex.select_degree(self.basis, self.d, self.beta, self.tol,
                                                   factor)
        tau_scaled = float(ex.tail_bounds(self.basis, self.beta, self.degree + 1)[self.degree])
        self.energy_bound = tau_scaled * scale * (1.0 if psd else scale)
        self.coef = ex.coefficients(self.basis, self.d, self.beta, self.degree)
        self.rank = self.coef.shape[0]

    # ------------------------------------------------------------------ evaluation
    def _check_state(self, yt, name="yt"):
        if not isinstance(yt, np.ndarray) or yt.dtype != np.float64 or yt.ndim != 2:
            raise TypeError(f"{name} must be a float64 array of shape (d, n)")
        if yt.shape[0] != self.d:
            raise ValueError(f"{name} must have {self.d} rows (d = {self.d}), got {yt.shape[0]}")
        n = yt.shape[1]
        if self.n is not None and n != self.n:
            raise ValueError(f"{name} must have {self.n} columns (one per token), got {n}")
        if self.mobile is not None and self.mobile.shape[0] != n:
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
        return self._sums_reference(yt, need_z, n)

    def _sums_reference(self, yt, need_z, n):
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
        d = self.d
        r = self.sums(yt, need_z=self.sa)
        a = r[:d]
        dot = np.sum(a * yt, axis=0)
        proj = a - dot * yt
        if self.sa:
            out[...] = proj / r[d]
        else:
            out[...] = proj * (self.scale / n)
        if self.mobile is not None:
            out[:, ~self.mobile] = 0.0
        return out

    @property
    def scale(self):
        """``e^{|beta|}``, the factor of the scaled sums (1 for the linear profile)."""
        return 1.0 if self.linear else math.exp(abs(self.beta))

    def energy(self, yt):
        """The particle energy ``E_h``, the same quantity as :func:`.energy.energy_gauge`.

        ``E = sum_i Z_i / (2 beta n^2)`` (attention) or ``sum_i <y_i, A_i> / (2 n^2)``
        (linear), with the sums from the expansion; relative error at most
        :attr:`energy_bound` (module docstring).

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

    It applies to every built-in bias (none, cosine, distance), both profiles, USA and SA, and
    every gauge (the sums are in gauge coordinates), for the models that transport the values
    with the gauge.

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
    if not isinstance(model.bias, (NoBias, CosineBias, DistanceBias)):
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
    bias = model.bias
    kw = {}
    if isinstance(bias, CosineBias):
        kw["omega"] = bias.omega
    elif isinstance(bias, DistanceBias):
        kw["lam"] = bias.lam
    return FastKernel(d, model.beta, model.linear, model.normalization == "sa", tol=tol,
                      bias=bias.kind, xi=None if bias.kind == "none" else xi, mobile=mobile,
                      **kw)


# Cost model: seconds per evaluation.  Direct: T0 + n^2 / RATE[d]; fast: T0 + n * COST[bias] *
# (p * (d + 1) + FEATURE * p).  Measured by benchmarks/fast_summation.py (see the docstring of
# estimated_seconds).
DIRECT_RATE = {2: 1.6e9, 3: 1.5e9, 4: 1.0e9}
DIRECT_RATE_OTHER = 0.7e9
DIRECT_T0 = 2e-5
FAST_T0 = 1e-4
FAST_PER_FLOP = 1.0e-9
BIAS_COST = {"none": 1.0, "cosine": 2.0, "distance": 3.0}


def estimated_seconds(kind, n, d, beta, tol, bias="none"):
    """The estimated time of one velocity evaluation, direct or fast (a cost model).

    ``direct: T0 + n^2 / rate(d)``; ``fast: T0' + n p (d + 2) c(bias) k`` with ``p`` the rank
    that :class:`FastKernel` would choose for ``beta`` and ``tol`` (USA, no frozen tokens).

    Parameters
    ----------
    kind : {"direct", "fast"}
        The summation.
    n : int
        Number of tokens, ``>= 0``.
    d : int
        The dimension, ``>= 2``.
    beta : float
        The inverse temperature (0: linear profile).
    tol : float
        The velocity tolerance.
    bias : {"none", "cosine", "distance"}
        The bias.

    Returns
    -------
    float
        Seconds.

    Raises
    ------
    TypeError, ValueError
        Naming a bad argument.
    """
    v.choice("kind", kind, ("direct", "fast"))
    n = v.integer("n", n, minimum=0)
    d = v.integer("d", d, minimum=2)
    beta = v.real_scalar("beta", beta)
    tol = v.real_scalar("tol", tol, minimum=0.0, strict=True)
    v.choice("bias", bias, BIASES)
    if kind == "direct":
        return DIRECT_T0 + n * n / DIRECT_RATE.get(d, DIRECT_RATE_OTHER)
    p = _rank_for(d, beta, tol, bias)
    return FAST_T0 + n * p * (d + 2) * BIAS_COST[bias] * FAST_PER_FLOP


_RANKS = {}


def _rank_for(d, beta, tol, bias):
    key = (d, beta, tol, bias)
    if key not in _RANKS:
        try:
            xi = None if bias == "none" else np.zeros(1)
            kw = {"omega": 1.0} if bias == "cosine" else {"lam": 0.0} if bias == "distance" else {}
            _RANKS[key] = FastKernel(d, beta, beta == 0.0, False, tol=tol, bias=bias, xi=xi,
                                     **kw).rank
        except ValueError:
            _RANKS[key] = math.inf
    return _RANKS[key]


def crossover_n(d, beta, tol, bias="none"):
    """The smallest ``n`` where fast summation is estimated faster than direct summation.

    Parameters
    ----------
    d : int
        The dimension.
    beta : float
        The inverse temperature.
    tol : float
        The velocity tolerance.
    bias : {"none", "cosine", "distance"}
        The bias.

    Returns
    -------
    int
        ``n`` with ``estimated_seconds("fast", n) < estimated_seconds("direct", n)`` and not so
        for ``n - 1`` (the costs cross once); ``2**62`` if never below that.
    """
    def faster(n):
        return estimated_seconds("fast", n, d, beta, tol, bias) < \
            estimated_seconds("direct", n, d, beta, tol, bias)

    hi = 1
    while not faster(hi):
        hi *= 2
        if hi > 2 ** 62:
            return 2 ** 62
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if faster(mid):
            hi = mid
        else:
            lo = mid
    return hi
