"""The standard experiments: one registry for the book, the CLI, the widgets, the phase diagram.

``setup(name, n, ...)`` returns ``(model, x0, xi)`` for one of the experiments
of the book's chapter 8 ("Reproducing the experiments"; the first four are its
definition of the four experiments, the bias set-ups follow chapter 7), with
every choice the source leaves open made here and documented (d, positions,
frames, initialization).  Each experiment is an :class:`Experiment` in
:data:`EXPERIMENTS`: its name, the label a menu shows, the keywords it reads,
the dimension it fixes (if any), its model builder and its labels.  The CLI's
choices, the dashboard's menu and enabled controls, the explorer's checks and
:func:`usaav_edu.analysis.spectral.bias_model` all read it, so a chapter, a slider and a
terminal run build the same system.
"""

from dataclasses import dataclass

import numpy as np

from .. import _validate as v
from .. import sphere
from ..models import model as models


@dataclass(frozen=True)
class Experiment:
    """One standard experiment.

    Attributes
    ----------
    name : str
        The key of :data:`EXPERIMENTS` and of ``setup(name, ...)``.
    label : str
        What a menu shows.
    parameters : tuple of str
        The keywords of :func:`setup` that it reads besides ``n`` and ``seed``.
    model : callable
        ``model(d=..., beta=..., omega=..., n_prompts=..., lam=..., seed=...)`` -> Model (the
        keywords it does not read are ignored).
    labels : callable or None
        ``labels(n, omega=..., n_prompts=...)`` -> ``xi``; None for an experiment without labels.
    fixed_dimension : int or None
        The dimension it always uses, whatever ``d`` is given.
    menu : bool
        Whether the dashboard's menu offers it (:func:`choices`); the set-ups beyond the
        paper's model (:data:`BEYOND`) run from ``setup``, the CLI and sweeps.
    """

    name: str
    label: str
    parameters: tuple
    model: object
    labels: object = None
    fixed_dimension: int | None = None
    menu: bool = True


def positions(n, omega=1.0):
    """Positions covering one full period of the rotation: ``xi_i = 2 pi i / (n omega)``.

    Parameters
    ----------
    n : int
        Number of tokens, >= 1.
    omega : float
        The frequency, nonzero.

    Returns
    -------
    ndarray
        ``(n,)`` positions.

    Raises
    ------
    TypeError, ValueError
        For a bad ``n`` or a zero ``omega``.
    """
    n = v.integer("n", n, minimum=1)
    omega = v.real_scalar("omega", omega)
    if omega == 0.0:
        raise ValueError("omega must be nonzero to define positions over one period")
    return 2.0 * np.pi * np.arange(n) / (n * omega)


def _rope_model(d, beta, omega, **_):
    if d % 2 == 1 and d > 3:
        raise ValueError(f"d must be 3 or even for the rope set-up, got {d}")
    om = (float(omega),) if d == 3 else tuple(float(omega) * w for w in models.rope_frequencies(d))
    return models.rope(beta, om, d)


def _prefix_model(d, beta, n_prompts, seed, **_):
    k = v.integer("n_prompts", n_prompts, minimum=1)
    frames = sphere.random_frames(k, d, seed=None if seed is None else seed + 1)
    return models.prefix_gauge(beta, frames)


def distance_bias_model(beta, lam, **_):
    """The distance-bias model ``b = exp(-lam |dxi|)`` of the experiments (attention profile).

    Parameters
    ----------
    beta : float
        Inverse temperature.
    lam : float
        Decay rate, >= 0.

    Returns
    -------
    Model
    """
    return models.distance_bias(beta, lam=lam)


