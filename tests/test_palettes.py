"""Token colours stay distinguishable with red-green colour blindness.

Dichromacy is simulated with the matrices of Machado, Oliveira & Fernandes, "A physiologically
based model for simulation of color vision deficiency", IEEE TVCG 15(6), 2009 (severity 1.0,
applied to linear sRGB).  Colour differences are CIEDE2000 (Sharma, Wu & Dalal, "The CIEDE2000
color-difference formula: implementation notes, supplementary test data, and mathematical
observations", Color Res. Appl. 30(1), 2005).  A difference of about 1 is just noticeable; the
tests ask for differences that stay clear at a glance on small spheres.
"""
import itertools

import numpy as np
import pytest

import usaav_edu.widgets as W

PROTANOPIA = np.array([[0.152286, 1.052583, -0.204868],
                       [0.114503, 0.786281, 0.099216],
                       [-0.003882, -0.048116, 1.051998]])
DEUTERANOPIA = np.array([[0.367322, 0.860646, -0.227968],
                         [0.280085, 0.672501, 0.047413],
                         [-0.011820, 0.042940, 0.968881]])
VISIONS = {"normal": np.eye(3), "deuteranopia": DEUTERANOPIA, "protanopia": PROTANOPIA}

RGB_TO_XYZ = np.array([[0.4124564, 0.3575761, 0.1804375],
                       [0.2126729, 0.7151522, 0.0721750],
                       [0.0193339, 0.1191920, 0.9503041]])

#: smallest CIEDE2000 difference between two prompt colours, under every vision
MIN_PROMPT_DISTANCE = 10.0
#: smallest difference between positions a quarter turn apart on the cyclic map
MIN_QUARTER_TURN_DISTANCE = 15.0


def linear_rgb(hex_color):
    s = np.array([int(hex_color[i:i + 2], 16) / 255 for i in (1, 3, 5)])
    return np.where(s <= 0.04045, s / 12.92, ((s + 0.055) / 1.055) ** 2.4)


