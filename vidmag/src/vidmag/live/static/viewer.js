// The vidmag live page: polls /api/status about four times a second, draws the region's colour signal on a
// canvas, shows the pulse and the counters, and posts parameter changes to /api/params. Plain JavaScript,
// served by the viewer itself: no framework, nothing fetched from elsewhere.
"use strict";

const POLL_MS = 250;
// Slider ranges of the parameters everyone adjusts; any other numeric parameter gets a number box only.
const SLIDERS = {
  alpha: { min: 0, max: 200, step: 1, label: "alpha (amplification)" },
  fl: { min: 0.05, max: 10, step: 0.05, label: "fl (low cut-off, Hz)" },
  fh: { min: 0.05, max: 15, step: 0.05, label: "fh (high cut-off, Hz)" },
};
// A control the user touched in the last moments keeps the user's value, not the one polled.
const HOLD_MS = 1500;

const $ = (id) => document.getElementById(id);
const controls = {};  // name -> {range, number, touched}

function fmt(value, digits) {
  return typeof value === "number" && Number.isFinite(value) ? value.toFixed(digits) : "–";
}

function setText(id, text) {
  const el = $(id);
  if (el.textContent !== text) el.textContent = text;
}

function message(text, isError) {
  const el = $("params-message");
  el.textContent = text;
  el.classList.toggle("error", Boolean(isError));
}

async function postParam(name, value) {
  const number = Number(value);
  if (value === "" || !Number.isFinite(number)) {
    message(`${name}: not a number`, true);
    return;
  }
  try {
    const response = await fetch("/api/params", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ [name]: number }),
    });
    const body = await response.json();
    if (response.ok) message(`${name} = ${number} sent`, false);
    else message(body.error || `${name}: refused (${response.status})`, true);
  } catch (error) {
    message(`${name}: could not reach the viewer (${error})`, true);
  }
}

function addControl(name) {
  const form = $("params");
  const slider = SLIDERS[name];
  const label = document.createElement("label");
  label.textContent = slider ? slider.label : name;
  label.htmlFor = `${name}-number`;
  const range = document.createElement("input");
  if (slider) {
    range.type = "range";
    range.id = name;
    range.name = name;
    range.min = slider.min;
    range.max = slider.max;
    range.step = slider.step;
  } else {
    range.hidden = true;
  }
  const number = document.createElement("input");
  number.type = "number";
  number.id = `${name}-number`;
  number.step = "any";
  const control = { range, number, touched: 0 };
  range.addEventListener("input", () => { number.value = range.value; control.touched = Date.now(); });
  range.addEventListener("change", () => { control.touched = Date.now(); postParam(name, range.value); });
  number.addEventListener("input", () => { control.touched = Date.now(); });
  number.addEventListener("change", () => {
    control.touched = Date.now();
    if (slider) range.value = number.value;
    postParam(name, number.value);
  });
  form.append(label, slider ? range : document.createElement("span"), number);
  controls[name] = control;
}

function updateControls(params) {
  const names = Object.keys(SLIDERS).concat(
    Object.keys(params).filter((n) => typeof params[n] === "number" && !(n in SLIDERS)));
  for (const name of names) {
    if (!(name in controls)) addControl(name);
    const control = controls[name];
    const value = params[name];
    const held = Date.now() - control.touched < HOLD_MS
      || document.activeElement === control.range || document.activeElement === control.number;
    if (typeof value === "number" && !held) {
      // six significant digits: a preset's 41.666666666666664 reads as 41.6667
      const shown = String(Number(value.toPrecision(6)));
      if (control.number.value !== shown) control.number.value = shown;
      if (!control.range.hidden) control.range.value = shown;
    }
  }
}

