// gradviz widget: draws a Graph snapshot at the positions, and with the node text, computed in
// Python, then replays the backward trace step by step, entirely in the browser (no kernel round
// trip per step). Every piece of user text goes through textContent / setAttribute, never innerHTML.
//
// One hand-written module, no build step: the HTML export embeds exactly this file. Its units,
// one concern each, in the order they appear:
//   helpers          DOM builders, text cut, edge geometry, lookups over a graph, a grid of boxes
//   Controls         toolbar, keys, play timer
//   Predictor        predict, then reveal: asks for a step's gradient before it is shown
//   Scene            SVG nodes, edges and groups, built once per graph; collapse and expand
//   StepPainter      a step's classes and .grad text; the gradients labelled beside the edges, where free
//   chainRulePanel   a pure function from (step, graph, selection) to the panel's content
//   PanZoom          the camera: drag, wheel scroll, ctrl+wheel zoom, fit, follow the current node
//   GraphView        the owner: wires the model to the units; render() returns its cleanup

/**
 * Trait values, as gradviz/widget/widget.py syncs them (and the HTML export ships them).
 *
 * @typedef {{shape: number[], dtype: string, preview: string}} Summary
 * @typedef {{name: string, value: Summary | null, freed: boolean}} Saved
 * @typedef {{input: string, symbol: string, math: object, local: object | null, note: string | null,
 *   torch: string, broadcast: boolean}} Formula   one input's gradient as a JSON MathML tree
 *   (gradviz/snapshot/math.py): `math` is ∂L/∂x = ..., `local` the local derivative alone
 * @typedef {{id: string, kind: "output"|"function"|"accumulate"|"leaf"|"constant", name: string,
 *   label: string, shape: number[] | null, dtype: string | null, value: Summary | null,
 *   grad: Summary | null, saved: Saved[], formula: number | null, module: string | null,
 *   note: string | null, code: string | null, order: number}} GraphNode
 * @typedef {{source: string, target: string, slot: number, kind: "data"|"variable"|"output"}} GraphEdge
 * @typedef {{version: number, source: string, root: string, nodes: GraphNode[],
 *   edges: GraphEdge[], formulas: Formula[][]}} Graph             trait `graph`; a node's
 *   `formula` indexes `formulas`
 * @typedef {{id: string, kind: "module"|"band", label: string, members: string[],
 *   parent: string | null, box: number[]}} Group                   parents before children
 * @typedef {{text: string, cls: "gv-title"|"gv-sub"|"gv-value"|"gv-grad"|"gv-saved",
 *   title?: string, max?: number}} TextLine
 *   A line of a node, cut in Python to fit its box (render/node_text.py): `title` is the full
 *   text when it was cut; `max` (gv-grad only) the characters the box holds for `grad: ...`.
 * @typedef {{engine: string, width: number, height: number, nodes: Object<string, number[]>,
 *   edges: (number[] | null)[], groups: Group[], text: Object<string, TextLine[]>,
 *   line_height: number}} Layout                                  trait `graph_layout`
 *   nodes: id -> [center x, center y, width, height]; edges: per graph edge, dot's spline or null.
 * @typedef {{index: number, node: string, name: string, grad_outputs: (Summary|null)[],
 *   grad_inputs: (Summary|null)[], targets: (string|null)[],
 *   contributions: {from: string|null, value: Summary|null}[][], leaf: string|null,
 *   grad_before: Summary|null, grad_after: Summary|null,
 *   numbers: ({local: Summary|null, summed: boolean}|null)[]}} TraceStep
 *   trait `trace` is TraceStep[]; `numbers`: per input of an elementwise formula, the local
 *   derivative's value and whether broadcasting summed the gradient
 * @typedef {{graph: Graph, graph_layout: Layout, trace: TraceStep[], step_index: number,
 *   show_saved: boolean, speed: number, height: number, note: string,
 *   collapse: "auto"|boolean, predict: boolean, grad_updates: object}} Traits
 *   grad_updates: leaves whose .grad changed since, laid over graph, layout and trace (decodingModel);
 *   step_index: steps done, 0..trace.length; speed: steps per second while playing; height: px
 *   of the drawing area at most; collapse: start with the layout's groups collapsed (auto: when
 *   the graph has more than COLLAPSE_ABOVE nodes); predict: Next asks the learner for the
 *   step's gradient before showing it (Predictor).
 * @typedef {{get: (name: string) => any, set: (name: string, value: any) => void,
 *   on: (event: string, callback: Function) => void, off: (event: string, callback: Function) => void,
 *   save_changes: () => void}} Model                              anywidget's model, or createModel's
 */

const SVG_NS = "http://www.w3.org/2000/svg";
const SPEEDS = [0.5, 1, 2, 4, 8];
const READABLE_ZOOM = 0.4; // below this, node text is hidden (.gv-far) and too small to read
const TEXT_PX = 12; // node text, edge labels and group headers, in graph units (gradviz.css)
const READ_ZOOM = 11 / TEXT_PX; // the least zoom a graph opens at: its text at least 11 CSS px
const CHAR_PX = 0.6 * TEXT_PX; // a monospace character's advance (render/node_text.py's CHAR_WIDTH)
const COLLAPSE_ABOVE = 150; // collapse="auto" draws module groups as boxes above this many nodes
const EDGE_LABEL_CHARS = 24;
const BASELINE = 0.75; // a text line's baseline, as a fraction of the line height from its top
const HEADER_PX = 16; // an expanded group's header tab, inside the band the layout keeps on its frame's top
const GRID_PX = 160; // cell size of the grid that finds what an edge label would cover
const LABEL_SPOTS = [0.5, 0.35, 0.65, 0.2, 0.8, 0.1, 0.9]; // where along its edge a label may go, in order

// ================================================================ helpers

/** Create an HTML element; attributes via setAttribute, text via textContent. */
function h(tag, attrs = {}, text = null) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  if (text !== null) node.textContent = String(text);
  return node;
}

/** Create an SVG element the same way. */
function s(tag, attrs = {}, text = null) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  if (text !== null) node.textContent = String(text);
  return node;
}

/** Button icons: SVG paths on a 16x16 grid (font glyphs for media keys are often missing). */
const ICONS = {
  reset: "M2 3h2v10H2z M9 3 4 8 9 13z M14 3 9 8 14 13z",
  prev: "M11 3 4 8 11 13z M12 3h2v10h-2z",
  play: "M4 2 13 8 4 14z",
  pause: "M3 3h3.5v10H3z M9.5 3H13v10H9.5z",
  next: "M2 3h2v10H2z M5 3 12 8 5 13z",
  end: "M2 3 7 8 2 13z M7 3 12 8 7 13z M12 3h2v10h-2z",
  zoomIn: "M7 3h2v4h4v2H9v4H7V9H3V7h4z",
  zoomOut: "M3 7h10v2H3z",
  fit: "M2 2h5v2H4v3H2z M9 2h5v5h-2V4H9z M12 9h2v5H9v-2h3z M2 9h2v3h3v2H2z",
};

function iconSvg(path) {
  const icon = s("svg", { viewBox: "0 0 16 16", width: 14, height: 14, "aria-hidden": "true", focusable: "false" });
  icon.append(s("path", { d: path }));
  return icon;
}

/** Cut text to `max` characters with an ellipsis (the same cut Python makes of node text); a preview's own
 * "…" is not doubled: "[1., 2., …" rather than "[1., 2., ……" or "…, …". */
function fit(text, max) {
  const str = String(text);
  if (str.length <= max) return str;
  const cut = str.slice(0, Math.max(1, max - 1)).replace(/[, ]+$/, "");
  return cut.endsWith("\u2026") ? cut : cut + "\u2026";
}

/** "(2, 3)" for a tensor's shape; empty for a 0-d tensor (a plain number needs no shape). */
function shapeText(shape) {
  return shape && shape.length ? `(${shape.join(", ")})` : "";
}

/** @param {Summary | null} summary */
function preview(summary) {
  return summary ? summary.preview : "None";
}

/** What a node's `data-name` hook carries: the grad_fn name, or the tensor's label. */
function hookName(node) {
  return node.kind === "function" || node.kind === "accumulate" ? node.name : node.label || node.name;
}

const LOOKUPS = new WeakMap();

/**
 * Lookups over a graph, made once per graph object (graphs are replaced, never changed):
 * nodes by id, the indices of the edges touching each node, and each AccumulateGrad's leaf.
 * @param {Graph} graph
 * @returns {{nodes: Map<string, GraphNode>, edgesAt: Map<string, number[]>, leafOf: Map<string, GraphNode>}}
 */
function lookups(graph) {
  let found = LOOKUPS.get(graph);
  if (found) return found;
  const nodes = new Map(graph.nodes.map((node) => [node.id, node]));
  const edgesAt = new Map();
  graph.edges.forEach((edge, index) => {
    for (const end of [edge.source, edge.target]) {
      if (!edgesAt.has(end)) edgesAt.set(end, []);
      edgesAt.get(end).push(index);
    }
  });
  const leafOf = new Map(graph.edges.filter((edge) => edge.kind === "variable")
    .map((edge) => [edge.target, nodes.get(edge.source)]));
  found = { nodes, edgesAt, leafOf };
  LOOKUPS.set(graph, found);
  return found;
}

/**
 * An edge's curve: a start point and cubic Bezier segments [c1x, c1y, c2x, c2y, x, y], through
 * dot's spline points when there are some, else from the source's bottom to the target's top.
 */
function edgeCurve(points, from, to, slot, slots) {
  if (points && points.length >= 8) {
    const segments = [];
    for (let i = 2; i + 5 < points.length; i += 6) segments.push(points.slice(i, i + 6));
    // dot's spline stops where its arrowhead would start: carry on to the target's top edge.
    const n = points.length;
    const [ex, ey, px, py] = [points[n - 2], points[n - 1], points[n - 4], points[n - 3]];
    const top = to[1] - to[3] / 2;
    const dx = ey > py ? ((ex - px) * (top - ey)) / (ey - py) : Infinity;
    if (top > ey && top - ey < 20 && Math.abs(dx) < 20) {
      segments.push([ex, ey, ex + dx, top, ex + dx, top]); // a straight piece, as a cubic
    }
    return { start: [points[0], points[1]], segments };
  }
  const [x1, y1, , h1] = from;
  const [x2, y2, w2, h2] = to;
  const offset = slots > 1 ? (slot - (slots - 1) / 2) * Math.min(14, w2 / slots) : 0;
  const sy = y1 + h1 / 2;
  const ty = y2 - h2 / 2;
  const bend = Math.max(12, (ty - sy) / 2);
  return { start: [x1, sy], segments: [[x1, sy + bend, x2 + offset, ty - bend, x2 + offset, ty]] };
}

