/**
 * The live views of the book: every element of class "usaav-live" becomes a sphere whose tokens
 * the reader re-simulates in the page, with sliders, play and pause, and a new seed.
 *
 * The element carries its settings as JSON in data-usaav-live (written by
 * usaav_edu.widgets.LiveView); the numbers come from usaav_live.mjs (createSimulation,
 * uniformSphere, bookDt), which the page holds inline beside this file; three.js (the global
 * THREE of its classic build) draws the scene as the package's pythreejs views do: a translucent
 * sphere with its equator and two meridians, one small lit ball per token, the same colours.
 *
 * Each animation frame runs RK4 steps for at most STEP_BUDGET_MS, then draws: the picture keeps
 * its frame rate and the simulated time runs slower where the step is small (large beta).
 * element.usaavLive exposes the state to the page's tests: t, values, positions(), fps(),
 * play(), pause(), set(name, value).
 */

const STEP_BUDGET_MS = 12;
const SPHERE_COLOR = 0x9ec5e8;
const CIRCLE_COLOR = 0x8a8a8a;

function el(tag, attrs = {}, text = null) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== null) node.textContent = text;
  return node;
}

function formatValue(spec, value) {
  return spec.step >= 1 ? String(Math.round(value)) : value.toFixed(2);
}

function labelsOf(cfg, values, n) {
  if (cfg.labels === "position") {
    return Array.from({ length: n }, (_, i) => (2 * Math.PI * i) / n);
  }
  if (cfg.labels === "prompt") {
    const k = Math.round(values.prompts);
    return Array.from({ length: n }, (_, i) => i % k);
  }
  return null;
}

function colorsOf(cfg, values, n) {
  if (cfg.labels === "position") {
    const pal = cfg.colors.cyclic;
    return Array.from({ length: n }, (_, i) => pal[Math.floor((i * pal.length) / n)]);
  }
  if (cfg.labels === "prompt") {
    const pal = cfg.colors.prompts;
    const k = Math.round(values.prompts);
    return Array.from({ length: n }, (_, i) => pal[(i % k) % pal.length]);
  }
  return Array.from({ length: n }, () => cfg.colors.plain);
}

function optionsOf(cfg, values, x0, live) {
  const model = values.bias ?? cfg.model;
  const n = x0.length;
  const opts = { model, d: cfg.d, beta: values.beta, x0, xi: labelsOf(cfg, values, n),
    tMax: cfg.tMax };
  if (model === "rope") opts.omegas = [values.omega];
  if (model === "cosine_bias") opts.omega = values.omega;
  if (model === "distance_bias") opts.lam = values.lam;
  if (model === "prefix_gauge") opts.gaugeFrames = cfg.frames[String(Math.round(values.prompts))];
  const h = live.bookDt({ ...opts, nFrames: 2 });
  opts.nFrames = Math.max(2, Math.round(cfg.tMax / h) + 1); // one RK4 step per frame
  opts.dt = h;
  return opts;
}

function circle(THREE, axis) {
  const pts = [];
  for (let k = 0; k <= 128; k++) {
    const s = (2 * Math.PI * k) / 128;
    const p = [0, 0, 0];
    const [a, b] = [0, 1, 2].filter((c) => c !== axis);
    p[a] = Math.cos(s);
    p[b] = Math.sin(s);
    pts.push(new THREE.Vector3(...p));
  }
  const geometry = new THREE.BufferGeometry().setFromPoints(pts);
  return new THREE.Line(geometry, new THREE.LineBasicMaterial({ color: CIRCLE_COLOR }));
}

/** Whether WebGL runs on the CPU (SwiftShader, llvmpipe): there the view draws without
 * multisampling, which would cost it a third of its frame rate. */
function softwareGL() {
  const gl = document.createElement("canvas").getContext("webgl");
  if (!gl) return true;
  const info = gl.getExtension("WEBGL_debug_renderer_info");
  const name = info ? String(gl.getParameter(info.UNMASKED_RENDERER_WEBGL)) : "";
  const lose = gl.getExtension("WEBGL_lose_context");
  if (lose) lose.loseContext();
  return /swiftshader|llvmpipe|software/i.test(name);
}

