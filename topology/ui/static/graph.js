// The topology graph, drawn in the browser from the API's "graph" object: the same layout,
// colours and markup as topology/ui/svg.py (render_svg), so a page and
// `sparkstorm visualize --format svg` show one picture.  Keep the two in step.
//
// graph = {"components": [{"id", "kind", "tasks", "capacity", ...}],
//          "edges": [{"from", "to", "stream", "grouping", "fields", "tuples_per_sec", "backpressured"}]}
// (components may also be a describe_components dict whose entries carry "inputs").
//
// SSGraph.draw(container, graph) draws it; SSGraph.update(container, graph) changes only
// rates and capacities when the structure is unchanged, else redraws.  All text goes in
// through textContent / setAttribute, never as markup.
"use strict";

const SSGraph = (() => {
  const NS = "http://www.w3.org/2000/svg";
  const NAME_PX = 13, DETAIL_PX = 11, LABEL_PX = 10;
  const BOX_H = 56, V_GAP = 28, MARGIN = 24, TOP = 34, PAD_X = 12;
  const WAY_H = 14, WAY_GAP = 8, MIN_BOX_W = 110, MIN_COL_GAP = 70, MAX_NAME = 32;
  const LOOP_STEP = 12;
  const ZOOM = 1.25; // drawn a little larger than the SVG file, same proportions
  const PALETTE = {
    spout: ["#dbeafe", "#2563eb"], low: ["#dcfce7", "#16a34a"],
    medium: ["#fef3c7", "#d97706"], high: ["#fee2e2", "#dc2626"],
    unknown: ["#f1f5f9", "#64748b"], missing: ["#ffffff", "#94a3b8"],
  };

  function capacityLevel(cap) {
    if (cap === null || cap === undefined || typeof cap !== "number") return "unknown";
    if (cap < 0.5) return "low";
    return cap < 0.8 ? "medium" : "high";
  }

  function formatRate(rate) {
    if (rate >= 1e6) return (rate / 1e6).toFixed(1) + "M/s";
    if (rate >= 1e4) return (rate / 1e3).toFixed(1) + "k/s";
    if (rate >= 100 || rate === Math.trunc(rate)) {
      return Math.round(rate).toLocaleString("en-US") + "/s";
    }
    return rate.toFixed(1) + "/s";
  }

  function textWidth(text, px, bold) {
    return [...text].length * px * (bold ? 0.68 : 0.62);
  }

  function shorten(t) {
    const chars = [...t];
    return chars.length <= MAX_NAME ? t : chars.slice(0, MAX_NAME - 1).join("") + "\u2026";
  }

  // -- reading the graph ----------------------------------------------------------------

  function normalise(graph) {
    const comps = new Map(); // id -> {kind, tasks, capacity}
    const edges = [];
    const given = (graph && graph.components) || [];
    if (Array.isArray(given)) {
      for (const n of given) if (n && n.id !== undefined) comps.set(String(n.id), n);
      for (const e of graph.edges || []) {
        edges.push({
          source: String(e.from ?? e.source), target: String(e.to ?? e.target),
          stream: String(e.stream || "default"), grouping: String(e.grouping || "?"),
          fields: (e.fields || []).map(String), rate: numberOrNull(e.tuples_per_sec ?? e.rate),
          backpressured: e.backpressured === true,
        });
      }
    } else {
      for (const [id, info] of Object.entries(given)) {
        comps.set(id, { id, ...info });
        for (const i of info.inputs || []) {
          edges.push({
            source: String(i.component), target: id, stream: String(i.stream || "default"),
            grouping: String(i.grouping || "?"), fields: (i.fields || []).map(String), rate: null,
          });
        }
      }
    }
    // arrows() order: by subscriber in declaration order, then its inputs
    for (let i = edges.length - 1; i >= 0; i--) if (!comps.has(edges[i].target)) edges.splice(i, 1);
    const order = new Map([...comps.keys()].map((k, i) => [k, i]));
    edges.forEach((e, i) => { e.index = i; });
    edges.sort((a, b) => ((order.get(a.target) ?? 1e9) - (order.get(b.target) ?? 1e9))
      || a.index - b.index);
    for (const e of edges) {
      const g = e.fields.length ? `${e.grouping}[${e.fields.join(", ")}]` : e.grouping;
      e.label = e.stream === "default" ? g : `${e.stream}: ${g}`;
      e.key = `${e.source}\u0000${e.stream}\u0000${e.target}`;
    }
    return { comps, edges };
  }

  function numberOrNull(v) {
    return typeof v === "number" && isFinite(v) ? v : null;
  }

  function kindOf(comps, n) {
    const c = comps.get(n);
    if (!c) return "missing";
    return c.kind === "spout" ? "spout" : "bolt";
  }

  function boxLines(c) {
    if (!c) return ["not in the topology"];
    const tasks = Number(c.tasks || 0);
    const kind = c.kind === "spout" ? "spout" : "bolt";
    const lines = [`${kind} \u00d7 ${tasks} task${tasks !== 1 ? "s" : ""}`];
    if (kind === "bolt") lines.push(capacityText(c.capacity));
    return lines;
  }

  function capacityText(cap) {
    return typeof cap === "number" ? `capacity ${cap.toFixed(3)}` : "capacity \u2013";
  }

  // -- layout (svg_layout.py) -----------------------------------------------------------

  function columns(nodes, comps, edges) {
    const kinds = new Map(nodes.map((n) => [n, kindOf(comps, n)]));
    const preds = new Map(nodes.map((n) => [n, new Set()]));
    for (const e of edges) if (e.source !== e.target) preds.get(e.target).add(e.source);
    const placed = nodes.filter((n) => kinds.get(n) !== "bolt");
    const done = new Set(placed);
    let remaining = nodes.filter((n) => !done.has(n));
    while (remaining.length) {
      const pick = remaining.find((n) => [...preds.get(n)].every((p) => done.has(p)))
        ?? remaining[0];
      placed.push(pick); done.add(pick);
      remaining = remaining.filter((n) => n !== pick);
    }
    const pos = new Map(placed.map((n, i) => [n, i]));
    const floor = nodes.some((n) => kinds.get(n) !== "bolt") ? 1 : 0;
    const col = new Map();
    for (const n of placed) {
      if (kinds.get(n) !== "bolt") { col.set(n, 0); continue; }
      let c = floor;
      for (const e of edges) {
        if (e.target === n && pos.get(e.source) < pos.get(n)) c = Math.max(c, col.get(e.source) + 1);
      }
      col.set(n, c);
    }
    return col;
  }

  function sweep(layers, near, order) {
    const row = new Map();
    layers.forEach((l) => l.forEach((item, r) => row.set(item, r)));
    for (const c of order) {
      const keyed = layers[c].map((item, r) => {
        const ns = (near.get(item) || []).filter((n) => row.has(n)).map((n) => row.get(n));
        return [ns.length ? ns.reduce((a, b) => a + b, 0) / ns.length : r, r, item];
      });
      keyed.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
      layers[c] = keyed.map((k) => k[2]);
      layers[c].forEach((item, r) => row.set(item, r));
    }
  }

  function layout(comps, edges) {
    const nodes = [...comps.keys()];
    for (const e of edges) if (!nodes.includes(e.source)) nodes.push(e.source);
    const col = columns(nodes, comps, edges);
    const count = Math.max(-1, ...col.values()) + 1;
    const layers = [...Array(count)].map((_, c) => nodes.filter((n) => col.get(n) === c));
    const chains = new Map();
    edges.forEach((e, i) => {
      const cs = col.get(e.source), ct = col.get(e.target);
      if (ct > cs) {
        const chain = [e.source];
        for (let c = cs + 1; c < ct; c++) {
          const way = `\u0001${i}:${c}`; chain.push(way); layers[c].push(way);
        }
        chain.push(e.target); chains.set(i, chain);
      }
    });
    const prev = new Map(), succ = new Map();
    for (const chain of chains.values()) {
      for (let k = 1; k < chain.length; k++) {
        if (!prev.has(chain[k])) prev.set(chain[k], []);
        if (!succ.has(chain[k - 1])) succ.set(chain[k - 1], []);
        prev.get(chain[k]).push(chain[k - 1]); succ.get(chain[k - 1]).push(chain[k]);
      }
    }
    const range = (a, b, s) => { const r = []; for (let i = a; s > 0 ? i < b : i > b; i += s) r.push(i); return r; };
    sweep(layers, prev, range(1, count, 1));
    sweep(layers, succ, range(count - 2, -1, -1));
    sweep(layers, prev, range(1, count, 1));
    return place(comps, edges, col, layers, chains);
  }

  const isWay = (item) => item.startsWith("\u0001");

  function extent(layer) {
    let total = 0;
    for (const n of layer) total += isWay(n) ? WAY_H + WAY_GAP : BOX_H + V_GAP;
    return layer.length ? total - (isWay(layer[layer.length - 1]) ? WAY_GAP : V_GAP) : 0;
  }

  function place(comps, edges, col, layers, chains) {
    const widths = layers.map((layer) => {
      let w = MIN_BOX_W;
      for (const n of layer) {
        if (isWay(n)) continue;
        w = Math.max(w, textWidth(shorten(n), NAME_PX, true) + 2 * PAD_X);
        const lines = boxLines(comps.get(n)).map((s) => s.startsWith("capacity") ? "capacity 0.000" : s);
        for (const s of lines) w = Math.max(w, textWidth(s, DETAIL_PX) + 2 * PAD_X);
      }
      return w;
    });
    const gaps = layers.slice(1).map(() => MIN_COL_GAP);
    for (const e of edges) {
      const c = col.get(e.source);
      if (c < gaps.length && col.get(e.target) > c) gaps[c] = Math.max(gaps[c], textWidth(e.label, LABEL_PX) + 40);
    }
    const height = Math.max(0, ...layers.map(extent));
    const boxes = new Map(), spots = new Map();
    let x = MARGIN;
    layers.forEach((layer, c) => {
      let y = TOP + (height - extent(layer)) / 2;
      for (const n of layer) {
        if (isWay(n)) { spots.set(n, [x, x + widths[c], y + WAY_H / 2]); y += WAY_H + WAY_GAP; }
        else { boxes.set(n, { name: n, kind: kindOf(comps, n), x, y, w: widths[c], h: BOX_H, col: c }); y += BOX_H + V_GAP; }
      }
      x += widths[c] + (c < gaps.length ? gaps[c] : 0);
    });
    const waypoints = new Map();
    for (const [i, chain] of chains) if (chain.length > 2) waypoints.set(i, chain.slice(1, -1).map((w) => spots.get(w)));
    const bottom = TOP + height;
    const below = new Map();
    let k = 0;
    edges.forEach((e, i) => { if (e.source !== e.target && !chains.has(i)) below.set(i, bottom + 22 + LOOP_STEP * k++); });
    return {
      boxes, chains, waypoints, below,
      width: x + MARGIN, height: bottom + MARGIN + 12 + (k ? k * LOOP_STEP + 22 : 0),
    };
  }

  // -- edges (svg.py) -------------------------------------------------------------------

  function chainPoints(lay, edges) {
    const inner = new Map();
    edges.forEach((e, i) => {
      const s = lay.boxes.get(e.source), t = lay.boxes.get(e.target);
      if (e.source !== e.target && t.x > s.x) {
        inner.set(i, (lay.waypoints.get(i) || []).flatMap(([x0, x1, y]) => [[x0, y], [x1, y]]));
      }
    });
    const centre = (n) => lay.boxes.get(n).y + lay.boxes.get(n).h / 2;
    const starts = new Map(), ends = new Map();
    for (const [i, pts] of inner) {
      const e = edges[i];
      if (!starts.has(e.source)) starts.set(e.source, []);
      if (!ends.has(e.target)) ends.set(e.target, []);
      starts.get(e.source).push([pts.length ? pts[0][1] : centre(e.target), i]);
      ends.get(e.target).push([pts.length ? pts[pts.length - 1][1] : centre(e.source), i]);
    }
    const port = new Map();
    [[0, starts], [1, ends]].forEach(([side, groups]) => {
      for (const [name, group] of groups) {
        const b = lay.boxes.get(name);
        group.sort((a, c) => a[0] - c[0] || a[1] - c[1]);
        group.forEach(([, i], k) => port.set(`${i}:${side}`, b.y + b.h * (k + 1) / (group.length + 1)));
      }
    });
    const out = new Map();
    for (const [i, pts] of inner) {
      const s = lay.boxes.get(edges[i].source), t = lay.boxes.get(edges[i].target);
      out.set(i, [[s.x + s.w, port.get(`${i}:0`)], ...pts, [t.x, port.get(`${i}:1`)]]);
    }
    return out;
  }

  const f1 = (v) => v.toFixed(1);

  function curve(points) {
    let [x, y] = points[0];
    const d = [`M${f1(x)},${f1(y)}`];
    points.slice(1).forEach(([nx, ny], j) => {
      if ((j + 1) % 2 === 0) d.push(`L${f1(nx)},${f1(ny)}`);
      else {
        const dx = Math.max((nx - x) / 2, 10);
        d.push(`C${f1(x + dx)},${f1(y)} ${f1(nx - dx)},${f1(ny)} ${f1(nx)},${f1(ny)}`);
      }
      [x, y] = [nx, ny];
    });
    return d.join(" ");
  }

  function loop(e, s, t, depth) {
    if (depth === undefined) {
      const x0 = s.x + s.w * 0.3, x1 = s.x + s.w * 0.55, top = s.y - 22;
      return [`M${f1(x0)},${f1(s.y)} C${f1(x0)},${f1(top)} ${f1(x1)},${f1(top)} ${f1(x1)},${f1(s.y)}`,
        x1 + 6 + textWidth(e.label, LABEL_PX) / 2, s.y - 16];
    }
    const sx = s.x + s.w / 2, tx = t.x + t.w / 2;
    return [`M${f1(sx)},${f1(s.y + s.h)} C${f1(sx)},${f1(depth)} ${f1(sx)},${f1(depth)} ${f1(sx - 12)},${f1(depth)} ` +
      `L${f1(tx + 12)},${f1(depth)} C${f1(tx)},${f1(depth)} ${f1(tx)},${f1(depth)} ${f1(tx)},${f1(t.y + t.h)}`,
      (sx + tx) / 2, depth];
  }

  function geometry(lay, edges) {
    const chains = chainPoints(lay, edges);
    const out = new Map(), byGap = new Map();
    edges.forEach((e, i) => {
      if (chains.has(i)) {
        const [[x0, y0], [x1, y1]] = chains.get(i);
        out.set(i, [curve(chains.get(i)), (x0 + x1) / 2, (y0 + y1) / 2]);
        const c = lay.boxes.get(e.source).col;
        if (!byGap.has(c)) byGap.set(c, []);
        byGap.get(c).push(i);
      } else {
        out.set(i, loop(e, lay.boxes.get(e.source), lay.boxes.get(e.target), lay.below.get(i)));
      }
    });
    for (const group of byGap.values()) {
      group.sort((a, b) => out.get(a)[2] - out.get(b)[2] || a - b);
      let floor = -Infinity;
      for (const i of group) {
        const g = out.get(i);
        g[2] = Math.max(g[2], floor + 13 + 2);
        floor = g[2] + 13;
      }
    }
    return out;
  }

  // -- drawing --------------------------------------------------------------------------

  function svgEl(tag, attrs, text) {
    const el = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
    if (text !== undefined) el.textContent = text;
    return el;
  }

  function structure(comps, edges) {
    const c = [...comps.values()].map((n) => `${n.id}|${n.kind}|${n.tasks}`);
    return JSON.stringify([c, edges.map((e) => e.key + "|" + e.label)]);
  }

  function drawEdge(root, e, i, g) {
    const [d, lx, ly] = g;
    const grp = svgEl("g", { id: `e${i}`, class: "edge", "data-source": e.source, "data-stream": e.stream, "data-target": e.target });
    grp.appendChild(svgEl("title", {}, `${e.source}:${e.stream} -> ${e.target} (${e.label})`));
    grp.appendChild(svgEl("path", { d, fill: "none", stroke: "#475569", "stroke-width": 1.4, "marker-end": "url(#ss-arrow)" }));
    const w = Math.max(textWidth(e.label, LABEL_PX), textWidth("000.0k/s", LABEL_PX)) + 8;
    grp.appendChild(svgEl("rect", { x: f1(lx - w / 2), y: f1(ly - 13), width: f1(w), height: 26, rx: 3, fill: "#ffffff", "fill-opacity": 0.85 }));
    grp.appendChild(svgEl("text", { x: f1(lx), y: f1(ly - 2), "text-anchor": "middle", "font-size": LABEL_PX, fill: "#334155" }, e.label));
    grp.appendChild(svgEl("text", { class: "rate", x: f1(lx), y: f1(ly + 10), "text-anchor": "middle", "font-size": LABEL_PX, "font-weight": "bold", fill: "#0f172a" }, ""));
    root.appendChild(grp);
  }

  function drawNode(root, box, c, i) {
    const grp = svgEl("g", { id: `n${i}`, class: `node ${box.kind}`, "data-component": box.name, "data-kind": box.kind });
    grp.appendChild(svgEl("title", {}, box.name));
    grp.appendChild(svgEl("rect", { x: f1(box.x), y: f1(box.y), width: f1(box.w), height: f1(box.h), rx: box.kind === "spout" ? 14 : 4, "stroke-width": 1.5 }));
    const cx = f1(box.x + box.w / 2);
    grp.appendChild(svgEl("text", { x: cx, y: f1(box.y + 18), "text-anchor": "middle", "font-size": NAME_PX, "font-weight": "bold", fill: "#0f172a" }, shorten(box.name)));
    boxLines(c).forEach((line, k) => {
      const attrs = { x: cx, y: f1(box.y + 34 + 13 * k), "text-anchor": "middle", "font-size": DETAIL_PX, fill: "#334155" };
      if (line.startsWith("capacity")) attrs.class = "capacity";
      grp.appendChild(svgEl("text", attrs, line));
    });
    if (box.kind !== "missing") {
      grp.style.cursor = "pointer";
      grp.addEventListener("click", () => grp.dispatchEvent(new CustomEvent("component", { bubbles: true, detail: box.name })));
    }
    root.appendChild(grp);
  }

  function draw(container, graph) {
    const { comps, edges } = normalise(graph);
    const lay = layout(comps, edges);
    const geo = geometry(lay, edges);
    const svg = svgEl("svg", {
      class: "sparkstorm-graph", width: Math.round(lay.width * ZOOM), height: Math.round(lay.height * ZOOM),
      viewBox: `0 0 ${Math.round(lay.width)} ${Math.round(lay.height)}`,
      "font-family": "DejaVu Sans, Helvetica, Arial, sans-serif", role: "img",
    });
    const defs = svgEl("defs");
    const marker = svgEl("marker", { id: "ss-arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
    marker.appendChild(svgEl("path", { d: "M0,0 L10,5 L0,10 z", fill: "#475569" }));
    defs.appendChild(marker);
    svg.appendChild(defs);
    svg.appendChild(svgEl("rect", { width: "100%", height: "100%", fill: "#ffffff" }));
    edges.forEach((e, i) => drawEdge(svg, e, i, geo.get(i)));
    [...lay.boxes.values()].forEach((box, i) => drawNode(svg, box, comps.get(box.name), i));
    container.replaceChildren(svg);
    container.dataset.structure = structure(comps, edges);
    paint(container, comps, edges);
  }

  function paint(container, comps, edges) {
    for (const g of container.querySelectorAll("g.node")) {
      const name = g.getAttribute("data-component");
      const kind = g.getAttribute("data-kind");
      const c = comps.get(name);
      const level = kind === "bolt" ? capacityLevel(c && c.capacity) : kind;
      g.setAttribute("class", `node ${kind} cap-${level}`);
      const rect = g.querySelector("rect");
      rect.setAttribute("fill", PALETTE[level][0]);
      rect.setAttribute("stroke", PALETTE[level][1]);
      rect.setAttribute("stroke-width", level === "high" ? 2.5 : 1.5);
      const cap = g.querySelector("text.capacity");
      if (cap) cap.textContent = capacityText(c && c.capacity);
    }
    const byKey = new Map(edges.map((e) => [e.key, e]));
    for (const g of container.querySelectorAll("g.edge")) {
      const key = [g.getAttribute("data-source"), g.getAttribute("data-stream"), g.getAttribute("data-target")].join("\u0000");
      const e = byKey.get(key);
      const rate = e && e.rate !== null ? formatRate(e.rate) : "";
      g.querySelector("text.rate").textContent = rate;
      g.setAttribute("data-rate", e && e.rate !== null ? String(e.rate) : "");
      paintPressure(g, Boolean(e && e.backpressured));
    }
  }

  // A backpressured edge (frames wait for its target's full queue): thick and red (svg.py).
  function paintPressure(g, pressed) {
    g.classList.toggle("backpressured", pressed);
    const path = g.querySelector("path");
    path.setAttribute("stroke", pressed ? "#dc2626" : "#475569");
    path.setAttribute("stroke-width", pressed ? 3.5 : 1.4);
    const title = g.querySelector("title");
    title.textContent = title.textContent.replace(/: backpressured$/, "") + (pressed ? ": backpressured" : "");
  }

  function update(container, graph) {
    const { comps, edges } = normalise(graph);
    if (container.dataset.structure !== structure(comps, edges) || !container.querySelector("svg")) {
      draw(container, graph);
    } else {
      paint(container, comps, edges);
    }
  }

  return { draw, update, capacityLevel, formatRate, PALETTE };
})();