function curvePath(curve) {
  let d = `M${curve.start[0]},${curve.start[1]}`;
  for (const [ax, ay, bx, by, x, y] of curve.segments) d += ` C${ax},${ay} ${bx},${by} ${x},${y}`;
  return d;
}

/** The point a `fraction` (0 to 1) along the curve's parameter (where an edge's label may go):
 * pure arithmetic, so labelling a step never forces the browser to lay out the page
 * (getTotalLength would). */
function curvePoint(curve, fraction) {
  const u = curve.segments.length * fraction;
  const index = Math.min(Math.floor(u), curve.segments.length - 1);
  const t = u - index;
  const [x0, y0] = index ? curve.segments[index - 1].slice(4) : curve.start;
  const [ax, ay, bx, by, x3, y3] = curve.segments[index];
  const w = [(1 - t) ** 3, 3 * (1 - t) ** 2 * t, 3 * (1 - t) * t ** 2, t ** 3];
  return { x: w[0] * x0 + w[1] * ax + w[2] * bx + w[3] * x3, y: w[0] * y0 + w[1] * ay + w[2] * by + w[3] * y3 };
}

/**
 * Boxes `[left, top, right, bottom]` in a grid of `GRID_PX` cells, so asking what a small box
 * would cover looks at the few boxes near it, on a graph of any size.
 */
class BoxGrid {
  /** @param {number[][]} boxes */
  constructor(boxes) {
    this.cells = new Map();
    for (const box of boxes) this.eachCell(box, (key) => {
      if (!this.cells.has(key)) this.cells.set(key, []);
      this.cells.get(key).push(box);
    });
  }

  eachCell([left, top, right, bottom], visit) {
    for (let i = Math.floor(left / GRID_PX); i <= Math.floor(right / GRID_PX); i++) {
      for (let j = Math.floor(top / GRID_PX); j <= Math.floor(bottom / GRID_PX); j++) visit(`${i},${j}`);
    }
  }

  /** Whether `box` meets any box of the grid or of `extra`. */
  hits(box, extra = []) {
    const meets = (other) => box[0] < other[2] && other[0] < box[2] && box[1] < other[3] && other[1] < box[3];
    if (extra.some(meets)) return true;
    let found = false;
    this.eachCell(box, (key) => { found = found || (this.cells.get(key) || []).some(meets); });
    return found;
  }
}

/** A group's title size in graph units: big enough to read when the whole model is in view
 * (node text is hidden then), at most 1/`tall` of the box's height and `wide` x its width per character. */
function titleSize(group, tall, wide) {
  const [, , width, height] = group.box;
  return Math.max(11, Math.min(height / tall, (wide * width) / (group.label.length + 4)));
}

// ================================================================ controls

/** What each key does; the toolbar's buttons carry the same names as `data-action`. */
const KEY_ACTIONS = { ArrowRight: "next", ArrowLeft: "prev", Home: "reset", End: "end", " ": "play",
  "+": "zoom-in", "=": "zoom-in", "-": "zoom-out", "0": "fit" };

/**
 * The toolbar (step buttons, status, speed and saved-tensor options, zoom buttons), the note
 * above the drawing, the keys, and the play timer. It decides nothing about the graph: buttons
 * and keys become `act(action)`, option changes `setOption(trait, value)`.
 */
class Controls {
  /**
   * @param {(action: string) => void} act
   * @param {(name: "speed"|"show_saved", value: number|boolean) => void} setOption
   */
  constructor(act, setOption) {
    this.timer = null;
    this.tick = null;
    const bar = h("div", { class: "gv-toolbar", role: "toolbar", "aria-label": "Backward pass controls" });
    const button = (action, icon, label, key) => {
      const b = h("button", { type: "button", class: "gv-button", "data-action": action,
        "aria-label": label, title: `${label} (${key})` });
      b.append(iconSvg(icon));
      bar.append(b);
      return b;
    };
    button("reset", ICONS.reset, "Reset to before the backward pass", "Home");
    button("prev", ICONS.prev, "Previous step", "\u2190");
    this.playButton = button("play", ICONS.play, "Play", "Space");
    button("next", ICONS.next, "Next step", "\u2192");
    button("end", ICONS.end, "Run to the end", "End");
    this.status = h("span", { class: "gv-status", role: "status", "aria-live": "polite" });
    bar.append(this.status);
    const speedLabel = h("label", { class: "gv-option" }, "speed ");
    this.speedSelect = h("select", { "data-option": "speed", "aria-label": "Playback speed (steps per second)" });
    for (const speed of SPEEDS) this.speedSelect.append(h("option", { value: speed }, `${speed}\u00D7`));
    speedLabel.append(this.speedSelect);
    const savedLabel = h("label", { class: "gv-option" });
    this.savedBox = h("input", { type: "checkbox", "data-option": "show_saved", "aria-label": "Show saved tensors" });
    savedLabel.append(this.savedBox, document.createTextNode(" saved tensors"));
    bar.append(speedLabel, savedLabel);
    button("zoom-out", ICONS.zoomOut, "Zoom out", "-");
    button("zoom-in", ICONS.zoomIn, "Zoom in", "+");
    button("fit", ICONS.fit, "Fit the graph", "0");
    this.toolbar = bar;
    this.noteBox = h("div", { class: "gv-note", role: "note" });

    bar.addEventListener("click", (event) => {
      const target = event.target instanceof Element ? event.target.closest("[data-action]") : null;
      if (target) act(target.getAttribute("data-action"));
    });
    this.speedSelect.addEventListener("change", () => {
      const speed = Number(this.speedSelect.value);
      setOption("speed", speed);
      if (this.timer) this.play(speed, this.tick); // carry on at the new speed
    });
    this.savedBox.addEventListener("change", () => setOption("show_saved", this.savedBox.checked));
  }

  /** The action a key press asks for, or null (keys typed into an option are the option's). */
  static keyAction(event) {
    if (event.target instanceof HTMLSelectElement || event.target instanceof HTMLInputElement) return null;
    const action = KEY_ACTIONS[event.key];
    if (!action || event.altKey || event.ctrlKey || event.metaKey) return null;
    if (action === "play" && event.target instanceof HTMLButtonElement) return null; // the button handles Space
    return action;
  }

  get playing() {
    return this.timer !== null;
  }

  /** Call `tick` `speed` times a second until it returns false (or `pause`). */
  play(speed, tick) {
    if (this.timer) clearInterval(this.timer);
    this.tick = tick;
    this.timer = setInterval(() => { if (!tick()) this.pause(); }, 1000 / (speed || 1));
    this.showPlaying();
  }

  pause() {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.showPlaying();
  }

  showPlaying() {
    const playing = this.playing;
    this.playButton.replaceChildren(iconSvg(playing ? ICONS.pause : ICONS.play));
    this.playButton.setAttribute("aria-label", playing ? "Pause" : "Play");
    this.playButton.setAttribute("aria-pressed", String(playing));
  }

  /** @param {{speed: number, showSaved: boolean, note: string}} options */
  showOptions({ speed, showSaved, note }) {
    this.speedSelect.value = String(speed);
    this.savedBox.checked = showSaved;
    this.noteBox.textContent = note;
    this.noteBox.hidden = !note;
  }

  showStatus(shown, count) {
    this.status.textContent = count ? `Step ${shown} of ${count}` : "No backward steps";
  }
}

// ================================================================ predict, then reveal

const NUMBER = String.raw`-?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?`;
const NUMBERS = new RegExp(`(${NUMBER})(?:\\s*/\\s*(${NUMBER}))?|(-?)(inf|nan)`, "gi");

/** The numbers in a text, in order: a learner's answer ("0.5", "[1, -2]", "1/3") or a preview. */
export function numbersIn(text) {
  const found = [];
  for (const match of String(text).matchAll(NUMBERS)) {
    if (match[4]) found.push(match[4].toLowerCase() === "nan" ? NaN : match[3] ? -Infinity : Infinity);
    else found.push(match[2] === undefined ? Number(match[1]) : Number(match[1]) / Number(match[2]));
  }
  return found;
}

/** Right when every number is within 0.5% (at least 0.005) of the value: two decimals are enough. */
function sameNumbers(mine, theirs) {
  return mine.length === theirs.length && mine.every((value, i) => Object.is(value, theirs[i]) ||
    Math.abs(value - theirs[i]) <= 0.005 * Math.max(1, Math.abs(theirs[i])));
}

/** A local derivative recovered as sent / arriving from 4-decimal previews: 4 significant digits. */
function numberText(value) {
  return Number.isFinite(value) ? String(Number(value.toPrecision(4))) : String(value);
}

/**
 * What to ask before a step is shown, from the trace alone: a leaf's .grad after its
 * AccumulateGrad, or the gradient a node sends to its first input that takes one; with the
 * answer and why, in this step's numbers. Null when there is nothing whole to ask (a preview
 * cut short with "…").
 * @param {TraceStep} entry
 * @param {Graph} graph
 * @returns {{prompt: string, given: string, answer: Summary, why: string} | null}
 */
