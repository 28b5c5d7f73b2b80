"""The live views' frame rate in chromium, and the browser integrator's speed beside the package's.

    python benchmarks/live_fps.py            (n = 32, 128, 256; about 40 s)
    python benchmarks/live_fps.py --quick    (n = 256 only)

Needs ``make widget-js`` (three.js in node_modules) and Debian's chromium (``make chromium``).

1. **Frames per second.**  A page with one live view of USA (beta = 1, d = 3) of n tokens, built
   as the book builds its pages (``tools/live_pages.py``: RequireJS loaded first, three.js's
   classic build, the two modules inline), is opened from ``file://`` in headless chromium
   (software WebGL, as on a machine without a GPU) at 1280 x 900.  The view plays for 3 s
   after a warm-up of 1 s; the rate is the view's own count of frames drawn per second
   (``usaavLive.fps()``).  Beside it, in the same browser, the same view drawn without
   simulating (the reference: what drawing alone costs), and the simulated time reached.
2. **RK4 steps per second** at the same n, from the same tokens: the browser integrator in node
   (``_static/live/usaav_live.mjs``, ``simulate`` with 200 equal steps) and the package
   (``usaav_edu.simulate`` with ``method="rk4"``, direct summation, after a warm-up run that
   compiles its kernels), as a markdown table with the machine.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine import cpu_name  # benchmarks/machine.py, beside this script

import usaav_edu as ue

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tools import live_pages  # noqa: E402

THREE = ROOT / "node_modules" / "three" / "build" / "three.min.js"
REQUIRE = ROOT / "node_modules" / "requirejs" / "require.js"
CHROMIUM = "/usr/bin/chromium"
STEPS = 200

NODE_BENCH = """
import { pathToFileURL } from "node:url";
const live = await import(pathToFileURL(process.argv[2]).href);
const { x0, steps } = JSON.parse(process.argv[3]);
const opts = { model: "usa", d: 3, beta: 1, x0, tMax: steps * 0.01, nFrames: 2, dt: 0.01 };
live.simulate({ ...opts, tMax: 0.1 });  // warm-up: the JIT compiles the loop
const t0 = performance.now();
live.simulate(opts);
console.log(JSON.stringify({ seconds: (performance.now() - t0) / 1000 }));
"""


def page(folder: Path, n: int) -> Path:
    view = ue.widgets.LiveView("usa", d=3, n=n, beta=1.0, t_max=2000.0, sliders=["beta"])
    shutil.copy(THREE, folder / "three.min.js")
    shutil.copy(REQUIRE, folder / "require.js")
    scripts = live_pages.scripts(
        "three.min.js", (live_pages.LIVE / "usaav_live.mjs").read_text(encoding="utf-8"),
        (live_pages.LIVE / "usaav_live_view.mjs").read_text(encoding="utf-8"))
    path = folder / f"live_{n}.html"
    path.write_text('<!doctype html><html><head><meta charset="utf-8"><script src="require.js">'
                    f"</script></head><body>{view._repr_html_()}{scripts}</body></html>",
                    encoding="utf-8")
    return path


def frame_rates(browser, path: Path) -> tuple[float, float, float]:
    """(frames per second playing, frames per second drawing only, simulated time reached)."""
    pg = browser.new_page(viewport={"width": 1280, "height": 900})
    pg.goto(path.as_uri())
    pg.wait_for_selector(".usaav-live-ready", state="attached")
    live = "document.querySelector('.usaav-live').usaavLive"
    pg.evaluate(f"{live}.play()")
    pg.wait_for_timeout(4000)
    playing, t = pg.evaluate(f"{live}.fps()"), pg.evaluate(f"{live}.t")
    pg.evaluate(f"{live}.pause()")
    drawn = pg.evaluate("""async () => {
      const canvas = document.querySelector('.usaav-live canvas');
      const start = performance.now(); let frames = 0;
      const box = canvas.getBoundingClientRect();
      while (performance.now() - start < 3000) {   // turn the camera: each move draws once
        canvas.dispatchEvent(new PointerEvent('pointerdown', {clientX: box.x + 10,
          clientY: box.y + 10, pointerId: 1}));
        canvas.dispatchEvent(new PointerEvent('pointermove', {clientX: box.x + 12,
          clientY: box.y + 10, pointerId: 1}));
        canvas.dispatchEvent(new PointerEvent('pointerup', {pointerId: 1}));
        await new Promise((r) => requestAnimationFrame(r)); frames += 1;
      }
      return 1000 * frames / (performance.now() - start);
    }""")
    pg.close()
    return playing, drawn, t


def node_steps(n: int, x0) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "bench.mjs"
        script.write_text(NODE_BENCH, encoding="utf-8")
        out = subprocess.run(["node", str(script), str(live_pages.LIVE / "usaav_live.mjs"),
                              json.dumps({"x0": x0.tolist(), "steps": STEPS})],
                             capture_output=True, text=True, check=True)
    return STEPS / json.loads(out.stdout)["seconds"]


def package_steps(n: int, x0) -> float:
    model = ue.models.usa(1.0)
    ue.simulate(model, x0, t_max=0.1, dt=0.01, n_frames=2)   # compile
    t0 = time.perf_counter()
    ue.simulate(model, x0, t_max=STEPS * 0.01, dt=0.01, n_frames=2)
    return STEPS / (time.perf_counter() - t0)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="n = 256 only")
    args = ap.parse_args(argv)
    for need in (THREE, REQUIRE):
        if not need.is_file():
            ap.error(f"{need} is missing: run make widget-js")
    if not os.access(CHROMIUM, os.X_OK):
        ap.error(f"{CHROMIUM} is missing: run make chromium")
    sizes = [256] if args.quick else [32, 128, 256]
    from playwright.sync_api import sync_playwright

    print(f"machine: {cpu_name()}, {os.cpu_count()} cores; chromium with software WebGL")
    print("| n | frames/s playing | frames/s drawing only | simulated t after 4 s | "
          "RK4 steps/s, browser integrator (node) | RK4 steps/s, usaav_edu |")
    print("|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                     args=["--headless", "--no-sandbox",
                                           "--enable-unsafe-swiftshader"])
        for n in sizes:
            playing, drawn, t = frame_rates(browser, page(Path(tmp), n))
            x0 = ue.sphere.uniform(n, 3, seed=0)
            print(f"| {n} | {playing:.1f} | {drawn:.1f} | {t:.1f} | {node_steps(n, x0):,.0f} | "
                  f"{package_steps(n, x0):,.0f} |", flush=True)
        browser.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
