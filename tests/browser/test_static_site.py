"""The built site serves its own widget JavaScript and MathJax, and names no CDN for them."""
from __future__ import annotations

import json
import re

import pytest

from .pages import SITE, widget_pages

CDN = re.compile(r"(cdn\.jsdelivr\.net|unpkg\.com|cdnjs\.cloudflare\.com)[^\"' ]*"
                 r"(jupyter-widgets|html-manager|jupyter-threejs|require|mathjax)", re.I)
SCRIPT = re.compile(r'<script[^>]*\ssrc="([^"]+)"')


def test_no_cdn_for_widget_code_or_math():
    pages = sorted(SITE.rglob("*.html"))
    assert pages, f"{SITE} is missing: build the book first (make book)"
    hits = {str(p.relative_to(SITE)): CDN.findall(p.read_text(encoding="utf-8", errors="replace"))
            for p in pages}
    assert not {k: v for k, v in hits.items() if v}, hits


@pytest.mark.parametrize("html", widget_pages(), ids=lambda p: str(p.relative_to(SITE)))
def test_widget_scripts_are_local_files(html):
    scripts = SCRIPT.findall(html.read_text(encoding="utf-8"))
    widget = [s for s in scripts if "widgets-js/" in s]
    names = [s.split("?")[0].rsplit("/", 1)[-1] for s in widget]
    assert names == ["require.js", "require-config.js", "embed-amd.js"], scripts
    for src in widget:
        assert "://" not in src, src
        target = (html.parent / src.split("?")[0]).resolve()
        assert target.is_file(), f"{src} does not exist in the site"
    threejs = SITE / "widgets-js" / "jupyter-threejs" / "index.js"
    assert threejs.is_file()


#: the embedded widget state a page may carry (README, "Embedded widget state per page"): a
#: reader on a slow line waits for all of it before the first sphere turns
PAGE_STATE_LIMIT = 3_000_000
STATE = re.compile(r'<script type="application/vnd\.jupyter\.widget-state\+json">(.*?)</script>',
                   re.S)


def page_state_bytes(text: str) -> int:
    """Bytes of the widget state embedded in a page's HTML (every state script)."""
    return sum(len(m.encode("utf-8")) for m in STATE.findall(text))


def test_page_state_bytes_reads_every_state_script():
    one = '<script type="application/vnd.jupyter.widget-state+json">{"a": 1}</script>'
    assert page_state_bytes("<p>no widgets</p>") == 0
    assert page_state_bytes(one) == len('{"a": 1}')
    assert page_state_bytes(one + "<p>between</p>" + one) == 2 * len('{"a": 1}')


@pytest.mark.parametrize("html", widget_pages(), ids=lambda p: str(p.relative_to(SITE)))
def test_a_page_embeds_at_most_3_mb_of_widget_state(html):
    size = page_state_bytes(html.read_text(encoding="utf-8"))
    assert 0 < size <= PAGE_STATE_LIMIT, (
        f"{html.relative_to(SITE)} embeds {size / 1e6:.2f} MB of widget state, over the "
        f"{PAGE_STATE_LIMIT / 1e6:g} MB a page may carry: lower the max_bytes of its views or "
        f"the tokens they draw")


def explorer_sliders(text: str) -> list[tuple[str, list[str]]]:
    """``(name, values)`` of every explorer slider (a SelectionSlider) in a page's widget
    state, in the page's order of models."""
    sliders = []
    for script in STATE.findall(text):
        for model in json.loads(script)["state"].values():
            if model["model_name"] == "SelectionSliderModel":
                sliders.append((model["state"].get("description", ""),
                                list(model["state"].get("_options_labels", []))))
    return sliders


def test_explorer_sliders_are_read_from_the_state():
    script = ('<script type="application/vnd.jupyter.widget-state+json">{"state": {"a": '
              '{"model_name": "SelectionSliderModel", "state": {"description": "beta", '
              '"_options_labels": ["1", "2"]}}, "b": {"model_name": "HTMLModel", "state": {}}}}'
              '</script>')
    assert explorer_sliders(script) == [("beta", ["1", "2"])]


VIEW = re.compile(r'<script type="application/vnd\.jupyter\.widget-view\+json">(.*?)</script>',
                  re.S)
MODEL_REF = re.compile(r"IPY_MODEL_([0-9a-f]+)")


def unresolved_models(text: str) -> list[str]:
    """Model ids a page's views or models refer to that its widget state does not hold (the
    browser then stops at "widget model not found" and the view stays empty)."""
    state = {}
    for script in STATE.findall(text):
        state.update(json.loads(script)["state"])
    wanted = [json.loads(view)["model_id"] for view in VIEW.findall(text)]
    for model in state.values():
        wanted += MODEL_REF.findall(json.dumps(model["state"]))
    return sorted({m for m in wanted if m not in state})


def test_unresolved_models_finds_a_view_or_a_child_without_its_model():
    def page(views, state):
        return ("".join(f'<script type="application/vnd.jupyter.widget-view+json">'
                        f'{{"model_id": "{v}"}}</script>' for v in views)
                + '<script type="application/vnd.jupyter.widget-state+json">'
                + json.dumps({"state": state}) + "</script>")

    box = {"state": {"children": ["IPY_MODEL_a1", "IPY_MODEL_b2"]}}
    assert unresolved_models(page(["0f"], {"0f": box, "a1": {"state": {}}, "b2": {"state": {}}})) == []
    assert unresolved_models(page(["0f", "c3"], {"0f": box, "a1": {"state": {}}})) == ["b2", "c3"]


@pytest.mark.parametrize("html", widget_pages(), ids=lambda p: str(p.relative_to(SITE)))
def test_every_view_and_every_model_a_page_refers_to_is_in_its_state(html):
    missing = unresolved_models(html.read_text(encoding="utf-8"))
    assert not missing, (
        f"{html.relative_to(SITE)}: {len(missing)} widget models are referred to but were not "
        f"saved with the page ({missing[:5]}): their cells' output was cut short while the book "
        f"was built; build it again")


#: the fewest values an explorer's slider offers (fewer is a toy, not an exploration)
MIN_SLIDER_VALUES = 8


@pytest.mark.parametrize("html", widget_pages(), ids=lambda p: str(p.relative_to(SITE)))
def test_explorer_sliders_hold_eight_values_increasing_and_are_named(html):
    for name, values in explorer_sliders(html.read_text(encoding="utf-8")):
        assert name.strip(), f"{html.name}: an explorer slider without the name of its parameter"
        assert len(values) >= MIN_SLIDER_VALUES, \
            f"{html.name}: the {name} slider holds {len(values)} values {values}, fewer than 8"
        numbers = [float(v) for v in values]
        assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers), \
            f"{html.name}: the {name} slider does not increase left to right: {values}"


def test_the_book_ran_its_notebooks_in_the_book_kernel():
    # tools/book_kernel/: the kernel whose output channel drops no message (tests/test_book_kernel.py)
    executed = sorted((SITE.parent / "jupyter_execute").rglob("*.ipynb"))
    assert executed, f"no executed notebooks beside {SITE}"
    names = {p.name: json.loads(p.read_text(encoding="utf-8"))["metadata"]["kernelspec"]["name"]
             for p in executed}
    assert set(names.values()) == {"usaav-book"}, names
