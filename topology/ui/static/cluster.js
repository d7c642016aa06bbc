// The cluster page: nimbuses (leader and standbys), totals, and every topology with its
// status, uptime, workers and rates; live from the event stream (or polling).
"use strict";

(() => {
  const { el, fill, table, num, rate, duration, time } = SS;

  function stat(label, value) {
    return el("div", { class: "stat" }, el("span", { class: "label" }, label), el("span", { class: "value" }, value));
  }

  function nimbus(n) {
    if (n === null || n === undefined) {
      return el("p", { class: "note" }, "No nimbus: a LocalCluster (the topologies run in this process's cluster).");
    }
    const leader = n.leader
      ? el("p", {}, "Leader: ", el("strong", { class: "nimbus-leader" }, n.leader))
      : el("p", { class: "bad" }, "No nimbus leads: running topologies go on, but nothing is submitted, killed or rebalanced until one does.");
    const standbys = (n.standbys || []).length
      ? el("p", {}, "Standbys: ", (n.standbys || []).join(", "))
      : el("p", { class: "note" }, "No standby nimbus.");
    return [leader, standbys];
  }

  function render(summary) {
    fill("#cluster-error", summary.error ? `The cluster cannot be read: ${summary.error}` : "");
    fill("#nimbus", nimbus(summary.nimbus));
    const t = summary.totals || {};
    fill("#totals", [
      stat("Topologies", num(t.topologies)),
      stat("Workers", `${num(t.workers_alive)} / ${num(t.workers)}`),
      stat("Tasks", num(t.tasks)),
      stat("Emitted", rate(t.emitted_per_sec)),
      stat("Acked", rate(t.acked_per_sec)),
      stat("Failed", rate(t.failed_per_sec)),
    ]);
    const rows = summary.topologies || [];
    fill("#topologies", table([
      ["Name", (r) => el("a", { href: `topology.html?name=${SS.enc(r.name)}`, class: "topology-link" }, r.name)],
      ["Status", (r) => SS.statusBadge(r.status)],
      ["Uptime", (r) => duration(r.uptime_secs), "num"],
      ["Workers", (r) => `${num(r.workers_alive)} / ${num(r.workers)}`, "num"],
      ["Tasks", (r) => num(r.tasks), "num"],
      ["Emitted/s", (r) => rate(r.emitted_per_sec), "num"],
      ["Acked/s", (r) => rate(r.acked_per_sec), "num"],
      ["Failed/s", (r) => rate(r.failed_per_sec), "num"],
      ["Max capacity", (r) => SS.capacityCell(r.max_capacity), "num"],
      ["Error", (r) => (r.error ? el("span", { class: "bad" }, r.error) : "")],
    ], rows, "No topology runs."));
    fill("#generated", `As of ${time(summary.generated_at)}; refreshed every ${summary.publish_interval_secs ?? "?"} s.`);
  }

  // Filled at once from the snapshot in the page (firstpaint.py), then live.
  function start() {
    const first = SS.firstPaint();
    if (first) render(first.summary);
    goLive(first);
  }

  async function goLive(first) {
    const poll = () => SS.getJSON("/cluster/summary");
    if (!first) {
      try { render(await poll()); } catch (e) { fill("#cluster-error", e.message); }
    }
    const ui = await SS.info();
    SS.live(null, (snap) => render(snap.summary || snap), poll, ui.publish_interval_secs);
  }

  start();
})();
