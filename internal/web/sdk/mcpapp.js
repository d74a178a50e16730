// switchboard MCP Apps view: shows one panel inside an MCP Apps host (the
// io.modelcontextprotocol/ui extension, 2026-01-26) with the renderer of
// panels.js, and talks to the host over postMessage JSON-RPC. The daemon
// joins it with the renderer into the single inline script of its
// ui://switchboard/... resources; it does nothing outside such a document.
//
// Protocol (the view's side): ui/initialize, then
// ui/notifications/initialized; the host sends ui/notifications/tool-input
// and ui/notifications/tool-result of the call that opened the view (its
// result names the panel instance); the view reads the instance with the
// app-only tool switchboard_panel_view and sends the user's edits and
// clicks as tools/call of panel-fill and panel-run_action, which the host
// forwards to switchboard: the same tools, approvals, leases and canvas
// policy as any other caller. Size changes go up as
// ui/notifications/size-changed; ui/resource-teardown and ping are
// answered.
//
// Refusals: messages from anything but the parent window are dropped; a
// message over MAX_MESSAGE characters, one that is not JSON-RPC 2.0, or a
// request for a method the view does not serve is refused (a JSON-RPC
// error when it has an id) and logged to the host (notifications/message)
// and the console. The view calls only VIEW_TOOLS, always for its own
// instance, and marks each call with _meta["switchboard/view"] so the
// daemon refuses it too if it ever reaches further.

import { renderPanel } from "./panels.js";

const PROTOCOL_VERSION = "2026-01-26";
const MAX_MESSAGE = 1 << 20; // characters of JSON: a panel snapshot fits with room
const FILL_DEBOUNCE_MS = 250;
const VIEW_TOOLS = new Set(["switchboard_panel_view", "panel-fill", "panel-run_action", "panel-patch", "panel-read_state"]);
const INSTANCE_URI = /^ui:\/\/switchboard\/panels\/(pi_[A-Za-z0-9_-]{1,64})$/;

const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

/** The view's state. */
const view = {
  instanceId: "",
  snap: null,
  local: new Map(), // "source\0path" → value the user typed and the daemon has not confirmed
  queue: new Map(), // form → {path: value}
  timer: null,
  hostTools: false,
  root: null,
};

let nextId = 1;
const pending = new Map();

function post(msg) {
  window.parent.postMessage(msg, "*"); // the host's origin is not known to a sandboxed view
}

function request(method, params) {
  const id = nextId++;
  post({ jsonrpc: "2.0", id, method, params });
  return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
}

function notify(method, params) {
  post({ jsonrpc: "2.0", method, params });
}

function log(level, data) {
  console.warn("switchboard view:", data);
  try { notify("notifications/message", { level, logger: "switchboard-view", data }); } catch { /* the host is gone */ }
}

function refuse(msg, code, message) {
  log("warning", `refused a message from the host: ${message}`);
  if (isObject(msg) && (typeof msg.id === "number" || typeof msg.id === "string") && typeof msg.method === "string") {
    post({ jsonrpc: "2.0", id: msg.id, error: { code, message } });
  }
}

// ---- the host's messages ---------------------------------------------------

const NOTIFICATIONS = {
  "ui/notifications/tool-input": (p) => { if (isObject(p?.arguments)) adopt(p.arguments.instanceId); },
  "ui/notifications/tool-input-partial": () => {},
  "ui/notifications/tool-result": (p) => adopt(instanceOfResult(p)),
  "ui/notifications/tool-cancelled": () => showNote("The call was cancelled."),
  "ui/notifications/host-context-changed": (p) => applyContext(p),
};

const REQUESTS = {
  ping: () => ({}),
  "ui/resource-teardown": () => { flush(); return {}; },
};

