"""The figures of chapter 5 draw what they are given, from tiny generalized-RoPE runs.

Each figure of :mod:`usaav_edu.figures.ch05` is built from a run of a few tokens; the tests read
back what was drawn (the data of the curves, the overlays, the coordinates shown) and compare it
with the input.
"""
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest

import usaav_edu as ue
from usaav_edu.figures import ch05 as figs


def rope_run(omegas=(1.0, 2.0 ** 0.5), d=4, n=6, rotate_values=True, frames=5, seed=0):
    model = ue.models.rope(beta=1.0, omegas=omegas, d=d, rotate_values=rotate_values)
    return ue.simulate(model, ue.sphere.uniform(n, d, seed=seed), np.arange(n, dtype=float),
                       t_max=1.0, n_frames=frames, seed=seed)


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_rotated_vs_unrotated_draws_both_energies_and_both_diameters():
    grad = rope_run(omegas=(1.0,), d=3)
    qk = rope_run(omegas=(1.0,), d=3, rotate_values=False)
    diam_grad = ue.diagnostics.series(grad, ue.diagnostics.diameter)
    diam_qk = np.zeros_like(diam_grad)     # a collapsed run stays on the log axis
    fig = figs.rotated_vs_unrotated(grad, qk, diam_grad, diam_qk, bound=1.4)
    left, right = fig.axes
    e_grad, e_qk, bound = left.get_lines()
    np.testing.assert_array_equal(e_grad.get_ydata(), grad.energy)
    np.testing.assert_array_equal(e_qk.get_ydata(), qk.energy)
    assert set(bound.get_ydata()) == {1.4}
    d_grad, d_qk = right.get_lines()
    np.testing.assert_array_equal(d_grad.get_ydata(), diam_grad)
    np.testing.assert_array_equal(d_qk.get_ydata(), np.full_like(diam_qk, 1e-12))
    assert right.get_yscale() == "log"
    title = fig._suptitle.get_text()
    assert title == r"RoPE, $d = 3$, $n = 6$, $\beta = 1$, $\omega = 1$, seed 0"
    assert not re.search(r"\b(beta|omega)\b", re.sub(r"\$[^$]*\$", " ", title))


def test_rotated_vs_unrotated_refuses_diameters_of_another_length():
    grad = rope_run(omegas=(1.0,), d=3)
    with pytest.raises(ValueError, match="diam_qk must hold one diameter per frame"):
        figs.rotated_vs_unrotated(grad, grad, np.ones(grad.t.size), np.ones(2), bound=1.0)


def test_the_views_carry_the_orbit_they_are_given():
    traj = rope_run()
    u = traj.y[-1].mean(axis=0)
    u /= np.linalg.norm(u)
    orbit = ue.maximizers.rope_orbit(traj.model, u, np.linspace(0, 5, 50))
    player = figs.torus_player(traj, orbit)
    assert len(player.overlays.children) == 1
    wavy = figs.wavy_view(traj, orbit[:20])
    assert len(wavy.overlays.children) == 1
    std = figs.standard_view(rope_run(omegas=(1.0, 0.1, 0.01, 0.001), d=8))
    assert tuple(std.coords) == (0, 1, 4)
    assert len(figs.unrotated_player(rope_run(rotate_values=False)).overlays.children) == 0
