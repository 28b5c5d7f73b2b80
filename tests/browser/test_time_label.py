"""A player's time label, "t = 4.2" above its time bar, reads the time while the clip plays.

A player is exported to a standalone page (the book's widget JavaScript, no kernel, no book
build) and played in chromium.  The label's digits are read off the canvas: each digit is drawn
with seven segments, and the test looks at the middle of each segment, where the player's own
geometry (the label's place and size, the camera's field of view) puts it on screen.  While the
clip plays, two screenshots read two different times, each the time at which the red bead stands
in the same screenshot, and so does a pause; after stop the label and the bead are back at the
start.
"""
from __future__ import annotations

import io
import math
import re
import time

import numpy as np
import pytest

from tools.print_pdf import wait_canvases

from .pages import export_page, is_harmless

RENDER_TIMEOUT_S = 60

#: where each segment's middle lies in a character cell (x across the cell, y up), a..g
SEGMENT_MIDDLES = [(0.5, 0.9), (0.8, 0.7), (0.8, 0.3), (0.5, 0.1), (0.2, 0.3), (0.2, 0.7),
                   (0.5, 0.5)]


def _to_pixels(camera, hud_xy, z, size):
    """Pixel (column, row) of the point ``(x, y, z)`` in camera coordinates, on a canvas of
    ``size = (width, height)`` drawn by ``camera`` (a perspective projection)."""
    w, h = size
    half = -z * math.tan(math.radians(camera.fov) / 2)
    x_ndc, y_ndc = hud_xy[0] / (half * w / h), hud_xy[1] / half
    return (x_ndc + 1) / 2 * w, (1 - y_ndc) / 2 * h


def _dark(img, col, row, reach=1):
    """Whether the label's grey ink covers the pixel (col, row) or one next to it: dark and
    grey (the tokens are coloured, the reference circles lighter)."""
    r0, c0 = int(round(row)), int(round(col))
    patch = img[max(r0 - reach, 0):r0 + reach + 1, max(c0 - reach, 0):c0 + reach + 1].reshape(-1, 3)
    grey = (patch.max(axis=1) - patch.min(axis=1)) < 40
    return bool(np.any(grey & (patch.max(axis=1) < 110)))


def read_label(png: bytes, player) -> str:
    """The number the time label of ``player`` shows in the canvas screenshot ``png``
    (``"4.2"``; a leading blank digit is left out), read segment by segment."""
    from PIL import Image

    from usaav_edu.widgets.player import SEGMENTS

    img = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=float)
    size = (img.shape[1], img.shape[0])
    label = player.label
    defines = label.material.defines
    cells, integer, decimals = (int(float(defines[k])) for k in ("CELLS", "INT_DIGITS", "DECIMALS"))
    width, height = label.geometry.width, label.geometry.height
    x0, y0, z = label.position[0] - width / 2, label.position[1] - height / 2, label.position[2]
    digits = {mask: str(d) for d, mask in SEGMENTS.items()}
    out = ""
    for n in range(integer + 1 + decimals if decimals else integer):
        if n == integer:
            out += "."
            continue
        cell = 4 + n
        mask = 0
        for bit, (u, v) in enumerate(SEGMENT_MIDDLES):
            col, row = _to_pixels(player.camera, (x0 + (cell + u) / cells * width,
                                                  y0 + v * height), z, size)
            mask |= _dark(img, col, row) << bit
        if mask == 0 and n < integer - 1 and not out:
            continue                                        # no leading zeros
        assert mask in digits, f"cell {cell} of the label shows segments {mask:07b}, no digit"
        out += digits[mask]
    return out


