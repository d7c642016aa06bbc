// The topology page: summary with live rates, actions, the graph (live edge rates and
// capacity colours), spouts and bolts over a window, workers, errors, checkpoints, conf.
// The event stream's snapshots carry the 10-minute report with its graph and live rates;
// another window's counts and the graph's capacity colours come from
// GET /api/v1/topology/{name}?window=W (shared by every page for one publish interval).
"use strict";

(() => {
  const { el, fill, table, num, rate, ms, duration, time, enc } = SS;
  const name = SS.query().get("name") || "";
  let windowName = SS.query().get("window") || "10m";
  let lastWindowFetch = 0;
  let live = null; // the latest snapshot report (10m, with graph and rates)
  let windowReport = null; // the selected window's report (another window than 10m)

  const componentLink = (id) => el("a", { href: `component.html?topology=${enc(name)}&component=${enc(id)}`, class: "component-link" }, id);
  const logLink = (worker, text) => el("a", { href: `logs.html?topology=${enc(name)}&worker=${worker}`, class: "log-link" }, text || "log");

  function stat(label, value, id) {
    return el("div", { class: "stat" }, el("span", { class: "label" }, label), el("span", { class: "value", id }, value));
  }

  function summary(report) {
    const t = report.topology || {};
    const r = report.rates || (live && live.rates) || {};
    fill("#status", SS.statusBadge(t.status));
    document.title = `sparkstorm: ${name}`;
    fill("#summary", [
      stat("Status", t.status || "?", "stat-status"),
      stat("Uptime", duration(t.uptime_secs)),
      stat("Workers", `${num(t.workers_alive)} / ${num(t.workers)}`),
      stat("Tasks", num(t.tasks)),
      stat("Emitted", rate(r.emitted_per_sec), "rate-emitted"),
      stat("Acked", rate(r.acked_per_sec), "rate-acked"),
      stat("Failed", rate(r.failed_per_sec), "rate-failed"),
    ]);
  }

  function counts(report) {
    fill("#window-note", `${report.window_name || windowName} window, as of ${time(report.generated_at)}`);
    fill("#spouts", table([
      ["Id", (s) => componentLink(s.id)],
      ["Tasks", (s) => num(s.tasks), "num"],
      ["Emitted", (s) => num(s.emitted), "num"],
      ["Transferred", (s) => num(s.transferred), "num"],
      ["Acked", (s) => num(s.acked), "num"],
      ["Failed", (s) => SS.failedCell(s), "num"],
      ["Dead letters", (s) => SS.deadLetterCell(s), "num"],
      ["Pending", (s) => num(s.pending), "num"],
      ["Complete latency", (s) => ms(s.complete_latency_ms), "num"],
    ], report.spouts, "No spouts."));
    const bolts = table([
      ["Id", (b) => componentLink(b.id)],
      ["Tasks", (b) => num(b.tasks), "num"],
      ["Executed", (b) => num(b.executed), "num"],
      ["Emitted", (b) => num(b.emitted), "num"],
      ["Transferred", (b) => num(b.transferred), "num"],
      ["Acked", (b) => num(b.acked), "num"],
      ["Failed", (b) => SS.failedCell(b), "num"],
      ["Dead letters", (b) => SS.deadLetterCell(b), "num"],
      ["Execute latency", (b) => ms(b.execute_latency_ms), "num"],
      ["Process latency", (b) => ms(b.process_latency_ms), "num"],
      ["Capacity", (b) => SS.capacityCell(b.capacity), "num"],
      ...((report.bolts || []).some((b) => typeof b.state_keys === "number") ? [["State", SSCheckpoints.stateCell, "num"]] : []),
    ], report.bolts, "No bolts.");
    (report.bolts || []).forEach((b, i) => {
      if (typeof b.capacity === "number" && b.capacity >= 0.8) bolts.querySelectorAll("tbody tr")[i].classList.add("bottleneck");
    });
    fill("#bolts", bolts);
  }

  function workerState(w) {
    if (w.next_start_in_secs !== null && w.next_start_in_secs !== undefined) return el("span", { class: "bad" }, `DOWN, restart in ${Math.ceil(w.next_start_in_secs)}s`);
    if (w.busy_in && (w.stalled_secs || 0) >= 5) return el("span", { class: "bad" }, `BUSY ${Math.round(w.stalled_secs)}s in ${w.busy_in}`);
    if (w.stale) return el("span", { class: "bad" }, "STALE");
    return "ok";
  }

  function backpressure(w) {
    const parts = [];
    if (w.congested) parts.push(el("span", { class: "bad" }, (w.full_peers || []).length ? `congested: waits for worker ${w.full_peers.join(",")}` : "congested"));
    if ((w.throttled_by || []).length) parts.push(`throttled by ${w.throttled_by.join(",")}`);
    if (w.receive_queue) parts.push(`queue ${num(w.receive_queue)}`);
    if (w.dropped_frames) parts.push(`${num(w.dropped_frames)} bad frames`);
    return parts.length ? el("span", {}, parts.map((p, i) => [i ? ", " : "", p])) : "none";
  }

  function workers(report) {
    fill("#workers", table([
      ["Worker", (w) => w.worker],
      ["Host", (w) => w.host],
      ["Port / pid", (w) => `${w.port ?? "\u2013"} / ${w.pid ?? "\u2013"}`, "num"],
      ["Executor", (w) => w.executor],
      ["Uptime", (w) => duration(w.uptime_secs), "num"],
      ["Heartbeat", (w) => (typeof w.heartbeat_age_secs === "number" ? `${w.heartbeat_age_secs.toFixed(1)} s ago` : null), "num"],
      ["State", workerState],
      ["Tasks", (w) => (w.tasks || []).join(", ")],
      ["Restarts", (w) => num(w.restarts), "num"],
      ["Last death", (w) => (w.restart_reason ? el("span", { title: w.restart_reason }, String(w.restart_reason).trim().split("\n").pop()) : "")],
      ["Backpressure", backpressure],
      ["Log", (w) => logLink(w.worker, `worker ${w.worker} log`)],
    ], report.workers, "No workers."));
  }

  function errors(report) {
    const rows = [...(report.errors || [])].sort((a, b) => (b.time || 0) - (a.time || 0));
    fill("#errors", table([
      ["Time", (e) => time(e.time)],
      ["Component", (e) => componentLink(e.component)],
      ["Task", (e) => e.task, "num"],
      ["Host", (e) => e.host],
      ["Worker", (e) => (e.worker !== undefined && e.worker !== null ? logLink(e.worker, String(e.worker)) : null)],
      ["Error", (e) => {
        const text = String(e.text || "");
        const last = text.trim().split("\n").pop();
        return el("details", {}, el("summary", { class: "error-text" }, last), el("pre", {}, text));
      }],
    ], rows, "No errors."));
  }

  function checkpoints(report) {
    SSCheckpoints.render(SS.$("#checkpoints"), report, name);
  }

  async function loadConf() {
    try {
      const full = await SS.getJSON(`/topology/${enc(name)}?window=${enc(windowName)}`);
      const conf = Object.entries(full.conf || {}).sort((a, b) => a[0].localeCompare(b[0]));
      const t = table([["Key", (kv) => kv[0]], ["Value", (kv) => (typeof kv[1] === "string" ? kv[1] : JSON.stringify(kv[1]))]], conf, "No configuration.");
      t.classList.add("kv");
      fill("#conf", t);
      return full;
    } catch (e) {
      fill("#topology-error", e.message);
      return null;
    }
  }

  // The live graph (rates of the latest snapshot) with the bolts' capacities over the
  // selected window: the 10-minute ones unless another window's report is at hand.
  function windowGraph(graph) {
    if (windowName === "10m" || !windowReport || !windowReport.graph) return graph;
    const caps = new Map((windowReport.graph.components || []).map((c) => [c.id, c.capacity]));
    const components = (graph.components || []).map((c) => (caps.has(c.id) ? { ...c, capacity: caps.get(c.id) } : c));
    return { ...graph, components };
  }

  function showGraph(report) {
    if (!report || !report.graph) return;
    const box = SS.$("#graph");
    if (box.querySelector("p.empty")) box.replaceChildren();
    SSGraph.update(box, windowGraph(report.graph));
  }

  async function refreshWindow(force) {
    if (!force && Date.now() - lastWindowFetch < 5000) return;
    lastWindowFetch = Date.now();
    try {
      const asked = windowName;
      const report = await SS.getJSON(`/topology/${enc(name)}?window=${enc(asked)}`);
      if (asked !== windowName) return; // switched meanwhile
      windowReport = report;
      counts(report);
      showGraph(live || report);
    } catch (e) {
      SS.toast(`window ${windowName}: ${e.message}`, true);
    }
  }

  function onReport(report) {
    if (!report) return;
    live = report;
    fill("#topology-error", report.error ? report.error : "");
    summary(report);
    showGraph(report);
    workers(report);
    errors(report);
    checkpoints(report);
    if (windowName === "10m" && (report.window_name === undefined || report.window_name === "10m")) counts(report);
    else refreshWindow(false);
  }

  // A snapshot (the event stream's, or the page's own at load): this topology's report,
  // or what the summary says of it.
  function onSnapshot(snap) {
    const report = (snap.topologies || {})[name];
    if (report) onReport(report);
    else if (snap.summary) {
      const row = (snap.summary.topologies || []).find((r) => r.name === name);
      fill("#topology-error", row ? (row.error || "") : `Topology ${name} is not running.`);
    }
  }

  // Filled at once from the snapshot in the page (firstpaint.py), before anything is
  // fetched; then the selected window and the conf, then live.
  function start() {
    if (!name) { fill("#topology-error", "No topology named: open this page as topology.html?name=NAME."); return; }
    fill("#name", name);
    SS.$("#nav-logs").href = `logs.html?topology=${enc(name)}`;
    SS.$("#graph").addEventListener("component", (ev) => { location.href = `component.html?topology=${enc(name)}&component=${enc(ev.detail)}`; });
    const charts = SSCharts.attach(SS.$("#charts"), name, null, windowName);
    SS.windowSwitch(SS.$("#window"), windowName, (w) => {
      charts.setWindow(w);
      windowName = w;
      const url = new URL(location.href); url.searchParams.set("window", w); history.replaceState(null, "", url);
      windowReport = null;
      if (w === "10m" && live) { counts(live); showGraph(live); } else refreshWindow(true);
    });
    const first = SS.firstPaint();
    if (first) onSnapshot(first);
    goLive(first);
  }

  async function goLive(first) {
    if (!first) {
      const snap = await SS.firstSnapshot(name);
      if (snap) onSnapshot(snap);
    }
    const ui = await SS.info();
    SS.actionBar(SS.$("#actions"), name, () => lastWindowFetch = 0);
    const full = await loadConf();
    if (full && windowName !== "10m") windowReport = full;
    if (full) onReport({ ...full, window_name: full.window_name });
    const poll = async () => ({ topologies: { [name]: await SS.getJSON(`/topology/${enc(name)}`) } });
    SS.live(name, onSnapshot, poll, ui.publish_interval_secs);
  }

  start();
})();
