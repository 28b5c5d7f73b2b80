"""The intro's visual abstract (usaav_edu.figures.intro): three players, each showing what its
sentence says, within the page budget.

Tiny runs (12 tokens) for the figure function; the intro's own cell, read from book/intro.md,
for the page's budget.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import usaav_edu as ue
from usaav_edu.checks import ClaimFailed
from usaav_edu.figures import intro as fi
from usaav_edu.widgets import TrajectoryPlayer, embedded_state_bytes

INTRO = Path(__file__).resolve().parents[1] / "book" / "intro.md"
N, K, BETA = 12, 3, 1.0


def runs(t_usa=12.0, t_rope=20.0, t_prompts=12.0, seed=2):
    x0 = ue.sphere.uniform(N, 3, seed=seed)
    usa = ue.simulate(ue.models.usa(BETA), x0, t_max=t_usa, n_frames=21)
    rope = ue.simulate(ue.models.rope(beta=BETA, omegas=(1.0,), d=3), x0,
                       ue.experiments.positions(N, 1.0), t_max=t_rope, n_frames=21)
    frames = ue.sphere.random_frames(K, 3, seed=1)
    prompts = ue.simulate(ue.models.prefix_gauge(beta=BETA, frames=frames), x0, np.arange(N) % K,
                          t_max=t_prompts, n_frames=21)
    return usa, rope, prompts


@pytest.fixture(scope="module")
def done():
    return runs()


@pytest.fixture(scope="module")
def abstract(done):
    return fi.visual_abstract(*done)


def players(box):
    return [panel.children[0] for panel in box.children]


def test_three_players_in_a_box_that_wraps(abstract):
    ps = players(abstract)
    assert len(ps) == 3 and all(isinstance(p, TrajectoryPlayer) for p in ps)
    assert abstract.layout.flex_flow == "row wrap"
    # a sentence under each sphere
    texts = [panel.children[1].value for panel in abstract.children]
    assert "collapse" in texts[0] and "latitude circle" in texts[1]
    assert f"{K} clusters" in texts[2]


def test_usa_player_ends_collapsed(abstract):
    keys = players(abstract)[0].keyframes.astype(float)     # float32 positions the page plays
    first, last = keys[0], keys[-1]
    assert np.max(np.linalg.norm(first - first[0], axis=1)) > 1.0   # starts spread
    assert np.max(np.linalg.norm(last - last[0], axis=1)) < 1e-5    # ends at one point


def test_rope_gauge_collapses_while_tokens_stay_on_a_latitude_circle(done, abstract):
    _, rope, _ = done
    f = fi.abstract_facts(*done)
    assert f["rope_gauge_diameter"] < 1e-6                      # y_i = R_{xi_i} x_i: one point
    heights = players(abstract)[1].keyframes[-1][:, 2]          # what the page shows
    assert np.ptp(heights) < 1e-5                               # one latitude x_3 = u_3
    assert abs(heights.mean() - f["rope_height"]) < 1e-5
    assert ue.diagnostics.spread(rope.final) > 0.5              # a circle, not a point
    # the circle drawn is that latitude
    circle = players(abstract)[1].overlays.children[0]
    drawn = np.asarray(circle.geometry.attributes["position"].array)
    assert np.allclose(drawn[:, 2], f["rope_height"], atol=1e-6)


def test_prompts_end_in_K_clusters_one_per_prompt(done, abstract):
    _, _, prompts = done
    last = players(abstract)[2].keyframes[-1].astype(float)
    last /= np.linalg.norm(last, axis=1, keepdims=True)
    labels = ue.diagnostics.clusters(last, cluster_tol=1e-3)
    assert labels.max() + 1 == K
    xi = np.asarray(prompts.xi)
    assert all(len(set(labels[xi == k])) == 1 for k in range(K))
    # the targets G_k^T u are marked, one per prompt, where the clusters are
    targets = players(abstract)[2].overlays.children[0].children
    assert len(targets) == K
    for k, mesh in enumerate(targets):
        assert np.allclose(mesh.position, last[xi == k][0], atol=1e-4)


def test_a_run_that_has_not_collapsed_is_refused():
    with pytest.raises(ClaimFailed, match="USA collapses to one point"):
        fi.visual_abstract(*runs(t_usa=0.5))
    with pytest.raises(ClaimFailed, match="gauge coordinates collapse"):
        fi.visual_abstract(*runs(t_rope=0.5))
    with pytest.raises(ClaimFailed, match=f"{K} prompts end in {K} clusters"):
        fi.visual_abstract(*runs(t_prompts=0.5))


def test_warn_mode_says_which_claim_fails_and_draws(monkeypatch, capsys):
    monkeypatch.setenv("USAAV_EDU_CHECKS", "warn")
    box = fi.visual_abstract(*runs(t_usa=0.5))
    assert "check failed: USA collapses to one point" in capsys.readouterr().out
    assert len(players(box)) == 3


def test_runs_of_the_wrong_model_are_named(done):
    usa, rope, prompts = done
    with pytest.raises(ValueError, match="rope must be a run of models.rope"):
        fi.visual_abstract(usa, usa, prompts)
    with pytest.raises(ValueError, match="prompts must be a run of models.prefix_gauge"):
        fi.visual_abstract(usa, rope, rope)
    biased = ue.simulate(ue.models.Model(bias=ue.biases.DistanceBias(0.5)), usa.x[0],
                         np.arange(N, dtype=float), t_max=1.0, n_frames=3)
    with pytest.raises(ValueError, match="usa must be a run of models.usa"):
        fi.visual_abstract(biased, rope, prompts)
    sa = ue.simulate(ue.models.sa(BETA), usa.x[0], t_max=1.0, n_frames=3)
    with pytest.raises(ValueError, match="usa must be a run of models.usa"):
        fi.visual_abstract(sa, rope, prompts)
    with pytest.raises(TypeError, match="usa must be a usaav_edu Trajectory"):
        fi.visual_abstract(None, rope, prompts)
    with pytest.raises(ValueError, match="size must be"):
        fi.visual_abstract(usa, rope, prompts, size=300)


def test_whole_abstract_fits_its_budget(done):
    box = fi.visual_abstract(*done, max_bytes=600_000)
    assert embedded_state_bytes(box) < 600_000


def intro_cell() -> str:
    """The code of the intro's visual abstract (its first code cell)."""
    m = re.search(r"```\{code-cell\} ipython3\n(.*?)```", INTRO.read_text(encoding="utf-8"), re.S)
    assert m, f"{INTRO} has no code cell"
    return "\n".join(line for line in m.group(1).splitlines() if not line.startswith(":"))


def test_the_intro_page_plays_three_spheres_within_one_megabyte(monkeypatch):
    monkeypatch.setenv("USAAV_EDU_STATIC_PAGE", "1")
    text = INTRO.read_text(encoding="utf-8")
    assert text.startswith("---\n") and "kernelspec" in text.split("---")[1]   # executed by the build
    namespace: dict = {}
    exec(compile(intro_cell(), str(INTRO), "exec"), namespace)
    box = namespace["abstract"]
    assert len(players(box)) == 3
    assert embedded_state_bytes(box) < 1_000_000


def test_three_panels_fit_the_text_column_at_1280_px(abstract):
    # the column is 684 px wide at 1280 px (tests/test_book_layout.py): the three panels, with
    # their margins, stand side by side in it; each canvas is as wide as its panel's minimum
    column = 684
    panels = abstract.children
    widths = [int(p.layout.min_width.removesuffix("px")) for p in panels]
    margins = [sum(int(v.removesuffix("px")) for v in p.layout.margin.split()[1::2]) for p in panels]
    assert sum(widths) + sum(margins) <= column
    assert all(p.children[0].renderer.width <= w for p, w in zip(panels, widths, strict=True))
