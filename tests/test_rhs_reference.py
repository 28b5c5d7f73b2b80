"""The Numba right-hand side equals the literal NumPy formulas of the USA-AV model (chapter 3 of the book)."""

import numpy as np
import pytest

import usaav_edu as ue
from usaav_edu.dynamics import energy_reference, velocity_reference
from usaav_edu.particles.plan import direct_field

from conftest import all_models

CASES = all_models()


def numba_content_velocity(model, x, xi, frozen=None):
    k = model.kernel(x, xi, frozen)
    state = k.y0 if model.rotate_values else np.ascontiguousarray(k.x0.T)
    out = np.empty_like(state)
    direct_field(k)(state, out)
    v = out.T
    return k.contents(v) if model.rotate_values else v


@pytest.mark.parametrize("name,model,d,labels", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("n", [1, 5, 70, 300])
def test_velocity_matches_reference(name, model, d, labels, n):
    x = ue.sphere.uniform(n, d, seed=n)
    xi = labels(n)
    got = numba_content_velocity(model, x, xi)
    want = velocity_reference(model, x, model.check_labels(xi, n))
    scale = max(1.0, np.max(np.abs(want)))
    assert np.max(np.abs(got - want)) <= 1e-12 * scale


@pytest.mark.parametrize("name,model,d,labels", CASES, ids=[c[0] for c in CASES])
def test_energy_matches_reference(name, model, d, labels):
    n = 40
    x = ue.sphere.uniform(n, d, seed=1)
    xi = labels(n)
    want = energy_reference(model, x, model.check_labels(xi, n))
    assert abs(ue.energy(model, x, xi) - want) <= 1e-12 * max(1.0, abs(want))


def test_velocity_is_tangent():
    model, x, xi = ue.experiments.setup("prefix_gauge", n=50, seed=3)
    v = numba_content_velocity(model, x, xi)
    assert np.max(np.abs(np.sum(v * x, axis=1))) < 1e-13


def test_frozen_tokens_have_zero_velocity_but_attract():
    model = ue.models.usa(1.0)
    x = ue.sphere.uniform(20, 3, seed=4)
    frozen = np.zeros(20, dtype=bool)
    frozen[:3] = True
    v = numba_content_velocity(model, x, None, frozen)
    assert np.all(v[:3] == 0.0)
    want = velocity_reference(model, x, np.zeros(20), frozen)
    assert np.max(np.abs(v - want)) < 1e-13
    # the frozen tokens still act on the others: removing them changes the field
    v_without = numba_content_velocity(model, x[3:], None)
    assert np.max(np.abs(v[3:] - v_without)) > 1e-3
