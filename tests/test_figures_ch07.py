"""Chapter 7's figures draw what they are given: each is built from a tiny run or diagnostic."""
import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

import usaav_edu as ue
from usaav_edu import spectral
from usaav_edu.figures import ch07 as figs


@pytest.fixture(scope="module")
def run():
    xi = spectral.circle_positions(8)
    return ue.simulate(ue.models.cosine_bias(omega=1.0), ue.sphere.uniform(8, 3, seed=0), xi,
                       t_max=2.0, n_frames=5)


def test_energy_to_bound_draws_the_energy_and_the_bound(run):
    fig = figs.energy_to_bound(run, 0.3, beta=1.0, lam=2.0, seed=4)
    ax = fig.axes[0]
    energy, bound = ax.lines[0], ax.lines[1]
    assert np.array_equal(energy.get_ydata(), run.energy)
    assert set(bound.get_ydata()) == {0.3}
    assert ax.get_xscale() == "symlog"
    assert r"$\lambda = 2$" in ax.get_title() and "seed 4" in ax.get_title()


def test_great_circle_is_the_plane_of_the_tokens():
    a, c = np.array([1.0, 0, 0]), np.array([0, 0.6, 0.8])
    s = np.linspace(0, 2 * np.pi, 12, endpoint=False)
    x = np.outer(np.cos(s), a) + np.outer(np.sin(s), c)
    circle = figs.great_circle_through(x, m=50)
    assert circle.shape == (50, 3)
    assert np.allclose(np.linalg.norm(circle, axis=1), 1.0)
    normal = np.cross(a, c)
    assert np.allclose(circle @ normal, 0.0, atol=1e-12)


def test_bias_coefficients_one_panel_per_bias_with_its_top_frequency():
    coefficients = {r"$\cos$": spectral.bias_fourier(np.cos, 16),
                    r"$\cos 3$": spectral.bias_fourier(lambda t: np.cos(3 * t), 16)}
    fig = figs.bias_coefficients(coefficients, n=16)
    assert len(fig.axes) == 2
    assert "k^* = 3" in fig.axes[1].get_title() and "k^* = 1" in fig.axes[0].get_title()
    k, bhat = coefficients[r"$\cos$"]
    stems = fig.axes[0].containers[0]
    assert np.allclose(stems.markerline.get_ydata(), bhat)


def test_mean_profile_one_line_per_coordinate(run):
    pos, m = spectral.mean_profile(run.final, run.xi)
    fig = figs.mean_profile(pos, m, t=2.0, seed=0)
    lines = fig.axes[0].lines
    assert len(lines) == 3
    assert all(np.allclose(line.get_ydata(), m[:, r]) for r, line in enumerate(lines))


def test_phase_diagram_one_square_per_cell_coloured_by_phase():
    params = dict(biases=("distance", "cosine"), omegas=(0.5, 1.0), betas=(0.0, 1.0), t_max=10.0,
                  n=8, seed=0)
    rows = [dict(bias=b, omega=w, beta=be, phase="collapse" if b == "distance" else "other",
                 spread=0.1, b_negative=b == "cosine")
            for b in params["biases"] for w in params["omegas"] for be in params["betas"]]
    fig = figs.phase_diagram(rows, params)
    left, right = fig.axes
    assert len(left.patches) == len(right.patches) == 4
    assert matplotlib.colors.to_hex(left.patches[0].get_facecolor()) == figs.PHASE_COLORS["collapse"]
    assert matplotlib.colors.to_hex(right.patches[0].get_facecolor()) == figs.PHASE_COLORS["other"]
    assert sum("$b<0$" in t.get_text() for t in right.texts) == 4
    assert left.get_xlabel() == r"decay rate $\lambda$"


def test_player_with_plane_draws_the_great_circle(run):
    (line,) = figs.player_with_plane(run, title="cosine bias").overlays.children
    assert line is not None