def cielab(rgb):
    """CIELAB (D65) of a linear sRGB colour."""
    t = RGB_TO_XYZ @ np.clip(rgb, 0, 1) / RGB_TO_XYZ.sum(axis=1)
    f = np.where(t > (6 / 29) ** 3, np.cbrt(t), t / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def seen(hex_color, vision):
    return cielab(VISIONS[vision] @ linear_rgb(hex_color))


def ciede2000(lab1, lab2):
    L1, a1, b1 = lab1
    L2, a2, b2 = lab2
    c_bar = (np.hypot(a1, b1) + np.hypot(a2, b2)) / 2
    g = 0.5 * (1 - np.sqrt(c_bar ** 7 / (c_bar ** 7 + 25 ** 7)))
    a1p, a2p = (1 + g) * a1, (1 + g) * a2
    c1p, c2p = np.hypot(a1p, b1), np.hypot(a2p, b2)
    h1p = np.degrees(np.arctan2(b1, a1p)) % 360
    h2p = np.degrees(np.arctan2(b2, a2p)) % 360
    dh = 0.0 if c1p * c2p == 0 else (h2p - h1p + 180) % 360 - 180
    d_hue = 2 * np.sqrt(c1p * c2p) * np.sin(np.radians(dh) / 2)
    l_bar, cp_bar = (L1 + L2) / 2, (c1p + c2p) / 2
    if c1p * c2p == 0:
        h_bar = h1p + h2p
    elif abs(h1p - h2p) <= 180:
        h_bar = (h1p + h2p) / 2
    else:
        h_bar = (h1p + h2p + (360 if h1p + h2p < 360 else -360)) / 2
    t = (1 - 0.17 * np.cos(np.radians(h_bar - 30)) + 0.24 * np.cos(np.radians(2 * h_bar))
         + 0.32 * np.cos(np.radians(3 * h_bar + 6)) - 0.20 * np.cos(np.radians(4 * h_bar - 63)))
    s_l = 1 + 0.015 * (l_bar - 50) ** 2 / np.sqrt(20 + (l_bar - 50) ** 2)
    s_c = 1 + 0.045 * cp_bar
    s_h = 1 + 0.015 * cp_bar * t
    r_c = 2 * np.sqrt(cp_bar ** 7 / (cp_bar ** 7 + 25 ** 7))
    r_t = -np.sin(np.radians(60 * np.exp(-((h_bar - 275) / 25) ** 2))) * r_c
    dl, dc, dhh = (L2 - L1) / s_l, (c2p - c1p) / s_c, d_hue / s_h
    return float(np.sqrt(dl ** 2 + dc ** 2 + dhh ** 2 + r_t * dc * dhh))


@pytest.mark.parametrize("lab1, lab2, expected", [
    ((50.0, 2.6772, -79.7751), (50.0, 0.0, -82.7485), 2.0425),     # Sharma et al., pair 1
    ((50.0, -1.3802, -84.2814), (50.0, 0.0, -82.7485), 1.0000),    # pair 4
    ((50.0, 2.5, 0.0), (73.0, 25.0, -18.0), 27.1492),              # pair 19
    ((2.0776, 0.0795, -1.1350), (0.9033, -0.0636, -0.5514), 0.9082),  # pair 34
])
def test_ciede2000_matches_published_pairs(lab1, lab2, expected):
    assert ciede2000(lab1, lab2) == pytest.approx(expected, abs=1e-4)


@pytest.mark.parametrize("vision, pair", [("deuteranopia", ("#d62728", "#2ca02c")),
                                          ("protanopia", ("#2ca02c", "#ff7f0e"))])
def test_simulated_dichromats_confuse_red_and_green(vision, pair):
    # the simulation itself must be able to fail a palette: a red and a green (deuteranopia),
    # a green and an orange (protanopia) that differ plainly in normal vision nearly merge
    assert ciede2000(seen(pair[0], "normal"), seen(pair[1], "normal")) > 3 * MIN_PROMPT_DISTANCE
    d = ciede2000(seen(pair[0], vision), seen(pair[1], vision))
    assert d < 0.5 * MIN_PROMPT_DISTANCE, f"{vision}: {pair} differ by {d:.1f}"


@pytest.mark.parametrize("vision", list(VISIONS))
def test_prompt_colours_stay_distinct(vision):
    n_colors = len(W.PROMPT_PALETTE)
    colors = W.token_colors(np.arange(n_colors), "prompt")
    assert len(set(colors)) == n_colors
    worst = min((ciede2000(seen(colors[i], vision), seen(colors[j], vision)), i, j)
                for i, j in itertools.combinations(range(n_colors), 2))
    assert worst[0] >= MIN_PROMPT_DISTANCE, (
        f"{vision}: prompts {worst[1]} and {worst[2]} ({colors[worst[1]]}, {colors[worst[2]]}) "
        f"differ by only {worst[0]:.1f} (CIEDE2000), need >= {MIN_PROMPT_DISTANCE}")


def test_prompt_palette_covers_the_dashboard_range():
    # the dashboard offers up to eight prompts: each gets its own colour
    assert len(set(W.token_colors(np.arange(8), "prompt"))) == 8


def cyclic_colors(m=32):
    return W.token_colors(np.arange(m), "position")


@pytest.mark.parametrize("vision", list(VISIONS))
def test_positions_a_quarter_turn_apart_look_different(vision):
    colors = cyclic_colors()
    m = len(colors)
    d = [ciede2000(seen(colors[k], vision), seen(colors[(k + m // 4) % m], vision)) for k in range(m)]
    k = int(np.argmin(d))
    assert d[k] >= MIN_QUARTER_TURN_DISTANCE, (
        f"{vision}: positions {k} and {(k + m // 4) % m} of {m} differ by only {d[k]:.1f}")


@pytest.mark.parametrize("vision", list(VISIONS))
def test_cyclic_map_has_even_steps(vision):
    # neighbouring positions differ by about the same amount all round the loop: no flat
    # stretch where positions merge and no jump that looks like a boundary
    colors = cyclic_colors()
    m = len(colors)
    steps = np.array([ciede2000(seen(colors[k], vision), seen(colors[(k + 1) % m], vision))
                      for k in range(m)])
    assert steps.min() >= 2.0, f"{vision}: smallest step {steps.min():.2f}"
    assert steps.max() <= 2.5 * steps.min(), (
        f"{vision}: steps range from {steps.min():.2f} to {steps.max():.2f}")


def test_cyclic_map_is_a_circle_in_lightness_and_blue_yellow():
    # the documented formula, read back through an independent sRGB -> CIELAB conversion
    centre, r_light, r_yellow = W.colors.CYCLIC_LAB
    for k, color in enumerate(cyclic_colors(8)):
        theta = 2 * np.pi * k / 8
        lab = cielab(linear_rgb(color))
        expected = [centre + r_light * np.cos(theta), 0.0, r_yellow * np.sin(theta)]
        assert np.allclose(lab, expected, atol=0.8), f"phase {k}/8: {lab} vs {expected}"


def test_lab_outside_the_srgb_gamut_is_refused():
    with pytest.raises(ValueError, match="gamut"):
        W.colors.lab_to_srgb([50.0, 0.0, 120.0])
    with pytest.raises(ValueError, match="lab"):
        W.colors.lab_to_srgb([50.0, 0.0])
