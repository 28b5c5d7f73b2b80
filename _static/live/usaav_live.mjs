/**
 * usaav_live: the particle system of usaav_edu, re-simulated in the reader's browser.
 *
 * The live views of the book run this module in the page, with no kernel and no network.  It
 * implements the formulas of the package (usaav_edu.models, usaav_edu.dynamics) for six models
 * and is held to the package by tests/test_live_module.py, which runs it in node on cases that
 * usaav_edu generates: to 1e-10 at equal steps, and to 1e-8 against the accurate solution at the
 * default step.
 *
 * Tokens x_i on the sphere S^{d-1} (d = 2 or 3) with labels xi_i move by
 *
 *     dy_i/dt = P_{y_i}( (1/N_i) sum_j b_ij phi'(<y_i, y_j>) y_j ),   P_y v = v - <v, y> y,
 *
 * in the gauge coordinates y_i = G(xi_i) x_i, where
 *
 *   "usa"            G = I, b = 1, N_i = n, phi'(s) = e^{beta s};
 *   "sa"             as "usa" with N_i = sum_j phi'(<y_i, y_j>);
 *   "rope"           G(xi) = exp(xi Omega): the plane (e1, e2) turns by omegas[0] xi (d = 2, 3);
 *   "distance_bias"  G = I, b_ij = exp(-lam |xi_i - xi_j|), phi'(s) = e^{beta s};
 *   "cosine_bias"    G = I, b_ij = cos(omega (xi_i - xi_j)), phi'(s) = 1 (the linear profile;
 *                    profile: "exp" gives e^{beta s});
 *   "prefix_gauge"   G(k) = gaugeFrames[k] for the prompt id k = xi_i.
 *
 * Gauges only change coordinates (Theorem 4.1 of the book): RoPE and prefix gauges run plain
 * USA on y and return x_i = G(xi_i)^T y_i.  Time: the classical RK4 method with the frame times
 * t_k = k tMax / (nFrames - 1); between two frames ceil(gap / dt) equal steps (the largest step
 * <= dt that lands on every frame, as usaav_edu.simulate), each followed by the retraction
 * y_i <- y_i / |y_i|.
 *
 * Exports: simulate(opts), createSimulation(opts), defaultDt(opts), bookDt(opts),
 * uniformSphere(n, d, seed), MODELS.
 */

export const MODELS = Object.freeze(
  ["usa", "sa", "rope", "distance_bias", "cosine_bias", "prefix_gauge"]);

const LABELLED = { rope: "position", distance_bias: "position", cosine_bias: "position",
  prefix_gauge: "prompt" };

/** Pair interactions (n^2 per velocity, 4 per step) above which a run is refused. */
export const MAX_PAIR_EVALUATIONS = 4e10;

/** Pair interactions per second assumed for the estimate in the refusal. */
const PAIRS_PER_SECOND = 2e7;

const UNIT_TOL = 1e-9;

/** RK4 is stable for h * rate up to about 2.785 on the negative real axis. */
const RK4_STABILITY = 2.785;

function fail(message) {
  throw new Error(`usaav_live: ${message}`);
}

function shown(value) {
  try {
    const text = JSON.stringify(value);
    if (text === undefined) return String(value);
    return text.length > 60 ? `${text.slice(0, 57)}...` : text;
  } catch (err) {
    return String(value);
  }
}

function finiteNumber(name, value, { min = -Infinity, strict = false } = {}) {
  if (typeof value !== "number" || !Number.isFinite(value)) {
    fail(`${name} must be a finite number, got ${shown(value)}`);
  }
  if (strict ? !(value > min) : !(value >= min)) {
    fail(`${name} must be ${strict ? ">" : ">="} ${min}, got ${value}`);
  }
  return value;
}

function integer(name, value, min) {
  if (!Number.isInteger(value) || value < min) {
    fail(`${name} must be an integer >= ${min}, got ${shown(value)}`);
  }
  return value;
}

