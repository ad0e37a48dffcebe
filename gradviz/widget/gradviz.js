// gradviz widget: draws a Graph snapshot from positions computed in Python, then replays the
// backward trace step by step, entirely in the browser (no kernel round trip per step).
// Every piece of user text goes through textContent / setAttribute, never innerHTML.

/**
 * @typedef {{shape: number[], dtype: string, preview: string}} Summary
 * @typedef {{name: string, value: Summary | null, freed: boolean}} Saved
 * @typedef {{input: string, text: string, latex: string}} Formula
 * @typedef {{id: string, kind: "output"|"function"|"accumulate"|"leaf"|"constant", name: string,
 *   label: string, shape: number[] | null, dtype: string | null, value: Summary | null,
 *   grad: Summary | null, saved: Saved[], formula: Formula[], module: string | null,
 *   note: string | null}} GraphNode
 * @typedef {{source: string, target: string, slot: number, kind: string}} GraphEdge
 * @typedef {{version: number, source: string, root: string, nodes: GraphNode[],
 *   edges: GraphEdge[]}} Graph                                  trait `graph`
 * @typedef {{id: string, kind: "module"|"band", label: string, members: string[],
 *   parent: string | null, box: number[]}} Group                 parents before children
 * @typedef {{engine: string, width: number, height: number,
 *   nodes: Object<string, number[]>, edges: (number[] | null)[], groups: Group[]}} Layout
 *                                                                trait `graph_layout`
 * @typedef {{index: number, node: string, name: string, grad_outputs: (Summary|null)[],
 *   grad_inputs: (Summary|null)[], targets: (string|null)[],
 *   contributions: {from: string|null, value: Summary|null}[][], leaf: string|null,
 *   grad_before: Summary|null, grad_after: Summary|null}} TraceStep   trait `trace` is TraceStep[]
 * Other traits: `step_index` (number of steps done, 0..trace.length), `show_saved` (boolean),
 * `speed` (steps per second while playing), `height` (px of the drawing area), `note` (text),
 * `collapse` ("auto" | true | false: start with the layout's groups collapsed; auto: when the
 * graph has more than COLLAPSE_ABOVE nodes).
 */

const SVG_NS = "http://www.w3.org/2000/svg";
const CHAR_WIDTH = 7.2; // must match gradviz/render/layout.py
const LINE_HEIGHT = 16;
const PADDING_X = 16;
const PADDING_Y = 10;
const SPEEDS = [0.5, 1, 2, 4, 8];
const READABLE_ZOOM = 0.4; // below this, node text is hidden (.gv-far) and too small to read
const OPENING_ZOOM = 0.8;
const COLLAPSE_ABOVE = 150; // collapse="auto" draws module groups as boxes above this many nodes

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

