// Time-series charts, drawn here as SVG (no chart library): a topology's components side
// by side (one line each), or one component's figures.  Data:
// GET /api/v1/topology/{t}/series?window=W[&component=C] (columns; docs/UI.md, Charts),
// read again every few seconds while the tab is shown.  Text always goes in through
// textContent.
"use strict";

const SSCharts = (() => {
  const NS = "http://www.w3.org/2000/svg";
  const W = 420, H = 170, LEFT = 54, RIGHT = 10, TOP = 10, BOTTOM = 24;
  const COLOURS = ["#2563eb", "#16a34a", "#d97706", "#dc2626", "#7c3aed", "#0891b2", "#db2777", "#65a30d", "#475569", "#ea580c"];
  // What each chart shows: [title, unit, lines]; a line is [label, component => values].
  const share = (v) => `${(v * 100).toFixed(0)}%`;
  const UNITS = {
    "/s": (v) => `${fmt(v)}/s`,
    ms: (v) => `${fmt(v)} ms`,
    tuples: (v) => fmt(v),
    share,
  };

  function fmt(v) {
    if (typeof v !== "number") return "\u2013";
    const a = Math.abs(v);
    if (a >= 1e6) return `${(v / 1e6).toFixed(1)}M`;
    if (a >= 1e4) return `${(v / 1e3).toFixed(1)}k`;
    if (a >= 100) return v.toFixed(0);
    if (a >= 1) return v.toFixed(1);
    return a === 0 ? "0" : v.toPrecision(2);
  }

  function svg(tag, attrs, text) {
    const node = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
    if (text !== undefined) node.textContent = text;
    return node;
  }

  const clock = (t) => new Date(t * 1000).toISOString().slice(11, 19);

  // One chart: lines = [{label, colour, values}] over times; unit formats the axis.
  function chart(title, unit, times, lines, fixedMax) {
    const format = UNITS[unit];
    const numbers = lines.flatMap((l) => l.values.filter((v) => typeof v === "number"));
    const top = fixedMax || Math.max(...numbers, 0) * 1.1 || 1;
    const t0 = times[0], t1 = times[times.length - 1];
    const x = (i) => LEFT + (times.length > 1 ? ((times[i] - t0) / (t1 - t0 || 1)) * (W - LEFT - RIGHT) : 0);
    const y = (v) => TOP + (1 - v / top) * (H - TOP - BOTTOM);
    const points = Math.max(0, ...lines.map((l) => l.values.filter((v) => typeof v === "number").length));
    const root = svg("svg", { class: "chart", viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img", "aria-label": title, "data-points": points });
    for (const f of [0, 0.5, 1]) {
      const v = top * f;
      root.append(svg("line", { x1: LEFT, x2: W - RIGHT, y1: y(v), y2: y(v), class: "grid" }));
      root.append(svg("text", { x: LEFT - 4, y: y(v) + 4, "text-anchor": "end", class: "axis" }, format(v)));
    }
    if (times.length) {
      root.append(svg("text", { x: LEFT, y: H - 6, class: "axis" }, clock(t0)));
      root.append(svg("text", { x: W - RIGHT, y: H - 6, "text-anchor": "end", class: "axis" }, clock(t1)));
    }
    for (const line of lines) {
      let run = [];
      const flush = () => {
        if (run.length === 1) root.append(svg("circle", { cx: run[0][0], cy: run[0][1], r: 2, fill: line.colour, class: "dot" }));
        else if (run.length > 1) root.append(svg("polyline", { points: run.map((p) => p.join(",")).join(" "), stroke: line.colour, class: "line", "data-label": line.label }));
        run = [];
      };
      line.values.forEach((v, i) => { if (typeof v === "number") run.push([x(i).toFixed(1), y(Math.min(v, top)).toFixed(1)]); else flush(); });
      flush();
    }
    const cursor = svg("line", { y1: TOP, y2: H - BOTTOM, class: "cursor", visibility: "hidden" });
    root.append(cursor);
    const readout = SS.el("div", { class: "readout" }, "\u00a0");
    root.addEventListener("mousemove", (ev) => {
      if (!times.length) return;
      const box = root.getBoundingClientRect();
      const px = ((ev.clientX - box.left) / box.width) * W;
      let best = 0;
      times.forEach((_, i) => { if (Math.abs(x(i) - px) < Math.abs(x(best) - px)) best = i; });
      cursor.setAttribute("x1", x(best)); cursor.setAttribute("x2", x(best)); cursor.setAttribute("visibility", "visible");
      readout.textContent = `${clock(times[best])}  ` + lines.map((l) => `${l.label} ${typeof l.values[best] === "number" ? format(l.values[best]) : "\u2013"}`).join(", ");
    });
    root.addEventListener("mouseleave", () => { cursor.setAttribute("visibility", "hidden"); readout.textContent = "\u00a0"; });
    const legend = SS.el("div", { class: "chart-legend" }, lines.map((l) => SS.el("span", { style: `--c:${l.colour}` }, l.label)));
    return SS.el("figure", { class: "chart-box", "data-chart": title }, SS.el("figcaption", {}, title), root, legend, readout);
  }

  // The charts of a whole topology: one line per component in each.
  function topologyCharts(data) {
    const ids = Object.keys(data.components || {}).sort();
    const colour = new Map(ids.map((id, i) => [id, COLOURS[i % COLOURS.length]]));
    const lines = (pick, only) => ids.filter((id) => !only || only(data.components[id]))
      .map((id) => ({ label: id, colour: colour.get(id), values: pick(data.components[id]) }));
    const spout = (c) => c.kind === "spout";
    const t = data.times || [];
    return [
      chart("Throughput (spouts: emitted, bolts: executed)", "/s", t, lines((c) => (spout(c) ? c.emitted_per_sec : c.executed_per_sec))),
      chart("Latency p99 (spouts: complete, bolts: execute)", "ms", t, lines((c) => c.latency_p99_ms)),
      chart("Failed", "/s", t, lines((c) => c.failed_per_sec)),
      chart("Queue (bolts: queued tuples, spouts: pending trees)", "tuples", t, lines((c) => c.queue)),
      chart("Backpressured (share of time)", "share", t, lines((c) => c.backpressured), 1),
      chart("Busy (share of time in bolts' execute, spouts' next_tuple)", "share", t, lines((c) => c.busy), 1),
    ];
  }

  // The charts of one component: its figures as lines.
  function componentCharts(data, component) {
    const c = (data.components || {})[component] || {};
    const t = data.times || [];
    const spout = c.kind === "spout";
    const line = (label, key, i) => ({ label, colour: COLOURS[i], values: c[key] || [] });
    const charts = [
      chart("Throughput", "/s", t, spout
        ? [line("emitted", "emitted_per_sec", 0), line("acked", "acked_per_sec", 1)]
        : [line("executed", "executed_per_sec", 0), line("emitted", "emitted_per_sec", 1), line("acked", "acked_per_sec", 2)]),
      chart(`${spout ? "Complete" : "Execute"} latency`, "ms", t,
        [line("p50", "latency_p50_ms", 0), line("p95", "latency_p95_ms", 2), line("p99", "latency_p99_ms", 3)]),
      chart("Failed", "/s", t, [line("failed", "failed_per_sec", 3)]),
      chart(spout ? "Pending trees" : "Queued tuples", "tuples", t, [line(spout ? "pending" : "queued", "queue", 4)]),
      chart("Backpressured (share of time)", "share", t, [line("backpressured", "backpressured", 2)], 1),
    ];
    charts.push(chart(`Busy (share of time in ${spout ? "next_tuple" : "execute"})`, "share", t, [line("busy", "busy", 1)], 1));
    return charts;
  }

  // Charts of topology (of one component when given) in container, refreshed every few
  // seconds; setWindow("10m" | "3h" | "1d" | "all") switches (all: the last day).
  function attach(container, topology, component, windowName, refreshSecs) {
    let current = windowName;
    let busy = false;
    const series = () => (current === "all" ? "1d" : current);
    async function refresh(force) {
      if (busy || (document.hidden && force !== true)) return; // a hidden tab asks nothing
      busy = true;
      const asked = series();
      try {
        const path = `/topology/${SS.enc(topology)}/series?window=${asked}${component ? `&component=${SS.enc(component)}` : ""}`;
        const data = await SS.getJSON(path);
        if (asked !== series()) return;
        const note = `last ${asked} in ${data.step_secs} s steps, ${data.times.length} points, from ${data.source === "prometheus" ? "Prometheus" : "this UI's memory"}${current === "all" ? " (charts cover at most a day)" : ""}${data.source_error ? ` (Prometheus: ${data.source_error})` : ""}`;
        const charts = component ? componentCharts(data, component) : topologyCharts(data);
        SS.fill(container, SS.el("p", { class: "note chart-note" }, note), SS.el("div", { class: "charts" }, charts));
      } catch (e) {
        SS.fill(container, SS.el("p", { class: "bad" }, `charts: ${e.message}`));
      } finally {
        busy = false;
      }
    }
    refresh(true);
    setInterval(refresh, Math.max(2, refreshSecs || 2) * 1000);
    return { refresh, setWindow: (w) => { current = w; refresh(true); } };
  }

  return { attach, chart };
})();
