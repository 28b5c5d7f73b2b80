"""Spherical-harmonic transforms on the sphere solver's fine grid: ducc0 against shtns.

    python benchmarks/sphere_transforms.py            (lmax = 32, 64, 128; about 15 s)
    python benchmarks/sphere_transforms.py --quick    (lmax = 32, 64, fewer batches)

The measurement behind the choice of transform library of ``usaav_edu.meanfield.harmonics``.
For each lmax, on the Gauss-Legendre grid the solver forms its flux on (``3 lmax / 2 + 2`` rings
by ``3 lmax + 2`` longitudes, ``SphereOperator.fine``), it times one scalar synthesis followed
by one analysis, and one gradient (the synthesis of ``(d_theta f, d_phi f / sin theta)``), on
one thread:

* ducc0 as ``harmonics.py`` calls it (``ducc0.sht.synthesis_2d``, ``analysis_2d`` and
  ``synthesis_2d_deriv1`` with ``geometry="GL"``, ``nthreads=1``);
* shtns, if it imports (it is not a dependency of the package: ``pip install shtns`` builds it
  from source and needs FFTW from the system), as ``shtns.sht(lmax, lmax,
  norm=shtns.sht_orthonormal, nthreads=1)`` on ``set_grid(nlat, nphi, shtns.sht_gauss |
  shtns.SHT_PHI_CONTIGUOUS, 0.0)`` (maps ``(nlat, nphi)`` like ducc0's; ``polar_opt = 0``, so
  no small Legendre values are dropped), with ``synth``, ``analys`` and ``synth_grad``.

Both libraries store the coefficients of ``m >= 0`` in the same order (``m`` major, then ``l``)
and with the same orthonormal harmonics and Condon-Shortley phase; before timing, the script
checks that ``shtns.idx(l, m)`` is ducc0's index and that the two give the same grid values,
coefficients and gradients, to a relative 1e-10, from random coefficients.  Times are per call,
the best over batches of at least 20 ms (the libraries alternating batch by batch, so a shared
machine disturbs both alike).  A second table repeats the timings with ``nphi`` raised to the
next size with small prime factors (``ducc0.fft.good_size(3 lmax + 2)``): ``3 lmax + 2`` is
``2 * 97`` at lmax = 64 and ``2 * 193`` at lmax = 128, and the FFT of such a length is slow.
"""

import argparse
import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")  # shtns may be built with OpenMP

import ducc0
import numpy as np
from machine import cpu_name  # benchmarks/machine.py, beside this script

from usaav_edu.meanfield import harmonics as H

TOL = 1e-10
BATCH = 0.02
"""Seconds: the least length of a batch of calls."""


def load_shtns():
    """The shtns module, or the reason it cannot be used."""
    try:
        import shtns
    except ImportError as exc:
        return None, f"shtns does not import ({exc})"
    shtns.set_verbosity(0)
    return shtns, None


def coefficients(lmax, seed=0):
    """Random coefficients of degree ``<= lmax`` (real at ``m = 0``)."""
    rng = np.random.default_rng(seed)
    nc = H.n_coefficients(lmax)
    a = rng.standard_normal(nc) + 1j * rng.standard_normal(nc)
    a[:lmax + 1] = a[:lmax + 1].real
    return a


def ducc_calls(lmax, ntheta, nphi):
    sht = ducc0.sht
    out = np.empty((1, ntheta, nphi))
    grad = np.empty((2, ntheta, nphi))

    def synthesis(a):
        sht.synthesis_2d(alm=a[None], spin=0, lmax=lmax, geometry="GL", ntheta=ntheta,
                         nphi=nphi, map=out, nthreads=1)
        return out[0]

    def analysis(f):
        return sht.analysis_2d(map=np.ascontiguousarray(f)[None], spin=0, lmax=lmax,
                               geometry="GL", nthreads=1)[0]

    def gradient(a):
        sht.synthesis_2d_deriv1(alm=a[None], lmax=lmax, geometry="GL", ntheta=ntheta, nphi=nphi,
                                map=grad, nthreads=1)
        return grad

    return synthesis, analysis, gradient


def shtns_calls(shtns, lmax, ntheta, nphi):
    s = shtns.sht(lmax, lmax, norm=shtns.sht_orthonormal, nthreads=1)
    s.set_grid(ntheta, nphi, shtns.sht_gauss | shtns.SHT_PHI_CONTIGUOUS, 0.0)
    ducc_index = [m * (2 * lmax + 3 - m) // 2 + (ell - m)
                  for m in range(lmax + 1) for ell in range(m, lmax + 1)]
    shtns_index = [s.idx(ell, m) for m in range(lmax + 1) for ell in range(m, lmax + 1)]
    if shtns_index != ducc_index or s.nlm != H.n_coefficients(lmax):
        raise RuntimeError(f"lmax = {lmax}: shtns orders its coefficients differently from ducc0")
    if tuple(s.spat_shape) != (ntheta, nphi):
        raise RuntimeError(f"shtns maps have shape {s.spat_shape}, expected {(ntheta, nphi)}")
    return s.synth, s.analys, lambda a: np.stack(s.synth_grad(a))


