"""What a run is read for: its diagnostics and the quantities the theory predicts.

* :mod:`.diagnostics` spread, diameter, clusters, Dirac distances, summaries of a Trajectory,
* :mod:`.maximizers` the energy maximizers a run is compared with (orbits, circles),
* :mod:`.spectral` the Fourier picture of biases and circle configurations, phase diagrams,
* :mod:`.reductions` the one-dimensional reductions (equiangular rate, plateaus, merges),
* :mod:`.laws` laws of tokens on the sphere (von Mises-Fisher mixtures),
* :mod:`.density` kernel density estimates of many tokens on the sphere and the circle.
"""

from . import density, diagnostics, laws, maximizers, reductions, spectral

__all__ = ["density", "diagnostics", "laws", "maximizers", "reductions", "spectral"]