function readPoints(x0, d) {
  if (!Array.isArray(x0) || x0.length < 1) {
    fail(`x0 must be a non-empty array of n arrays of ${d} numbers, got ${shown(x0)}`);
  }
  const n = x0.length;
  const y = new Float64Array(n * d);
  for (let i = 0; i < n; i++) {
    const p = x0[i];
    if (!Array.isArray(p) && !ArrayBuffer.isView(p)) {
      fail(`x0[${i}] must be an array of ${d} numbers, got ${shown(p)}`);
    }
    if (p.length !== d) fail(`x0[${i}] must have ${d} numbers (d = ${d}), got ${p.length}`);
    let norm2 = 0;
    for (let a = 0; a < d; a++) {
      const v = p[a];
      if (typeof v !== "number" || !Number.isFinite(v)) {
        fail(`x0[${i}][${a}] must be a finite number, got ${shown(v)}`);
      }
      y[i * d + a] = v;
      norm2 += v * v;
    }
    if (Math.abs(Math.sqrt(norm2) - 1) > UNIT_TOL) {
      fail(`x0[${i}] must be a unit vector (|x| = 1 within ${UNIT_TOL}), has |x| = `
        + `${Math.sqrt(norm2)}`);
    }
  }
  return { n, y };
}

function readLabels(model, xi, n, frames) {
  if (!(model in LABELLED)) {
    if (xi !== null && xi !== undefined) fail(`xi must be null for model "${model}"`);
    return null;
  }
  if (!Array.isArray(xi) && !ArrayBuffer.isView(xi)) {
    fail(`xi must be an array of ${n} labels for model "${model}", got ${shown(xi)}`);
  }
  if (xi.length !== n) fail(`xi must have one label per token (${n}), got ${xi.length}`);
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const v = xi[i];
    if (typeof v !== "number" || !Number.isFinite(v)) {
      fail(`xi[${i}] must be a finite number, got ${shown(v)}`);
    }
    if (LABELLED[model] === "prompt" && !(Number.isInteger(v) && v >= 0 && v < frames)) {
      fail(`xi[${i}] must be a prompt id, an integer from 0 to ${frames - 1}, got ${v}`);
    }
    out[i] = v;
  }
  return out;
}

function readFrames(frames, d) {
  if (!Array.isArray(frames) || frames.length < 1) {
    fail(`gaugeFrames must be a non-empty array of ${d} x ${d} orthogonal matrices, got `
      + `${shown(frames)}`);
  }
  const k = frames.length;
  const out = new Float64Array(k * d * d);
  for (let f = 0; f < k; f++) {
    const m = frames[f];
    if (!Array.isArray(m) || m.length !== d || m.some((row) => !Array.isArray(row)
        || row.length !== d || row.some((v) => typeof v !== "number" || !Number.isFinite(v)))) {
      fail(`gaugeFrames[${f}] must be a ${d} x ${d} array of finite numbers, got ${shown(m)}`);
    }
    for (let a = 0; a < d; a++) {
      for (let b = 0; b < d; b++) {
        out[(f * d + a) * d + b] = m[a][b];
        let dot = 0;
        for (let c = 0; c < d; c++) dot += m[c][a] * m[c][b];
        if (Math.abs(dot - (a === b ? 1 : 0)) > UNIT_TOL) {
          fail(`gaugeFrames[${f}] must be orthogonal (F^T F = I within ${UNIT_TOL}); entry `
            + `(${a}, ${b}) of F^T F is ${dot}`);
        }
      }
    }
  }
  return { k, out };
}

/**
 * The options checked and in the form the integrator uses; every bad value throws an Error
 * that names the option and what it must be.
 */
