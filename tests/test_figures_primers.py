"""The primers' pictures draw the arrays they are given."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest

from usaav_edu.figures import primers as figs


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def test_attention_layers_show_the_weights_and_one_curve_per_token():
    weights = np.full((5, 5), 0.2)
    angles = np.linspace(0.0, 1.0, 4 * 5).reshape(4, 5)
    fig = figs.attention_layers(weights, angles, beta=4.0)
    left, right = fig.axes[:2]   # the colour bar comes after them
    assert np.array_equal(left.get_images()[0].get_array(), weights)
    assert len(right.get_lines()) == 5
    assert np.allclose(right.get_lines()[2].get_ydata(), angles[:, 2])
    assert r"$\beta = 4$" in left.get_title() and "3 layers" in right.get_title()


def test_graph_law_plots_both_joint_laws():
    labels = np.repeat([0.0, 1.0, 2.0], 2)
    spread, graph = np.arange(6.0), -labels
    left, right = figs.graph_law(labels, spread, graph).axes
    assert np.array_equal(left.get_lines()[0].get_ydata(), spread)
    assert np.array_equal(right.get_lines()[0].get_ydata(), graph)


def test_sphere_ascent_draws_the_path_and_the_maximum():
    a = np.array([1.0, 2.0, 2.0])
    path = np.array([[1.0, 0.0, 0.0], [0.8, 0.6, 0.0], a / 3])
    ax = figs.sphere_ascent(path, a).axes[0]
    iterates, top = [ln for ln in ax.get_lines()]
    assert np.allclose(np.stack(iterates.get_data_3d(), axis=1), path)
    assert np.allclose(np.ravel(top.get_data_3d()), a / 3)
