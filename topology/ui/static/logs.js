// The logs page: the end of each worker's log (or one worker's, or one component's lines),
// following it as it grows, searching it, downloading it.
// Data: GET /api/v1/topology/{t}/logs?worker=&bytes=&component=[&offset=&file=] ->
//   {"chunks": [{"worker", "host", "pid", "path", "text", "offset", "file_id", "rotated"}]}
// Following asks each worker for what follows its last chunk (offset and file).
"use strict";

(() => {
  const { el, fill, enc, $ } = SS;
  const q = SS.query();
  const topology = q.get("topology") || q.get("name") || "";
  const MAX_CHARS = 2_000_000;
  let texts = new Map(); // worker -> {head, text, offset, file}
  let timer = null;

  function params(extra) {
    const p = new URLSearchParams();
    const worker = $("#worker").value, component = $("#component").value.trim();
    if (worker !== "") p.set("worker", worker);
    if (component) p.set("component", component);
    p.set("bytes", $("#bytes").value);
    for (const [k, v] of Object.entries(extra || {})) p.set(k, v);
    return p;
  }

  function matcher() {
    const raw = $("#search").value;
    if (!raw) return null;
    const m = raw.match(/^\/(.+)\/$/);
    try { return new RegExp(m ? m[1] : raw.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "gi"); } catch (e) { return null; }
  }

  function render() {
    const re = matcher(), only = $("#only-matching").checked;
    const out = [];
    let hits = 0;
    for (const [worker, t] of [...texts.entries()].sort((a, b) => a[0] - b[0])) {
      out.push(el("span", { class: "worker-head" }, `==> worker ${worker} on ${t.head} <==\n`));
      for (const line of t.text.split("\n")) {
        if (line === "") continue;
        if (!re) { out.push(line + "\n"); continue; }
        re.lastIndex = 0;
        const found = re.test(line);
        if (!found && only) continue;
        if (!found) { out.push(line + "\n"); continue; }
        hits += 1;
        let last = 0;
        re.lastIndex = 0;
        for (const m of line.matchAll(re)) {
          if (m[0] === "") break;
          out.push(line.slice(last, m.index), el("mark", {}, m[0]));
          last = m.index + m[0].length;
        }
        out.push(line.slice(last) + "\n");
      }
    }
    const box = $("#log");
    const atBottom = box.scrollTop + box.clientHeight >= box.scrollHeight - 20;
    fill(box, out.length ? out : [el("span", { class: "note" }, "(empty)")]);
    if ($("#follow").checked || atBottom) box.scrollTop = box.scrollHeight;
    fill("#log-note", `${texts.size} worker log(s)${re ? `, ${hits} matching line(s)` : ""}${$("#follow").checked ? ", following" : ""}.`);
    const dl = new URLSearchParams();
    if ($("#worker").value !== "") dl.set("worker", $("#worker").value);
    if ($("#component").value.trim()) dl.set("component", $("#component").value.trim());
    $("#download").href = `${SS.API}/topology/${enc(topology)}/logs/download?${dl}`;
  }

  function head(c) {
    return `${c.host || "?"}${c.pid ? ` (pid ${c.pid})` : ""}${c.path ? `: ${c.path}` : ""}`;
  }

  async function tail() {
    try {
      const r = await SS.getJSON(`/topology/${enc(topology)}/logs?${params()}`);
      texts = new Map();
      for (const c of r.chunks || []) {
        texts.set(Number(c.worker), { head: head(c), text: c.missing ? "(no log file)\n" : (c.text || ""), offset: c.offset, file: c.file_id });
      }
      workersSelect([...texts.keys()]);
      fill("#logs-error", "");
      render();
    } catch (e) {
      fill("#logs-error", e.message);
    }
  }

  let following = false; // a follow() under way: the next tick skips, so no chunk is read twice

  async function follow() {
    if (following) return;
    following = true;
    try { await followOnce(); } finally { following = false; }
  }

  async function followOnce() {
    for (const [worker, t] of texts) {
      if (typeof t.offset !== "number") continue;
      const extra = { worker: String(worker), offset: String(t.offset) };
      if (typeof t.file === "number") extra.file = String(t.file);
      try {
        const r = await SS.getJSON(`/topology/${enc(topology)}/logs?${params(extra)}`);
        for (const c of r.chunks || []) {
          if (c.rotated) t.text += "--- the log was rotated ---\n";
          t.text = (t.text + (c.text || "")).slice(-MAX_CHARS);
          t.offset = c.offset; t.file = c.file_id;
        }
      } catch (e) {
        fill("#logs-error", `worker ${worker}: ${e.message}`);
      }
    }
    render();
  }

  function workersSelect(ids) {
    const select = $("#worker");
    const have = new Set([...select.options].map((o) => o.value));
    for (const id of ids.sort((a, b) => a - b)) {
      if (!have.has(String(id))) select.appendChild(el("option", { value: String(id) }, `worker ${id}`));
    }
  }

  function setFollow(on) {
    if (timer) { clearInterval(timer); timer = null; }
    if (on) timer = setInterval(follow, 2000);
    render();
  }

  async function start() {
    if (!topology) { fill("#logs-error", "Open this page as logs.html?topology=NAME[&worker=N][&component=C]."); return; }
    fill("#name", topology);
    document.title = `sparkstorm: logs of ${topology}`;
    $("#nav-topology").href = `topology.html?name=${enc(topology)}`;
    if (q.get("worker") !== null) {
      workersSelect([Number(q.get("worker"))]);
      $("#worker").value = q.get("worker");
    }
    if (q.get("component")) $("#component").value = q.get("component");
    if (q.get("follow")) $("#follow").checked = true;
    $("#tail").addEventListener("click", tail);
    $("#worker").addEventListener("change", tail);
    $("#bytes").addEventListener("change", tail);
    $("#component").addEventListener("change", tail);
    $("#search").addEventListener("input", render);
    $("#only-matching").addEventListener("change", render);
    $("#follow").addEventListener("change", () => setFollow($("#follow").checked));
    await tail();
    setFollow($("#follow").checked);
  }

  start();
})();