export function predictQuestion(entry, graph) {
  const { nodes, leafOf } = lookups(graph);
  const node = nodes.get(entry.node);
  const arriving = entry.grad_outputs[0];
  const whole = (summary) => Boolean(summary) && !summary.preview.includes("\u2026");
  if (!whole(arriving)) return null;
  const given = `Arriving gradient: ${preview(arriving)}`;
  if (entry.leaf || (node && node.kind === "accumulate")) {
    const leaf = entry.leaf ? nodes.get(entry.leaf) : leafOf.get(entry.node);
    const name = leaf ? hookName(leaf) : "the leaf";
    if (!whole(entry.grad_after)) return null;
    const why = entry.grad_before
      ? `.grad adds up: ${preview(entry.grad_before)} (before) + ${preview(arriving)} (arriving) = ${preview(entry.grad_after)}`
      : `.grad was None, so it becomes the arriving gradient, ${preview(arriving)}`;
    return { prompt: `${name}.grad after this step`, given, answer: entry.grad_after, why };
  }
  const slot = entry.grad_inputs.findIndex((grad, i) => whole(grad) && entry.targets[i]);
  if (slot < 0) return null;
  const sent = entry.grad_inputs[slot];
  const dest = nodes.get(entry.targets[slot]);
  const leaf = dest && dest.kind === "accumulate" ? leafOf.get(dest.id) : null;
  const name = node ? node.name : entry.name;
  const formulas = nodeFormulas(node, graph);
  const formula = formulas[slot];  // none for a custom Function's node
  // the input as the panel names it: the learner's label, else the formula's letter (never `self`)
  const input = formula && formula.input
    ? symbolsFor(node, graph, formulas).get(formula.input) || formula.symbol : `input ${slot}`;
  const where = leaf ? `${hookName(dest)} of ${hookName(leaf)}` : dest ? hookName(dest) : "its input";
  const [upstream, result] = [numbersIn(arriving.preview), numbersIn(sent.preview)];
  const why = upstream.length === 1 && result.length === 1 && upstream[0] !== 0
    ? `upstream gradient \u00D7 local derivative = ${preview(arriving)} \u00D7 ${numberText(result[0] / upstream[0])} = ${preview(sent)}`
    : `the upstream gradient ${preview(arriving)}, times the local derivative of ${name} with respect to ${input}, gives ${preview(sent)}`;
  return { prompt: `the gradient ${name} sends to ${where}${leaf ? "" : ` (for ${input})`}`, given, answer: sent,
    why: `the chain rule: ${why}` };
}

/**
 * Predict, then reveal (the `predict` option): before a step is shown, a box asks the learner
 * for the gradient it will send (or the .grad it leaves), checks the typed answer against the
 * trace, says right or gives the chain rule's numbers, then reveals the step. All in the
 * browser, so exports and saved notebooks quiz too.
 */
class Predictor {
  /** @param {(index: number) => void} reveal show the state after `index` steps */
  constructor(reveal) {
    this.reveal = reveal;
    this.asked = 0; // the step (1-based) the box is about; 0 when hidden
    this.answered = false;
    this.box = h("div", { class: "gv-predict", "aria-live": "polite" });
    this.box.hidden = true;
  }

  /** Show the question for step `index` (kept if it is already there); false when there is none. */
  ask(index, entry, graph) {
    if (this.asked === index && !this.answered) { this.focus(); return true; }
    const question = predictQuestion(entry, graph);
    if (!question) return false;
    const form = h("form", { class: "gv-predict-form" });
    const input = h("input", { type: "text", class: "gv-predict-input", "data-predict-input": "", autocomplete: "off",
      spellcheck: "false", "aria-label": `Your prediction: ${question.prompt}`, placeholder: "0.5, [1, 2] or 1/3" });
    const check = h("button", { type: "submit", class: "gv-button", "data-predict-action": "check" }, "Check");
    const show = h("button", { type: "button", class: "gv-button", "data-predict-action": "reveal" }, "Show me");
    form.append(h("div", { class: "gv-predict-prompt" }, `Predict step ${index}: ${question.prompt}. ${question.given}`),
      input, check, show);
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.judge(index, input.value, question);
    });
    show.addEventListener("click", () => this.judge(index, null, question));
    this.box.replaceChildren(form);
    this.box.hidden = false;
    this.asked = index;
    this.answered = false;
    this.focus();
    return true;
  }

  focus() {
    const input = this.box.querySelector("input");
    if (input) input.focus({ preventScroll: true });
  }

  /** Say right or wrong (or just the answer, for "Show me"), then reveal the step. */
  judge(index, text, question) {
    const mine = text === null ? null : numbersIn(text);
    let verdict;
    if (mine === null) verdict = h("div", { class: "gv-predict-verdict gv-shown" }, `It is ${preview(question.answer)} \u2014 ${question.why}`);
    else if (!mine.length) { this.box.querySelector("input").setAttribute("aria-invalid", "true"); return; }
    else if (sameNumbers(mine, numbersIn(question.answer.preview))) {
      verdict = h("div", { class: "gv-predict-verdict gv-right" }, `\u2714 Right: ${preview(question.answer)} \u2014 ${question.why}`);
    } else {
      verdict = h("div", { class: "gv-predict-verdict gv-wrong" },
        `\u2718 Not quite: you said ${text.trim()}, it is ${preview(question.answer)} \u2014 ${question.why}`);
    }
    this.box.replaceChildren(h("div", { class: "gv-predict-prompt" }, `Step ${index}: ${question.prompt}`), verdict);
    this.answered = true;
    this.reveal(index);
  }

  /** Keep the box only while it is about what is on screen: its question next, or its verdict now. */
  follow(shown) {
    if (!this.asked || this.asked === (this.answered ? shown : shown + 1)) return;
    this.clear();
  }

  clear() {
    this.asked = 0;
    this.answered = false;
    this.box.hidden = true;
    this.box.replaceChildren();
  }
}

// ================================================================ scene (once per graph)

/**
 * The SVG drawing of one graph at its layout: frames and headers of expanded groups, edges,
 * collapsed groups' boxes, nodes with the text Python shipped, and an empty layer for edge
 * labels. It keeps the elements a step painter needs, and which groups are collapsed.
 */
class Scene {
  /** @param {SVGGElement} viewport the group the scene draws into (the camera moves it) */
  constructor(viewport) {
    this.viewport = viewport;
    this.collapsed = new Set(); // ids of the layout's groups drawn as one box
    this.groupsKey = null; // which groups `collapsed` was chosen for
  }

  /** Choose the collapsed groups again, by the `collapse` trait, at the next build. */
  resetCollapse() {
    this.groupsKey = null;
  }

  toggle(groupId) {
    if (this.collapsed.has(groupId)) this.collapsed.delete(groupId);
    else this.collapsed.add(groupId);
  }

  /**
   * @param {Graph} graph
   * @param {Layout} layout
   * @param {{showSaved: boolean, collapse: "auto"|boolean}} options
   */
  build(graph, layout, { showSaved, collapse }) {
    this.graph = graph;
    this.layout = layout;
    this.edgesAt = lookups(graph).edgesAt;
    const groups = layout.groups || [];
    const hidden = this.chooseCollapsed(graph, groups, collapse);

    const frameLayer = s("g", { class: "gv-group-frames" });
    const headerLayer = s("g", { class: "gv-group-headers" }); // on top, so nothing covers them
    const nodeLayer = s("g", { class: "gv-nodes" });
    const edgeLayer = s("g", { class: "gv-edges" });
    const boxLayer = s("g", { class: "gv-groups" }); // collapsed groups cover their edges' ends
    this.labelLayer = s("g", { class: "gv-edge-labels" });
    this.nodeEls = new Map();
    this.gradLines = new Map(); // leaf id -> {element, max, shipped}: the line steps rewrite
    this.groupEls = new Map();
    this.edgeEls = [];
    this.edgeCurves = [];
    this.obstacles = []; // [left, top, right, bottom] of every drawn box: what an edge label must not cover

    for (const group of groups) {
      if (hidden.get(group.id)) continue;
      if (this.collapsed.has(group.id)) boxLayer.append(this.drawCollapsedGroup(group));
      else {
        frameLayer.append(s("rect", { class: "gv-frame", "data-group-id": group.id, x: group.box[0], y: group.box[1],
          width: group.box[2], height: group.box[3], rx: 10 }));
        headerLayer.append(this.drawGroupHeader(group));
      }
    }
    const slots = new Map();
    for (const edge of graph.edges) slots.set(edge.target, Math.max(slots.get(edge.target) || 0, edge.slot + 1));
    graph.edges.forEach((edge, index) => {
      const from = layout.nodes[edge.source];
      const to = layout.nodes[edge.target];
      if (!from || !to) return;
      const box = this.boxOfNode.get(edge.source);
      if (box !== undefined && box === this.boxOfNode.get(edge.target)) return; // inside one box
      const curve = edgeCurve(layout.edges[index], from, to, edge.slot, slots.get(edge.target) || 1);
      const path = s("path", { class: `gv-edge gv-edge-${edge.kind}`, "marker-end": "url(#gv-arrow)",
        d: curvePath(curve), "data-source": edge.source, "data-target": edge.target, "data-slot": edge.slot });
      edgeLayer.append(path);
      this.edgeEls[index] = path;
      this.edgeCurves[index] = curve;
    });
    const text = layout.text || {};
    for (const node of graph.nodes) {
      if (!layout.nodes[node.id] || this.boxOfNode.has(node.id)) continue;
      nodeLayer.append(this.drawNode(node, layout.nodes[node.id], text[node.id] || [], layout.line_height, showSaved));
    }
    this.viewport.replaceChildren(frameLayer, edgeLayer, boxLayer, nodeLayer, this.labelLayer, headerLayer);
    this.grid = new BoxGrid(this.obstacles);
  }

  /**
   * Pick the collapsed groups when the groups changed (by `collapse`), and for each node inside
   * a collapsed group the box that stands for it (its outermost collapsed group, in
   * `this.boxOfNode`). Returns which groups are hidden inside a collapsed ancestor.
   */
  chooseCollapsed(graph, groups, collapse) {
    const groupsKey = groups.map((group) => `${group.id}:${group.label}:${group.members.length}`).join(",");
    if (groupsKey !== this.groupsKey) {
      const all = collapse === true || (collapse !== false && graph.nodes.length > COLLAPSE_ABOVE);
      this.collapsed = new Set(all ? groups.map((group) => group.id) : []);
      this.groupsKey = groupsKey;
    }
    const hidden = new Map(); // parents come first, so a parent's answer is always known
    for (const group of groups) {
      const parent = group.parent;
      hidden.set(group.id, parent !== null && parent !== undefined &&
        (this.collapsed.has(parent) || hidden.get(parent)));
    }
    this.boxOfNode = new Map();
    for (const group of groups) {
      if (!this.collapsed.has(group.id) || hidden.get(group.id)) continue;
      for (const member of group.members) this.boxOfNode.set(member, group.id);
    }
    return hidden;
  }

