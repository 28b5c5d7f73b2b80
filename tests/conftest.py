import os

import numpy as np
import pytest
from hypothesis import settings

import usaav_edu as ue

# Property tests: `make test` runs a fixed, reproducible sample of examples (derandomized, so a
# CI result can be reproduced exactly); HYPOTHESIS_PROFILE=explore draws many fresh random ones.
settings.register_profile("default", derandomize=True)
settings.register_profile("explore", max_examples=1000, derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


def all_models(d=3, k=3, seed=0):
    """One instance of every model kind, as (model, d, labels(n))."""
    frames = ue.sphere.random_frames(k, d, seed=seed)
    pos = lambda n: ue.experiments.positions(n)  # noqa: E731
    return [
        ("usa", ue.models.usa(1.3), d, lambda n: None),
        ("usa_linear", ue.models.usa(1.0, profile="linear"), d, lambda n: None),
        ("usa_beta0", ue.models.usa(0.0), d, lambda n: None),
        ("sa", ue.models.sa(2.0), d, lambda n: None),
        ("rope3", ue.models.rope(1.0, (0.7,), 3), 3, pos),
        ("rope4", ue.models.rope(1.5, (1.0, np.sqrt(2.0)), 4), 4, lambda n: np.arange(n, dtype=float)),
        ("rope_std8", ue.models.standard_rope(0.5, d=8), 8, lambda n: np.arange(n, dtype=float)),
        ("rope_unrotated", ue.models.rope(1.0, (1.0,), 3, rotate_values=False), 3, pos),
        ("prefix", ue.models.prefix_gauge(1.0, frames), d, lambda n: np.arange(n) % k),
        ("distance", ue.models.distance_bias(1.0, lam=0.5), d, pos),
        ("cosine_linear", ue.models.cosine_bias(omega=1.0), d, pos),
        ("cosine_exp", ue.models.cosine_bias(0.8, omega=1.0, profile="exp"), d, pos),
    ]


@pytest.fixture
def full_disk(monkeypatch):
    """``os.statvfs`` reporting every file system full: no free block, for root or anyone."""
    real = os.statvfs

    def full(path):
        st = real(path)
        return os.statvfs_result((st.f_bsize, st.f_frsize, st.f_blocks, 0, 0, st.f_files,
                                  st.f_ffree, st.f_favail, st.f_flag, st.f_namemax))

    monkeypatch.setattr(os, "statvfs", full)