def random_projections(d, seed):
    r"""Query, key and value matrices with independent :math:`N(0, 1/d)` entries.

    The draws of the phase-diagram code of Geshkovski, Letrouit, Polyanskiy and Rigollet
    (arXiv:2312.10794): ``Q``, ``K``, ``V`` in that order from
    ``numpy.random.default_rng(seed)``.

    Parameters
    ----------
    d : int
        Dimension.
    seed : int
        The seed of the draws.

    Returns
    -------
    tuple of ndarray
        ``(Q, K, V)``, each ``(d, d)``.
    """
    d = v.integer("d", d, minimum=2)
    rng = np.random.default_rng(v.integer("qkv_seed", seed, minimum=0))
    return tuple(rng.normal(scale=1.0 / np.sqrt(d), size=(d, d)) for _ in range(3))


def _attention_model(d, beta, qkv_seed, seed, **_):
    key = (0 if seed is None else seed) + 2 if qkv_seed is None else qkv_seed
    Q, K, V = random_projections(d, key)
    return models.attention(beta, Q=Q, K=K, V=V, d=d)


def cosine_bias_model(beta, omega, profile="linear", **_):
    """The cosine-bias model ``b = cos(omega dxi)`` (linear profile in the experiments).

    Parameters
    ----------
    beta : float
        Inverse temperature (no effect with the linear profile).
    omega : float
        Frequency.
    profile : {"linear", "exp"}
        The profile.

    Returns
    -------
    Model
    """
    return models.cosine_bias(beta, omega=omega, profile=profile)


EXPERIMENTS = {e.name: e for e in (
    Experiment("usa", "USA (no labels)", ("d", "beta"), lambda beta, **_: models.usa(beta)),
    Experiment("sa", "SA (normalized)", ("d", "beta"), lambda beta, **_: models.sa(beta)),
    Experiment("rope", "RoPE (positions)", ("d", "beta", "omega"), _rope_model,
               lambda n, omega, **_: positions(n, omega)),
    Experiment("generalized_rope", "generalized RoPE, d = 4", ("beta", "omega"),
               lambda beta, omega, **_: models.rope(
                   beta, (float(omega), float(np.sqrt(2.0) * omega)), 4),
               lambda n, **_: np.arange(n, dtype=np.float64), fixed_dimension=4),
    Experiment("prefix_gauge", "prefix gauges (prompts)", ("d", "beta", "n_prompts"), _prefix_model,
               lambda n, n_prompts, **_: np.arange(n) % n_prompts),
    Experiment("distance_bias", "distance bias (positions)", ("d", "beta", "lam"),
               distance_bias_model, lambda n, **_: positions(n, 1.0)),
    # the linear profile: beta has no effect, so it is not among the parameters
    Experiment("cosine_bias", "cosine bias (positions)", ("d", "omega"), cosine_bias_model,
               lambda n, omega, **_: positions(n, omega)),
    Experiment("attention", "random Q, K, V", ("d", "beta", "qkv_seed"), _attention_model,
               menu=False),
    Experiment("causal", "causal mask, ALiBi decay (positions)", ("d", "beta", "lam"),
               lambda d, beta, lam, **_: models.causal(beta, lam=lam, d=d),
               lambda n, **_: np.arange(n, dtype=np.float64), menu=False),
)}
"""The standard experiments by name, in menu order (then the set-ups beyond the paper's model)."""

BEYOND = tuple(name for name, e in EXPERIMENTS.items() if not e.menu)
"""The set-ups beyond the paper's model, ``attention`` (random ``Q``, ``K``, ``V``) and
``causal`` (the causal mask with an ALiBi decay, positions ``0, 1, ..., n - 1``)."""

NAMES = tuple(EXPERIMENTS)
"""The names of the standard experiments, in menu order."""
PARAMETERS = {name: e.parameters for name, e in EXPERIMENTS.items()}
"""The keywords of ``setup`` that each experiment reads besides n and seed (from the registry)."""
FIXED_DIMENSION = {name: e.fixed_dimension for name, e in EXPERIMENTS.items()
                   if e.fixed_dimension is not None}
"""The experiments that fix d (from the registry)."""


def choices():
    """``(label, name)`` pairs of every experiment, in menu order (for a dropdown).

    Returns
    -------
    list of tuple
    """
    return [(e.label, e.name) for e in EXPERIMENTS.values() if e.menu]