  /**
   * A node: its box, its lines (saved-tensor lines only with `showSaved`; the box shrinks by a
   * line for each one left out), a check mark shown once it has run, and a tooltip with every
   * line in full and the node's note.
   * @param {GraphNode} node
   * @param {number[]} box [center x, center y, width, height]
   * @param {TextLine[]} lines
   */
  drawNode(node, box, lines, lineHeight, showSaved) {
    const [cx, cy, width, height] = box;
    const classes = ["gv-node", `gv-kind-${node.kind}`];
    if (node.saved.some((t) => t.freed)) classes.push("gv-freed");
    if (node.id === this.graph.root) classes.push("gv-root-fn");
    if (node.order > 1) classes.push("gv-higher-order"); // recorded by a backward pass (create_graph=True)
    const g = s("g", { class: classes.join(" "), "data-node-id": node.id, "data-name": hookName(node),
      transform: `translate(${cx - width / 2},${cy - height / 2})` });
    const drawn = showSaved ? lines : lines.filter((line) => line.cls !== "gv-saved");
    const drawnHeight = Math.max(0, height - (lines.length - drawn.length) * lineHeight);
    const top = (height - drawnHeight) / 2;
    const padding = (drawnHeight - drawn.length * lineHeight) / 2;
    g.append(s("rect", { class: "gv-box", x: 0, y: top, width, height: drawnHeight, rx: node.kind === "function" ? 8 : 3 }));
    drawn.forEach((line, i) => {
      const element = s("text", { class: `gv-text ${line.cls}`, x: width / 2,
        y: top + padding + lineHeight * (i + BASELINE) }, line.text);
      if (line.cls === "gv-grad") this.gradLines.set(node.id, { element, max: line.max, shipped: line.text });
      g.append(element);
    });
    const badge = s("g", { class: "gv-check", transform: `translate(${width - 2},${top + 2})`, "aria-hidden": "true" });
    badge.append(s("circle", { r: 6 }), s("path", { d: "M-3 0 -1 2.5 3 -2.5" }));
    g.append(badge);
    const tooltip = drawn.map((line) => line.title ?? line.text);
    if (node.note) tooltip.push(node.note);
    g.append(s("title", {}, tooltip.join("\n")));
    this.nodeEls.set(node.id, g);
    this.obstacles.push([cx - width / 2, cy - height / 2 + top, cx + width / 2, cy - height / 2 + top + drawnHeight]);
    return g;
  }

  /** A collapsed group: one box with the module's name; click (or Enter) expands it. */
  drawCollapsedGroup(group) {
    const [x, y, width, height] = group.box;
    const what = group.kind === "module" ? "module" : "group";
    const g = s("g", { class: "gv-group gv-group-collapsed", "data-group-id": group.id, "data-name": group.label,
      "data-group-kind": group.kind, role: "button", tabindex: "0", "aria-expanded": "false",
      "aria-label": `Expand ${what} ${group.label} (${group.members.length} nodes)` });
    g.append(s("rect", { x, y, width, height, rx: 10 }));
    const size = titleSize(group, 3, 1.6);
    const label = s("text", { class: "gv-group-title", x: x + width / 2, y: y + Math.min(height / 2, size * 2),
      "font-size": size.toFixed(1) }, `\u25B8 ${group.label}`);
    label.append(s("tspan", { x: x + width / 2, dy: "1.2em", class: "gv-group-count" }, `${group.members.length} nodes`));
    g.append(label);
    this.groupEls.set(group.id, g);
    this.obstacles.push([x, y, x + width, y + height]);
    return g;
  }

  /**
   * An expanded group's header: a tab inside the top of its frame (the layout keeps a band free
   * there, so it covers no node and no nested frame), cut to the frame's width; it collapses the
   * group again.
   */
  drawGroupHeader(group) {
    const [x, y, width] = group.box;
    const header = s("g", { class: "gv-group gv-group-expanded gv-group-header", "data-group-id": group.id,
      "data-name": group.label, "data-group-kind": group.kind, role: "button", tabindex: "0", "aria-expanded": "true",
      "aria-label": `Collapse ${group.kind === "module" ? "module" : "group"} ${group.label}` });
    const text = fit(`\u25BE ${group.label}`, Math.max(2, Math.floor((width - 12) / CHAR_PX)));
    const tab = { x: x + 1, y: y + 1, width: Math.min(width - 2, text.length * CHAR_PX + 10), height: HEADER_PX };
    header.append(s("rect", { ...tab, rx: 4 }));
    header.append(s("text", { class: "gv-group-label", x: tab.x + 5, y: tab.y + HEADER_PX * BASELINE + 1 }, text));
    if (text !== `\u25BE ${group.label}`) header.append(s("title", {}, group.label));
    this.obstacles.push([tab.x, tab.y, tab.x + tab.width, tab.y + tab.height]);
    return header;
  }
}

// ================================================================ step painter (classes and text only)

/**
 * Paints the state after some number of steps onto a built scene: nodes run have `gv-done`, the
 * node of the last step `gv-current` (or its collapsed group `gv-group-current`), each leaf's
 * .grad line as that step left it, and the gradients arriving at and sent from the current node
 * on its edges. It touches only what changed since the last paint, so a step costs the same on
 * any size of graph.
 */
class StepPainter {
  /**
   * @param {Scene} scene
   * @param {TraceStep[]} trace
   */
  constructor(scene, trace) {
    this.scene = scene;
    this.trace = trace;
    this.shown = 0; // steps painted
    this.currentGroup = null;
    this.flowEdges = [];
  }

  /** Paint the state after `target` steps; `full` repaints every step (on a fresh scene). */
  paint(target, full = false) {
    const low = full ? 0 : Math.max(0, Math.min(this.shown, target) - 1);
    const high = full ? target : Math.max(this.shown, target);
    for (let i = low; i < high; i++) this.markStep(i, target);
    this.shown = target;
    this.markCurrentGroup(target > 0 ? this.trace[target - 1].node : null);
    this.showFlows(target);
  }

  /** Set the classes of step i's node (and its leaf's .grad line) for the state after `target` steps. */
  markStep(i, target) {
    const step = this.trace[i];
    if (!step) return;
    const nodeEl = this.scene.nodeEls.get(step.node);
    if (nodeEl) {
      nodeEl.classList.toggle("gv-done", i < target - 1);
      nodeEl.classList.toggle("gv-current", i === target - 1);
    }
    if (step.leaf) {
      const leafEl = this.scene.nodeEls.get(step.leaf);
      if (leafEl) leafEl.classList.toggle("gv-accumulating", i === target - 1);
      const line = this.scene.gradLines.get(step.leaf);
      if (!line) return;
      if (target === 0) line.element.textContent = line.shipped; // as Python drew it
      else line.element.textContent = fit(`grad: ${preview(target > i ? step.grad_after : step.grad_before)}`, line.max);
    }
  }

  /** A node run inside a collapsed group lights up that group's box instead. */
  markCurrentGroup(nodeId) {
    const groupId = nodeId === null ? undefined : this.scene.boxOfNode.get(nodeId);
    const element = groupId === undefined ? null : this.scene.groupEls.get(groupId);
    if (this.currentGroup === element) return;
    if (this.currentGroup) this.currentGroup.classList.remove("gv-group-current");
    if (element) element.classList.add("gv-group-current");
    this.currentGroup = element;
  }

  /** Label the edges that carry gradients at the current step: arriving and sent on. */
  showFlows(target) {
    for (const path of this.flowEdges) path.classList.remove("gv-edge-in", "gv-edge-out");
    this.flowEdges = [];
    this.placedLabels = [];
    this.scene.labelLayer.replaceChildren();
    if (target === 0) return;
    const step = this.trace[target - 1];
    const edges = this.scene.graph.edges;
    const used = new Map(); // a tensor used twice by one node sends two pieces along two edges
    for (const index of this.scene.edgesAt.get(step.node) || []) {
      const edge = edges[index];
      if (!this.scene.edgeEls[index]) continue;
      if (edge.source === step.node) {
        const pieces = (step.contributions[0] || []).filter((piece) => piece.from === edge.target);
        const nth = used.get(edge.target) || 0;
        used.set(edge.target, nth + 1);
        const piece = pieces[Math.min(nth, pieces.length - 1)];
        const value = piece ? piece.value : edge.kind === "output" ? step.grad_outputs[0] : null;
        this.flowEdge(index, "gv-edge-in", value);
      } else if (edge.target === step.node && edge.kind !== "variable") {
        const slot = edge.slot;
        if (step.targets[slot] === edge.source) this.flowEdge(index, "gv-edge-out", step.grad_inputs[slot]);
      } else if (step.leaf && edge.source === step.leaf && edge.target === step.node) {
        this.flowEdge(index, "gv-edge-out", step.grad_outputs[0]);
      }
    }
  }

  /** Highlight edge `index` and label it with `value` where the label covers no box and no
   * other label; an edge with no free spot stays highlighted, its value in the panel. */
  flowEdge(index, cls, value) {
    const path = this.scene.edgeEls[index];
    path.classList.add(cls);
    this.flowEdges.push(path);
    if (!value) return;
    const text = `${shapeText(value.shape) ? shapeText(value.shape) + " " : ""}${fit(value.preview, EDGE_LABEL_CHARS)}`;
    const curve = this.scene.edgeCurves[index];
    const target = this.scene.layout.nodes[this.scene.graph.edges[index].target];
    const end = curve.segments[curve.segments.length - 1][4];
    const spot = this.labelSpot(curve, text.length * CHAR_PX, end < target[0] - 1 ? [-1, 1] : [1, -1]);
    if (!spot) return;
    this.placedLabels.push(spot.box);
    this.scene.labelLayer.append(s("text", { class: `gv-edge-label ${cls}`, x: spot.x, y: spot.y,
      "text-anchor": spot.anchor }, text));
  }