function readOptions(opts) {
  if (opts === null || typeof opts !== "object") fail(`opts must be an object, got ${shown(opts)}`);
  const known = new Set(["model", "d", "beta", "x0", "xi", "tMax", "dt", "nFrames", "omegas",
    "lam", "omega", "gaugeFrames", "profile"]);
  for (const key of Object.keys(opts)) {
    if (!known.has(key)) fail(`unknown option ${shown(key)}; the options are ${[...known].join(", ")}`);
  }
  const model = opts.model;
  if (!MODELS.includes(model)) fail(`model must be one of ${MODELS.join(", ")}, got ${shown(model)}`);
  const d = opts.d;
  if (d !== 2 && d !== 3) fail(`d must be 2 or 3, got ${shown(d)}`);
  const profile = opts.profile ?? (model === "cosine_bias" ? "linear" : "exp");
  if (profile !== "exp" && profile !== "linear") {
    fail(`profile must be "exp" or "linear", got ${shown(profile)}`);
  }
  if (profile === "linear" && (model === "sa" || model === "distance_bias")) {
    fail(`model "${model}" has the exponential profile only, got profile "linear"`);
  }
  const beta = finiteNumber("beta", opts.beta ?? 1.0);
  if (profile === "exp" && beta === 0) fail("beta must not be 0 with the exponential profile");
  const { n, y } = readPoints(opts.x0, d);
  const o = { model, d, n, beta, profile, sa: model === "sa", y, gauge: null, bias: null };
  let frameCount = 0;
  let frames = null;
  if (model === "prefix_gauge") {
    const read = readFrames(opts.gaugeFrames, d);
    frameCount = read.k;
    frames = read.out;
  } else if (opts.gaugeFrames !== undefined && opts.gaugeFrames !== null) {
    fail(`gaugeFrames belongs to model "prefix_gauge", not "${model}"`);
  }
  o.xi = readLabels(model, opts.xi, n, frameCount);
  if (model === "rope") {
    const omegas = opts.omegas;
    if (!Array.isArray(omegas) || omegas.length !== 1) {
      fail(`omegas must be an array of one frequency (one rotation plane for d = ${d}), got `
        + `${shown(omegas)}`);
    }
    o.gauge = ropeMatrices(o.xi, d, finiteNumber("omegas[0]", omegas[0]));
  } else if (model === "prefix_gauge") {
    o.gauge = new Float64Array(n * d * d);
    for (let i = 0; i < n; i++) {
      o.gauge.set(frames.subarray(o.xi[i] * d * d, (o.xi[i] + 1) * d * d), i * d * d);
    }
  }
  if (model === "distance_bias") {
    const lam = finiteNumber("lam", opts.lam ?? 1.0, { min: 0 });
    o.bias = biasMatrix(o.xi, (u) => Math.exp(-lam * Math.abs(u)));
  } else if (model === "cosine_bias") {
    const omega = finiteNumber("omega", opts.omega ?? 1.0);
    o.bias = biasMatrix(o.xi, (u) => Math.cos(omega * u));
  }
  o.tMax = finiteNumber("tMax", opts.tMax, { min: 0, strict: true });
  o.nFrames = integer("nFrames", opts.nFrames ?? 101, 2);
  return o;
}

/** The step of the run: dt (or the default), the steps per frame, checked for RK4's stability
 * and for the time the run would take. */
function withStep(o, dt) {
  o.dt = dt === undefined || dt === null ? defaultStep(o, 0.01, 0.05)
    : finiteNumber("dt", dt, { min: 0, strict: true });
  o.perFrame = stepsPerFrame(o.tMax, o.nFrames, o.dt);
  o.h = o.tMax / (o.nFrames - 1) / o.perFrame;
  const bound = RK4_STABILITY / (2 * lipschitz(o));
  if (o.h > bound) {
    fail(`dt = ${o.dt} is beyond RK4's stability bound for model "${o.model}", beta = ${o.beta}: `
      + `the step used, ${o.h}, exceeds 2.785 / Lambda = ${bound.toPrecision(3)}, with Lambda = `
      + "2 L the bound of the velocity field's rates; lower dt (or leave it out for the default)");
  }
  const n = o.n;
  const pairs = 4 * n * n * o.perFrame * (o.nFrames - 1);
  if (pairs > MAX_PAIR_EVALUATIONS) {
    fail(`the run needs ${o.perFrame * (o.nFrames - 1)} RK4 steps of ${n}^2 pairs `
      + `(${pairs.toExponential(1)} pair evaluations, about ${Math.round(pairs / PAIRS_PER_SECOND)}`
      + ` s); at most ${MAX_PAIR_EVALUATIONS.toExponential(0)} are run: lower n, tMax or raise dt`);
  }
  return o;
}

