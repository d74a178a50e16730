// switchboard panels: renders Panel Spec IR panels in the page and keeps
// them in step with the daemon. An ES module with no build step and no
// dependency, served beside switchboard.js.
//
//   import { connect } from "/sdk/switchboard.js";
//   import { attachPanels } from "/sdk/panels.js";
//   const sb = connect({ url, sessionId, sessionToken });
//   const panels = attachPanels(sb, { container: document.getElementById("panels") });
//   panels.open("project.settings", { projectId: "apollo" });   // the user asked for it
//
// Panels the assistant opens or composes arrive on the tab's event stream
// (panel.open, panel.update, panel.close) and render in the container.
//
// Safety. The daemon validated every spec before sending it; this renderer
// is the second line. Text goes through textContent only (there is no
// innerHTML anywhere in this file); attributes are set through one helper
// with an allow-list; classes come from fixed tables, never from the spec;
// every URL is parsed again with the browser's own URL parser and dropped
// unless it is http(s) or mailto (links) or http(s) or a base64 raster
// data: URL (images). A node the renderer does not know shows a neutral
// placeholder.

import { renderChart, renderMetric, renderProgress } from "./charts.js";
import { renderDocument } from "./document.js";

const MAX_NODES = 200;
const MAX_DEPTH = 12;
const EDIT_DEBOUNCE_MS = 120;

// ---- safe DOM helpers -------------------------------------------------------

const ALLOWED_ATTRS = new Set([
  "class", "href", "src", "alt", "width", "height", "type", "min", "max", "step", "value",
  "placeholder", "name", "role", "target", "rel", "for", "id", "rows", "maxlength", "minlength",
  "tabindex", "title", "loading", "referrerpolicy", "scope", "colspan", "autocomplete", "inputmode",
]);

function attr(el, name, value) {
  if (value === undefined || value === null || value === false) return;
  if (!ALLOWED_ATTRS.has(name) && !name.startsWith("data-sb-") && !name.startsWith("aria-")) {
    throw new Error(`switchboard panels: attribute ${name} is not allowed`);
  }
  el.setAttribute(name, value === true ? "" : String(value));
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) attr(node, k, v);
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    node.append(typeof c === "string" ? document.createTextNode(c) : c);
  }
  return node;
}

function text(tag, value, attrs = {}) {
  const node = el(tag, attrs);
  node.textContent = String(value ?? "");
  return node;
}

const RASTER_DATA = /^data:image\/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=\s]*$/i;

/**
 * safeURL parses raw with the browser's URL parser (which strips the tabs,
 * newlines and control characters a browser would) and returns the URL to
 * use, or null when it is not allowed: links take http, https or mailto;
 * images http, https or a base64 PNG, JPEG, GIF or WebP data: URL; never a
 * URL that starts with two slashes or backslashes, or carries user@.
 */
export function safeURL(raw, kind = "link") {
  if (typeof raw !== "string" || raw.length > 300000) return null;
  // "//host" and "\\host" open another site, and user@host hides which:
  // refused here as by the daemon's validator.
  if (/^[\s\u0000-\u001f]*[\/\\]{2}/.test(raw)) return null;
  let u;
  try {
    u = new URL(raw, document.baseURI);
  } catch {
    return null;
  }
  const p = u.protocol;
  if ((p === "http:" || p === "https:") && (u.username || u.password)) return null;
  if (p === "http:" || p === "https:") return u.href;
  if (kind === "link" && p === "mailto:") return u.href;
  if (kind === "image" && p === "data:" && RASTER_DATA.test(raw.trim())) return raw.trim();
  return null;
}

// Fixed class tables: spec values select among them, never name a class.
const GAP = { none: "sb-gap-none", sm: "sb-gap-sm", md: "sb-gap-md", lg: "sb-gap-lg" };
const TONE = { info: "sb-tone-info", success: "sb-tone-success", warning: "sb-tone-warning", danger: "sb-tone-danger", muted: "sb-tone-muted" };
const VARIANT = { primary: "sb-btn-primary", secondary: "sb-btn-secondary", danger: "sb-btn-danger", link: "sb-btn-link" };
const WIDTH = { auto: "sb-w-auto", "1/4": "sb-w-1-4", "1/3": "sb-w-1-3", "1/2": "sb-w-1-2", "2/3": "sb-w-2-3", "3/4": "sb-w-3-4", full: "sb-w-full" };
const cls = (...names) => names.filter(Boolean).join(" ");

// ---- reading data -------------------------------------------------------------