  /** The first free spot for a label `width` px wide beside the curve: along it (`LABEL_SPOTS`),
   * on its outer side first (`sides`: 1 right, -1 left; the left of two edges into one node
   * is labelled on its left). */
  labelSpot(curve, width, sides) {
    const ascent = TEXT_PX * 0.8;
    const descent = TEXT_PX * 0.3;
    for (const fraction of LABEL_SPOTS) {
      const point = curvePoint(curve, fraction);
      for (const side of sides) {
        const x = point.x + side * 6;
        const left = side > 0 ? x : x - width;
        const box = [left - 2, point.y - ascent - 2, left + width + 2, point.y + descent + 2];
        if (!this.scene.grid.hits(box, this.placedLabels)) {
          return { x, y: point.y, anchor: side > 0 ? "start" : "end", box };
        }
      }
    }
    return null;
  }
}

// ================================================================ chain-rule panel (pure)

const MATH_NS = "http://www.w3.org/1998/Math/MathML";
// The MathML tags a formula tree may use (gradviz/snapshot/math.py TAGS); anything else is text.
const MATH_TAGS = new Set(["math", "mrow", "mi", "mn", "mo", "mtext", "mfrac", "msup", "msub", "munder", "msqrt"]);
const VALUE_CHARS = 30;

/** Create a MathML element; text via textContent only. */
function m(tag, text = null, ...children) {
  const node = document.createElementNS(MATH_NS, MATH_TAGS.has(tag) ? tag : "mtext");
  if (text !== null) node.textContent = String(text);
  node.append(...children);
  return node;
}

/**
 * A MathML element from a formula's JSON tree (`{tag, text?, children?, var?, sym?}`). A node with
 * `var` is replaced by that variable's value when `values` has it (the step's numbers); a node
 * with `sym` shows the label `symbols` gives it (the learner's own names). Text only, never markup.
 * @param {object} tree
 * @param {{symbols: Map<string, string>, values: Object<string, Summary> | null}} context
 */
function mathFromTree(tree, context) {
  const value = context.values && tree.var ? context.values[tree.var] : undefined;
  if (Array.isArray(value)) return piecesMath(value);
  if (value) return valueMath(value);
  let label = tree.sym !== undefined ? context.symbols.get(tree.sym) : undefined;
  const input = context.symbols.get("self");
  if (label === undefined && tree.sym === "result" && input !== undefined && tree.text) {
    label = tree.text.replace(/\bx\b/g, input); // the output written from the input: σ(x) -> σ(h)
  }
  const node = m(tree.tag, label !== undefined ? label : tree.text !== undefined ? tree.text : null);
  if (label === undefined) for (const child of tree.children || []) node.append(mathFromTree(child, context));
  return node;
}

/**
 * A value in a formula: a number in full, a tensor as a short preview with its shape below; a
 * negative number is bracketed where it follows an operator (`bracket`).
 */
function valueMath(summary, bracket = true) {
  const number = m("mn", fit(summary.preview, VALUE_CHARS));
  number.setAttribute("class", "gv-num");
  if (!summary.shape.length) return bracket && summary.preview.startsWith("-") ? m("mrow", null, m("mo", "("), number, m("mo", ")")) : number;
  return m("msub", null, number, m("mtext", summary.shape.join("\u00d7")));
}

/**
 * The gradients arriving at each output of a node with several (split, unbind), comma-separated;
 * 0 for an output no gradient reached, as the formula counts it.
 */
function piecesMath(summaries) {
  const pieces = [];
  summaries.forEach((summary, i) => {
    if (i) pieces.push(m("mo", ","));
    pieces.push(summary ? valueMath(summary) : m("mn", "0"));
  });
  return m("mrow", null, ...pieces);
}

/** One displayed line of math: <math display="block"> around the pieces. */
function mathLine(...pieces) {
  const math = m("math", null, m("mrow", null, ...pieces));
  math.setAttribute("display", "block");
  return math;
}

/** What the formula's letters are called here: the loss's, the output's and the inputs' labels. */
function symbolsFor(node, graph, formulas) {
  const { nodes, leafOf } = lookups(graph);
  const symbols = new Map();
  const root = nodes.get(graph.root);
  if (root && root.label && root.label !== "output") symbols.set("loss", root.label);
  // a tensor the learner named (not just "tensor(2, 3)"): a leaf, a labelled result, a constant
  const named = (other) => other && !other.label.startsWith("tensor(") && (other.kind === "leaf"
    || other.kind === "output" || (other.kind === "function" && other.label !== other.name)
    || (other.kind === "constant" && other.label !== "constant")) ? other.label : undefined;
  const own = named(node);
  if (own !== undefined) { symbols.set("out", own); symbols.set("result", own); }
  for (const edge of graph.edges) {
    if (edge.target !== node.id || edge.kind !== "data") continue;
    let source = nodes.get(edge.source);
    if (source && source.kind === "accumulate") source = leafOf.get(source.id);
    const label = named(source);
    const formula = formulas[Math.min(edge.slot, formulas.length - 1)];
    if (label !== undefined && formula && !symbols.has(formula.input)) symbols.set(formula.input, label);
  }
  // an input or output without a label keeps its letter from the formula (x, y, z), primed
  // while that letter is some other tensor's label: x′ is not the learner's x
  const taken = new Set(graph.nodes.filter((other) => other.kind !== "function" || other.label !== other.name)
    .map((other) => other.label));
  const fresh = (letter) => { let name = letter; while (taken.has(name)) name += "\u2032"; return name; };
  for (const formula of formulas) {
    if (!symbols.has(formula.input) && taken.has(formula.symbol)) symbols.set(formula.input, fresh(formula.symbol));
  }
  if (own === undefined && taken.has("z")) symbols.set("out", fresh("z"));
  if (node.kind === "accumulate") {
    const leaf = leafOf.get(node.id);
    const name = leaf ? leaf.label : "x";
    symbols.set("variable", name).set("out", name).set("grad_before", `${name}.grad`);
  }
  return symbols;
}

/** The formulas a graph node carries (graph.formulas holds each distinct list once). */
function nodeFormulas(node, graph) {
  return node && node.formula !== null && node.formula !== undefined && graph.formulas
    ? graph.formulas[node.formula] || [] : [];
}

/** The right-hand side of `∂L/∂x = ...` (the tree is [lhs, "=", rhs]). */
function rightSide(formula) {
  return formula.math.children[formula.math.children.length - 1];
}

/**
 * The values a step's formulas read, by variable name: the gradient arriving (`grad`; `grads`,
 * one per output, for a node with several), the node's saved tensors as the graph shows them
 * (`self`, `other`, `result`...), and for AccumulateGrad the .grad the pass started from (0 when
 * it was None).
 */
function stepValues(entry, node) {
  const values = { grads: entry.grad_outputs };
  if (entry.grad_outputs[0]) values.grad = entry.grad_outputs[0];
  for (const saved of node ? node.saved : []) if (saved.value) values[saved.name] = saved.value;
  values.grad_before = entry.grad_before || { shape: [], dtype: "", preview: "0" };
  return values;
}

/**
 * One input's chain rule: the formula in the learner's names, then the same formula with this
 * step's numbers: upstream × local derivative = gradient sent.
 */
function formulaRows(formula, numbers, sent, symbols, values) {
  const rows = [mathLine(mathFromTree(formula.math, { symbols, values: null }))];
  const withValues = { symbols, values };
  const pieces = [m("mo", "=")];
  if (formula.local) {
    const localReadsValues = JSON.stringify(formula.local).includes('"var"');
    const summed = Boolean(numbers && numbers.summed);
    const product = (local) => {
      const factors = [valueMath(values.grad, summed), m("mo", "\u00b7"), local];
      return summed ? [m("munder", null, m("mo", "\u2211"), m("mtext", "broadcast")), m("mo", "("), ...factors, m("mo", ")")] : factors;
    };
    const single = formula.local.tag === "mi" && formula.local.var; // the local derivative is one value: y
    if (!localReadsValues || single) {
      pieces.push(...product(mathFromTree(formula.local, withValues)));
    } else {
      pieces.push(...product(m("mrow", null, m("mo", "("), mathFromTree(formula.local, withValues), m("mo", ")"))));
      if (numbers && numbers.local) pieces.push(m("mo", "="), ...product(valueMath(numbers.local)));
    }
  } else if (numbers && numbers.view) {
    pieces.push(...viewPieces(numbers, values));
  } else {
    pieces.push(mathFromTree(rightSide(formula), withValues));
  }
  pieces.push(m("mo", "="), valueMath(sent, false));
  rows.push(mathLine(...pieces));
  if (numbers && numbers.summed) {
    rows.push(h("div", { class: "gv-hint" }, "Broadcasting stretched this input, so its gradient is summed back to its shape."));
  }
  if (formula.note) rows.push(h("div", { class: "gv-hint" }, noteText(formula.note, symbols)));
  const whole = [["local derivative", numbers && numbers.local], ["sent", sent]]
    .filter(([, value]) => value && value.full);
  if (whole.length || formula.torch) {
    const more = h("details", { class: "gv-more" });
    more.append(h("summary", {}, whole.length ? "all values, and PyTorch's formula" : "PyTorch's formula (derivatives.yaml)"));
    for (const [name, value] of whole) more.append(h("div", { class: "gv-mono" }, `${name} ${shapeText(value.shape)} = ${value.full}`));
    if (formula.torch) more.append(h("div", { class: "gv-mono gv-torch" }, `derivatives.yaml: ${formula.torch}`));
    rows.push(more);
  }
  return rows;
}

/**
 * A formula's note with the learner's names: `{self:x}` marks where the note names a value the
 * formula shows, and becomes the label the formula uses for it (`w`), else its letter (`x`).
 */
function noteText(note, symbols) {
  return note.replace(/\{(\w+):([^{}:]+)\}/g, (_, name, letter) => symbols.get(name) ?? letter);
}

/**
 * CopySlices in numbers: the arriving gradient passes outside the view; inside it, the in-place
 * op's own step (the view's part of the gradient, times the op's local derivative where it has
 * one, equals what the op sends).
 */
function viewPieces(numbers, values) {
  const view = numbers.view;
  const inside = [valueMath(view.arriving)];
  if (numbers.local) inside.push(m("mo", "\u00b7"), valueMath(numbers.local));
  return [valueMath(values.grad, false), m("mtext", ` outside the view; inside it, ${view.op}: `), ...inside,
    m("mo", "="), valueMath(view.sent, false)];
}

