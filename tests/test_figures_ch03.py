"""Chapter 3's figure draws the series it is given, from a tiny run with labels."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

import usaav_edu as ue
from usaav_edu.figures import ch03 as figs


def test_slices_draw_the_diameters_the_spread_and_the_energy():
    rope = ue.models.rope(beta=1.0, omegas=(1.0,), d=3)
    xi = np.repeat(ue.experiments.positions(4, 1.0), 3)
    traj = ue.simulate(rope, ue.sphere.uniform(12, 3, seed=2), xi, t_max=1.0, n_frames=9,
                       seed=2)
    diam = np.linspace(1.0, 0.1, 9)
    spread = np.linspace(0.9, 0.5, 9)
    fig = figs.slices(traj, diam, spread, bound=np.e / 2)
    left, right = fig.axes
    d_line, s_line = left.get_lines()
    assert np.array_equal(d_line.get_ydata(), diam) and np.array_equal(s_line.get_ydata(), spread)
    assert np.array_equal(right.get_lines()[0].get_ydata(), traj.energy)
    title = fig._suptitle.get_text()
    assert "RoPE" in title and r"(4 labels $\times$ 3)" in title and "seed 2" in title
    plt.close(fig)
