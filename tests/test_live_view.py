"""LiveView (usaav_edu.widgets.live) and the scripts a page with live views gets (tools/live_pages).

* A view's settings are what the browser integrator needs and are what the package would use:
  its prompts' frames are usaav_edu.sphere.random_frames, its colours the package's.
* Bad arguments are refused, naming the argument.
* A page with a live view gets three.js (with RequireJS's define set aside) and one inline script
  made from the two modules of _static/live/, which node can parse and run; a page without a live
  view is left alone.
"""
import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import usaav_edu as ue
from tools import live_pages
from usaav_edu.widgets.colors import PROMPT_PALETTE, token_colors

ROOT = Path(__file__).resolve().parents[1]


def config_of(view):
    found = re.search(r'data-usaav-live="([^"]*)"', view._repr_html_())
    return json.loads(html.unescape(found.group(1)))


def test_the_page_carries_the_settings_the_view_holds():
    view = ue.widgets.LiveView("prefix_gauge", d=3, n=16, beta=1.5, prompts=3, t_max=12.0,
                               seed=4, frame_seed=1, sliders=["prompts"])
    cfg = config_of(view)
    assert cfg == json.loads(json.dumps(view.config))
    assert cfg["model"] == "prefix_gauge" and cfg["labels"] == "prompt" and cfg["seed"] == 4
    assert [s["name"] for s in cfg["sliders"]] == ["prompts", "n"]
    assert cfg["values"]["prompts"] == 3 and cfg["values"]["n"] == 16
    for k in range(1, 9):  # one set of frames per value of the slider, the package's
        assert np.allclose(cfg["frames"][str(k)], ue.sphere.random_frames(k, 3, seed=1))
    assert cfg["colors"]["prompts"] == list(PROMPT_PALETTE)
    assert 'role="group"' in view._repr_html_() and "usaav-live-fallback" in view._repr_html_()


def test_position_colours_are_the_packages_cyclic_map():
    cfg = config_of(ue.widgets.LiveView("rope", n=32, sliders=["omega"]))
    pal = cfg["colors"]["cyclic"]
    positions = 2 * np.pi * np.arange(32) / 32
    # the view colours token i by pal[floor(i * len(pal) / n)]: the package's colours
    assert [pal[(i * len(pal)) // 32] for i in range(32)] == token_colors(positions, "position")


def test_ranges_and_the_bias_menu():
    cfg = config_of(ue.widgets.LiveView("sa", beta=5.0, sliders=["beta"],
                                        ranges={"beta": (1.0, 9.0)}))
    beta = cfg["sliders"][0]
    assert (beta["min"], beta["max"], beta["step"]) == (1.0, 9.0, 0.01)
    cfg = config_of(ue.widgets.LiveView("cosine_bias", omega=0.5, sliders=["omega", "lam"],
                                        biases=["cosine_bias", "distance_bias"]))
    assert [b[0] for b in cfg["biases"]] == ["cosine_bias", "distance_bias"]
    assert cfg["values"]["bias"] == "cosine_bias"


@pytest.mark.parametrize("kwargs, message", [
    ({"model": "gpt"}, "model must be one of"),
    ({"d": 4}, "d must be 2 or 3"),
    ({"n": 300}, "n must be at most 256"),
    ({"n": 4}, "n must be"),
    ({"sliders": ["speed"]}, "sliders must name parameters"),
    ({"sliders": "beta"}, "sliders must be a sequence"),
    ({"sliders": ["beta", "beta"]}, "must not repeat"),
    ({"ranges": {"beta": (0.0, 4.0)}}, r"ranges\['beta'\]\[0\]"),
    ({"ranges": {"beta": (2.0, 1.0)}}, "min < max"),
    ({"ranges": {"omega": (0.0, 1.0)}}, "not a slider of this view"),
    ({"beta": 5.0}, r"beta = 5 is outside the range of its slider, \[0.1, 4\]"),
    ({"t_max": 0.0}, "t_max"),
    ({"model": "usa", "biases": ["cosine_bias", "distance_bias"]}, "biases must be"),
    ({"prompts": 9}, "prompts must be at most 8"),
])
def test_bad_arguments_are_refused_naming_them(kwargs, message):
    with pytest.raises((TypeError, ValueError), match=message):
        ue.widgets.LiveView(**kwargs)


def test_a_page_with_a_live_view_gets_three_and_the_inline_modules():
    body = "<p>text</p>" + ue.widgets.LiveView("usa")._repr_html_()
    page = body + live_pages.scripts("../live/three.min.js", "export const a = 1;\n",
                                     "export function startLiveViews(live) {}\n")
    three = page.index('src="../live/three.min.js"')
    assert page.index("window.define = undefined") < three < page.index(
        "window.define = window.__usaavDefine")
    assert "export " not in page.split("</div>", 1)[1]
    with pytest.raises(ValueError, match="may export only declarations"):
        live_pages.without_exports("export default 1;\n")
    with pytest.raises(ValueError, match="must not import"):
        live_pages.without_exports("import x from './y.mjs';\n")


class _App:
    pass


def test_the_extension_touches_only_pages_with_a_live_view():
    with_view = {"body": ue.widgets.LiveView("usa")._repr_html_(),
                 "pathto": lambda name, resource: "../" + name}
    without = {"body": "<p>no view</p>", "pathto": with_view["pathto"]}
    live_pages._on_html_page_context(_App(), "book/ch01", "page.html", with_view, None)
    live_pages._on_html_page_context(_App(), "book/ch02", "page.html", without, None)
    assert 'src="../live/three.min.js"' in with_view["body"]
    assert without["body"] == "<p>no view</p>"


def test_the_inline_script_parses_and_hands_the_integrator_to_the_view(tmp_path):
    node = shutil.which("node")
    assert node, "node is needed (it comes with npm, make widget-js)"
    integrator = (live_pages.LIVE / "usaav_live.mjs").read_text(encoding="utf-8")
    view = ("export function startLiveViews(live) {\n  globalThis.result = live.createSimulation("
            "{ model: 'usa', d: 3, beta: 1, x0: live.uniformSphere(5, 3, 2), tMax: 1, "
            "nFrames: 3, dt: 0.1 }).flat().length;\n}\n")
    script = tmp_path / "page.js"
    script.write_text(live_pages.inline_script(integrator, view)
                      + "console.log(globalThis.result);\n", encoding="utf-8")
    out = subprocess.run([node, str(script)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "15"


def test_the_view_module_names_every_control_for_screen_readers():
    source = (live_pages.LIVE / "usaav_live_view.mjs").read_text(encoding="utf-8")
    for control in ('el("input"', 'el("select"', 'el("button"'):
        for found in re.finditer(re.escape(control) + r"[^;]*", source):
            assert "aria-label" in found.group(0), found.group(0)[:80]