function ropeMatrices(xi, d, omega) {
  const n = xi.length;
  const g = new Float64Array(n * d * d);
  for (let i = 0; i < n; i++) {
    const base = i * d * d;
    for (let a = 0; a < d; a++) g[base + a * d + a] = 1;
    const c = Math.cos(omega * xi[i]);
    const s = Math.sin(omega * xi[i]);
    g[base] = c;
    g[base + 1] = -s;
    g[base + d] = s;
    g[base + d + 1] = c;
  }
  return g;
}

function biasMatrix(xi, fn) {
  const n = xi.length;
  const b = new Float64Array(n * n);
  for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) b[i * n + j] = fn(xi[i] - xi[j]);
  return b;
}

/** The package's Lipschitz estimate L of the velocity (usaav_edu.particles.solver). */
function lipschitz(o) {
  const b = Math.abs(o.beta);
  if (o.sa) return 1 + b;
  if (o.profile === "linear") return 1;
  return (1 + b) * Math.exp(b);
}

function defaultStep(o, cap, scale) {
  return Math.min(cap, scale / lipschitz(o));
}

/**
 * The default step of simulate: min(0.01, 0.05 / L), with L the package's Lipschitz estimate
 * ((1 + |beta|) e^|beta| for USA and the biases, 1 + |beta| for SA, 1 for the linear profile).
 * Small enough that a run agrees with the accurate solution to about 1e-8 (tested).
 */
export function defaultDt(opts) {
  return defaultStep(readOptions(opts), 0.01, 0.05);
}

/**
 * The package's default RK4 step, min(0.05, 0.25 / L) (usaav_edu.particles.solver.default_dt):
 * the step of the book's precomputed runs, which the live views use to play in real time.
 */
export function bookDt(opts) {
  return defaultStep(readOptions(opts), 0.05, 0.25);
}

/** Steps per frame: the least count whose equal steps are <= dt (as usaav_edu.simulate). */
export function stepsPerFrame(tMax, nFrames, dt) {
  const gap = tMax / (nFrames - 1);
  return Math.max(1, Math.ceil(Math.min(gap / dt * (1 - 1e-12), 1e300)));
}

/** The velocity of the gauge coordinates y (n d values) into out (formula in the header). */
function velocity(o, y, out) {
  const { n, d, beta, bias } = o;
  const linear = o.profile === "linear";
  for (let i = 0; i < n; i++) {
    const yi = i * d;
    let g0 = 0;
    let g1 = 0;
    let g2 = 0;
    let norm = 0;
    for (let j = 0; j < n; j++) {
      const yj = j * d;
      let w;
      if (d === 3) {
        const s = y[yi] * y[yj] + y[yi + 1] * y[yj + 1] + y[yi + 2] * y[yj + 2];
        w = linear ? 1 : Math.exp(beta * s);
        if (bias !== null) w *= bias[i * n + j];
        g0 += w * y[yj];
        g1 += w * y[yj + 1];
        g2 += w * y[yj + 2];
      } else {
        const s = y[yi] * y[yj] + y[yi + 1] * y[yj + 1];
        w = linear ? 1 : Math.exp(beta * s);
        if (bias !== null) w *= bias[i * n + j];
        g0 += w * y[yj];
        g1 += w * y[yj + 1];
      }
      norm += w;
    }
    const scale = o.sa ? norm : n;
    g0 /= scale;
    g1 /= scale;
    g2 /= scale;
    if (d === 3) {
      const r = g0 * y[yi] + g1 * y[yi + 1] + g2 * y[yi + 2];
      out[yi] = g0 - r * y[yi];
      out[yi + 1] = g1 - r * y[yi + 1];
      out[yi + 2] = g2 - r * y[yi + 2];
    } else {
      const r = g0 * y[yi] + g1 * y[yi + 1];
      out[yi] = g0 - r * y[yi];
      out[yi + 1] = g1 - r * y[yi + 1];
    }
  }
}