function buildScene(THREE, canvasBox, width, height, antialias) {
  const renderer = new THREE.WebGLRenderer({ antialias });
  renderer.setPixelRatio(Math.min(2, window.devicePixelRatio || 1));
  renderer.setSize(width, height);
  renderer.domElement.setAttribute("role", "img");
  canvasBox.appendChild(renderer.domElement);
  const scene = new THREE.Scene();
  scene.background = new THREE.Color(0xffffff);
  const camera = new THREE.PerspectiveCamera(40, width / height, 0.05, 50);
  camera.up.set(0, 0, 1);
  camera.position.set(2.6, 1.5, 2.2);
  camera.lookAt(0, 0, 0);
  const light = new THREE.DirectionalLight(0xffffff, 0.55);
  light.position.set(1, 2, 3);
  camera.add(light);
  scene.add(camera, new THREE.AmbientLight(0xffffff, 0.6));
  scene.add(new THREE.Mesh(new THREE.SphereGeometry(1, 48, 32), new THREE.MeshPhongMaterial({
    color: SPHERE_COLOR, transparent: true, opacity: 0.22, depthWrite: false, shininess: 20 })));
  scene.add(circle(THREE, 2), circle(THREE, 0), circle(THREE, 1));
  return { renderer, scene, camera };
}

/** Drag to turn the camera about the origin (the pythreejs views' orbit controls). */
function orbit(canvas, camera, redraw) {
  let last = null;
  canvas.addEventListener("pointerdown", (ev) => {
    last = [ev.clientX, ev.clientY];
    canvas.setPointerCapture(ev.pointerId);
  });
  canvas.addEventListener("pointerup", () => { last = null; });
  canvas.addEventListener("pointermove", (ev) => {
    if (last === null) return;
    const dx = ev.clientX - last[0];
    const dy = ev.clientY - last[1];
    last = [ev.clientX, ev.clientY];
    const r = camera.position.length();
    let phi = Math.atan2(camera.position.y, camera.position.x) - dx * 0.01;
    let theta = Math.acos(camera.position.z / r) - dy * 0.01;
    theta = Math.min(Math.PI - 0.05, Math.max(0.05, theta));
    camera.position.set(r * Math.sin(theta) * Math.cos(phi), r * Math.sin(theta) * Math.sin(phi),
      r * Math.cos(theta));
    camera.lookAt(0, 0, 0);
    redraw();
  });
}