function isObj(v) {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

// own reads a property without touching the prototype chain.
function own(obj, key) {
  return isObj(obj) && Object.prototype.hasOwnProperty.call(obj, key) ? obj[key] : undefined;
}

function records(data) {
  if (Array.isArray(data)) return data.filter(isObj);
  return isObj(data) ? [data] : [];
}

function walk(rec, path) {
  let v = rec;
  for (const seg of String(path).split(".")) {
    if (Array.isArray(v) && /^\d+$/.test(seg)) v = v[Number(seg)];
    else v = own(v, seg);
    if (v === undefined) return undefined;
  }
  return v;
}

function display(v) {
  if (v === null || v === undefined) return "";
  if (typeof v === "object") return JSON.stringify(v);
  return String(v);
}

// ---- the renderer ----------------------------------------------------------------

/**
 * renderPanel renders a panel snapshot ({spec, data, values, actions,
 * origin, ...}, as the daemon sends it; a bare spec works too) into
 * container, replacing its children. opts:
 *   onEdit(source, path, value, formId)  a field changed (user input)
 *   onAction(actionId)                   a button or form submit ran
 *   localValues: Map("source\0path" → value) values that win over the snapshot's
 * Returns false (and renders a notice) when the spec cannot be rendered.
 * The renderer's style sheet is adopted by the document on first use.
 */
export function renderPanel(snapshot, container, opts = {}) {
  injectStyles();
  const snap = snapshot && snapshot.spec ? snapshot : { spec: snapshot };
  const spec = snap.spec;
  const frag = document.createDocumentFragment();
  let ok = true;
  try {
    checkShape(spec);
    const ctx = { snap, spec, opts, count: 0 };
    frag.append(renderNode(ctx, spec.root, 1, new Set()));
  } catch (err) {
    ok = false;
    frag.append(el("div", { class: "sb-callout sb-tone-warning", role: "note" },
      text("strong", "This panel could not be shown."), " ", text("span", err.message)));
  }
  container.replaceChildren(frag);
  return ok;
}

function checkShape(spec) {
  if (!isObj(spec) || spec.v !== 1 || !isObj(spec.nodes) || typeof spec.root !== "string") {
    throw new Error("not a version 1 panel spec");
  }
  if (Object.keys(spec.nodes).length > MAX_NODES) throw new Error(`more than ${MAX_NODES} nodes`);
  if (!own(spec.nodes, spec.root)) throw new Error("the root node is missing");
}

function renderNode(ctx, id, depth, path) {
  if (depth > MAX_DEPTH) throw new Error(`deeper than ${MAX_DEPTH} levels`);
  if (path.has(id)) throw new Error("the nodes form a cycle");
  if (++ctx.count > MAX_NODES) throw new Error(`more than ${MAX_NODES} nodes`);
  const node = own(ctx.spec.nodes, id);
  if (!isObj(node)) return text("div", `missing node ${id}`, { class: "sb-placeholder" });
  const props = isObj(node.props) ? node.props : {};
  const kids = () => {
    path.add(id);
    const out = (Array.isArray(node.children) ? node.children : []).map((c) => renderNode(ctx, String(c), depth + 1, path));
    path.delete(id);
    return out;
  };
  const render = RENDERERS[node.type] ?? renderUnknown;
  const out = render(ctx, id, props, kids, node);
  attr(out, "data-sb-node", id);
  attr(out, "data-sb-type", RENDERERS[node.type] ? node.type : "placeholder");
  return out;
}

function renderUnknown(ctx, id, props, kids, node) {
  const type = node.type === "placeholder" ? own(props, "originalType") : node.type;
  return el("div", { class: "sb-placeholder" }, text("span", `Unsupported element: ${display(type)}`), ...kids());
}

const RENDERERS = {
  "panel-body": (ctx, id, p, kids) => el("section", { class: "sb-body" },
    p.title ? text("h2", p.title, { class: "sb-title" }) : null,
    p.description ? text("p", p.description, { class: "sb-description" }) : null,
    el("div", { class: "sb-stack sb-gap-md" }, ...kids())),
  stack: (ctx, id, p, kids) => el("div", { class: cls("sb-stack", GAP[p.gap] ?? "sb-gap-md") }, ...kids()),
  row: (ctx, id, p, kids) => el("div", { class: cls("sb-row", GAP[p.gap] ?? "sb-gap-md", p.wrap && "sb-wrap",
    p.justify === "end" && "sb-justify-end", p.justify === "center" && "sb-justify-center", p.justify === "between" && "sb-justify-between") }, ...kids()),
  column: (ctx, id, p, kids) => el("div", { class: cls("sb-col", WIDTH[p.width] ?? "sb-w-auto", GAP[p.gap]) }, ...kids()),
  heading: (ctx, id, p) => {
    const level = Number.isInteger(p.level) && p.level >= 1 && p.level <= 6 ? p.level : 2;
    return text(`h${level}`, p.text, { class: "sb-heading" });
  },
  text: (ctx, id, p) => text("p", p.text, { class: cls("sb-text", TONE[p.tone], p.size === "sm" && "sb-small", p.size === "lg" && "sb-large") }),
  callout: (ctx, id, p) => el("div", { class: cls("sb-callout", TONE[p.tone] ?? "sb-tone-info"), role: "note" },
    p.title ? text("strong", p.title) : null, text("p", p.text)),
  link: (ctx, id, p) => {
    const href = safeURL(p.href, "link");
    if (!href) return text("span", p.label, { class: "sb-link-unsafe", "data-sb-unsafe": "href" });
    const a = text("a", p.label, { href, class: "sb-link", rel: "noopener noreferrer nofollow" });
    if (p.external) attr(a, "target", "_blank");
    return a;
  },
  image: (ctx, id, p) => {
    const src = safeURL(p.src, "image");
    if (!src) return text("span", p.alt ? `[image: ${p.alt}]` : "[image]", { class: "sb-image-unsafe", "data-sb-unsafe": "src" });
    return el("img", { src, alt: String(p.alt ?? ""), class: "sb-image", loading: "lazy", referrerpolicy: "no-referrer",
      width: Number.isInteger(p.width) ? p.width : undefined, height: Number.isInteger(p.height) ? p.height : undefined });
  },
  button: (ctx, id, p) => actionButton(ctx, String(p.action ?? ""), String(p.label ?? ""), VARIANT[p.variant] ?? "sb-btn-secondary", p.disabled === true),
  list: (ctx, id, p) => {
    let items = Array.isArray(p.items) ? p.items.map(display) : [];
    if (typeof p.source === "string") {
      items = records(own(ctx.snap.data, p.source)).map((r) => display(p.field ? walk(r, p.field) : Object.values(r)[0]));
    }
    const err = sourceError(ctx, p.source);
    if (err) return err;
    if (!items.length) return text("p", p.emptyText ?? "Nothing to show.", { class: "sb-text sb-tone-muted" });
    return el(p.ordered ? "ol" : "ul", { class: "sb-list" }, items.map((t) => text("li", t)));
  },
  table: (ctx, id, p) => {
    const err = sourceError(ctx, p.source);
    if (err) return err;
    const cols = Array.isArray(p.columns) ? p.columns.filter(isObj) : [];
    const rows = typeof p.source === "string" ? records(own(ctx.snap.data, p.source)) : (Array.isArray(p.rows) ? p.rows.filter(isObj) : []);
    const table = el("table", { class: "sb-table" },
      p.caption ? text("caption", p.caption) : null,
      el("thead", {}, el("tr", {}, cols.map((c) => text("th", c.label ?? c.key, { scope: "col" })))),
      el("tbody", {}, rows.map((r) => el("tr", {}, cols.map((c) => el("td", { class: c.kind === "number" ? "sb-num" : undefined }, cell(c, r)))))));
    if (!rows.length) return el("div", {}, table, text("p", p.emptyText ?? "Nothing to show.", { class: "sb-text sb-tone-muted" }));
    return table;
  },
  tabs: (ctx, id, p, kids) => {
    const labels = Array.isArray(p.labels) ? p.labels : [];
    const panes = kids();
    let sel = Number.isInteger(p.selected) && p.selected >= 0 && p.selected < panes.length ? p.selected : 0;
    const bar = el("div", { class: "sb-tabbar", role: "tablist" });
    const buttons = labels.map((l, i) => {
      const b = text("button", l, { type: "button", role: "tab", class: "sb-tab" });
      b.addEventListener("click", () => select(i));
      return b;
    });
    bar.append(...buttons);
    const select = (i) => {
      sel = i;
      panes.forEach((pane, j) => { pane.hidden = j !== i; });
      buttons.forEach((b, j) => attr(b, "aria-selected", j === i ? "true" : "false"));
    };
    select(sel);
    return el("div", { class: "sb-tabs" }, bar, ...panes);
  },
  "field-form": renderForm,
  chart: (ctx, id, p) => {
    const err = sourceError(ctx, p.source);
    if (err) return err;
    const recs = typeof p.source === "string" ? records(own(ctx.snap.data, p.source)) : (Array.isArray(p.data) ? p.data.filter(isObj) : []);
    return renderChart(H, p, recs, own);
  },
  metric: (ctx, id, p) => {
    const err = sourceError(ctx, p.source);
    if (err) return err;
    const value = typeof p.source === "string" ? walk(records(own(ctx.snap.data, p.source))[0], String(p.field ?? "")) : p.value;
    return renderMetric(H, p, value);
  },
  progress: (ctx, id, p) => renderProgress(H, p),
  document: (ctx, id, p) => renderDocument(H, p, { assetURL: ctx.opts.assetURL }),
  preview: renderPreview,
};

// renderPreview shows an agent's runnable code (issue 18, the preview
// tier) the only way it is ever shown: an iframe with sandbox
// "allow-scripts" and never "allow-same-origin" (an opaque origin: no
// access to this page, its cookies or storage, no top navigation),
// loading the document from the daemon's separate preview origin, whose
// CSP forbids every network request. The code itself never enters this
// page; a URL that is not http(s) or is on this page's own origin is
// refused.
function renderPreview(ctx, id, p) {
  const src = previewURL(own(ctx.snap.previews, id));
  if (!src) {
    return text("div", "A code preview was here; previews are off on this page.", { class: "sb-placeholder", "data-sb-preview": "off" });
  }
  const height = Number.isInteger(p.height) && p.height >= 80 && p.height <= 1200 ? p.height : 320;
  const frame = el("iframe", { src, title: String(p.title ?? "Preview"), class: "sb-preview", loading: "lazy",
    referrerpolicy: "no-referrer", height, "data-sb-preview": "on" });
  // Fixed values, set here and nowhere else: the sandbox is the wall.
  frame.setAttribute("sandbox", "allow-scripts");
  frame.setAttribute("credentialless", ""); // where supported: no cookies on the request either
  return el("figure", { class: "sb-preview-frame" }, frame,
    text("figcaption", `${display(p.title)}: runnable preview by the assistant, sandboxed (no network, no access to this page)`, { class: "sb-preview-caption" }));
}

function previewURL(raw) {
  if (typeof raw !== "string") return null;
  let u;
  try {
    u = new URL(raw);
  } catch {
    return null;
  }
  if ((u.protocol !== "http:" && u.protocol !== "https:") || u.origin === location.origin) return null;
  return u.href;
}

// H is what charts.js builds its HTML with: the same safe helpers.
const H = { el, text, safeURL };

function sourceError(ctx, source) {
  const e = typeof source === "string" ? own(ctx.snap.errors, source) : undefined;
  if (!e) return null;
  return el("div", { class: "sb-callout sb-tone-danger", role: "note" }, text("strong", display(e.code)), " ", text("span", display(e.message)));
}

function cell(col, rec) {
  const v = walk(rec, col.key);
  if (col.kind === "link") {
    const href = safeURL(display(walk(rec, col.hrefKey ?? col.key)), "link");
    if (href) return text("a", display(v), { href, class: "sb-link", rel: "noopener noreferrer nofollow" });
    return text("span", display(v), { "data-sb-unsafe": "href" });
  }
  if (col.kind === "badge") return text("span", display(v), { class: "sb-badge-cell" });
  if (typeof v === "boolean") return text("span", v ? "Yes" : "No");
  return text("span", display(v));
}

// ---- actions ---------------------------------------------------------------------

const STATUS_TEXT = {
  running: "Working…",
  pending_approval: "Waiting for your approval…",
  ok: "Done.",
  rejected_by_user: "Not approved.",
  error: "Failed",
};

function actionStatus(ctx, actionId) {
  const st = own(ctx.snap.actions, actionId);
  if (!isObj(st)) return null;
  let msg = STATUS_TEXT[st.status] ?? "";
  if (st.status === "error" && isObj(st.error)) msg = `Failed: ${display(st.error.message)}`;
  return text("span", msg, { class: cls("sb-action-status", `sb-status-${st.status in STATUS_TEXT ? st.status : "error"}`),
    "data-sb-action-status": actionId, role: "status" });
}

function actionButton(ctx, actionId, label, variant, disabled) {
  const action = own(ctx.spec.actions, actionId);
  const wrap = el("span", { class: "sb-action" });
  const button = text("button", label, { type: "button", class: cls("sb-btn", variant), "data-sb-action": actionId });
  button.disabled = disabled || !isObj(action);
  button.addEventListener("click", () => runAction(ctx, actionId, action, wrap, button));
  wrap.append(button);
  const st = actionStatus(ctx, actionId);
  if (st) wrap.append(st);
  return wrap;
}

// runAction asks first when the action is destructive or says what to
// confirm (inline, so nothing blocks the page), then hands it to the host.
function runAction(ctx, actionId, action, wrap, button) {
  const question = isObj(action) && (action.confirm || (action.destructive ? "This cannot be undone. Continue?" : ""));
  const go = () => ctx.opts.onAction?.(actionId);
  if (!question) return go();
  button.hidden = true;
  const yes = text("button", "Confirm", { type: "button", class: "sb-btn sb-btn-danger", "data-sb-confirm": actionId });
  const no = text("button", "Cancel", { type: "button", class: "sb-btn sb-btn-secondary" });
  const box = el("span", { class: "sb-confirm", role: "group" }, text("span", question), yes, no);
  const done = () => { box.remove(); button.hidden = false; };
  yes.addEventListener("click", () => { done(); go(); });
  no.addEventListener("click", done);
  wrap.append(box);
  yes.focus();
}

// ---- forms -------------------------------------------------------------------------

function fieldKey(source, path) {
  return `${source}\u0000${path}`;
}

function renderForm(ctx, id, p) {
  const bind = String(p.bind ?? "");
  const form = el("form", { class: "sb-form", autocomplete: "off" });
  form.addEventListener("submit", (e) => e.preventDefault());
  const err = sourceError(ctx, bind);
  if (err) form.append(err);
  const dirty = new Set(Array.isArray(own(ctx.snap.dirty, bind)) ? own(ctx.snap.dirty, bind) : []);
  const filled = new Set(Array.isArray(own(ctx.snap.filled, bind)) ? own(ctx.snap.filled, bind) : []);
  const fields = Array.isArray(p.fields) ? p.fields.filter(isObj) : [];
  fields.forEach((f, i) => {
    const key = fieldKey(bind, f.path);
    const local = ctx.opts.localValues;
    const value = local?.has(key) ? local.get(key) : own(own(ctx.snap.values, bind), f.path);
    const inputId = `sb-${String(ctx.snap.instanceId ?? "p")}-${id}-${i}`.replace(/[^A-Za-z0-9_-]/g, "_");
    const input = fieldInput(f, value, inputId);
    attr(input, "data-sb-path", f.path);
    attr(input, "data-sb-source", bind);
    if (f.readOnly) input.disabled = true;
    const emit = () => ctx.opts.onEdit?.(bind, String(f.path), readInput(f, input), id);
    input.addEventListener(f.kind === "checkbox" || f.kind === "select" ? "change" : "input", emit);
    const mark = dirty.has(f.path) || local?.has(key) ? "edited" : filled.has(f.path) ? "filled" : "";
    const row = el("div", { class: cls("sb-field", mark && `sb-field-${mark}`), "data-sb-field": f.path },
      text("label", f.label ?? f.path, { for: inputId }),
      input,
      mark === "filled" ? text("span", "filled in by the assistant", { class: "sb-field-note" }) : null,
      f.help ? text("small", f.help, { class: "sb-help" }) : null);
    if (f.kind === "checkbox") row.classList.add("sb-field-check");
    form.append(row);
  });
  if (typeof p.submit === "string" && p.submit) {
    form.append(el("div", { class: "sb-row sb-gap-sm sb-justify-end" },
      actionButton(ctx, p.submit, p.submitLabel ?? "Save", "sb-btn-primary", false)));
  }
  return form;
}

function fieldInput(f, value, inputId) {
  switch (f.kind) {
    case "number": {
      const i = el("input", { id: inputId, type: "number", min: f.min, max: f.max, step: f.step ?? "any", inputmode: "decimal" });
      i.value = typeof value === "number" ? String(value) : "";
      return i;
    }
    case "checkbox": {
      const i = el("input", { id: inputId, type: "checkbox" });
      i.checked = value === true;
      return i;
    }
    case "date": {
      const i = el("input", { id: inputId, type: "date" });
      i.value = typeof value === "string" ? value : "";
      return i;
    }
    case "select": {
      const s = el("select", { id: inputId });
      const opts = Array.isArray(f.options) ? f.options.filter(isObj) : [];
      s.append(text("option", "—", { value: "" }));
      opts.forEach((o, i) => s.append(text("option", o.label ?? display(o.value), { value: String(i) })));
      const idx = opts.findIndex((o) => o.value === value);
      s.value = idx >= 0 ? String(idx) : "";
      s._sbOptions = opts.map((o) => o.value); // typed values, by index
      return s;
    }
    default: {
      const i = f.multiline ? el("textarea", { id: inputId, rows: 3 }) : el("input", { id: inputId, type: "text" });
      attr(i, "placeholder", f.placeholder);
      attr(i, "maxlength", Number.isInteger(f.maxLength) ? f.maxLength : undefined);
      i.value = value === undefined || value === null ? "" : display(value);
      return i;
    }
  }
}

function readInput(f, input) {
  switch (f.kind) {
    case "number":
      return input.value === "" || Number.isNaN(input.valueAsNumber) ? null : input.valueAsNumber;
    case "checkbox":
      return input.checked;
    case "select":
      return input.value === "" ? null : input._sbOptions[Number(input.value)];
    default:
      return input.value;
  }
}

// ---- default styles ------------------------------------------------------------------

// A small default look, adopted once per document. Every selector is
// wrapped in :where() (zero specificity), so an app's own rules for the
// sb-* classes win.
const CSS_TEXT = `
:where(.sb-panel){display:block;border:1px solid #d0d5dd;border-radius:.5rem;background:#fff;margin:0 0 1rem;overflow:hidden}
:where(.sb-panel-agent){border-color:#b692f6}
:where(.sb-panel-header){display:flex;gap:.5rem;align-items:center;padding:.4rem .75rem;background:#f9fafb;border-bottom:1px solid #eaecf0;font-size:.85rem}
:where(.sb-panel-name){font-weight:600;flex:1}
:where(.sb-badge){font-size:.75rem;padding:.05rem .5rem;border-radius:1rem;background:#f4ebff;color:#53389e}
:where(.sb-close){border:0;background:none;font-size:1.1rem;cursor:pointer;line-height:1}
:where(.sb-panel-body){padding:.75rem}
:where(.sb-title){margin:0 0 .25rem;font-size:1.1rem}
:where(.sb-description,.sb-help,.sb-field-note){color:#667085;font-size:.85rem;margin:0}
:where(.sb-stack){display:flex;flex-direction:column}
:where(.sb-row){display:flex;flex-direction:row;align-items:center}
:where(.sb-wrap){flex-wrap:wrap}
:where(.sb-justify-end){justify-content:flex-end}:where(.sb-justify-center){justify-content:center}:where(.sb-justify-between){justify-content:space-between}
:where(.sb-gap-none){gap:0}:where(.sb-gap-sm){gap:.35rem}:where(.sb-gap-md){gap:.75rem}:where(.sb-gap-lg){gap:1.25rem}
:where(.sb-w-1-4){flex:0 0 25%}:where(.sb-w-1-3){flex:0 0 33%}:where(.sb-w-1-2){flex:0 0 50%}:where(.sb-w-2-3){flex:0 0 66%}:where(.sb-w-3-4){flex:0 0 75%}:where(.sb-w-full){flex:1 1 100%}
:where(.sb-callout){border-left:4px solid #84adff;background:#eff4ff;padding:.5rem .75rem;border-radius:.25rem}
:where(.sb-callout.sb-tone-warning){border-color:#fdb022;background:#fffaeb}:where(.sb-callout.sb-tone-danger){border-color:#f97066;background:#fef3f2}:where(.sb-callout.sb-tone-success){border-color:#32d583;background:#ecfdf3}
:where(.sb-tone-muted){color:#667085}
:where(.sb-table){border-collapse:collapse;width:100%;font-size:.9rem}:where(.sb-table th,.sb-table td){border-bottom:1px solid #eaecf0;padding:.3rem .5rem;text-align:left}:where(.sb-num){text-align:right}
:where(.sb-field){display:flex;flex-direction:column;gap:.2rem;margin:0 0 .6rem}
:where(.sb-field-check){flex-direction:row-reverse;justify-content:flex-end;align-items:center}
:where(.sb-field-filled input,.sb-field-filled select){background:#f4ebff}
:where(.sb-btn){font:inherit;padding:.35rem .8rem;border-radius:.35rem;border:1px solid #d0d5dd;background:#fff;cursor:pointer}
:where(.sb-btn-primary){background:#3559e0;border-color:#3559e0;color:#fff}:where(.sb-btn-danger){background:#d92d20;border-color:#d92d20;color:#fff}:where(.sb-btn-link){border:0;background:none;color:#3559e0}
:where(.sb-action){display:inline-flex;gap:.5rem;align-items:center;flex-wrap:wrap}
:where(.sb-action-status){font-size:.85rem;color:#667085}:where(.sb-status-ok){color:#067647}:where(.sb-status-error,.sb-status-rejected_by_user){color:#b42318}
:where(.sb-confirm){display:inline-flex;gap:.4rem;align-items:center}
:where(.sb-placeholder){border:1px dashed #d0d5dd;padding:.5rem;color:#667085;font-size:.85rem}
:where(.sb-chart){margin:0;display:flex;flex-direction:column;gap:.3rem;min-width:16rem;flex:1}:where(.sb-chart-title){font-weight:600}
:where(.sb-chart-svg){width:100%;height:auto;max-width:40rem;font-family:inherit}:where(.sb-chart-svg text){fill:#344054}
:where(.sb-legend){display:flex;flex-wrap:wrap;gap:.3rem .9rem;list-style:none;margin:0;padding:0;font-size:.85rem}:where(.sb-legend li){display:flex;gap:.3rem;align-items:center}
:where(.sb-chart-note){font-size:.8rem;color:#667085;margin:0}:where(.sb-chart-data summary){cursor:pointer;font-size:.85rem;color:#475467}
:where(.sb-metric){display:flex;flex-direction:column;gap:.1rem;padding:.6rem .8rem;border:1px solid #e4e7ec;border-radius:.5rem;min-width:9rem}
:where(.sb-metric-label){font-size:.8rem;color:#475467}:where(.sb-metric-value){font-size:1.5rem;font-weight:600}:where(.sb-metric-unit){font-size:1rem;font-weight:400}
:where(.sb-metric-delta){font-size:.85rem}:where(.sb-delta-good){color:#067647}:where(.sb-delta-bad){color:#b42318}
:where(.sb-progress){display:flex;flex-direction:column;gap:.2rem;min-width:12rem}:where(.sb-progress-head){display:flex;justify-content:space-between;gap:.5rem;font-size:.85rem}:where(.sb-progress progress){width:100%}
:where(.sb-document){display:flex;flex-direction:column;gap:.5rem;max-width:48rem}:where(.sb-page-break){border:0;border-top:1px dashed #d0d5dd;margin:1rem 0}
:where(.sb-canvas-indicator){border:1px solid #fdb022;background:#fffaeb;color:#93370d;border-radius:.5rem;padding:.4rem .75rem;margin:0 0 1rem;font-size:.85rem}
:where(.sb-preview-frame){margin:0;display:flex;flex-direction:column;gap:.3rem}:where(.sb-preview){width:100%;border:1px dashed #b692f6;border-radius:.35rem;background:#fff}:where(.sb-preview-caption){font-size:.8rem;color:#667085}
:where(.sb-tab){border:0;background:none;padding:.3rem .6rem;cursor:pointer}:where(.sb-tab[aria-selected=true]){border-bottom:2px solid #3559e0}
`;

let styled = false;
function injectStyles() {
  if (styled || typeof CSSStyleSheet === "undefined" || !document.adoptedStyleSheets) return;
  styled = true;
  const sheet = new CSSStyleSheet();
  sheet.replaceSync(CSS_TEXT);
  document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
}

// ---- the host: instances in step with the daemon -------------------------------------

/**
 * attachPanels shows the panels of this tab in container and keeps them in
 * step with the daemon: it lists the tab's open panels (which also tells
 * the daemon this tab shows panels), renders panel.open and panel.update
 * events, removes panels on panel.close, sends the user's edits (so the
 * assistant's panel.fill leaves them alone) and runs the actions the user
 * clicks. Options: container (required), place(snapshot) → an element to
 * render that panel into instead (a page slot), onError(err).
 */
export function attachPanels(conn, { container, place, onError } = {}) {
  if (!conn || typeof conn.request !== "function") throw new TypeError("switchboard panels: attachPanels needs a connection");
  if (!container) throw new TypeError("switchboard panels: attachPanels needs a container element");
  injectStyles();
  const base = `/api/v1/sessions/${encodeURIComponent(conn.sessionId)}/panels`;
  const items = new Map(); // instanceId → {snap, frame, body, local: Map, queue: Map(form → {path: value}), timer, inflight}
  const report = (err) => (onError ? onError(err) : console.warn("switchboard panels:", err));

  // agentName is how the chrome names a principal: the built-in assistant
  // as such, anyone else by id ("agent:planner" → "planner", "user:admin"
  // → "admin", for a panel composed through the admin's API).
  const agentName = (p) => (typeof p !== "string" || p === "" ? "an agent"
    : p === "agent:assistant" ? "the assistant" : p.replace(/^(agent|user):/, ""));

  function frameFor(snap) {
    const body = el("div", { class: "sb-panel-body" });
    const close = text("button", "×", { type: "button", class: "sb-close", "aria-label": "Close panel", title: "Close" });
    close.addEventListener("click", () => host.close(snap.instanceId));
    // An agent panel that is not pinned is a draft (the canvas policy):
    // the assistant's next panel in its place replaces it unless the user
    // pins it.
    const agent = snap.origin === "agent";
    const draft = agent ? text("span", "Draft", { class: "sb-badge sb-draft", "data-sb-draft": "",
      title: "The assistant's next panel here replaces this one unless you pin it." }) : null;
    // Who is editing the panel now (its lease): shown while one is held.
    const lease = text("span", "", { class: "sb-badge sb-lease", "data-sb-lease": "" });
    lease.hidden = true;
    const pin = agent ? text("button", "Pin", { type: "button", class: "sb-btn sb-btn-link sb-pin", "aria-label": "Pin panel (keep it)" }) : null;
    pin?.addEventListener("click", () => host.pin(snap.instanceId));
    const header = el("header", { class: "sb-panel-header" },
      text("span", snap.title || "Panel", { class: "sb-panel-name" }),
      agent ? text("span", `Composed by ${agentName(snap.composedBy)}`, { class: "sb-badge", "data-sb-badge": "agent",
        "data-sb-agent": snap.composedBy || "",
        title: `${agentName(snap.composedBy)} made this panel. Its actions still ask for your approval.` }) : null,
      lease, draft, pin, close);
    const frame = el("article", { class: cls("sb-panel", agent && "sb-panel-agent"),
      "data-sb-instance": snap.instanceId, "data-sb-origin": agent ? "agent" : "host",
      "data-sb-panel": snap.panel || undefined }, header, body);
    return { frame, body, draft, pin, lease };
  }

  // The canvas indicator: while the surface is open (the assistant changes
  // its own panels without asking), a persistent notice heads the
  // container. It is drawn by the host page's SDK, outside every panel, so
  // no spec can hide it.
  let indicator = null;
  function showCanvas(c) {
    const open = isObj(c) && c.open === true;
    if (!open) {
      indicator?.remove();
      indicator = null;
      return;
    }
    if (!indicator) {
      indicator = el("div", { class: "sb-canvas-indicator", role: "status", "data-sb-canvas": "open" });
      container.prepend(indicator);
    }
    const what = c.hitlOnCompose ? "may remove its own panels without asking" : "adds and changes its own panels without asking each time";
    indicator.textContent = `Open canvas: the assistant ${what}. Changes to your data still ask for your approval.`;
    indicator.dataset.sbPreset = String(c.preset ?? "");
  }
  async function syncCanvas() {
    try {
      showCanvas(await conn.request(`/api/v1/sessions/${encodeURIComponent(conn.sessionId)}/canvas`));
    } catch (err) {
      if (err?.code !== "NOT_FOUND") report(err);
    }
  }

  function show(snap, focus) {
    if (!isObj(snap) || typeof snap.instanceId !== "string") return;
    let it = items.get(snap.instanceId);
    if (it && (snap.version ?? 0) < (it.snap.version ?? 0)) return; // an older snapshot, overtaken
    if (!it) {
      const { frame, body, draft, pin, lease } = frameFor(snap);
      it = { snap, frame, body, draft, pin, lease, local: new Map(), queue: new Map(), timer: null, inflight: 0 };
      items.set(snap.instanceId, it);
      const target = place?.(snap) ?? container;
      target.append(frame);
    }
    it.snap = snap;
    if (it.draft) it.draft.hidden = it.pin.hidden = snap.pinned === true;
    const l = isObj(snap.lease) && Date.parse(snap.lease.expiresAt) > Date.now() ? snap.lease : null;
    it.lease.hidden = !l;
    it.lease.textContent = l ? `Being edited by ${agentName(l.principal)}` : "";
    it.lease.dataset.sbLease = l ? String(l.agentId ?? "") : "";
    it.lease.title = l ? `${agentName(l.principal)} holds this panel until ${new Date(l.expiresAt).toLocaleTimeString()}; your own edits always win.` : "";
    reconcile(it);
    const active = document.activeElement;
    const keep = active && it.body.contains(active) ? {
      node: active.closest("[data-sb-node]")?.getAttribute("data-sb-node"),
      path: active.getAttribute("data-sb-path"),
      start: active.selectionStart, end: active.selectionEnd,
    } : null;
    renderPanel(snap, it.body, {
      localValues: it.local,
      onEdit: (source, path, value, form) => edit(it, source, path, value, form),
      onAction: (actionId) => act(it, actionId),
    });
    it.frame.dataset.sbVersion = String(snap.version ?? 0);
    if (keep?.path) {
      const again = it.body.querySelector(`[data-sb-node="${CSS.escape(keep.node ?? "")}"] [data-sb-path="${CSS.escape(keep.path)}"]`);
      if (again) {
        again.focus({ preventScroll: true });
        try { if (keep.start !== null) again.setSelectionRange(keep.start, keep.end); } catch { /* not a text input */ }
      }
    }
    if (focus) it.frame.scrollIntoView({ block: "nearest" });
  }

  // reconcile forgets local edits the daemon has and no longer marks dirty
  // (the form was saved), once no edit is on its way.
  function reconcile(it) {
    if (it.inflight > 0 || it.queue.size > 0) return;
    for (const key of [...it.local.keys()]) {
      const [source, path] = key.split("\u0000");
      const dirty = own(it.snap.dirty, source);
      if (!Array.isArray(dirty) || !dirty.includes(path)) it.local.delete(key);
    }
  }

  function edit(it, source, path, value, form) {
    it.local.set(fieldKey(source, path), value);
    const q = it.queue.get(form) ?? {};
    q[path] = value;
    it.queue.set(form, q);
    clearTimeout(it.timer);
    it.timer = setTimeout(() => flush(it), EDIT_DEBOUNCE_MS);
  }

  async function flush(it) {
    clearTimeout(it.timer);
    const batches = [...it.queue.entries()];
    it.queue.clear();
    await Promise.all(batches.map(async ([form, values]) => {
      it.inflight++;
      try {
        const res = await conn.request(`${base}/${encodeURIComponent(it.snap.instanceId)}/values`, { method: "PUT", body: { form, values } });
        it.frame.dataset.sbSynced = String(res?.version ?? "");
        for (const fe of res?.errors ?? []) report(new Error(`${fe.path}: ${fe.message}`));
      } catch (err) {
        report(err);
      } finally {
        it.inflight--;
      }
    }));
  }

  async function act(it, actionId) {
    await flush(it); // the daemon saves what the user sees
    try {
      await conn.request(`${base}/${encodeURIComponent(it.snap.instanceId)}/actions/${encodeURIComponent(actionId)}`, { method: "POST" });
    } catch (err) {
      report(err);
    }
  }

  function remove(id) {
    const it = items.get(id);
    if (!it) return;
    clearTimeout(it.timer);
    it.frame.remove();
    items.delete(id);
  }

  async function sync() {
    try {
      const res = await conn.request(base);
      const open = new Set();
      for (const snap of res?.instances ?? []) {
        open.add(snap.instanceId);
        show(snap, false);
      }
      for (const id of [...items.keys()]) if (!open.has(id)) remove(id);
    } catch (err) {
      report(err);
    }
  }

  const offEvent = conn.on("event", ({ kind, data }) => {
    if (kind === "panel.open") show(data, true);
    else if (kind === "panel.update") show(data, false);
    else if (kind === "panel.close") remove(data?.instanceId);
    else if (kind === "panel.canvas") showCanvas(data);
  });
  const offStatus = conn.on("status", (s) => { if (s === "open") { sync(); syncCanvas(); } });
  const ready = Promise.all([sync(), syncCanvas()]).then(() => {});

  const host = {
    /** Resolves once the first listing has rendered. */
    ready,
    /** Open a registered panel for the user; resolves to its snapshot. */
    async open(panel, params) {
      const snap = await conn.request(base, { method: "POST", body: params ? { panel, params } : { panel } });
      show(snap, true);
      return snap;
    },
    /** Close a panel (the daemon forgets its unsaved values). */
    async close(instanceId) {
      remove(instanceId);
      try {
        await conn.request(`${base}/${encodeURIComponent(instanceId)}`, { method: "DELETE" });
      } catch (err) {
        if (err?.code !== "NOT_FOUND") report(err);
      }
    },
    /** Pin an agent panel: the user keeps it (it is no longer a draft). */
    async pin(instanceId) {
      try {
        const snap = await conn.request(`${base}/${encodeURIComponent(instanceId)}/pin`, { method: "POST" });
        show(snap, false);
      } catch (err) {
        report(err);
      }
    },
    /** Send edits still waiting for their debounce now. */
    flush: () => Promise.all([...items.values()].map(flush)),
    /** The snapshots shown, by instance id. */
    get instances() {
      return new Map([...items].map(([id, it]) => [id, it.snap]));
    },
    destroy() {
      offEvent();
      offStatus();
      showCanvas(null);
      for (const id of [...items.keys()]) remove(id);
    },
  };
  return host;
}
