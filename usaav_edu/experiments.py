"""Standard set-ups shared by the book, the widgets and the CLI.

``setup(name, n, ...)`` returns ``(model, x0, xi)`` for one of the experiments
of the book's chapter 8 ("Reproducing the experiments"; the first four are its
definition of the four experiments, the bias set-ups follow chapter 7), with
every choice the source leaves open made here and
documented (d, positions, frames, initialization).  The dashboards and the CLI
call it, so a chapter, a slider and a terminal run build the same system.
"""

import numpy as np

from . import _validate as v
from . import models, sphere

NAMES = ("usa", "sa", "rope", "generalized_rope", "prefix_gauge", "distance_bias", "cosine_bias")

# The keywords of ``setup`` that each experiment reads besides n and seed.  The
# others have no effect on it: generalized_rope fixes d (FIXED_DIMENSION), and
# cosine_bias uses the linear profile, on which beta has no effect.
PARAMETERS = {
    "usa": ("d", "beta"),
    "sa": ("d", "beta"),
    "rope": ("d", "beta", "omega"),
    "generalized_rope": ("beta", "omega"),
    "prefix_gauge": ("d", "beta", "n_prompts"),
    "distance_bias": ("d", "beta", "lam"),
    "cosine_bias": ("d", "omega"),
}
FIXED_DIMENSION = {"generalized_rope": 4}


def positions(n, omega=1.0):
    """Positions covering one full period of the rotation: ``xi_i = 2 pi i / (n omega)``."""
    n = v.integer("n", n, minimum=1)
    omega = v.real_scalar("omega", omega)
    if omega == 0.0:
        raise ValueError("omega must be nonzero to define positions over one period")
    return 2.0 * np.pi * np.arange(n) / (n * omega)


def setup(name, n=64, d=3, beta=1.0, omega=1.0, n_prompts=4, lam=1.0, seed=0):
    """Model, initial state and labels of a standard experiment.

    * ``usa``, ``sa``: no labels (xi = 0), any d.
    * ``rope``: d = 3 uses one plane with frequency ``omega``; even d uses the
      standard frequencies ``omega * 10000^{-2k/d}``.  Positions ``2 pi i / (n omega)``.
    * ``generalized_rope``: d = 4 whatever ``d`` is given, frequencies ``(omega, sqrt(2) omega)``,
      positions ``i``.
    * ``prefix_gauge``: ``n_prompts`` Haar-random frames (seeded), prompt ids ``i mod K``.
    * ``distance_bias``: ``b = exp(-lam |dxi|)``, positions ``2 pi i / n``.
    * ``cosine_bias``: ``b = cos(omega dxi)``, linear profile (so ``beta`` has no effect),
      positions ``2 pi i / (n omega)``.

    ``PARAMETERS[name]`` lists the keywords that experiment reads (besides n and seed).

    x0 is uniform on S^{d-1} from ``seed`` (``sphere.uniform``).
    """
    v.choice("name", name, NAMES)
    n = v.integer("n", n, minimum=1)
    d = v.integer("d", d, minimum=2)
    if name == "generalized_rope":
        d = 4
    x0 = sphere.uniform(n, d, seed=seed)
    if name == "usa":
        return models.usa(beta), x0, None
    if name == "sa":
        return models.sa(beta), x0, None
    if name == "rope":
        if d % 2 == 1 and d > 3:
            raise ValueError(f"d must be 3 or even for the rope set-up, got {d}")
        om = (float(omega),) if d == 3 else tuple(float(omega) * w for w in models.rope_frequencies(d))
        return models.rope(beta, om, d), x0, positions(n, omega)
    if name == "generalized_rope":
        om = (float(omega), float(np.sqrt(2.0) * omega))
        return models.rope(beta, om, 4), x0, np.arange(n, dtype=np.float64)
    if name == "prefix_gauge":
        k = v.integer("n_prompts", n_prompts, minimum=1)
        frames = sphere.random_frames(k, d, seed=None if seed is None else seed + 1)
        return models.prefix_gauge(beta, frames), x0, np.arange(n) % k
    if name == "distance_bias":
        return models.distance_bias(beta, lam), x0, positions(n, 1.0)
    return models.cosine_bias(omega, beta), x0, positions(n, omega)
