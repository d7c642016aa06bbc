// Checkpoints and state on the topology page: the Checkpoints panel (a summary line, the
// recent checkpoints' history and the savepoints taken) and the bolts table's state cell.
// The report's "checkpoints" section (topology/stats/status_report.py) carries the
// summary and "history"; savepoints come from GET /api/v1/topology/{name}/savepoints.
"use strict";

const SSCheckpoints = (() => {
  const { el, fill, table, num, time, enc } = SS;
  const SAVEPOINTS_EVERY_MS = 30000;
  let savepointsAt = 0;
  let savepoints = null; // the last listing, or {error}

  // Bytes in decimal units, as `sparkstorm status` shows them: 512 B, 1.50 kB, 34.0 MB.
  function bytes(n) {
    if (typeof n !== "number") return "\u2013";
    for (const [unit, scale] of [["GB", 1e9], ["MB", 1e6], ["kB", 1e3]]) {
      if (n >= scale) {
        const v = n / scale;
        return `${v < 10 ? v.toFixed(2) : v < 100 ? v.toFixed(1) : v.toFixed(0)} ${unit}`;
      }
    }
    return `${Math.round(n)} B`;
  }

  // A stateful bolt's live state (keys, bytes summed over its tasks, and its cache's hit rate
  // for a disk-backed one); "–" for others.
  function stateCell(b) {
    if (typeof b.state_keys !== "number") return "\u2013";
    const cached = typeof b.state_cache_hit_rate === "number" ? `, ${(100 * b.state_cache_hit_rate).toFixed(1)}% cached` : "";
    return el("span", { class: "state", title: "live state of its tasks: keys, bytes, reads its cache answered" }, `${num(b.state_keys)} keys, ${bytes(b.state_bytes)}${cached}`);
  }

  // Milliseconds: 3 decimals below 10, 1 below 1000, none above (2,587 ms).
  const msShort = (n) => (typeof n !== "number" ? "\u2013"
    : `${n.toLocaleString("en-US", { maximumFractionDigits: n < 10 ? 3 : n < 1000 ? 1 : 0 })} ms`);
  const secs = (s) => (typeof s === "number" ? `${s.toLocaleString("en-US", { maximumFractionDigits: 1 })} s` : "\u2013");

  function summary(c) {
    const interval = c.interval_secs || 1;
    let head;
    if (c.last_complete === null || c.last_complete === undefined || typeof c.last_complete_age_secs !== "number") {
      head = el("span", { class: "warn" }, "No checkpoint complete yet");
    } else {
      const late = c.last_complete_age_secs > 3 * interval;
      head = el("span", { class: late ? "warn" : "good", title: late ? "older than 3 intervals" : null },
        `Last complete: #${c.last_complete}, ${secs(c.last_complete_age_secs)} ago (took ${msShort(1000 * (c.last_duration_secs || 0))})`);
    }
    const facts = [
      `every ${secs(c.interval_secs)}`,
      `${num(c.completed || 0)} completed`,
      `${num(c.abandoned || 0)} abandoned`,
      `${num(c.recoveries || 0)} recoveries`,
      `${num(c.rollbacks || 0)} rollbacks restored`,
      `${num(c.waiting_acks || 0)} spout acks waiting for a commit`,
    ];
    const warnings = [];
    if (c.recovering) warnings.push(el("span", { class: "bad" }, `RECOVERING: ${num(c.paused_workers || 0)} worker(s) restored and paused`));
    if (c.declined) warnings.push(el("span", { class: "warn" }, `${num(c.declined)} declined (alignment gave up or a hook raised)`));
    if (c.restore_refused) warnings.push(el("span", { class: "warn" }, `${num(c.restore_refused)} restored entries refused (see errors)`));
    return el("p", { id: "checkpoint-summary", class: "checkpoint-summary" }, head, " \u00b7 ", facts.join(" \u00b7 "),
      warnings.map((w) => [" \u00b7 ", w]));
  }

  function statusCell(r) {
    const cls = { completed: "good", abandoned: "bad", in_progress: "warn" }[r.status] || "";
    const text = String(r.status || "?").replace("_", " ");
    return el("span", { class: cls, title: r.reason || null }, r.reason ? `${text}: ${r.reason}` : text);
  }

  function componentsCell(r) {
    const parts = Object.entries(r.components || {}).sort((a, b) => b[1].bytes - a[1].bytes);
    if (!parts.length) return "\u2013";
    return el("span", {}, parts.map(([c, p], i) => [i ? ", " : "",
      el("span", { class: "ck-part", title: `${p.tasks} task(s); longest alignment ${msShort(p.alignment_ms)}` },
        `${c} ${bytes(p.bytes)}`)]));
  }

  function history(c) {
    const t = table([
      ["Id", (r) => `#${r.id}`, "num"],
      ["Triggered", (r) => time(r.triggered_at)],
      ["Status", statusCell],
      ["Duration", (r) => (typeof r.duration_secs === "number" ? msShort(1000 * r.duration_secs) : "\u2013"), "num"],
      ["Alignment", (r) => msShort(r.alignment_ms), "num"],
      ["Size", (r) => bytes(r.bytes), "num"],
      ["Tasks", (r) => num(r.tasks_reported), "num"],
      ["State per component", componentsCell],
    ], c.history || [], "No checkpoint taken yet.");
    t.id = "checkpoint-history";
    return [el("h3", {}, "Recent checkpoints"), t];
  }

  function savepointList() {
    const head = el("h3", {}, "Savepoints");
    if (!savepoints) return [head, el("p", { class: "empty" }, "loading\u2026")];
    if (savepoints.error && !(savepoints.savepoints || []).length) return [head, el("p", { class: "bad" }, savepoints.error)];
    if (!savepoints.directory) {
      return [head, el("p", { class: "empty" }, "No savepoint directory (topology.state.savepoints.dir): savepoints taken with --dir elsewhere are not listed.")];
    }
    const t = table([
      ["Created", (s) => s.created_at || el("span", { class: "bad" }, "unreadable")],
      ["Checkpoint", (s) => (typeof s.checkpoint === "number" ? `#${s.checkpoint}` : "\u2013"), "num"],
      ["Size", (s) => bytes(s.bytes), "num"],
      ["Entries", (s) => num(s.entries), "num"],
      ["Path", (s) => el("code", { title: s.error || null }, s.path)],
    ], savepoints.savepoints, `None in ${savepoints.directory}.`);
    t.id = "savepoint-list";
    return [head, el("p", { class: "note" }, `The newest in ${savepoints.directory} (sparkstorm savepoint NAME writes there).`), t];
  }

  async function refreshSavepoints(name, box, report) {
    savepointsAt = Date.now();
    try {
      savepoints = await SS.getJSON(`/topology/${enc(name)}/savepoints`);
    } catch (e) {
      savepoints = { error: `savepoints: ${e.message}`, savepoints: [] };
    }
    render(box, report, name, false);
  }

  // The panel for `report` (its "checkpoints" section: null for a topology without state).
  function render(box, report, name, fetch = true) {
    const c = report && report.checkpoints;
    if (!c) { fill(box, el("p", { class: "empty" }, "Not checkpointed (no StatefulBolt).")); return; }
    fill(box, summary(c), history(c), savepointList());
    if (fetch && Date.now() - savepointsAt > SAVEPOINTS_EVERY_MS) refreshSavepoints(name, box, report);
  }

  return { render, stateCell, bytes };
})();
