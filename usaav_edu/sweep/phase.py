r"""The phase diagram of the noisy model over ``(beta, noise)``, a sweep on Dask.

With noise the tokens no longer collapse: in the mean-field limit on the circle the uniform
density is stable exactly when diffusion beats the attraction of the first Fourier mode,

.. math::

    \frac{\sigma^2}{2} > \frac{I_1(\beta)}{\beta}

(USA with :math:`\varphi(s) = e^{\beta s} / \beta`; :math:`\sigma^2 > 1` for the linear
profile, the noisy Kuramoto model), and below the threshold a synchronized state with order
parameter :math:`r = |\frac{1}{n} \sum_j x_j| > 0` appears.  :func:`noise_phase_diagram` runs
one noisy simulation per point of a grid of ``beta``, ``noise`` and seeds (``ue.sweep`` with
``method="heun"``) and keeps the final order parameter, as the phase diagrams of Geshkovski,
Letrouit, Polyanskiy and Rigollet (arXiv:2312.10794) are drawn: one cell per pair of
parameters, a statistic of the final state in each.
"""

import numpy as np

from ..dynamics.fastsum.expansions import scaled_bessel_i
from .run import sweep

__all__ = ["order_parameter", "critical_noise", "noise_phase_diagram"]


def order_parameter(traj):
    r"""The order parameter of the final frame, :math:`r = |\frac{1}{n} \sum_j x_j|` (a float)."""
    return float(np.linalg.norm(np.mean(traj.final, axis=0)))


def critical_noise(beta):
    r"""The noise :math:`\sigma_c = \sqrt{2 I_1(\beta) / \beta}` at which the uniform density on
    the circle loses its stability (USA; ``beta = 0``: the linear profile's :math:`\sigma_c = 1`).

    Parameters
    ----------
    beta : float
        Inverse temperature, ``>= 0``.

    Returns
    -------
    float
    """
    beta = float(beta)
    if not np.isfinite(beta) or beta < 0.0 or beta > 700.0:
        raise ValueError(f"beta must be a finite number in [0, 700], got {beta!r}")
    if beta == 0.0:
        return 1.0
    i1 = float(scaled_bessel_i(2, beta)[1]) * np.exp(beta)  # I_1(beta)
    return float(np.sqrt(2.0 * i1 / beta))


def noise_phase_diagram(betas, noises, *, seeds=range(4), experiment="usa", n=64, d=2,
                        t_max=20.0, dt=None, n_frames=2, client=None, store=None, workers=None,
                        progress=None):
    """The final order parameter of noisy runs over a grid of ``beta`` and ``noise``.

    Parameters
    ----------
    betas, noises : sequence of float
        The grid (``noise >= 0``).
    seeds : sequence of int
        The seeds of every cell (the initial state and the Brownian motions).
    experiment : str
        A standard experiment that reads ``beta`` (default ``"usa"``).
    n, d, t_max, dt, n_frames, client, store, workers, progress
        As in :func:`usaav_edu.sweep`.

    Returns
    -------
    xarray.Dataset
        The sweep's Dataset with dimensions ``beta``, ``noise``, ``seed`` and the variable
        ``order`` (:func:`order_parameter`); ``ds.order.mean("seed")`` is the diagram.

    Raises
    ------
    TypeError, ValueError
        As :func:`usaav_edu.sweep`, before anything runs.
    """
    grid = {"beta": list(betas), "noise": list(noises), "seed": list(seeds)}
    return sweep(experiment, grid, t_max=t_max, n=n, d=d, method="heun", dt=dt,
                 n_frames=n_frames, client=client, store=store, workers=workers,
                 progress=progress, extra={"order": order_parameter})