def read_bead(png: bytes, player) -> float:
    """The clip time at which the red bead stands in the canvas screenshot ``png``: the centre
    of its red pixels, taken back along the bar (``bead_position`` inverted)."""
    from PIL import Image

    from usaav_edu.widgets.player import _BAR_HALF, _BAR_Z

    img = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=float)
    red = (img[..., 0] > 150) & (img[..., 1] < 90) & (img[..., 2] < 90)
    assert red.sum() > 10, "no red bead on the canvas"
    col = float(np.nonzero(red)[1].mean())
    size = (img.shape[1], img.shape[0])
    left = _to_pixels(player.camera, (-_BAR_HALF, 0.0), _BAR_Z, size)[0]
    right = _to_pixels(player.camera, (_BAR_HALF, 0.0), _BAR_Z, size)[0]
    return (col - left) / (right - left) * float(player.keyframe_times[-1])


def test_the_label_reader_reads_the_segments(page, tmp_path):
    """The reader itself: a player shown at its last frame reads its span, one at its first 0."""
    import ipywidgets as widgets

    import usaav_edu as ue
    from usaav_edu.widgets import TrajectoryPlayer

    model, x0, xi = ue.experiments.setup("usa", n=8, beta=1.0, seed=0)
    run = ue.simulate(model, x0, xi, t_max=10.0, n_frames=41, seed=0)
    first, last = TrajectoryPlayer(run, frame=0), TrajectoryPlayer(run, frame=-1)
    out = export_page(widgets.VBox([first, last]), tmp_path / "ends.html", "players")
    page.goto(out.as_uri())
    assert wait_canvases(page, 2, RENDER_TIMEOUT_S) == 2
    time.sleep(1.0)
    canvases = page.locator("canvas")
    assert read_label(canvases.nth(0).screenshot(), first) == "0.0"
    assert read_label(canvases.nth(1).screenshot(), last) == "10.0"


def test_the_time_label_reads_the_time_while_the_player_plays(page, tmp_path):
    import usaav_edu as ue
    from usaav_edu.widgets import TrajectoryPlayer

    model, x0, xi = ue.experiments.setup("usa", n=8, beta=1.0, seed=0)
    run = ue.simulate(model, x0, xi, t_max=10.0, n_frames=41, seed=0)
    player = TrajectoryPlayer(run, duration=8.0, loop="LoopOnce")
    out = export_page(player, tmp_path / "player.html", "TrajectoryPlayer")
    page.goto(out.as_uri())
    assert wait_canvases(page, 1, RENDER_TIMEOUT_S) == 1
    time.sleep(1.0)
    canvas = page.locator("canvas").first
    buttons = page.locator(".widget-play").first.locator("button")
    assert read_label(canvas.screenshot(), player) == "0.0"

    buttons.nth(0).click()                                     # play
    readings = []
    for pause in (1.5, 2.0):
        time.sleep(pause)
        shot = canvas.screenshot()
        readings.append((read_label(shot, player), read_bead(shot, player)))
    buttons.nth(1).click()                                     # pause
    (first, bead1), (second, bead2) = readings
    for shown, bead in readings:
        assert re.fullmatch(r"\d{1,2}\.\d", shown), f"the label shows {shown!r} while playing"
        # the label and the bead of one picture show one time (the bead read to a pixel or so)
        assert float(shown) == pytest.approx(bead, abs=0.3), (shown, bead)
    assert 0.0 < float(first) < float(second) < 10.0, readings

    time.sleep(0.5)
    shot = canvas.screenshot()
    paused, bead = read_label(shot, player), read_bead(shot, player)
    assert float(second) <= float(paused) < 10.0 and float(paused) == pytest.approx(bead, abs=0.3)

    # stop: the clip lets go of what it moved, the view is back at its start (pythreejs draws
    # it at the next redraw: a small turn of the sphere; the bar and its label stay in place)
    buttons.nth(2).click()
    time.sleep(0.5)
    box = canvas.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] / 2 + 4, box["y"] + box["height"] / 2, steps=2)
    page.mouse.up()
    time.sleep(1.0)
    shot = canvas.screenshot()
    assert read_label(shot, player) == "0.0"
    assert read_bead(shot, player) == pytest.approx(0.0, abs=0.3)
    bad = [text for text, loc in page.log.errors if not is_harmless(text, loc)]
    assert not bad, f"console errors: {bad}"