function onMessage(ev) {
  if (ev.source !== window.parent) return; // only the host speaks to the view
  const msg = ev.data;
  let size = 0;
  try {
    size = JSON.stringify(msg)?.length ?? 0;
  } catch {
    return refuse(msg, -32700, "the message is not JSON");
  }
  if (size > MAX_MESSAGE) return refuse(msg, -32600, `the message has ${size} characters, over ${MAX_MESSAGE}`);
  if (!isObject(msg) || msg.jsonrpc !== "2.0") return refuse(msg, -32600, "not a JSON-RPC 2.0 message");
  if (typeof msg.method !== "string") { // a response to one of ours
    const p = pending.get(msg.id);
    if (!p) return;
    pending.delete(msg.id);
    if (isObject(msg.error)) p.reject(Object.assign(new Error(String(msg.error.message ?? "error")), { code: msg.error.code }));
    else p.resolve(msg.result);
    return;
  }
  const hasId = typeof msg.id === "number" || typeof msg.id === "string";
  if (!hasId) {
    const h = Object.prototype.hasOwnProperty.call(NOTIFICATIONS, msg.method) ? NOTIFICATIONS[msg.method] : null;
    if (h) h(msg.params);
    else if (!msg.method.startsWith("notifications/")) log("warning", `ignored the unknown notification ${msg.method.slice(0, 80)}`);
    return;
  }
  const h = Object.prototype.hasOwnProperty.call(REQUESTS, msg.method) ? REQUESTS[msg.method] : null;
  if (!h) return refuse(msg, -32601, `method not found: ${msg.method.slice(0, 80)}`);
  post({ jsonrpc: "2.0", id: msg.id, result: h(msg.params) });
}

// instanceOfResult finds the panel instance a tool result names: its
// _meta.ui.resourceUri (ui://switchboard/panels/<id>), else an instanceId
// in its structured or text content.
function instanceOfResult(res) {
  const uri = res?._meta?.ui?.resourceUri;
  const m = typeof uri === "string" ? INSTANCE_URI.exec(uri) : null;
  if (m) return m[1];
  if (isObject(res?.structuredContent) && typeof res.structuredContent.instanceId === "string") return res.structuredContent.instanceId;
  for (const c of Array.isArray(res?.content) ? res.content : []) {
    if (c?.type !== "text" || typeof c.text !== "string" || c.text.length > MAX_MESSAGE) continue;
    try {
      const v = JSON.parse(c.text);
      if (isObject(v) && typeof v.instanceId === "string") return v.instanceId;
    } catch { /* not JSON */ }
  }
  return "";
}

function adopt(id) {
  if (typeof id !== "string" || !/^pi_[A-Za-z0-9_-]{1,64}$/.test(id) || id === view.instanceId) return;
  if (view.instanceId) return; // a view shows one panel for its whole life
  view.instanceId = id;
  load();
}

// ---- calls through the host ------------------------------------------------

async function callTool(name, args) {
  if (!VIEW_TOOLS.has(name)) throw new Error(`the view does not call ${name}`);
  if (!view.hostTools) throw new Error("this host does not let views call tools");
  const res = await request("tools/call", { name, arguments: { ...args, instanceId: view.instanceId },
    _meta: { "switchboard/view": view.instanceId } });
  if (res?.isError) {
    const text = Array.isArray(res.content) ? res.content.map((c) => (c?.type === "text" ? c.text : "")).join(" ") : "";
    throw new Error(text || `${name} failed`);
  }
  return res;
}

async function load() {
  try {
    const res = await callTool("switchboard_panel_view", {});
    if (!isObject(res?.structuredContent)) throw new Error("the panel came back empty");
    view.snap = res.structuredContent;
    render();
  } catch (err) {
    showNote(`This panel cannot be shown: ${err.message}`);
  }
}

function edit(source, path, value, form) {
  view.local.set(`${source}\u0000${path}`, value);
  const q = view.queue.get(form) ?? {};
  q[path] = value;
  view.queue.set(form, q);
  clearTimeout(view.timer);
  view.timer = setTimeout(flush, FILL_DEBOUNCE_MS);
}

async function flush() {
  clearTimeout(view.timer);
  const batches = [...view.queue.entries()];
  view.queue.clear();
  for (const [form, values] of batches) {
    try {
      const res = await callTool("panel-fill", { form, values });
      const out = isObject(res?.structuredContent) ? res.structuredContent : parseText(res);
      for (const fe of Array.isArray(out?.errors) ? out.errors : []) log("warning", `${fe.path}: ${fe.message}`);
      setStatus("Changes sent; Save keeps them.");
    } catch (err) {
      setStatus(err.message);
    }
  }
}