/**
 * The chain-rule panel's content for what is on screen: a clicked node's details, else the
 * step just run (gradient arriving, the chain rule per input with the step's numbers, where each
 * gradient goes; or .grad accumulating), else a hint. A pure function: the same arguments always
 * give the same elements, and nothing else is read or changed.
 * @param {{shown: number, count: number, entry: TraceStep | null}} step steps done of `count`,
 *   and the trace entry of the last one (null before the first)
 * @param {Graph} graph
 * @param {string | null} selection the id of a clicked node, shown instead of the step
 * @returns {HTMLElement[]}
 */
export function chainRulePanel(step, graph, selection) {
  const { nodes, leafOf } = lookups(graph);
  if (selection !== null) return nodes.has(selection) ? nodeInfo(nodes.get(selection), graph) : [];
  if (!step.entry) {
    return [h("p", { class: "gv-hint" }, step.count
      ? `Press \u25B6| (or \u2192) to run the backward pass one node at a time: ${step.count} nodes will run, starting at the output.`
      : "There is no backward pass to step for this tensor.")];
  }
  const entry = step.entry;
  const node = nodes.get(entry.node);
  const formulas = nodeFormulas(node, graph);
  const symbols = node ? symbolsFor(node, graph, formulas) : new Map();
  const numbers = entry.numbers || [];
  const values = stepValues(entry, node);
  const content = [h("h4", { class: "gv-panel-title" }, `Step ${step.shown}: ${node ? node.name : entry.name}`)];
  content.push(section("gradient arriving", arrivingRows(entry, nodes)));
  if (entry.leaf || (node && node.kind === "accumulate")) {
    content.push(accumulationSection(entry, nodes, formulas[0], values, symbols));
    return content;
  }
  if (node && node.code) {
    content.push(section("local derivative: the user's backward", [backwardCode(node.code)]));
  } else if (!formulas.length) {
    content.push(section("chain rule", [h("div", { class: "gv-hint" }, `gradviz has no formula for ${entry.name}; the gradients it sent are below.`)]));
  }
  entry.grad_inputs.forEach((grad, slot) => {
    const targetId = entry.targets[slot];
    const dest = targetId ? nodes.get(targetId) : null;
    const formula = formulas[Math.min(slot, formulas.length - 1)];
    const leaf = dest && dest.kind === "accumulate" ? leafOf.get(dest.id) : null;
    const where = dest ? (leaf ? `${hookName(dest)} of ${hookName(leaf)}` : hookName(dest))
      : "nowhere (input does not require grad)";
    const name = formula ? symbols.get(formula.input) || formula.symbol : `input ${slot}`;
    const rows = formula && grad ? formulaRows(formula, numbers[slot], grad, symbols, values) : [];
    rows.push(h("div", { class: "gv-mono gv-route" }, `\u2192 ${where}: ${grad ? preview(grad) : "None"}`));
    content.push(section(`gradient for ${name}`, rows));
  });
  return content;
}

/** A custom autograd.Function's backward, as source text (textContent: never parsed as HTML). */
function backwardCode(code) {
  return h("pre", { class: "gv-code gv-mono" }, code);
}

function section(title, rows) {
  const box = h("div", { class: "gv-section" });
  box.append(h("div", { class: "gv-section-title" }, title), ...rows);
  return box;
}

/**
 * The gradient arriving at a step: one value, or the contributions summed into it; for a node
 * with several outputs (split, unbind), one line per output, named as its formula names them.
 */
function arrivingRows(entry, nodes) {
  const rows = [];
  const several = entry.grad_outputs.length > 1;
  entry.grad_outputs.forEach((grad, i) => {
    const pieces = entry.contributions[i] || [];
    const name = several ? `\u2202L/\u2202z${subscript(i + 1)} = ` : "";
    if (several && !grad) {
      rows.push(h("div", { class: "gv-mono" }, `${name}None (no gradient reached this output: it counts as 0)`));
      return;
    }
    if (pieces.length <= 1) {
      rows.push(h("div", { class: "gv-mono" }, `${name}${shapeText(grad && grad.shape)} ${preview(grad)}`.trim()));
      return;
    }
    if (several) rows.push(h("div", { class: "gv-sum-title" }, name.replace(/ = $/, ":")));
    rows.push(h("div", { class: "gv-sum-title" }, `${pieces.length} contributions summed (the tensor was used ${pieces.length} times):`));
    pieces.forEach((piece, j) => {
      const sender = piece.from ? nodes.get(piece.from) : null;
      rows.push(h("div", { class: "gv-mono" }, `${j ? "+ " : "  "}${preview(piece.value)}   from ${sender ? hookName(sender) : "the output"}`));
    });
    rows.push(h("div", { class: "gv-mono gv-total" }, `= ${preview(grad)}`));
  });
  return rows;
}

/** A number in subscript digits: 12 -> ₁₂. */
function subscript(number) {
  return String(number).replace(/[0-9]/g, (digit) => String.fromCharCode(0x2080 + Number(digit)));
}

/** AccumulateGrad's step: .grad before + arriving = after, as math. */
function accumulationSection(entry, nodes, formula, values, symbols) {
  const leaf = entry.leaf ? nodes.get(entry.leaf) : null;
  const rows = [];
  if (formula) {
    rows.push(mathLine(mathFromTree(formula.math, { symbols, values: null })));
    if (values.grad && entry.grad_after) {
      rows.push(mathLine(m("mo", "="), valueMath(values.grad_before, false), m("mo", "+"),
        valueMath(values.grad), m("mo", "="), valueMath(entry.grad_after, false)));
    }
  } else {
    rows.push(h("div", { class: "gv-mono" }, `before: ${preview(entry.grad_before)}`),
      h("div", { class: "gv-mono" }, `after:  ${preview(entry.grad_after)}`));
  }
  rows.push(h("div", { class: "gv-hint" }, entry.grad_before
    ? ".grad is added to, not replaced: call .grad.zero_() between backward passes."
    : ".grad was None, so it becomes the arriving gradient."));
  return section(`${leaf ? hookName(leaf) : "leaf"}.grad accumulates`, rows);
}

/** A clicked node: what it is, its values, its formulas and saved tensors, its note. */
function nodeInfo(node, graph) {
  const rows = [`kind: ${node.kind}`];
  if (node.shape) rows.push(`shape: ${shapeText(node.shape)} ${node.dtype || ""}`);
  if (node.value) rows.push(`value: ${node.value.preview}`);
  if (node.kind === "leaf") rows.push(`grad: ${preview(node.grad)}`);
  if (node.order > 1) rows.push(`recorded by a backward pass (order ${node.order})`);
  for (const saved of node.saved) rows.push(`saved ${saved.name}: ${saved.freed ? "freed by backward()" : preview(saved.value)}`);
  const info = h("div", { class: "gv-section" });
  info.append(...rows.map((text) => h("div", { class: "gv-mono" }, text)));
  const formulas = nodeFormulas(node, graph);
  const symbols = symbolsFor(node, graph, formulas);
  for (const formula of formulas) info.append(mathLine(mathFromTree(formula.math, { symbols, values: null })));
  if (node.code) info.append(backwardCode(node.code));
  if (node.note) info.append(h("p", { class: "gv-hint" }, node.note));
  return [h("h4", { class: "gv-panel-title" }, hookName(node)), info];
}

// ================================================================ pan and zoom

/**
 * The camera over the drawing: drag to pan, ctrl/cmd + wheel to zoom, plain wheel to scroll a
 * drawing taller than the stage, fit, and follow the node being stepped. It moves the viewport
 * group with one transform and hides node text (`gv-far`) when zoomed out too far to read it.
 * Until the user moves it, the camera fits again when the stage's width changes (a view drawn
 * before its column had a width, as side-by-side views are in JupyterLab, opens fitted).
 */
class PanZoom {
  /**
   * @param {HTMLElement} stage the box around the drawing (its height is set on fit)
   * @param {SVGSVGElement} svg
   * @param {SVGGElement} viewport
   * @param {() => void} refit fits the camera again as it opened
   */
  constructor(stage, svg, viewport, refit) {
    this.stage = stage;
    this.svg = svg;
    this.viewport = viewport;
    this.view = { x: 0, y: 0, k: 1 };
    this.content = { width: 0, height: 0 }; // the drawing's size, in graph units
    this.fittedWidth = null; // the stage width the last fit used; null once the user moved the camera
    this.dragged = false; // true while a drag ends, so the click that ends it selects nothing
    // The stage's size, kept without reading layout while stepping (that would force a reflow).
    this.stageSize = { width: stage.clientWidth || 800, height: stage.clientHeight || 480 };
    this.resizeObserver = typeof ResizeObserver === "function" ? new ResizeObserver(([entry]) => {
      this.stageSize = { width: entry.contentRect.width || 800, height: entry.contentRect.height || 480 };
      const width = entry.contentRect.width;
      if (this.fittedWidth !== null && width > 0 && Math.abs(width - this.fittedWidth) > 1) refit();
    }) : null;
    if (this.resizeObserver) this.resizeObserver.observe(stage);

    let start = null;
    svg.addEventListener("pointerdown", (event) => {
      if (event.button !== 0) return;
      start = { x: event.clientX, y: event.clientY, vx: this.view.x, vy: this.view.y };
      this.dragged = false;
    });
    svg.addEventListener("pointermove", (event) => {
      if (!start) return;
      const dx = event.clientX - start.x;
      const dy = event.clientY - start.y;
      if (!this.dragged && Math.hypot(dx, dy) < 4) return;
      this.dragged = true;
      this.fittedWidth = null;
      svg.setPointerCapture(event.pointerId);
      this.setView(start.vx + dx, start.vy + dy, this.view.k);
    });
    const end = () => { start = null; setTimeout(() => { this.dragged = false; }, 0); };
    svg.addEventListener("pointerup", end);
    svg.addEventListener("pointercancel", end);
    svg.addEventListener("wheel", (event) => {
      if (!event.ctrlKey && !event.metaKey) { // scroll the drawing while it can move, then the page
        const dx = this.room(event.deltaX, "x");
        const dy = this.room(event.deltaY, "y");
        if (!dx && !dy) return;
        event.preventDefault();
        this.fittedWidth = null;
        this.setView(this.view.x - dx, this.view.y - dy, this.view.k);
        return;
      }
      event.preventDefault();
      const rect = svg.getBoundingClientRect();
      this.zoomBy(Math.exp(-event.deltaY * 0.002), event.clientX - rect.left, event.clientY - rect.top);
    }, { passive: false });
  }

