"""The book's figures, one call per figure.

A chapter shows the computation (model, simulate, diagnostics) and then one call that draws it,
``fig.energy_curve(traj)``, say; the styling lives here, one module per chapter
(``usaav_edu.figures.ch01`` ...).  A figure function takes trajectories and diagnostics and
returns the Matplotlib figure or the widget; it never integrates anything itself.  The
figures need the widgets extra: ``pip install "usaav-edu[widgets]"``.
"""
from .._validate import require_extra

require_extra("widgets", "matplotlib", "ipywidgets", what="usaav_edu.figures")