async function act(actionId) {
  await flush();
  view.snap = { ...view.snap, actions: { ...(view.snap.actions ?? {}), [actionId]: { status: "pending_approval" } } };
  render();
  setStatus("");
  try {
    await callTool("panel-run_action", { action: actionId });
  } catch (err) {
    setStatus(err.message);
  }
  view.local.clear();
  await load();
}

function parseText(res) {
  const t = Array.isArray(res?.content) ? res.content.find((c) => c?.type === "text")?.text : "";
  try { return JSON.parse(t); } catch { return null; }
}

// ---- drawing ---------------------------------------------------------------

function frame() {
  if (view.root) return view.root;
  const title = document.createElement("strong");
  title.className = "sb-panel-name";
  const badge = document.createElement("span");
  badge.className = "sb-badge";
  badge.hidden = true;
  const refresh = document.createElement("button");
  refresh.type = "button";
  refresh.className = "sb-btn sb-btn-link";
  refresh.textContent = "Refresh";
  refresh.addEventListener("click", () => load());
  const header = document.createElement("header");
  header.className = "sb-panel-header";
  header.append(title, badge, refresh);
  const body = document.createElement("div");
  body.className = "sb-panel-body";
  const status = document.createElement("p");
  status.className = "sb-help";
  status.setAttribute("role", "status");
  const article = document.createElement("article");
  article.className = "sb-panel";
  article.append(header, body, status);
  document.body.append(article);
  view.root = { article, title, badge, body, status };
  return view.root;
}

function render() {
  const f = frame();
  const snap = view.snap;
  f.article.dataset.sbInstance = String(snap.instanceId ?? "");
  f.article.dataset.sbVersion = String(snap.version ?? 0);
  f.title.textContent = snap.title || "Panel";
  const agent = snap.origin === "agent";
  f.badge.hidden = !agent;
  f.badge.textContent = agent ? `Composed by ${String(snap.composedBy || "an agent").replace(/^(agent|user):/, "")}` : "";
  // A user's value wins until the daemon has it (the same rule as the tab).
  for (const key of [...view.local.keys()]) {
    const [source, path] = key.split("\u0000");
    const have = snap.values?.[source]?.[path];
    if (have !== undefined && JSON.stringify(have) === JSON.stringify(view.local.get(key))) view.local.delete(key);
  }
  renderPanel({ ...snap, previews: undefined }, f.body, { // no preview frames: the view declares no frame origin
    localValues: view.local,
    onEdit: edit,
    onAction: act,
  });
}

function showNote(text) {
  const f = frame();
  f.status.textContent = text;
}

function setStatus(text) {
  if (view.root) view.root.status.textContent = text;
}

function applyContext(ctx) {
  if (!isObject(ctx)) return;
  if (ctx.theme === "dark" || ctx.theme === "light") document.documentElement.style.colorScheme = ctx.theme;
}

// ---- start -----------------------------------------------------------------

async function start() {
  window.addEventListener("message", onMessage);
  const boot = document.getElementById("sb-view");
  let cfg = {};
  try { cfg = JSON.parse(boot?.textContent || "{}"); } catch { /* a bare view */ }
  try {
    const init = await request("ui/initialize", {
      appInfo: { name: "switchboard-panel", version: String(cfg.version ?? "") },
      appCapabilities: { availableDisplayModes: ["inline"] },
      protocolVersion: PROTOCOL_VERSION,
    });
    view.hostTools = isObject(init?.hostCapabilities?.serverTools);
    applyContext(init?.hostContext);
  } catch (err) {
    showNote(`The host did not start the view: ${err.message}`);
    return;
  }
  notify("ui/notifications/initialized", {});
  if (typeof ResizeObserver === "function") {
    let last = "";
    new ResizeObserver(() => {
      const el = document.documentElement;
      const size = { width: Math.ceil(el.scrollWidth), height: Math.ceil(el.scrollHeight) };
      const key = `${size.width}x${size.height}`;
      if (key !== last) { last = key; notify("ui/notifications/size-changed", size); }
    }).observe(document.documentElement);
  }
  if (!view.hostTools) {
    showNote("This host does not let views call tools, so the panel cannot be shown here.");
    return;
  }
  if (typeof cfg.instanceId === "string" && cfg.instanceId) adopt(cfg.instanceId);
}

if (typeof document !== "undefined" && document.getElementById("sb-view")) start();