def get(name):
    """The :class:`Experiment` called ``name``.

    Parameters
    ----------
    name : str
        One of :data:`~usaav_edu.particles.experiments.NAMES`.

    Returns
    -------
    Experiment

    Raises
    ------
    TypeError, ValueError
        If ``name`` is not the name of a standard experiment.
    """
    return EXPERIMENTS[v.choice("name", name, NAMES)]


def setup(name, n=64, d=3, beta=1.0, omega=1.0, n_prompts=4, lam=1.0, seed=0, qkv_seed=None):
    r"""Model, initial state and labels of a standard experiment.

    * ``usa``, ``sa``: no labels (xi = None), any d.
    * ``rope``: d = 3 uses one plane with frequency ``omega``; even d uses the
      standard frequencies :math:`\omega \cdot 10000^{-2k/d}`.  Positions
      :math:`\xi_i = 2 \pi i / (n \omega)`.
    * ``generalized_rope``: d = 4 whatever ``d`` is given, frequencies
      :math:`(\omega, \sqrt{2}\, \omega)`, positions :math:`\xi_i = i`.
    * ``prefix_gauge``: ``n_prompts`` Haar-random frames (seeded), prompt ids
      :math:`\xi_i = i \bmod K`.
    * ``distance_bias``: :math:`b(\xi, \zeta) = e^{-\lambda |\xi - \zeta|}`, positions
      :math:`\xi_i = 2 \pi i / n`.
    * ``cosine_bias``: :math:`b(\xi, \zeta) = \cos(\omega (\xi - \zeta))`, linear profile (so
      ``beta`` has no effect), positions :math:`\xi_i = 2 \pi i / (n \omega)`.
    * ``attention`` (beyond the paper's model): ``ue.models.attention`` with
      :func:`random_projections` drawn with ``qkv_seed`` (None: ``seed + 2``), no labels.
    * ``causal`` (beyond the paper's model): ``ue.models.causal(beta, lam=lam)``, positions
      :math:`\xi_i = i`.

    Parameters
    ----------
    name : str
        One of :data:`~usaav_edu.particles.experiments.NAMES`.
    n : int
        Number of tokens.
    d : int
        Dimension (ignored by an experiment that fixes it).
    beta, omega, lam : float
        Inverse temperature, frequency, decay rate (``PARAMETERS[name]`` lists the
        keywords that experiment reads).
    n_prompts : int
        Number of prompts.
    seed : int or None
        Seed of the initial state (``sphere.uniform``) and of the frames.
    qkv_seed : int or None
        Seed of the ``attention`` set-up's matrices (None: derived from ``seed``).

    Returns
    -------
    tuple
        ``(model, x0, xi)``.

    Raises
    ------
    TypeError, ValueError
        For a bad keyword, naming it.

    References
    ----------
    The book's chapter 8 (ch08, reproducing the experiments); arXiv:2605.30229.

    Examples
    --------
    >>> import usaav_edu as ue
    >>> setup = ue.experiments.setup
    >>> model, x0, xi = setup("rope", n=16, beta=2.0, seed=0)
    >>> model.name, model.beta, x0.shape, xi.shape
    ('rope', 2.0, (16, 3), (16,))
    >>> round(float(xi[1]), 4)  # 2 pi / 16
    0.3927
    >>> setup("prefix_gauge", n=6, n_prompts=3)[2].tolist()
    [0, 1, 2, 0, 1, 2]
    """
    e = get(name)
    n = v.integer("n", n, minimum=1)
    d = v.integer("d", d, minimum=2)
    if e.fixed_dimension is not None:
        d = e.fixed_dimension
    x0 = sphere.uniform(n, d, seed=seed)
    keywords = dict(d=d, beta=beta, omega=omega, n_prompts=n_prompts, lam=lam, seed=seed,
                    qkv_seed=qkv_seed)
    model = e.model(**keywords)
    xi = None if e.labels is None else e.labels(n, **keywords)
    return model, x0, xi