def agreement(lmax, ducc, other):
    """The largest relative differences of synthesis, analysis and gradient."""
    a = coefficients(lmax)
    f_d = ducc[0](a).copy()
    f_s = other[0](a)
    g_d = ducc[2](a).copy()
    g_s = other[2](a)
    c_d, c_s = ducc[1](f_d), other[1](f_d)
    return (float(np.max(np.abs(f_s - f_d)) / np.max(np.abs(f_d))),
            float(np.max(np.abs(c_s - c_d)) / np.max(np.abs(c_d))),
            float(np.max(np.abs(g_s - g_d)) / np.max(np.abs(g_d))))


def best_times(jobs, batches):
    """Seconds per call of each job, the best over alternating batches of at least BATCH s."""
    counts = []
    for job in jobs:
        k, took = 1, 0.0
        while True:
            start = time.perf_counter()
            for _ in range(k):
                job()
            took = time.perf_counter() - start
            if took >= BATCH:
                break
            k *= 2
        counts.append(k)
    best = [np.inf] * len(jobs)
    for _ in range(batches):
        for i, (job, k) in enumerate(zip(jobs, counts, strict=True)):
            start = time.perf_counter()
            for _ in range(k):
                job()
            best[i] = min(best[i], (time.perf_counter() - start) / k)
    return best


def table(sizes, nphi_of, shtns, batches, title):
    print(f"\n{title}\n")
    if shtns is None:
        print("| lmax | grid | ducc0 synthesis + analysis | ducc0 gradient |")
        print("|---|---|---|---|")
    else:
        print("| lmax | grid | ducc0 synthesis + analysis | shtns synthesis + analysis "
              "| ducc0 / shtns | ducc0 gradient | shtns gradient | ducc0 / shtns |")
        print("|---|---|---|---|---|---|---|---|")
    worst = 0.0
    for lmax in sizes:
        ntheta, nphi = (3 * lmax) // 2 + 2, nphi_of(lmax)
        a = coefficients(lmax, seed=1)
        f = np.random.default_rng(2).standard_normal((ntheta, nphi))
        libs = [ducc_calls(lmax, ntheta, nphi)]
        if shtns is not None:
            libs.append(shtns_calls(shtns, lmax, ntheta, nphi))
            errors = agreement(lmax, libs[0], libs[1])
            worst = max(worst, *errors)
            if max(errors) > TOL:
                raise RuntimeError(f"lmax = {lmax}, nphi = {nphi}: ducc0 and shtns differ by "
                                   f"{max(errors):.2g} (synthesis, analysis, gradient: "
                                   f"{', '.join(f'{e:.2g}' for e in errors)}); not timed")
        jobs = []
        for synthesis, analysis, gradient in libs:
            jobs.append(lambda s=synthesis, an=analysis, a=a: an(s(a)))
            jobs.append(lambda g=gradient, a=a: g(a))
        analysis_only = [lib[1] for lib in libs]
        for an in analysis_only:
            an(f)  # the first call of a new grid sets up its tables
        t = best_times(jobs, batches)
        grid = f"{ntheta} x {nphi}"
        if shtns is None:
            print(f"| {lmax} | {grid} | {1e3 * t[0]:.3g} ms | {1e3 * t[1]:.3g} ms |")
        else:
            print(f"| {lmax} | {grid} | {1e3 * t[0]:.3g} ms | {1e3 * t[2]:.3g} ms "
                  f"| {t[0] / t[2]:.2f} | {1e3 * t[1]:.3g} ms | {1e3 * t[3]:.3g} ms "
                  f"| {t[1] / t[3]:.2f} |")
    if shtns is not None:
        print(f"\n(largest relative difference between the two, synthesis, analysis and gradient "
              f"over these grids: {worst:.2g}, below {TOL:g})")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="lmax = 32 and 64, fewer batches")
    args = parser.parse_args(argv)
    sizes = (32, 64) if args.quick else (32, 64, 128)
    batches = 5 if args.quick else 9
    shtns, why = load_shtns()
    versions = f"ducc0 {ducc0.__version__}"
    if shtns is not None:
        versions += f", shtns {getattr(shtns, '__version__', '(version unknown)')}"
    print(f"sphere_transforms.py, {time.strftime('%Y-%m-%d')}, {cpu_name()}, "
          f"{os.cpu_count()} CPUs; {versions}; one thread")
    if shtns is None:
        print(f"{why}: ducc0 alone")
    table(sizes, lambda lmax: 3 * lmax + 2, shtns, batches,
          "the solver's fine grid (3 lmax / 2 + 2 rings, 3 lmax + 2 longitudes), per call, best "
          f"of {batches} batches:")
    table(sizes, lambda lmax: ducc0.fft.good_size(3 * lmax + 2), shtns, batches,
          "the same with nphi = ducc0.fft.good_size(3 lmax + 2) (small prime factors):")


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        print("sphere_transforms.py: interrupted", file=sys.stderr)
        sys.exit(130)