function setup(root, live, THREE) {
  const cfg = JSON.parse(root.dataset.usaavLive);
  const values = { ...cfg.values };
  let seed = cfg.seed;
  root.textContent = "";
  const title = el("p", { class: "usaav-live-title" }, cfg.title);
  const canvasBox = el("div", { class: "usaav-live-canvas" });
  const controls = el("div", { class: "usaav-live-controls" });
  const status = el("p", { class: "usaav-live-status", "aria-live": "off" });
  root.append(title, canvasBox, controls, status);

  const { renderer, scene, camera } = buildScene(THREE, canvasBox, cfg.width, cfg.height,
    !SOFTWARE_GL);
  renderer.domElement.setAttribute("aria-label", `${cfg.title}: the tokens on the sphere`);
  let mesh = null;
  let sim = null;
  let playing = false;
  let frames = 0;
  let since = performance.now();
  let rate = 0;

  function place() {
    const x = sim.flat();
    const d = sim.d;
    const m = new THREE.Matrix4();
    for (let i = 0; i < sim.n; i++) {
      m.makeTranslation(x[i * d], x[i * d + 1], d === 3 ? x[i * d + 2] : 0);
      mesh.setMatrixAt(i, m);
    }
    mesh.instanceMatrix.needsUpdate = true;
  }

  function inUse(spec) { // the parameter of the bias not chosen moves nothing
    if (!cfg.biases) return true;
    if (spec.name === "omega") return values.bias === "cosine_bias";
    if (spec.name === "lam") return values.bias === "distance_bias";
    return true;
  }

  function describe() {
    const parts = cfg.sliders.filter(inUse)
      .map((s) => `${s.label} = ${formatValue(s, values[s.name])}`);
    status.textContent = `t = ${sim.t.toFixed(2)} of ${cfg.tMax}; ${parts.join(", ")}; seed ${seed}`
      + `; RK4 step ${sim.h.toPrecision(2)}`;
  }

  function restart() {
    const n = Math.round(values.n);
    const x0 = live.uniformSphere(n, cfg.d, seed);
    try {
      sim = live.createSimulation(optionsOf(cfg, values, x0, live));
    } catch (err) { // a run refused (too long, a step beyond stability): say why, keep the last
      if (sim === null) throw err;
      pause();
      status.textContent = `Not run: ${err.message}`;
      return;
    }
    if (mesh !== null) {
      scene.remove(mesh);
      mesh.geometry.dispose();
    }
    const radius = Math.min(0.06, Math.max(0.02, 0.4 / Math.sqrt(n)));
    mesh = new THREE.InstancedMesh(new THREE.SphereGeometry(radius, 10, 8),
      new THREE.MeshLambertMaterial({ color: 0xffffff }), n);
    const colors = colorsOf(cfg, values, n);
    for (let i = 0; i < n; i++) mesh.setColorAt(i, new THREE.Color(colors[i]));
    mesh.instanceColor.needsUpdate = true;
    scene.add(mesh);
    place();
    describe();
    renderer.render(scene, camera);
  }

  for (const spec of cfg.sliders) {
    const id = `${cfg.id}-${spec.name}`;
    const row = el("div", { class: "usaav-live-row" });
    const label = el("label", { for: id }, spec.label);
    const input = el("input", { type: "range", id, min: spec.min, max: spec.max, step: spec.step,
      value: values[spec.name], "aria-label": spec.description });
    const out = el("output", { for: id, "aria-live": "polite" }, formatValue(spec, values[spec.name]));
    input.addEventListener("input", () => {
      values[spec.name] = Number(input.value);
      out.textContent = formatValue(spec, values[spec.name]);
      restart();
    });
    row.append(label, input, out);
    controls.append(row);
  }
  /** Only the parameter of the bias chosen moves anything: the other slider is disabled. */
  function relevant() {
    for (const spec of cfg.sliders) {
      controls.querySelector(`input[id="${cfg.id}-${spec.name}"]`).disabled = !inUse(spec);
    }
  }
  if (cfg.biases) {
    const id = `${cfg.id}-bias`;
    const row = el("div", { class: "usaav-live-row" });
    const select = el("select", { id, "aria-label": "the bias b of the weights" });
    for (const [name, text] of cfg.biases) select.append(el("option", { value: name }, text));
    select.value = values.bias;
    select.addEventListener("change", () => {
      values.bias = select.value;
      relevant();
      restart();
    });
    row.append(el("label", { for: id }, "bias"), select);
    controls.append(row);
  }
  const buttons = el("div", { class: "usaav-live-row" });
  const play = el("button", { type: "button", "aria-pressed": "false",
    "aria-label": "play or pause the simulation" }, "▶ play");
  const again = el("button", { type: "button", "aria-label": "start again from new random tokens" },
    "new seed");
  play.addEventListener("click", () => (playing ? pause() : start()));
  again.addEventListener("click", () => {
    seed += 1;
    restart();
  });
  buttons.append(play, again);
  controls.append(buttons);

  function start() {
    if (sim.frame >= sim.nFrames - 1) restart();
    playing = true;
    play.textContent = "❚❚ pause";
    play.setAttribute("aria-pressed", "true");
    frames = 0;
    since = performance.now();
  }
  function pause() {
    playing = false;
    play.textContent = "▶ play";
    play.setAttribute("aria-pressed", "false");
  }

  function tick(now) {
    if (playing) {
      const until = performance.now() + STEP_BUDGET_MS;
      let moved = false;
      while (performance.now() < until && sim.next()) moved = true;
      if (moved) place();
      if (sim.frame >= sim.nFrames - 1) pause();
      describe();
      renderer.render(scene, camera);
      frames += 1;
      if (now - since > 1000) {
        rate = (1000 * frames) / (now - since);
        frames = 0;
        since = now;
      }
    }
    requestAnimationFrame(tick);
  }

  orbit(renderer.domElement, camera, () => renderer.render(scene, camera));
  relevant();
  restart();
  requestAnimationFrame(tick);
  root.usaavLive = {
    get t() { return sim.t; },
    get values() { return { ...values, seed }; },
    positions: () => Array.from(sim.flat()),
    fps: () => rate,
    play: start,
    pause,
  };
  root.classList.add("usaav-live-ready");
}

let SOFTWARE_GL = false;

export function startLiveViews(live) {
  const THREE = globalThis.THREE;
  SOFTWARE_GL = softwareGL();
  for (const root of document.querySelectorAll(".usaav-live")) {
    if (THREE === undefined) {
      root.querySelector(".usaav-live-fallback").textContent = "This live view needs three.js, "
        + "which the page could not load.";
      continue;
    }
    try {
      setup(root, live, THREE);
    } catch (err) {
      root.textContent = `The live view could not start: ${err.message}`;
      throw err;
    }
  }
}
