"""The layout of printed pages (tools/print_pdf.py with the book's print stylesheet), on small
pages made here: each picture of a player printed twice has its own caption with its own time,
a picture too tall for the rest of a page is shrunk to fit instead of leaving the page more than
a quarter empty, and code folded on screen is not printed.  The printed chapters of the
assembled site are checked in tests/browser/test_published_site.py.
"""
from __future__ import annotations

import base64
import io
import re
import unicodedata

import pytest

from tools import print_pdf

from .pages import WIDGET_JS, export_page


def _text(pdf) -> str:
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(pdf.read_bytes()))
    text = " ".join(page.extract_text() or "" for page in reader.pages)
    return " ".join(unicodedata.normalize("NFKC", text).split())


def _png(width: int, height: int) -> str:
    """A PNG of a grey gradient (a picture with something on it) as a data address."""
    import numpy as np
    from PIL import Image

    ramp = np.linspace(40, 200, width, dtype=np.uint8)
    img = Image.fromarray(np.repeat(np.stack([ramp] * 3, axis=-1)[None], height, axis=0))
    out = io.BytesIO()
    img.save(out, format="PNG")
    return "data:image/png;base64," + base64.b64encode(out.getvalue()).decode()


def test_each_picture_of_a_player_printed_twice_has_its_own_caption(browser, tmp_path):
    if not (WIDGET_JS / "embed-amd.js").is_file():
        pytest.skip("widget JavaScript not installed (make widget-js)")
    import usaav_edu as ue
    from usaav_edu.widgets import TrajectoryPlayer

    model, x0, xi = ue.experiments.setup("rope", n=24, beta=1.0, seed=1)
    run = ue.simulate(model, x0, xi, t_max=20.0, n_frames=21, seed=1)
    html = export_page(TrajectoryPlayer(run), tmp_path / "player.html", "player")
    info = print_pdf.print_page(browser, html, tmp_path / "player.pdf", print_pdf.MATHJAX)
    assert info["players"] == 1 and info["pictures"] == 1
    text = _text(tmp_path / "player.pdf")
    start = re.search(r"start of the run: model rope, beta = 1, n = 24, d = 3, t = 0\b", text)
    end = re.search(r"end of the run: model rope, beta = 1, n = 24, d = 3, t = 20\b", text)
    assert start and end, text
    # the player's own caption line (the start time only) is not printed under both
    assert len(re.findall(r"model rope, beta = 1, n = 24, d = 3, t = 0\b", text)) == 1, text


def test_pair_captions_name_the_time_of_each_picture():
    line = "model usa, beta = 1, n = 128, d = 3, t = 0; showing 64 of 128 tokens"
    assert print_pdf.pair_captions(line, ["0", "20"]) == [
        "start of the run: model usa, beta = 1, n = 128, d = 3, t = 0; showing 64 of 128 tokens",
        "end of the run: model usa, beta = 1, n = 128, d = 3, t = 20; showing 64 of 128 tokens"]
    assert print_pdf.pair_captions("", None) == ["start of the run", "end of the run"]


def _tall_picture_page(path):
    """Text to about two thirds of the first page, then a figure taller than the rest of it."""
    words = " ".join(["The tokens move on the sphere and gather."] * 12)
    paragraphs = "\n".join(f"<p>{k}. {words}</p>" for k in range(4))
    path.write_text(f"""<!doctype html><html><head><meta charset="utf-8"><title>t</title>
<style>body {{ font: 15px/1.5 sans-serif; margin: 0; }}</style></head><body><article>
<h1>A page with a tall figure</h1>{paragraphs}
<figure><img src="{_png(600, 460)}" alt="a gradient" style="width: 600px; height: 460px">
<figcaption>Fig. 1. The picture that does not fit.</figcaption></figure>
<p>After the figure. {words}</p></article></body></html>""", encoding="utf-8")
    return path


def test_a_picture_too_tall_for_the_rest_of_a_page_is_shrunk_to_fit(browser, tmp_path):
    html = _tall_picture_page(tmp_path / "tall.html")
    unfitted = tmp_path / "unfitted.pdf"
    # without fitting (no page counts as sparse) the figure moves whole to page 2
    info = print_pdf.print_page(browser, html, unfitted, print_pdf.MATHJAX, min_fill=0.0)
    assert info["shrunk"] == []
    assert print_pdf.sparse_pages(unfitted), "the test page does not leave a page sparse: no test"
    fitted = tmp_path / "fitted.pdf"
    info = print_pdf.print_page(browser, html, fitted, print_pdf.MATHJAX)
    assert print_pdf.sparse_pages(fitted) == [], print_pdf.page_extents(fitted)
    assert info["shrunk"] and all(s["to"] >= print_pdf.MIN_SHRINK * 460 - 1 for s in info["shrunk"])
    assert "Fig. 1. The picture that does not fit." in _text(fitted)


def test_code_folded_on_screen_is_not_printed(browser, tmp_path):
    html = tmp_path / "folded.html"
    html.write_text("""<!doctype html><html><head><meta charset="utf-8"><title>f</title></head>
<body><article><h1>Folded code</h1>
<div class="cell tag_hide-input"><details class="hide above-input">
<summary>Show code cell source</summary>
<div class="cell_input"><pre>folded_plot_code = 1  # FOLDED-LINE</pre></div></details>
<div class="cell_output"><pre>the output of the folded cell</pre></div></div>
<div class="cell"><div class="cell_input"><pre>shown_code = 2  # SHOWN-LINE</pre></div></div>
</article></body></html>""", encoding="utf-8")
    print_pdf.print_page(browser, html, tmp_path / "folded.pdf", print_pdf.MATHJAX)
    text = _text(tmp_path / "folded.pdf")
    assert "SHOWN-LINE" in text and "the output of the folded cell" in text, text
    assert "FOLDED-LINE" not in text, "folded code printed"
