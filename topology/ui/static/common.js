// What every page shares: fetching the API, formatting, tables, live updates (server-sent
// events, falling back to polling) and actions (admin token + CSRF token, confirmed first).
// No framework, no build step: plain DOM.  Text always goes in through textContent.
"use strict";

const SS = (() => {
  const API = "/api/v1";
  const TOKEN_KEY = "sparkstorm.adminToken";

  class ApiError extends Error {
    constructor(status, body) {
      super((body && body.message) || `HTTP ${status}`);
      this.status = status;
      this.body = body;
    }
  }

  async function getJSON(path) {
    const r = await fetch(API + path, { headers: { Accept: "application/json" }, credentials: "same-origin" });
    const body = await r.json().catch(() => null);
    if (!r.ok) throw new ApiError(r.status, body);
    return body;
  }

  // -- DOM ------------------------------------------------------------------------------

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children.flat(Infinity)) {
      if (c === null || c === undefined || c === false) continue;
      node.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return node;
  }

  const $ = (sel) => document.querySelector(sel);
  const query = () => new URLSearchParams(location.search);
  const enc = encodeURIComponent;

  // A table: columns = [[heading, row => cell (string, number or Node), className?]].
  function table(columns, rows, empty) {
    if (!rows || !rows.length) return el("p", { class: "empty", text: empty || "none" });
    const head = el("tr", {}, columns.map(([h, , cls]) => el("th", { class: cls }, h)));
    const body = rows.map((r) => el("tr", {}, columns.map(([, f, cls]) => {
      const v = f(r);
      return el("td", { class: cls }, v instanceof Node ? v : (v === null || v === undefined ? "\u2013" : String(v)));
    })));
    return el("table", {}, el("thead", {}, head), el("tbody", {}, body));
  }

  function fill(target, ...children) {
    const node = typeof target === "string" ? $(target) : target;
    if (node) node.replaceChildren(...children.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false));
  }

  // -- formatting -----------------------------------------------------------------------

  const num = (n) => (typeof n === "number" ? Math.round(n).toLocaleString("en-US") : "\u2013");
  const rate = (n) => (typeof n === "number" ? `${n.toLocaleString("en-US", { maximumFractionDigits: 1 })}/s` : "\u2013");
  const ms = (n) => (typeof n === "number" ? `${n.toLocaleString("en-US", { maximumFractionDigits: 3 })} ms` : "\u2013");

  function duration(secs) {
    if (typeof secs !== "number") return "\u2013";
    secs = Math.max(0, Math.round(secs));
    const d = Math.floor(secs / 86400), h = Math.floor(secs / 3600) % 24;
    const m = Math.floor(secs / 60) % 60, s = secs % 60;
    if (d) return `${d}d ${h}h`;
    if (h) return `${h}h ${m}m`;
    return m ? `${m}m ${s}s` : `${s}s`;
  }

  function time(epoch) {
    if (typeof epoch !== "number") return "\u2013";
    const t = new Date(epoch * 1000);
    return t.toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
  }

  function capacityCell(cap) {
    const level = SSGraph.capacityLevel(cap);
    return el("span", { class: `cap cap-${level}`, title: "busiest task's share of time executing" },
      typeof cap === "number" ? cap.toFixed(3) : "\u2013");
  }

  function statusBadge(status) {
    return el("span", { class: `badge status-${String(status || "unknown").toLowerCase()}` }, status || "?");
  }

  function failedCell(row) {
    const by = Object.entries(row.failed_by || {}).map(([k, v]) => `${k} ${v}`).join(", ");
    return by ? `${num(row.failed)} (${by})` : num(row.failed);
  }

  // Inputs given up on and sent to the dead-letter stream, with the further attempts made.
  function deadLetterCell(row) {
    const n = row.dead_lettered || 0;
    const text = row.retried ? `${num(n)} (retried ${num(row.retried)})` : num(n);
    return n ? el("span", { class: "warn", title: "sent to the __dead_letter stream" }, text) : text;
  }

  // -- live updates ---------------------------------------------------------------------

  // Calls onData(snapshot) for every snapshot: from GET /api/v1/events (event "snapshot"),
  // or, when event streams fail, from poll() every interval.  Shows the mode in #live.
  function live(topology, onData, poll, intervalSecs) {
    const badge = $("#live");
    const show = (mode, text) => { if (badge) { badge.className = `live ${mode}`; badge.textContent = text; } };
    let timer = null;
    const startPolling = () => {
      if (timer) return;
      show("polling", "polling");
      const tick = async () => {
        try { onData(await poll()); show("polling", "polling"); } catch (e) { show("down", `polling: ${e.message}`); }
      };
      tick();
      timer = setInterval(tick, Math.max(1, intervalSecs || 2) * 1000);
    };
    if (!window.EventSource) { startPolling(); return; }
    const es = new EventSource(`${API}/events${topology ? `?topology=${enc(topology)}` : ""}`);
    let opened = false;
    const handle = (ev) => {
      opened = true;
      show("sse", "live");
      try { onData(JSON.parse(ev.data)); } catch (e) { console.error(e); }
    };
    es.addEventListener("snapshot", handle);
    es.onmessage = handle;
    es.onerror = () => {
      if (!opened || es.readyState === EventSource.CLOSED) { es.close(); startPolling(); }
      else show("down", "reconnecting");
    };
  }

  // -- first paint ----------------------------------------------------------------------

  // The snapshot the server put in the page at load (topology/ui/firstpaint.py): the JSON
  // of GET /api/v1/snapshot (what the event stream carries), or null when it put none.
  // Read synchronously, so a page is filled before its load event.  The block's "ui" (GET
  // /api/v1/ui) stands in for info()'s request.
  function firstPaint() {
    const block = document.getElementById("first-snapshot");
    if (!block) return null;
    try {
      const data = JSON.parse(block.textContent);
      if (data.ui && !uiInfo) uiInfo = data.ui;
      const badge = $("#live");
      if (data.snapshot && badge && badge.className === "live") {  // no event yet
        badge.textContent = "snapshot \u00b7 connecting";
        badge.title = "Filled from the snapshot served with the page; live updates are connecting.";
      }
      return data.snapshot || null;
    } catch (e) {
      console.error(e);
      return null;
    }
  }

  // The first snapshot: the page's own, else GET /api/v1/snapshot (null when it fails).
  async function firstSnapshot(topology) {
    const first = firstPaint();
    if (first) return first;
    try { return await getJSON(`/snapshot${topology ? `?topology=${enc(topology)}` : ""}`); } catch (e) { return null; }
  }

  // -- server info, actions -------------------------------------------------------------

  let uiInfo = null;
  async function info() {
    if (!uiInfo) {
      try { uiInfo = await getJSON("/ui"); } catch (e) { uiInfo = { actions_enabled: null, publish_interval_secs: 2, error: e.message }; }
    }
    return uiInfo;
  }

  async function csrfToken() {
    const r = await getJSON("/csrf");
    return [r.header || "X-CSRF-Token", r.csrf_token];
  }

  // POST /api/v1/topology/{name}/{action} with the admin token (sessionStorage) and a fresh
  // CSRF token; a 401 forgets the stored token.
  async function post(name, action, params) {
    const [header, csrf] = await csrfToken();
    const token = sessionStorage.getItem(TOKEN_KEY) || "";
    const r = await fetch(`${API}/topology/${enc(name)}/${action}`, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", Authorization: `Bearer ${token}`, [header]: csrf },
      body: JSON.stringify(params || {}),
    });
    const body = await r.json().catch(() => null);
    if (r.status === 401) sessionStorage.removeItem(TOKEN_KEY);
    if (!r.ok) throw new ApiError(r.status, body);
    return body;
  }

  // The confirmation dialog: a message, the action's own fields, the admin token when none
  // is kept yet; resolves with the fields' values, or null when cancelled.
  function confirmDialog(title, message, fields) {
    return new Promise((resolve) => {
      const inputs = {};
      const rows = (fields || []).map((f) => {
        const input = f.options
          ? el("select", { name: f.name }, f.options.map((o) => el("option", { value: o, selected: o === f.value }, o)))
          : el("input", { name: f.name, type: f.type || "text", value: f.value ?? "", min: f.min, step: f.step, placeholder: f.placeholder, required: f.required });
        inputs[f.name] = input;
        return el("label", {}, el("span", {}, f.label), input);
      });
      if (!sessionStorage.getItem(TOKEN_KEY)) {
        const input = el("input", { name: "token", type: "password", autocomplete: "off", placeholder: "admin token", required: true });
        inputs.token = input;
        rows.push(el("label", {}, el("span", {}, "Admin token (kept for this tab only)"), input));
      }
      const dialog = el("dialog", { class: "confirm", id: "confirm-dialog" });
      const close = (value) => { dialog.close(); dialog.remove(); resolve(value); };
      const form = el("form", { method: "dialog", onsubmit: (ev) => {
        ev.preventDefault();
        const values = {};
        for (const [k, input] of Object.entries(inputs)) values[k] = input.value;
        if (values.token) { sessionStorage.setItem(TOKEN_KEY, values.token.trim()); delete values.token; }
        close(values);
      } },
      el("h3", {}, title), el("p", {}, message), ...rows,
      el("div", { class: "buttons" },
        el("button", { type: "button", class: "cancel", onclick: () => close(null) }, "Cancel"),
        el("button", { type: "submit", class: "danger confirm-button" }, "Confirm")));
      dialog.appendChild(form);
      dialog.addEventListener("cancel", (ev) => { ev.preventDefault(); close(null); });
      document.body.appendChild(dialog);
      dialog.showModal();
    });
  }

  function toast(text, bad) {
    const box = $("#messages");
    if (!box) return;
    const item = el("div", { class: bad ? "message bad" : "message" }, text);
    box.prepend(item);
    setTimeout(() => item.remove(), 12000);
  }

  // Every action the topology page offers: [action, label, fields, message].
  const ACTIONS = [
    ["activate", "Activate", [], "Spouts start calling next_tuple again."],
    ["deactivate", "Deactivate", [], "Spouts stop emitting; tuples in flight still complete."],
    ["rebalance", "Rebalance", [
      { name: "workers", label: "Workers (empty: as many as now)", type: "number", min: 1 },
      { name: "components", label: "Tasks (e.g. count=4, split=2; empty: as they are)", type: "text", placeholder: "component=count, ..." },
      { name: "wait_secs", label: "Wait (seconds, deactivated first)", type: "number", min: 0, step: "any", value: "" },
    ], "The topology is moved onto the new number of workers and task counts; keyed state moves with its keys."],
    ["kill", "Kill", [
      { name: "wait_secs", label: "Wait (seconds) after deactivating", type: "number", min: 0, step: "any", value: "30" },
    ], "The topology is deactivated, then after the wait its workers are stopped for good."],
    ["log-level", "Set log level", [
      { name: "level", label: "Level", options: ["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"], value: "DEBUG" },
      { name: "timeout", label: "Back to the configured level after (seconds; empty: stays)", type: "number", min: 1, step: "any", value: "60" },
    ], "Every worker's log level changes at once."],
  ];

  function cleanParams(values) {
    const out = {};
    for (const [k, v] of Object.entries(values)) {
      if (v === "" || v === null || v === undefined) continue;
      out[k] = /^-?\d+(\.\d+)?$/.test(v) && k !== "level" ? Number(v) : v;
    }
    return out;
  }

  // Fills container with the action buttons for topology name; disabled, with the reason,
  // when the server says actions are disabled.  onDone(action) runs after a success.
  async function actionBar(container, name, onDone) {
    const ui = await info();
    const disabled = ui.actions_enabled === false;
    const buttons = ACTIONS.map(([action, label, fields, message]) => el("button", {
      type: "button", class: `action action-${action}${action === "kill" && !disabled ? " danger" : ""}`,
      "data-action": action, disabled,
      title: disabled ? "actions are disabled on this server" : message,
      onclick: async () => {
        const values = await confirmDialog(`${label} ${name}?`, message, fields);
        if (values === null) return;
        try {
          await post(name, action, cleanParams(values));
          toast(`${label}: done`);
          if (onDone) onDone(action);
        } catch (e) {
          toast(`${label} failed: ${e.message}`, true);
        }
      },
    }, label));
    const note = disabled
      ? el("p", { class: "note actions-disabled" },
        "Actions are disabled: this server has no admin token. To enable them, ",
        el("code", {}, ui.actions_how || "give the UI an admin token (docs/UI.md)"),
        ", then restart the UI.")
      : el("p", { class: "note" }, "Each action asks for confirmation; the admin token is asked once and kept in this tab.",
        el("button", { type: "button", class: "link forget-token", onclick: () => { sessionStorage.removeItem(TOKEN_KEY); toast("admin token forgotten"); } }, "Forget the token"));
    fill(container, el("div", { class: "buttons" }, buttons), note);
  }

  function windowSwitch(container, current, onChange) {
    const names = ["10m", "3h", "1d", "all"];
    const render = (value) => fill(container, names.map((w) => el("button", {
      type: "button", class: w === value ? "window selected" : "window", "data-window": w,
      "aria-pressed": w === value ? "true" : "false",
      onclick: () => { render(w); onChange(w); },
    }, w)));
    render(current);
  }

  return {
    API, ApiError, getJSON, el, $, query, enc, table, fill, num, rate, ms, duration, time,
    capacityCell, statusBadge, failedCell, deadLetterCell, live, info, post, confirmDialog, toast, actionBar,
    windowSwitch, firstPaint, firstSnapshot,
  };
})();