  /** How far (px, signed as `delta`) the drawing can scroll along `axis` toward `delta`. */
  room(delta, axis) {
    const start = this.view[axis];
    const end = start + (axis === "x" ? this.content.width : this.content.height) * this.view.k;
    const size = axis === "x" ? this.stageSize.width : this.stageSize.height;
    if (delta > 0) return Math.min(delta, Math.max(0, end - size));
    if (delta < 0) return Math.max(delta, Math.min(0, start));
    return 0;
  }

  destroy() {
    if (this.resizeObserver) this.resizeObserver.disconnect();
  }

  setView(x, y, k) {
    this.view = { x, y, k };
    this.viewport.setAttribute("transform", `translate(${x},${y}) scale(${k})`);
    this.svg.classList.toggle("gv-far", k < READABLE_ZOOM);
  }

  /** Zoom by `factor` about a point of the stage (its centre by default). */
  zoomBy(factor, px = null, py = null) {
    const rect = this.svg.getBoundingClientRect();
    const cx = px === null ? rect.width / 2 : px;
    const cy = py === null ? rect.height / 2 : py;
    const k = Math.max(0.02, Math.min(4, this.view.k * factor));
    const ratio = k / this.view.k;
    this.fittedWidth = null;
    this.setView(cx - (cx - this.view.x) * ratio, cy - (cy - this.view.y) * ratio, k);
  }

  /**
   * Show the whole drawing, `width` x `height`, in a stage at most `maxHeight` tall. Given an
   * `opening` node box, a drawing that would be shrunk below `READ_ZOOM` that way opens at
   * `READ_ZOOM` instead (as much of it as can be read at once: fitted to the stage's width when it
   * is that narrow, else centred on that node), its bottom in view (where the backward pass
   * starts), and scrolls; the fit button still fits.
   */
  fit(width, height, maxHeight, opening = null) {
    const stageWidth = this.stage.clientWidth || 800;
    this.content = { width: width || 1, height: height || 1 };
    this.fittedWidth = this.stage.clientWidth || 0; // 0: drawn before the stage had a width
    const k = Math.max(0.02, Math.min(1, stageWidth / (width || 1), maxHeight / (height || 1)));
    if (opening && k < READ_ZOOM) {
      this.stage.style.height = `${maxHeight}px`;
      this.stageSize = { width: stageWidth, height: maxHeight };
      const x = width * READ_ZOOM <= stageWidth ? (stageWidth - width * READ_ZOOM) / 2
        : Math.min(0, Math.max(stageWidth - width * READ_ZOOM, stageWidth / 2 - opening[0] * READ_ZOOM));
      this.setView(x, maxHeight - height * READ_ZOOM, READ_ZOOM);
      return;
    }
    const stageHeight = Math.max(120, Math.min(maxHeight, (height || 1) * k));
    this.stage.style.height = `${stageHeight}px`;
    this.stageSize = { width: stageWidth, height: stageHeight };
    this.setView((stageWidth - (width || 1) * k) / 2, (stageHeight - (height || 1) * k) / 2, k);
  }

  /** Pan so that a node box (being stepped, in a big graph) is in view. */
  ensureVisible(box) {
    if (!box) return;
    const { x, y, k } = this.view;
    const sx = box[0] * k + x;
    const sy = box[1] * k + y;
    const { width, height } = this.stageSize;
    if (sx >= 0 && sx <= width && sy >= 0 && sy <= height) return;
    this.fittedWidth = null;
    this.setView(width / 2 - box[0] * k, height / 2 - box[1] * k, k);
  }
}

// ================================================================ the owner

const EMPTY_GRAPH = { version: 1, source: "", root: "", nodes: [], edges: [] };
const EMPTY_LAYOUT = { engine: "", width: 0, height: 0, nodes: {}, edges: [], groups: [], text: {}, line_height: 0 };

/** The toolbar-free part of the page: the stage, its SVG with the arrowhead, and the viewport. */
function makeStage() {
  const stage = h("div", { class: "gv-stage" });
  const svg = s("svg", { class: "gv-svg", role: "img", "aria-label": "Computational graph" });
  const defs = s("defs");
  const marker = s("marker", { id: "gv-arrow", viewBox: "0 0 10 10", refX: "9", refY: "5",
    markerWidth: "8", markerHeight: "8", markerUnits: "userSpaceOnUse", orient: "auto-start-reverse" });
  marker.append(s("path", { d: "M0,0 L10,5 L0,10 z", class: "gv-arrowhead" }));
  defs.append(marker);
  const viewport = s("g", { class: "gv-viewport" });
  svg.append(defs, viewport);
  stage.append(svg);
  return { stage, svg, viewport };
}

/**
 * One view of one widget model: wires the model's traits and the user's input to the controls,
 * the scene, the step painter, the panel and the camera. The scene is rebuilt when the graph,
 * its layout, the trace or show_saved change (once per model update, however many of them
 * changed); a step only repaints.
 */
class GraphView {
  /**
   * @param {Model} model
   * @param {HTMLElement} host
   */
  constructor(model, host) {
    this.model = decodingModel(model);
    this.host = host;
    this.listeners = [];
    this.selection = null; // a clicked node's id, shown in the panel until the next step
    this.fittedKey = null; // the graph size the camera last fitted
    this.rebuildPending = false;
    this.controls = new Controls((action) => this.act(action), (name, value) => {
      this.model.set(name, value);
      this.model.save_changes();
    });
    this.predictor = new Predictor((index) => { this.controls.pause(); this.goTo(index); });
    const { stage, svg, viewport } = makeStage();
    this.panel = h("div", { class: "gv-panel", "aria-live": "polite" });
    const root = h("div", { class: "gv-root", tabindex: "0", "data-lm-suppress-shortcuts": "true",
      role: "group", "aria-label": "gradviz computational graph" });
    // shown only for the graph of a gradient: which nodes the backward pass itself recorded
    this.legend = h("div", { class: "gv-legend", hidden: "" });
    this.legend.append(h("span", { class: "gv-legend-swatch" }),
      h("span", {}, " recorded by a backward pass with create_graph=True (second order); the rest by the forward pass"));
    root.append(this.controls.toolbar, this.controls.noteBox, this.legend, this.predictor.box, stage, this.panel);
    host.replaceChildren(root);
    this.camera = new PanZoom(stage, svg, viewport, () => this.fit(true));
    this.scene = new Scene(viewport);

    root.addEventListener("keydown", (event) => {
      const action = Controls.keyAction(event);
      if (!action) return;
      event.preventDefault();
      event.stopPropagation();
      this.act(action);
    });
    viewport.addEventListener("click", (event) => this.onGraphClick(event));
    viewport.addEventListener("keydown", (event) => {
      const group = event.target instanceof Element ? event.target.closest(".gv-group[data-group-id]") : null;
      if (!group || (event.key !== "Enter" && event.key !== " ")) return;
      event.preventDefault();
      event.stopPropagation(); // Space on a group toggles it, not play
      this.toggleGroup(group.getAttribute("data-group-id"), true);
    });

    this.rebuild();
    for (const name of ["graph", "graph_layout", "trace", "grad_updates", "show_saved"]) {
      this.on(`change:${name}`, () => this.rebuildSoon());
    }
    this.on("change:step_index", () => { if (!this.rebuildPending) this.showStep(this.model.get("step_index")); });
    this.on("change:speed", () => this.showOptions());
    this.on("change:note", () => this.showOptions());
    this.on("change:predict", () => this.predictor.clear());
    this.on("change:collapse", () => { this.scene.resetCollapse(); this.rebuildSoon(); });
  }

  on(event, callback) {
    this.model.on(event, callback);
    this.listeners.push([event, callback]);
  }

  destroy() {
    this.controls.pause();
    this.camera.destroy();
    this.rebuildPending = false;
    for (const [event, callback] of this.listeners) this.model.off(event, callback);
    this.host.replaceChildren();
  }

  /** @returns {TraceStep[]} */
  trace() {
    return this.model.get("trace") || [];
  }

  act(action) {
    const count = this.trace().length;
    const index = this.model.get("step_index");
    if (action === "next") { this.controls.pause(); if (!this.askFirst(index + 1)) this.goTo(index + 1); }
    else if (action === "prev") { this.controls.pause(); this.goTo(index - 1); }
    else if (action === "reset") { this.controls.pause(); this.goTo(0); }
    else if (action === "end") { this.controls.pause(); this.goTo(count); }
    else if (action === "play") { this.controls.playing ? this.controls.pause() : this.play(); }
    else if (action === "zoom-in") this.camera.zoomBy(1.25);
    else if (action === "zoom-out") this.camera.zoomBy(0.8);
    else if (action === "fit") this.fit();
  }

  /** With the `predict` option, ask for step `index`'s gradient before showing it; false if not asking. */
  askFirst(index) {
    const trace = this.trace();
    return Boolean(this.model.get("predict")) && index >= 1 && index <= trace.length &&
      this.predictor.ask(index, trace[index - 1], this.scene.graph);
  }

  goTo(index) {
    const clamped = Math.max(0, Math.min(this.trace().length, index));
    this.model.set("step_index", clamped);
    this.model.save_changes();
    if (this.painter.shown !== clamped) this.showStep(clamped); // the change event usually did it
  }

  play() {
    if (this.model.get("step_index") >= this.trace().length) this.goTo(0);
    this.controls.play(Number(this.model.get("speed")) || 1, () => {
      const index = this.model.get("step_index");
      const count = this.trace().length;
      if (index < count) this.goTo(index + 1);
      return index + 1 < count;
    });
  }

  showOptions() {
    this.controls.showOptions({ speed: this.model.get("speed"), showSaved: Boolean(this.model.get("show_saved")),
      note: this.model.get("note") || "" });
  }

  /** Rebuild at the end of this model update: graph, layout and trace often change together. */
  rebuildSoon() {
    if (this.rebuildPending) return;
    this.rebuildPending = true;
    queueMicrotask(() => {
      if (!this.rebuildPending) return;
      this.rebuildPending = false;
      this.rebuild();
    });
  }