function rk4Step(o, y, h, w) {
  const m = y.length;
  velocity(o, y, w.k1);
  for (let a = 0; a < m; a++) w.tmp[a] = y[a] + 0.5 * h * w.k1[a];
  velocity(o, w.tmp, w.k2);
  for (let a = 0; a < m; a++) w.tmp[a] = y[a] + 0.5 * h * w.k2[a];
  velocity(o, w.tmp, w.k3);
  for (let a = 0; a < m; a++) w.tmp[a] = y[a] + h * w.k3[a];
  velocity(o, w.tmp, w.k4);
  for (let a = 0; a < m; a++) {
    y[a] += (h / 6) * (w.k1[a] + 2 * w.k2[a] + 2 * w.k3[a] + w.k4[a]);
  }
  const d = o.d;
  for (let i = 0; i < m; i += d) {
    let r = 0;
    for (let a = 0; a < d; a++) r += y[i + a] * y[i + a];
    r = Math.sqrt(r);
    if (!(r > 0) || !Number.isFinite(r)) {
      fail(`the state is not finite after a step of ${h} (token ${i / d}): the step is too large `
        + "for this beta; lower dt");
    }
    for (let a = 0; a < d; a++) y[i + a] /= r;
  }
}

/** G(xi_i) v_i (inverse: G(xi_i)^T v_i) for every token, from src into a new array. */
function applyGauge(o, src, inverse) {
  if (o.gauge === null) return Float64Array.from(src);
  const { n, d, gauge } = o;
  const out = new Float64Array(n * d);
  for (let i = 0; i < n; i++) {
    const base = i * d * d;
    for (let a = 0; a < d; a++) {
      let s = 0;
      for (let b = 0; b < d; b++) {
        s += (inverse ? gauge[base + b * d + a] : gauge[base + a * d + b]) * src[i * d + b];
      }
      out[i * d + a] = s;
    }
  }
  return out;
}

function toArrays(flat, n, d) {
  const out = new Array(n);
  for (let i = 0; i < n; i++) out[i] = Array.from(flat.subarray(i * d, (i + 1) * d));
  return out;
}

/**
 * A run advanced frame by frame (the live views play it while it is computed).
 * sim.frame is the index of the frame reached, sim.t its time, sim.contents() its tokens as an
 * array of n arrays of d numbers, sim.flat() the same as one Float64Array; sim.next() advances
 * to the next frame (false once the last frame is reached).
 */
export function createSimulation(opts) {
  const o = withStep(readOptions(opts), opts.dt);
  const y = applyGauge(o, o.y, false);
  const m = y.length;
  const work = { k1: new Float64Array(m), k2: new Float64Array(m), k3: new Float64Array(m),
    k4: new Float64Array(m), tmp: new Float64Array(m) };
  const gap = o.tMax / (o.nFrames - 1);
  const sim = {
    n: o.n, d: o.d, h: o.h, stepsPerFrame: o.perFrame, nFrames: o.nFrames, frame: 0, t: 0,
    flat: () => applyGauge(o, y, true),
    contents: () => toArrays(applyGauge(o, y, true), o.n, o.d),
    next() {
      if (sim.frame >= o.nFrames - 1) return false;
      for (let k = 0; k < o.perFrame; k++) rk4Step(o, y, o.h, work);
      sim.frame += 1;
      sim.t = sim.frame * gap;
      return true;
    },
  };
  return sim;
}

/**
 * Run the model from x0 to tMax.  Returns {t, x, dt}: the nFrames frame times, the contents at
 * each frame (nFrames arrays of n arrays of d numbers; x[0] is x0) and the step used.
 */
export function simulate(opts) {
  const sim = createSimulation(opts);
  const t = [0];
  const x = [sim.contents()];
  while (sim.next()) {
    t.push(sim.t);
    x.push(sim.contents());
  }
  return { t, x, dt: sim.h };
}

/** A small seeded generator (mulberry32): uniform numbers in [0, 1). */
function uniform01(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * n points drawn uniformly on S^{d-1} from the seed (normalized Gaussian vectors, Box-Muller).
 * Another stream than NumPy's: a live view's seed is its own.
 */
export function uniformSphere(n, d, seed) {
  integer("n", n, 1);
  if (d !== 2 && d !== 3) fail(`d must be 2 or 3, got ${shown(d)}`);
  integer("seed", seed, 0);
  const next = uniform01(seed);
  const out = [];
  while (out.length < n) {
    const p = [];
    for (let a = 0; a < d; a++) {
      const u = 1 - next();
      p.push(Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * next()));
    }
    const r = Math.hypot(...p);
    if (r > 1e-12) out.push(p.map((v) => v / r));
  }
  return out;
}