/** Cut text to `max` characters with an ellipsis. */
function fit(text, max) {
  const str = String(text);
  return str.length <= max ? str : str.slice(0, Math.max(1, max - 1)) + "\u2026";
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

/** The text lines drawn inside a node (the same rule as render/dot.py:node_text). */
function nodeLines(node, grad) {
  if (node.kind === "function" || node.kind === "accumulate") {
    const lines = [{ text: node.name, cls: "gv-title" }];
    if (node.label && node.label !== node.name) {
      lines.push({ text: node.value ? `${node.label} = ${node.value.preview}` : node.label, cls: "gv-sub" });
    }
    if (node.module) lines.push({ text: node.module, cls: "gv-sub" });
    if (node.kind === "function" && node.saved.length) {
      const names = node.saved.map((t) => (t.freed ? `${t.name} \u2717` : t.name));
      const freed = node.saved.some((t) => t.freed);
      lines.push({ text: `saved: ${names.join(", ")}${freed ? " (freed)" : ""}`, cls: "gv-saved" });
    }
    return lines;
  }
  const lines = [{ text: node.label || node.name, cls: "gv-title" }];
  if (shapeText(node.shape)) lines.push({ text: shapeText(node.shape), cls: "gv-sub" });
  if (node.value) lines.push({ text: node.value.preview, cls: "gv-value" });
  if (node.kind === "leaf") lines.push({ text: `grad: ${preview(grad)}`, cls: "gv-grad" });
  return lines;
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

/** A group's title size in graph units: big enough to read when the whole model is in view
 * (node text is hidden then), at most 1/`tall` of the box's height and `wide` x its width per character. */
function titleSize(group, tall, wide) {
  const [, , width, height] = group.box;
  return Math.max(11, Math.min(height / tall, (wide * width) / (group.label.length + 4)));
}

function curvePath(curve) {
  let d = `M${curve.start[0]},${curve.start[1]}`;
  for (const [ax, ay, bx, by, x, y] of curve.segments) d += ` C${ax},${ay} ${bx},${by} ${x},${y}`;
  return d;
}

/** The point halfway along the curve's parameter (where an edge's label goes): pure arithmetic,
 * so labelling a step never forces the browser to lay out the page (getTotalLength would). */
function curveMidpoint(curve) {
  const u = curve.segments.length / 2;
  const index = Math.min(Math.floor(u), curve.segments.length - 1);
  const t = u - index;
  const [x0, y0] = index ? curve.segments[index - 1].slice(4) : curve.start;
  const [ax, ay, bx, by, x3, y3] = curve.segments[index];
  const w = [(1 - t) ** 3, 3 * (1 - t) ** 2 * t, 3 * (1 - t) * t ** 2, t ** 3];
  return { x: w[0] * x0 + w[1] * ax + w[2] * bx + w[3] * x3, y: w[0] * y0 + w[1] * ay + w[2] * by + w[3] * y3 };
}

/**
 * The view of one widget: builds the DOM once per graph, then only toggles classes and text.
 */
class GraphView {
  constructor(model, host) {
    this.model = model;
    this.host = host;
    this.timer = null;
    this.shown = 0; // steps currently applied to the drawing
    this.view = { x: 0, y: 0, k: 1 };
    this.collapsed = new Set(); // ids of the layout's groups drawn as one box
    this.groupsKey = null;
    this.selected = null;
    this.listeners = [];
    this.build();
    // The stage's size, kept without reading layout while stepping (that would force a reflow).
    this.stageSize = { width: this.stage.clientWidth || 800, height: this.stage.clientHeight || 480 };
    this.resizeObserver = typeof ResizeObserver === "function" ? new ResizeObserver(([entry]) => {
      this.stageSize = { width: entry.contentRect.width || 800, height: entry.contentRect.height || 480 };
    }) : null;
    if (this.resizeObserver) this.resizeObserver.observe(this.stage);
    this.redraw();
    for (const name of ["graph", "graph_layout"]) this.on(`change:${name}`, () => this.redraw());
    this.on("change:trace", () => this.redraw());
    this.on("change:step_index", () => this.applyStep(this.model.get("step_index")));
    this.on("change:show_saved", () => this.redraw());
    this.on("change:speed", () => this.syncControls());
    this.on("change:note", () => this.syncControls());
    this.on("change:collapse", () => { this.groupsKey = null; this.redraw(); });
  }

  on(event, callback) {
    this.model.on(event, callback);
    this.listeners.push([event, callback]);
  }

  destroy() {
    this.pause();
    if (this.resizeObserver) this.resizeObserver.disconnect();
    for (const [event, callback] of this.listeners) this.model.off(event, callback);
    this.host.replaceChildren();
  }

  /** Toolbar, drawing area and chain-rule panel. */
  build() {
    const root = h("div", { class: "gv-root", tabindex: "0", "data-lm-suppress-shortcuts": "true",
      role: "group", "aria-label": "gradviz computational graph" });
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

    this.noteBox = h("div", { class: "gv-note", role: "note" });
    this.stage = h("div", { class: "gv-stage" });
    this.svg = s("svg", { class: "gv-svg", role: "img", "aria-label": "Computational graph" });
    const defs = s("defs");
    const marker = s("marker", { id: "gv-arrow", viewBox: "0 0 10 10", refX: "9", refY: "5",
      markerWidth: "8", markerHeight: "8", markerUnits: "userSpaceOnUse", orient: "auto-start-reverse" });
    marker.append(s("path", { d: "M0,0 L10,5 L0,10 z", class: "gv-arrowhead" }));
    defs.append(marker);
    this.viewport = s("g", { class: "gv-viewport" });
    this.svg.append(defs, this.viewport);
    this.stage.append(this.svg);
    this.panel = h("div", { class: "gv-panel", "aria-live": "polite" });
    root.append(bar, this.noteBox, this.stage, this.panel);
    this.host.replaceChildren(root);
    this.root = root;

    bar.addEventListener("click", (event) => {
      const target = event.target instanceof Element ? event.target.closest("[data-action]") : null;
      if (target) this.act(target.getAttribute("data-action"));
    });
    this.speedSelect.addEventListener("change", () => {
      this.model.set("speed", Number(this.speedSelect.value));
      this.model.save_changes();
      if (this.timer) { this.pause(); this.play(); }
    });
    this.savedBox.addEventListener("change", () => {
      this.model.set("show_saved", this.savedBox.checked);
      this.model.save_changes();
    });
    root.addEventListener("keydown", (event) => this.onKey(event));
    this.enablePanZoom();
    this.viewport.addEventListener("click", (event) => this.onGraphClick(event));
  }

  onKey(event) {
    if (event.target instanceof HTMLSelectElement || event.target instanceof HTMLInputElement) return;
    const actions = { ArrowRight: "next", ArrowLeft: "prev", Home: "reset", End: "end", " ": "play",
      "+": "zoom-in", "=": "zoom-in", "-": "zoom-out", "0": "fit" };
    const action = actions[event.key];
    if (!action || event.altKey || event.ctrlKey || event.metaKey) return;
    if (action === "play" && event.target instanceof HTMLButtonElement) return; // the button handles Space
    event.preventDefault();
    event.stopPropagation();
    this.act(action);
  }

  act(action) {
    const count = this.trace().length;
    const index = this.model.get("step_index");
    if (action === "next") { this.pause(); this.goTo(index + 1); }
    else if (action === "prev") { this.pause(); this.goTo(index - 1); }
    else if (action === "reset") { this.pause(); this.goTo(0); }
    else if (action === "end") { this.pause(); this.goTo(count); }
    else if (action === "play") { this.timer ? this.pause() : this.play(); }
    else if (action === "zoom-in") this.zoomBy(1.25);
    else if (action === "zoom-out") this.zoomBy(0.8);
    else if (action === "fit") this.fitView();
  }

  /** @returns {TraceStep[]} */
  trace() {
    return this.model.get("trace") || [];
  }

  goTo(index) {
    const clamped = Math.max(0, Math.min(this.trace().length, index));
    this.model.set("step_index", clamped);
    this.model.save_changes();
    if (this.shown !== clamped) this.applyStep(clamped); // the change event usually did it
  }

  play() {
    if (this.model.get("step_index") >= this.trace().length) this.goTo(0);
    const speed = Number(this.model.get("speed")) || 1;
    this.timer = setInterval(() => {
      const index = this.model.get("step_index");
      if (index < this.trace().length) this.goTo(index + 1);
      if (index + 1 >= this.trace().length) this.pause();
    }, 1000 / speed);
    this.syncControls();
  }

  pause() {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.syncControls();
  }

  syncControls() {
    const playing = this.timer !== null;
    this.playButton.replaceChildren(iconSvg(playing ? ICONS.pause : ICONS.play));
    this.playButton.setAttribute("aria-label", playing ? "Pause" : "Play");
    this.playButton.setAttribute("aria-pressed", String(playing));
    this.speedSelect.value = String(this.model.get("speed"));
    this.savedBox.checked = Boolean(this.model.get("show_saved"));
    const note = this.model.get("note") || "";
    this.noteBox.textContent = note;
    this.noteBox.hidden = !note;
  }

  // ---------------------------------------------------------------- drawing (once per graph)

  /** Rebuild the SVG from graph + layout, then re-apply the current step. */
  redraw() {
    /** @type {Graph} */
    const graph = this.model.get("graph") || { nodes: [], edges: [], root: "" };
    /** @type {Layout} */
    const layout = this.model.get("graph_layout") || { nodes: {}, edges: [], width: 0, height: 0, groups: [] };
    const firstDraw = !this.graphKey;
    const key = `${graph.nodes.length}:${layout.width}x${layout.height}`;
    this.graph = graph;
    this.layout = layout;
    this.nodesById = new Map(graph.nodes.map((node) => [node.id, node]));
    this.edgesAt = new Map(); // node id -> indices of the edges that touch it, for cheap steps
    graph.edges.forEach((edge, index) => {
      for (const end of [edge.source, edge.target]) {
        if (!this.edgesAt.has(end)) this.edgesAt.set(end, []);
        this.edgesAt.get(end).push(index);
      }
    });
    this.leafOf = new Map(graph.edges.filter((edge) => edge.kind === "variable")
      .map((edge) => [edge.target, this.nodesById.get(edge.source)]));
    this.indexGroups(graph, layout.groups || []);
    this.indexTrace();

    const frameLayer = s("g", { class: "gv-group-frames" });
    const headerLayer = s("g", { class: "gv-group-headers" }); // on top, so nothing covers them
    const nodeLayer = s("g", { class: "gv-nodes" });
    const edgeLayer = s("g", { class: "gv-edges" });
    const boxLayer = s("g", { class: "gv-groups" }); // collapsed groups cover their edges' ends
    this.labelLayer = s("g", { class: "gv-edge-labels" });
    this.nodeEls = new Map();
    this.gradTexts = new Map();
    this.groupEls = new Map();
    this.edgeEls = [];
    this.edgeCurves = [];

    for (const group of layout.groups || []) {
      if (this.groupHidden.get(group.id)) continue;
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
    const showSaved = Boolean(this.model.get("show_saved"));
    for (const node of graph.nodes) {
      if (!layout.nodes[node.id] || this.boxOfNode.has(node.id)) continue;
      nodeLayer.append(this.drawNode(node, layout.nodes[node.id], showSaved));
    }
    this.viewport.replaceChildren(frameLayer, edgeLayer, boxLayer, nodeLayer, this.labelLayer, headerLayer);
    this.shown = 0;
    this.currentGroup = null;
    this.applyStep(this.model.get("step_index") || 0, true);
    this.syncControls();
    if (firstDraw || key !== this.graphKey) this.fitView(true);
    this.graphKey = key;
  }

  /**
   * Which groups are collapsed (chosen again when the groups change, by the `collapse` trait),
   * which are hidden inside a collapsed ancestor, and for each hidden node the collapsed box
   * that stands for it (its outermost collapsed group).
   */
  indexGroups(graph, groups) {
    const groupsKey = groups.map((group) => `${group.id}:${group.label}:${group.members.length}`).join(",");
    if (groupsKey !== this.groupsKey) {
      const mode = this.model.get("collapse");
      const collapse = mode === true || (mode !== false && graph.nodes.length > COLLAPSE_ABOVE);
      this.collapsed = new Set(collapse ? groups.map((group) => group.id) : []);
      this.groupsKey = groupsKey;
    }
    this.groupsById = new Map(groups.map((group) => [group.id, group]));
    this.groupHidden = new Map(); // parents come first, so a parent's answer is always known
    for (const group of groups) {
      const parent = group.parent;
      this.groupHidden.set(group.id, parent !== null && parent !== undefined &&
        (this.collapsed.has(parent) || this.groupHidden.get(parent)));
    }
    this.boxOfNode = new Map();
    for (const group of groups) {
      if (!this.collapsed.has(group.id) || this.groupHidden.get(group.id)) continue;
      for (const member of group.members) this.boxOfNode.set(member, group.id);
    }
  }
  drawNode(node, box, showSaved) {
    const [cx, cy, width, height] = box;
    const classes = ["gv-node", `gv-kind-${node.kind}`];
    if (node.saved.some((t) => t.freed)) classes.push("gv-freed");
    if (node.id === this.graph.root) classes.push("gv-root-fn");
    const g = s("g", { class: classes.join(" "), "data-node-id": node.id, "data-name": hookName(node),
      transform: `translate(${cx - width / 2},${cy - height / 2})` });
    const lines = nodeLines(node, node.grad).filter((line) => showSaved || line.cls !== "gv-saved");
    const drawnHeight = Math.min(height, lines.length * LINE_HEIGHT + PADDING_Y);
    const top = (height - drawnHeight) / 2;
    g.append(s("rect", { class: "gv-box", x: 0, y: top, width, height: drawnHeight, rx: node.kind === "function" ? 8 : 3 }));
    const maxChars = Math.max(4, Math.floor((width - PADDING_X) / CHAR_WIDTH + 0.5));
    lines.forEach((line, i) => {
      const text = s("text", { class: `gv-text ${line.cls}`, x: width / 2, y: top + PADDING_Y / 2 + LINE_HEIGHT * (i + 0.75) },
        fit(line.text, maxChars));
      if (line.cls === "gv-grad") this.gradTexts.set(node.id, { text, maxChars });
      g.append(text);
    });
    const badge = s("g", { class: "gv-check", transform: `translate(${width - 2},${top + 2})`, "aria-hidden": "true" });
    badge.append(s("circle", { r: 6 }), s("path", { d: "M-3 0 -1 2.5 3 -2.5" }));
    g.append(badge);
    const tooltip = [hookName(node), ...lines.slice(1).map((line) => line.text)];
    if (node.value) tooltip.push(`value: ${node.value.preview}`);
    if (node.note) tooltip.push(node.note);
    g.append(s("title", {}, tooltip.join("\n")));
    this.nodeEls.set(node.id, g);
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
    this.onActivate(g, group.id);
    this.groupEls.set(group.id, g);
    return g;
  }

  /** An expanded group's header: a tab on its frame's top edge that collapses it again. */
  drawGroupHeader(group) {
    const [x, y] = group.box;
    const header = s("g", { class: "gv-group gv-group-expanded gv-group-header", "data-group-id": group.id,
      "data-name": group.label, "data-group-kind": group.kind, role: "button", tabindex: "0", "aria-expanded": "true",
      "aria-label": `Collapse ${group.kind === "module" ? "module" : "group"} ${group.label}` });
    const size = titleSize(group, 10, 1.0); // readable from afar too
    header.append(s("rect", { x, y: y - size * 1.3, width: (group.label.length + 3) * size * 0.62, height: size * 1.3, rx: size / 4 }));
    header.append(s("text", { class: "gv-group-label", x: x + size * 0.4, y: y - size * 0.35, "font-size": size.toFixed(1) },
      `\u25BE ${group.label}`));
    this.onActivate(header, group.id);
    return header;
  }

  onActivate(element, groupId) {
    element.addEventListener("keydown", (event) => {
      if (event.key !== "Enter" && event.key !== " ") return;
      event.preventDefault();
      event.stopPropagation(); // Space on a group toggles it, not play
      this.toggleGroup(groupId, true);
    });
  }

  toggleGroup(groupId, refocus = false) {
    if (this.collapsed.has(groupId)) this.collapsed.delete(groupId);
    else this.collapsed.add(groupId);
    this.redraw();
    if (!refocus) return;
    const group = this.viewport.querySelector(`.gv-group[data-group-id="${groupId}"]`);
    if (group) group.focus({ preventScroll: true });
  }

  onGraphClick(event) {
    if (this.dragged) return;
    const target = event.target instanceof Element ? event.target : null;
    const toggle = target && target.closest(".gv-group-collapsed, .gv-group-header");
    if (toggle) { this.toggleGroup(toggle.getAttribute("data-group-id")); return; }
    const nodeEl = target && target.closest("[data-node-id]");
    if (nodeEl) {
      this.selected = nodeEl.getAttribute("data-node-id");
      this.renderPanel();
    }
  }

  /** Lookups from the trace: which step runs each node, and which step fills each leaf's .grad. */
  indexTrace() {
    this.stepOfNode = new Map();
    this.accumulations = new Map();
    this.trace().forEach((step, i) => {
      this.stepOfNode.set(step.node, i);
      if (step.leaf) this.accumulations.set(step.leaf, i);
    });
  }

  // ---------------------------------------------------------------- stepping (classes and text only)

  /** Show the state after `index` steps: steps < index-1 done, step index-1 current. */
  applyStep(index, full = false) {
    const trace = this.trace();
    const target = Math.max(0, Math.min(trace.length, Number(index) || 0));
    if (!full && target === this.shown) { this.renderPanel(); this.updateStatus(); return; }
    if (full) {
      for (let i = 0; i < target; i++) this.markStep(i, target);
    } else {
      const low = Math.min(this.shown, target);
      const high = Math.max(this.shown, target);
      for (let i = Math.max(0, low - 1); i < high; i++) this.markStep(i, target);
    }
    this.shown = target;
    this.markCurrentGroup(target > 0 ? trace[target - 1].node : null);
    this.showFlows(target);
    this.updateStatus();
    this.selected = null;
    this.renderPanel();
    if (target > 0) this.ensureVisible(trace[target - 1].node);
  }

  /** Set the classes of step i's node (and its leaf's .grad text) for the state after `target` steps. */
  markStep(i, target) {
    const step = this.trace()[i];
    if (!step) return;
    const nodeEl = this.nodeEls.get(step.node);
    if (nodeEl) {
      nodeEl.classList.toggle("gv-done", i < target - 1);
      nodeEl.classList.toggle("gv-current", i === target - 1);
    }
    if (step.leaf) {
      const leafEl = this.nodeEls.get(step.leaf);
      if (leafEl) leafEl.classList.toggle("gv-accumulating", i === target - 1);
      const node = this.nodesById.get(step.leaf);
      const grad = target === 0 ? (node && node.grad) : target > i ? step.grad_after : step.grad_before;
      this.setGradText(step.leaf, grad);
    }
  }

  /** A node run inside a collapsed group lights up that group's box instead. */
  markCurrentGroup(nodeId) {
    const groupId = nodeId === null ? undefined : this.boxOfNode.get(nodeId);
    const element = groupId === undefined ? null : this.groupEls.get(groupId);
    if (this.currentGroup === element) return;
    if (this.currentGroup) this.currentGroup.classList.remove("gv-group-current");
    if (element) element.classList.add("gv-group-current");
    this.currentGroup = element;
  }

  setGradText(leafId, grad) {
    const entry = this.gradTexts.get(leafId);
    if (entry) entry.text.textContent = fit(`grad: ${preview(grad)}`, entry.maxChars);
  }

  /** Label the edges that carry gradients at the current step: arriving and sent on. */
  showFlows(target) {
    for (const path of this.flowEdges || []) path.classList.remove("gv-edge-in", "gv-edge-out");
    this.flowEdges = [];
    this.labelLayer.replaceChildren();
    if (target === 0) return;
    const step = this.trace()[target - 1];
    const edges = this.graph.edges;
    const used = new Map(); // a tensor used twice by one node sends two pieces along two edges
    for (const index of this.edgesAt.get(step.node) || []) {
      const edge = edges[index];
      const path = this.edgeEls[index];
      if (!path) continue;
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

  flowEdge(index, cls, value) {
    const path = this.edgeEls[index];
    path.classList.add(cls);
    this.flowEdges.push(path);
    if (!value) return;
    const point = curveMidpoint(this.edgeCurves[index]);
    const text = `${shapeText(value.shape) ? shapeText(value.shape) + " " : ""}${fit(value.preview, 24)}`;
    this.labelLayer.append(s("text", { class: `gv-edge-label ${cls}`, x: point.x + 6, y: point.y }, text));
  }

  updateStatus() {
    const count = this.trace().length;
    if (!count) this.status.textContent = "No backward steps";
    else if (this.shown === 0) this.status.textContent = `Step 0 of ${count}`;
    else this.status.textContent = `Step ${this.shown} of ${count}`;
  }

  /** The chain-rule panel for the current step (or the clicked node, or a hint). */
  renderPanel() {
    const panel = this.panel;
    panel.replaceChildren();
    if (this.selected) { this.renderNodeInfo(this.nodesById.get(this.selected)); return; }
    const count = this.trace().length;
    if (this.shown === 0) {
      panel.append(h("p", { class: "gv-hint" }, count
        ? `Press \u25B6| (or \u2192) to run the backward pass one node at a time: ${count} nodes will run, starting at the output.`
        : "There is no backward pass to step for this tensor."));
      return;
    }
    const step = this.trace()[this.shown - 1];
    const node = this.nodesById.get(step.node);
    const accumulate = Boolean(step.leaf) || (node && node.kind === "accumulate");
    panel.append(h("h4", { class: "gv-panel-title" }, `Step ${this.shown}: ${node ? node.name : step.name}`));

    const arriving = h("div", { class: "gv-section" });
    arriving.append(h("div", { class: "gv-section-title" }, "gradient arriving"));
    step.grad_outputs.forEach((grad, i) => {
      const pieces = step.contributions[i] || [];
      if (pieces.length > 1) {
        arriving.append(h("div", { class: "gv-sum-title" }, `${pieces.length} contributions summed (the tensor was used ${pieces.length} times):`));
        pieces.forEach((piece, j) => {
          const sender = piece.from ? this.nodesById.get(piece.from) : null;
          arriving.append(h("div", { class: "gv-mono" }, `${j ? "+ " : "  "}${preview(piece.value)}   from ${sender ? hookName(sender) : "the output"}`));
        });
        arriving.append(h("div", { class: "gv-mono gv-total" }, `= ${preview(grad)}`));
      } else {
        arriving.append(h("div", { class: "gv-mono" }, `${shapeText(grad && grad.shape)} ${preview(grad)}`.trim()));
      }
    });
    panel.append(arriving);

    if (accumulate) {
      const leaf = step.leaf ? this.nodesById.get(step.leaf) : null;
      const label = leaf ? hookName(leaf) : "leaf";
      const acc = h("div", { class: "gv-section" });
      acc.append(h("div", { class: "gv-section-title" }, `${label}.grad accumulates`));
      acc.append(h("div", { class: "gv-mono" }, `before: ${preview(step.grad_before)}`));
      acc.append(h("div", { class: "gv-mono" }, `after:  ${preview(step.grad_after)}`));
      acc.append(h("div", { class: "gv-hint" }, step.grad_before
        ? ".grad is added to, not replaced: call .grad.zero_() between backward passes."
        : ".grad was None, so it becomes the arriving gradient."));
      panel.append(acc);
      return;
    }
    if (node && node.formula.length) {
      const formula = h("div", { class: "gv-section" });
      formula.append(h("div", { class: "gv-section-title" }, "local derivative (chain rule)"));
      for (const item of node.formula) {
        const row = h("div", { class: "gv-formula" });
        row.append(h("code", { class: "gv-mono" }, `${item.input}: ${item.text}`));
        if (item.latex) row.append(h("span", { class: "gv-latex", title: "LaTeX" }, item.latex));
        formula.append(row);
      }
      panel.append(formula);
    }
    const sent = h("div", { class: "gv-section" });
    sent.append(h("div", { class: "gv-section-title" }, "gradients sent on"));
    step.grad_inputs.forEach((grad, slot) => {
      const targetId = step.targets[slot];
      const dest = targetId ? this.nodesById.get(targetId) : null;
      const inputName = node && node.formula[slot] ? node.formula[slot].input : `input ${slot}`;
      const leaf = dest && dest.kind === "accumulate" ? this.leafOf.get(dest.id) : null;
      const where = dest ? (leaf ? `${hookName(dest)} of ${hookName(leaf)}` : hookName(dest))
        : "nowhere (input does not require grad)";
      sent.append(h("div", { class: "gv-mono" }, `${inputName} \u2192 ${where}: ${grad ? preview(grad) : "None"}`));
    });
    panel.append(sent);
  }

  renderNodeInfo(node) {
    if (!node) return;
    const panel = this.panel;
    panel.append(h("h4", { class: "gv-panel-title" }, hookName(node)));
    const info = h("div", { class: "gv-section" });
    const row = (text) => info.append(h("div", { class: "gv-mono" }, text));
    row(`kind: ${node.kind}`);
    if (node.shape) row(`shape: ${shapeText(node.shape)} ${node.dtype || ""}`);
    if (node.value) row(`value: ${node.value.preview}`);
    if (node.kind === "leaf") row(`grad: ${preview(node.grad)}`);
    for (const item of node.formula) row(`${item.input}: ${item.text}`);
    for (const saved of node.saved) row(`saved ${saved.name}: ${saved.freed ? "freed by backward()" : preview(saved.value)}`);
    if (node.note) info.append(h("p", { class: "gv-hint" }, node.note));
    panel.append(info);
  }

  // ---------------------------------------------------------------- pan and zoom

  enablePanZoom() {
    let start = null;
    this.svg.addEventListener("pointerdown", (event) => {
      if (event.button !== 0) return;
      start = { x: event.clientX, y: event.clientY, vx: this.view.x, vy: this.view.y };
      this.dragged = false;
    });
    this.svg.addEventListener("pointermove", (event) => {
      if (!start) return;
      const dx = event.clientX - start.x;
      const dy = event.clientY - start.y;
      if (!this.dragged && Math.hypot(dx, dy) < 4) return;
      this.dragged = true;
      this.svg.setPointerCapture(event.pointerId);
      this.setView(start.vx + dx, start.vy + dy, this.view.k);
    });
    const end = () => { start = null; setTimeout(() => { this.dragged = false; }, 0); };
    this.svg.addEventListener("pointerup", end);
    this.svg.addEventListener("pointercancel", end);
    this.svg.addEventListener("wheel", (event) => {
      if (!event.ctrlKey && !event.metaKey) return; // plain wheel scrolls the page
      event.preventDefault();
      const rect = this.svg.getBoundingClientRect();
      this.zoomBy(Math.exp(-event.deltaY * 0.002), event.clientX - rect.left, event.clientY - rect.top);
    }, { passive: false });
  }

  setView(x, y, k) {
    this.view = { x, y, k };
    this.viewport.setAttribute("transform", `translate(${x},${y}) scale(${k})`);
    this.svg.classList.toggle("gv-far", k < READABLE_ZOOM);
  }

  zoomBy(factor, px = null, py = null) {
    const rect = this.svg.getBoundingClientRect();
    const cx = px === null ? rect.width / 2 : px;
    const cy = py === null ? rect.height / 2 : py;
    const k = Math.max(0.02, Math.min(4, this.view.k * factor));
    const ratio = k / this.view.k;
    this.setView(cx - (cx - this.view.x) * ratio, cy - (cy - this.view.y) * ratio, k);
  }

  /**
   * Show the whole graph; on first draw a graph too big to read that way opens at a readable
   * zoom on the output instead, where the backward pass starts (the fit button still fits),
   * unless groups are collapsed: their boxes carry labels sized to read from afar.
   */
  fitView(firstDraw = false) {
    const width = this.layout.width || 1;
    const height = this.layout.height || 1;
    const maxHeight = Number(this.model.get("height")) || 480;
    const stageWidth = this.stage.clientWidth || 800;
    const k = Math.max(0.02, Math.min(1, stageWidth / width, maxHeight / height));
    const stageHeight = Math.max(120, Math.min(maxHeight, height * k));
    const root = this.layout.nodes[this.graph.root];
    if (firstDraw && k < READABLE_ZOOM && root && this.collapsed.size === 0) {
      this.stage.style.height = `${maxHeight}px`;
      this.stageSize = { width: stageWidth, height: maxHeight };
      this.setView(stageWidth / 2 - root[0] * OPENING_ZOOM, maxHeight - 40 - root[1] * OPENING_ZOOM, OPENING_ZOOM);
      return;
    }
    this.stage.style.height = `${stageHeight}px`;
    this.stageSize = { width: stageWidth, height: stageHeight };
    this.setView((stageWidth - width * k) / 2, (stageHeight - height * k) / 2, k);
  }

  /** Pan so that a node being stepped stays in view (big graphs). */
  ensureVisible(nodeId) {
    const box = this.layout.nodes[nodeId];
    if (!box) return;
    const { x, y, k } = this.view;
    const sx = box[0] * k + x;
    const sy = box[1] * k + y;
    const { width, height } = this.stageSize;
    if (sx >= 0 && sx <= width && sy >= 0 && sy <= height) return;
    this.setView(width / 2 - box[0] * k, height / 2 - box[1] * k, k);
  }
}

/** anywidget entry point: draw into `el`, return the cleanup function. */
function render({ model, el }) {
  const view = new GraphView(model, el);
  return () => view.destroy();
}

/**
 * A tiny stand-in for the anywidget model, for pages with no kernel (the HTML export):
 * get / set / on / off / save_changes over a plain object of trait values.
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

/** Render a widget state into an element with no kernel; returns { model, cleanup }. */
export function mount(el, state) {
  const model = createModel(state);
  const cleanup = render({ model, el });
  return { model, cleanup };
}

export default { render };
