"""The model: a gauge, a bias, a profile (and projections), and the constructors of its models.

* :mod:`.model` the :class:`~usaav_edu.models.model.Model` that composes the parts, and its constructors
  (``usa``, ``sa``, ``rope``, ``prefix_gauge``, ``distance_bias``, ``cosine_bias``, ...),
* :mod:`.gauges` the gauges (identity, RoPE, frames of prompts),
* :mod:`.biases` the biases ``b(xi_i, xi_j)`` (none, distance, cosine, causal),
* :mod:`.profiles` the interaction profiles ``phi`` (exponential, linear),
* :mod:`.projections` query, key and value matrices (``attention``).

Everything a user needs is re-exported here: ``ue.models.rope(1.0, (1.0,), 3)``.
"""

from . import biases, gauges, model, profiles, projections
from .model import *  # noqa: F403  (the constructors and parts listed in model.__all__)
from .model import NORMALIZATIONS, PARAMS_VERSION
from .model import apply_matrices as apply_matrices
from .profiles import BETA_MAX, BETA_MIN

__all__ = ["biases", "gauges", "profiles", "projections", "BETA_MAX", "BETA_MIN", "NORMALIZATIONS", "PARAMS_VERSION"]
__all__ += model.__all__