  /** Draw the scene from the model, paint the current step on it, fit when the graph is new. */
  rebuild() {
    /** @type {Graph} */
    const graph = this.model.get("graph") || EMPTY_GRAPH;
    /** @type {Layout} */
    const layout = this.model.get("graph_layout") || EMPTY_LAYOUT;
    this.scene.build(graph, layout, { showSaved: Boolean(this.model.get("show_saved")),
      collapse: this.model.get("collapse") });
    this.painter = new StepPainter(this.scene, this.trace());
    this.legend.hidden = !graph.nodes.some((node) => node.order > 1);
    this.showStep(this.model.get("step_index") || 0, true);
    this.showOptions();
    const key = `${graph.nodes.length}:${layout.width}x${layout.height}`;
    if (key !== this.fittedKey) this.fit(true);
    this.fittedKey = key;
  }

  /**
   * Fit the camera to the drawing. On a first draw, a graph too big to read whole opens on its
   * output, where the backward pass starts, unless groups are collapsed: their boxes carry
   * labels sized to read from afar.
   */
  fit(opening = false) {
    const layout = this.scene.layout;
    const root = opening && this.scene.collapsed.size === 0 ? layout.nodes[this.scene.graph.root] : null;
    this.camera.fit(layout.width, layout.height, Number(this.model.get("height")) || 480, root);
  }

  /** Show the state after `index` steps: painted, counted in the status, explained in the panel. */
  showStep(index, full = false) {
    const trace = this.trace();
    const target = Math.max(0, Math.min(trace.length, Number(index) || 0));
    if (full || target !== this.painter.shown) {
      this.painter.paint(target, full);
      this.selection = null;
      if (target > 0) this.camera.ensureVisible(this.scene.layout.nodes[trace[target - 1].node]);
    }
    this.controls.showStatus(target, trace.length);
    this.predictor.follow(target);
    this.showPanel();
  }

  showPanel() {
    const shown = this.painter.shown;
    const trace = this.trace();
    const step = { shown, count: trace.length, entry: shown > 0 ? trace[shown - 1] : null };
    this.panel.replaceChildren(...chainRulePanel(step, this.scene.graph, this.selection));
  }

  toggleGroup(groupId, refocus = false) {
    this.scene.toggle(groupId);
    this.rebuild();
    if (!refocus) return;
    const group = this.scene.viewport.querySelector(`.gv-group[data-group-id="${CSS.escape(groupId)}"]`);
    if (group) group.focus({ preventScroll: true });
  }

  onGraphClick(event) {
    if (this.camera.dragged) return;
    const target = event.target instanceof Element ? event.target : null;
    const toggle = target && target.closest(".gv-group-collapsed, .gv-group-header");
    if (toggle) { this.toggleGroup(toggle.getAttribute("data-group-id")); return; }
    const nodeEl = target && target.closest("[data-node-id]");
    if (nodeEl) {
      this.selection = nodeEl.getAttribute("data-node-id");
      this.showPanel();
    }
  }
}

/**
 * anywidget entry point: draw into `el`, return the cleanup function. The kernel is told when a
 * view appears and goes away (output cleared, cell deleted), so that after each cell it updates
 * only widgets on screen or held, and releases the rest (gradviz/widget/live.py).
 */
function render({ model, el }) {
  const view = new GraphView(model, el);
  tellKernel(model, true);
  return () => {
    tellKernel(model, false);
    view.destroy();
  };
}

/** @param {Model} model @param {boolean} open */
function tellKernel(model, open) {
  try {
    model.send({ type: "gradviz-view", open });
  } catch (error) {
    // the widget was closed in the kernel: there is nobody left to tell
  }
}

/**
 * A tiny stand-in for the anywidget model, for pages with no kernel (the HTML export):
 * get / set / on / off / save_changes over a plain object of trait values.
 * @param {Traits} state
 * @returns {Model}
 */
export function createModel(state) {
  const values = { ...state };
  const handlers = new Map();
  return {
    get: (name) => values[name],
    set(name, value) {
      if (values[name] === value) return;
      values[name] = value;
      for (const callback of handlers.get(`change:${name}`) || []) callback();
    },
    on(event, callback) {
      if (!handlers.has(event)) handlers.set(event, []);
      handlers.get(event).push(callback);
    },
    off(event, callback) {
      const list = handlers.get(event) || [];
      handlers.set(event, list.filter((item) => item !== callback));
    },
    save_changes() {},
    send() {},
  };
}

const ENCODED_TRAITS = new Set(["graph", "graph_layout", "trace"]);
const DECODED = new WeakMap(); // a trait's buffer -> its parsed value, shared by the views of a model
const UPDATED = new WeakMap(); // a parsed trait -> [the grad_updates laid over it, the result]

/**
 * The model as the views read it. The kernel sends the big traits (graph, graph_layout, trace)
 * as one buffer of JSON text each (`_json_buffer` in widget/widget.py), which arrives as a
 * DataView; `get` parses each buffer once. A plain value (the HTML export's state) passes through.
 * A big graph's traits come packed (widget/wire.py) and are unpacked once (`unpacked`).
 * Leaves whose .grad changed since come in the small `grad_updates` trait (`_set_grads` in
 * widget.py), laid over those three here: their nodes, their text, their AccumulateGrad steps.
 * @param {Model} model
 * @returns {Model}
 */
function decodingModel(model) {
  return {
    get(name) {
      let value = model.get(name);
      if (!ENCODED_TRAITS.has(name)) return value;
      if (value instanceof ArrayBuffer || ArrayBuffer.isView(value)) {
        if (!DECODED.has(value)) DECODED.set(value, unpacked(name, JSON.parse(new TextDecoder().decode(value))));
        value = DECODED.get(value);
      } else if (value && value.packed === 1) {
        if (!DECODED.has(value)) DECODED.set(value, unpacked(name, value));
        value = DECODED.get(value);
      }
      const updates = model.get("grad_updates");
      if (!value || !updates || !Object.keys(updates).length) return value;
      const known = UPDATED.get(value);
      if (known && known[0] === updates) return known[1];
      const updated = withGradUpdates(name, value, updates);
      UPDATED.set(value, [updates, updated]);
      return updated;
    },
    set: (name, value) => model.set(name, value),
    on: (event, callback) => model.on(event, callback),
    off: (event, callback) => model.off(event, callback),
    save_changes: () => model.save_changes(),
    send: (content) => model.send(content),
  };
}

// The packed wire form of a big graph's traits (widget/wire.py, which holds the same three
// constants; tests/test_wire.py compares them): unpacked here, before any view reads them.
const NODE_DEFAULTS = { shape: null, dtype: null, value: null, grad: null, saved: [], formula: null,
  module: null, note: null, code: null, order: 1 };
const STEP_FIELDS = ["node", "name", "grad_outputs", "grad_inputs", "targets", "contributions", "leaf",
  "grad_before", "grad_after", "numbers"];
const SUMMARY_KEYS = ["grad_outputs", "grad_inputs", "grad_before", "grad_after"];

/** A trait as the views read it: the plain form of a packed graph, layout or trace (others as they are). */
function unpacked(name, value) {
  if (!value || value.packed !== 1) return value;
  if (name === "graph") return unpackGraph(value);
  if (name === "graph_layout") return unpackLayout(value);
  return unpackTrace(value);
}

function unpackGraph(packed) {
  const { packed: _, summaries, ...graph } = packed;
  const summary = (index) => (index === null || index === undefined ? null : summaries[index]);
  const nodes = packed.nodes.map((node, position) => ({ ...NODE_DEFAULTS, id: `n${position}`, label: node.name,
    ...node, value: summary(node.value), grad: summary(node.grad),
    saved: (node.saved || []).map(([name, at, freed]) => ({ name, value: summary(at), freed })) }));
  const edges = packed.edges.map(([source, target, slot = 0, kind = "data"]) => ({ source, target, slot, kind }));
  return { ...graph, nodes, edges };
}

function unpackLayout(packed) {
  const { packed: _, texts, ...layout } = packed;
  const text = {};
  for (const [id, index] of Object.entries(packed.text)) text[id] = texts[index];
  return { ...layout, text };
}

function unpackTrace(packed) {
  const summaries = packed.summaries;
  const summary = (index) => (index === null || index === undefined ? null : summaries[index]);
  return packed.steps.map((step, index) => {
    const entry = { index };
    STEP_FIELDS.forEach((key, i) => {
      let value = step[i];
      if (SUMMARY_KEYS.includes(key)) value = Array.isArray(value) ? value.map(summary) : summary(value);
      else if (key === "contributions") value = value.map((pieces) => pieces.map(([from, at]) => ({ from, value: summary(at) })));
      else if (key === "numbers") {
        value = value.map((number) => number === null ? null
          : { local: summary(number[0]), summed: number[1], ...(number.length > 2 ? { view: number[2] } : {}) });
      }
      entry[key] = value;
    });
    return entry;
  });
}

/** `value` (the graph, layout or trace trait) with the `grad_updates` of its part laid over it. */
function withGradUpdates(name, value, updates) {
  if (name === "graph") {
    const nodes = updates.nodes || {};
    return { ...value, nodes: value.nodes.map((node) => nodes[node.id] || node) };
  }
  if (name === "graph_layout") return { ...value, text: { ...value.text, ...(updates.text || {}) } };
  const steps = updates.steps || {};
  return value.map((entry, index) => steps[index] || entry);
}

/**
 * The state an exported page carries, from its `<script>` block's text: plain JSON, or (for big
 * graphs, `encoding` "gzip+base64", see widget/export.py) base64 of gzipped JSON, inflated with
 * the browser's own DecompressionStream.
 * @param {string} text
 * @param {string | undefined} encoding
 * @returns {Promise<Traits>}
 */
export async function readState(text, encoding) {
  if (encoding !== "gzip+base64") return JSON.parse(text);
  const bytes = Uint8Array.from(atob(text.trim()), (char) => char.charCodeAt(0));
  const inflated = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return JSON.parse(await new Response(inflated).text());
}

/** Render a widget state into an element with no kernel; returns { model, cleanup }. */
export function mount(el, state) {
  const model = createModel(state);
  const cleanup = render({ model, el });
  return { model, cleanup };
}

export default { render };