function drawSignal(signal, fs) {
  const canvas = $("signal");
  // Draw at the canvas's displayed size so the line stays sharp.
  const width = Math.max(1, Math.round(canvas.clientWidth * (window.devicePixelRatio || 1)));
  const height = Math.max(1, Math.round(canvas.clientHeight * (window.devicePixelRatio || 1)));
  if (canvas.width !== width) canvas.width = width;
  if (canvas.height !== height) canvas.height = height;
  const ctx = canvas.getContext("2d");
  ctx.clearRect(0, 0, width, height);
  const style = getComputedStyle(document.body);
  ctx.strokeStyle = style.getPropertyValue("--muted") || "#888";
  ctx.globalAlpha = 0.35;
  ctx.beginPath();
  ctx.moveTo(0, height / 2);
  ctx.lineTo(width, height / 2);
  ctx.stroke();
  ctx.globalAlpha = 1;
  const values = (signal || []).filter((v) => typeof v === "number" && Number.isFinite(v));
  setText("signal-seconds", fs > 0 && values.length ? fmt(values.length / fs, 1) : "–");
  if (values.length < 2) return;
  // a loop, not Math.min(...values): spreading a long signal into arguments overflows the stack
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of values) { if (v < lo) lo = v; if (v > hi) hi = v; }
  if (hi - lo < 1e-12) { lo -= 1; hi += 1; }
  const pad = 0.08 * height;
  ctx.strokeStyle = style.getPropertyValue("--accent") || "#c0392b";
  ctx.lineWidth = 2 * (window.devicePixelRatio || 1);
  ctx.beginPath();
  values.forEach((v, i) => {
    const x = (i / (values.length - 1)) * width;
    const y = pad + (1 - (v - lo) / (hi - lo)) * (height - 2 * pad);
    if (i === 0) ctx.moveTo(x, y); else ctx.lineTo(x, y);
  });
  ctx.stroke();
}

function show(status) {
  setText("frames", status.frames == null ? "–" : String(status.frames));
  setText("fps", fmt(status.fps, 1));
  setText("latency", fmt(status.latency_ms, 1));
  setText("latency-p99", fmt(status.latency_p99_ms, 1));
  setText("dropped", status.dropped == null ? "–" : String(status.dropped));
  setText("bpm", fmt(status.bpm, 0));
  setText("quality", fmt(status.quality_db, 1));
  setText("roi", describeRoi(status.roi));
  drawSignal(status.signal, status.signal_fs);
  updateControls(status.params || {});
}

// The region the pulse is read from: where it comes from, where it is, and for a face the tracker's state.
function describeRoi(roi) {
  if (!roi) return "–";
  const rect = Array.isArray(roi.roi) ? ` ${roi.roi[2]}×${roi.roi[3]} at ${roi.roi[0]},${roi.roi[1]}` : "";
  if (roi.source === "face") {
    const state = roi.state === "tracking" ? "" : ` (${roi.state === "lost" ? "face lost" : "no face yet"})`;
    return `${roi.region || "face"} of the face${rect}${state}`;
  }
  return `${roi.source || "?"}${rect}`;
}

const STREAMS = ["original", "magnified"];

// A stream ends when the viewer stops (the picture stays, frozen); when the status answers again, the
// viewer is back, perhaps a new one, so the streams are opened afresh.
function reopenStreams() {
  for (const id of STREAMS) {
    const img = $(id);
    img.src = `/stream/${id}.mjpg?t=${Date.now()}`;
  }
}

let lost = false;

async function poll() {
  const connection = $("connection");
  try {
    const response = await fetch("/api/status", { cache: "no-store" });
    if (!response.ok) throw new Error(`status ${response.status}`);
    show(await response.json());
    if (lost) reopenStreams();
    lost = false;
    connection.textContent = "live";
    connection.classList.remove("lost");
  } catch (error) {
    lost = true;
    connection.textContent = `viewer not reachable (${error.message || error})`;
    connection.classList.add("lost");
  } finally {
    setTimeout(poll, POLL_MS);
  }
}

// Enter in a number box commits it (a change event); the form itself is never submitted.
$("params").addEventListener("submit", (event) => event.preventDefault());
updateControls({});
poll();
