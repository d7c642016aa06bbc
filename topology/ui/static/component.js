// The component page: per-task statistics over a window, its streams in and out, its
// charts (charts.js), its errors newest first, and links to the logs of the workers running it.
// Data: GET /api/v1/topology/{t}/component/{c}?window=W, fetched again on every snapshot.
"use strict";

(() => {
  const { el, fill, table, num, rate, ms, time, enc } = SS;
  const q = SS.query();
  const topology = q.get("topology") || "";
  const component = q.get("component") || "";
  let windowName = q.get("window") || "10m";
  let busy = false;

  const logLink = (worker, text) => el("a", {
    href: `logs.html?topology=${enc(topology)}&worker=${worker}&component=${enc(component)}`, class: "log-link",
  }, text);

  function stat(label, value) {
    return el("div", { class: "stat" }, el("span", { class: "label" }, label), el("span", { class: "value" }, value));
  }

  function summary(p) {
    const s = p.stats || {}, r = p.rates || {};
    const spout = p.kind === "spout";
    fill("#kind", p.kind || "?");
    fill("#summary", [
      stat("Tasks", num(p.tasks)),
      stat("Emitted", num(s.emitted)),
      spout ? stat("Acked", num(s.acked)) : stat("Executed", num(s.executed)),
      stat("Failed", num(s.failed)),
      stat("Dead letters", num(s.dead_lettered)),
      spout ? stat("Complete latency", ms(s.complete_latency_ms)) : stat("Execute latency", ms(s.execute_latency_ms)),
      spout ? null : stat("Capacity", SS.capacityCell(s.capacity)),
      stat("Emitted now", rate(r.emitted_per_sec)),
      spout ? stat("Acked now", rate(r.acked_per_sec)) : stat("Executed now", rate(r.executed_per_sec)),
    ]);
    fill("#window-note", `${p.window_name || windowName} window`);
  }

  function streams(p) {
    const own = Object.entries(p.streams || {}).map(([s, f]) => ({ stream: s, fields: f }));
    fill("#streams", [
      el("h3", {}, "Declares"),
      table([["Stream", (s) => s.stream], ["Fields", (s) => (s.fields || []).join(", ")]], own, "No output streams."),
      el("h3", {}, "Subscribes to"),
      table([
        ["Component", (i) => el("a", { href: `component.html?topology=${enc(topology)}&component=${enc(i.component)}` }, i.component)],
        ["Stream", (i) => i.stream], ["Grouping", (i) => i.grouping], ["Fields", (i) => (i.fields || []).join(", ")],
      ], p.inputs, "Nothing (a spout)."),
      el("h3", {}, "Feeds"),
      table([
        ["Component", (o) => el("a", { href: `component.html?topology=${enc(topology)}&component=${enc(o.to)}` }, o.to)],
        ["Stream", (o) => o.stream], ["Grouping", (o) => o.grouping], ["Fields", (o) => (o.fields || []).join(", ")],
      ], p.outputs, "No subscribers."),
    ]);
  }

  function tasks(p) {
    const spout = p.kind === "spout";
    fill("#tasks", table([
      ["Task", (t) => t.task, "num"],
      ["Worker", (t) => t.worker, "num"],
      ["Host", (t) => t.host],
      ["Pid", (t) => t.pid, "num"],
      ["Emitted", (t) => num(t.emitted), "num"],
      ["Transferred", (t) => num(t.transferred), "num"],
      spout ? ["Acked", (t) => num(t.acked), "num"] : ["Executed", (t) => num(t.executed), "num"],
      ["Failed", (t) => SS.failedCell(t), "num"],
      ["Dead letters", (t) => SS.deadLetterCell(t), "num"],
      spout ? ["Complete latency", (t) => ms(t.complete_latency_ms), "num"] : ["Execute latency", (t) => ms(t.execute_latency_ms), "num"],
      spout ? ["Pending", (t) => num(t.pending), "num"] : ["Process latency", (t) => ms(t.process_latency_ms), "num"],
      spout ? null : ["Capacity", (t) => SS.capacityCell(t.capacity), "num"],
      ["Errors", (t) => num(t.errors), "num"],
      ["Log", (t) => (t.worker !== undefined && t.worker !== null ? logLink(t.worker, `worker ${t.worker}`) : null)],
    ].filter(Boolean), p.task_stats, "No task reported (is the topology running?)."));
  }

  function errors(p) {
    const rows = [...(p.errors || [])].sort((a, b) => (b.time || 0) - (a.time || 0));
    fill("#errors", table([
      ["Time", (e) => time(e.time)],
      ["Task", (e) => e.task, "num"],
      ["Host", (e) => e.host],
      ["Worker", (e) => (e.worker !== undefined && e.worker !== null ? logLink(e.worker, String(e.worker)) : null)],
      ["Error", (e) => {
        const text = String(e.text || "");
        return el("details", {}, el("summary", { class: "error-text" }, text.trim().split("\n").pop()), el("pre", {}, text));
      }],
    ], rows, "No errors."));
  }

  async function refresh() {
    if (busy) return;
    busy = true;
    try {
      const p = await SS.getJSON(`/topology/${enc(topology)}/component/${enc(component)}?window=${enc(windowName)}`);
      fill("#component-error", "");
      summary(p); streams(p); tasks(p); errors(p);
    } catch (e) {
      fill("#component-error", e.message);
    } finally {
      busy = false;
    }
  }

  async function start() {
    if (!topology || !component) { fill("#component-error", "Open this page as component.html?topology=NAME&component=ID."); return; }
    fill("#name", `${topology} / ${component}`);
    document.title = `sparkstorm: ${topology} / ${component}`;
    SS.$("#nav-topology").href = `topology.html?name=${enc(topology)}`;
    SS.$("#nav-logs").href = `logs.html?topology=${enc(topology)}&component=${enc(component)}`;
    const ui = await SS.info();
    const charts = SSCharts.attach(SS.$("#charts"), topology, component, windowName, ui.publish_interval_secs);
    SS.windowSwitch(SS.$("#window"), windowName, (w) => { windowName = w; refresh(); charts.setWindow(w); });
    await refresh();
    // every snapshot (or poll) is the cue to read the component again
    let last = Date.now();
    const tick = () => { if (Date.now() - last >= 3000) { last = Date.now(); refresh(); } };
    SS.live(topology, tick, async () => ({}), Math.max(3, ui.publish_interval_secs || 3));
  }

  start();
})();
