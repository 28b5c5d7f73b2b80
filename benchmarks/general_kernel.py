"""The general kernel (query, key and value matrices; masks) against the symmetric USA kernel.

    python benchmarks/general_kernel.py          (about 20 s)

The symmetric kernel of ``usaav_edu.dynamics.rhs`` computes each unordered pair once; the
general kernel of ``usaav_edu.dynamics.general`` computes every ordered pair, because
``exp(beta <Q x_i, K x_j>)`` is not symmetric.  This prints, for n = 256 and n = 1024 on S^2
(beta = 1), the time of one velocity evaluation of ``ue.models.usa(1.0)`` and of the general
field for

* ``Q = K = V = I`` given as matrices (the same dynamics, the general path),
* random ``Q``, ``K``, ``V``,
* the causal mask with an ALiBi decay (``ue.models.causal(1.0, lam=0.1)``: about half the pairs),

each as the median of 15 alternating batches of at least 50 ms, and the ratio to USA.  The two
sides of each ratio run in the same process, alternately.
"""

import dataclasses
import statistics
import sys
import time

import numpy as np

import usaav_edu as ue
from usaav_edu.particles.plan import direct_field


def _field(model, x, xi=None):
    kernel = model.kernel(x, xi)
    field = direct_field(kernel)
    state = (kernel.y0 if kernel.state_in_gauge else np.ascontiguousarray(x.T)).copy()
    out = np.empty_like(state)
    field(state, out)  # compile or load
    return lambda: field(state, out)


def _batch(call, seconds=0.05):
    reps, t0 = 0, time.perf_counter()
    while True:
        call()
        reps += 1
        elapsed = time.perf_counter() - t0
        if elapsed >= seconds:
            return elapsed / reps


def _compare(base, other, batches=15):
    a, b = [], []
    for _ in range(batches):
        a.append(_batch(base))
        b.append(_batch(other))
    return statistics.median(a), statistics.median(b)


def report(sizes=(256, 1024)):
    rng = np.random.default_rng(0)
    Q, K, V = (0.6 * rng.normal(size=(3, 3)) for _ in range(3))
    eye = np.eye(3)
    lines = ["one velocity evaluation, d = 3, beta = 1 (median of 15 alternating batches):"]
    for n in sizes:
        x = ue.sphere.uniform(n, 3, seed=1)
        xi = np.arange(n, dtype=float)
        usa = _field(ue.models.usa(1.0), x)
        cases = [("Q = K = V = I (general)",
                  _field(dataclasses.replace(ue.models.usa(1.0), name=None,
                                             projections=ue.models.Projections(Q=eye, K=eye,
                                                                               V=eye)), x)),
                 ("random Q, K, V", _field(ue.models.attention(1.0, Q=Q, K=K, V=V), x)),
                 ("causal, lam = 0.1", _field(ue.models.causal(1.0, lam=0.1, normalization="usa"),
                                              x, xi))]
        for name, call in cases:
            t_usa, t = _compare(usa, call)
            lines.append(f"  n = {n:5d}  usa {1e6 * t_usa:8.1f} us   {name:>24} "
                         f"{1e6 * t:8.1f} us   ratio {t / t_usa:5.2f}")
    return "\n".join(lines)


if __name__ == "__main__":
    try:
        print(report())
    except KeyboardInterrupt:
        print("general_kernel.py: interrupted", file=sys.stderr)
        sys.exit(130)
