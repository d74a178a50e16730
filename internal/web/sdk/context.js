// switchboard browser SDK: the tab reports what the user sees.
//
//   import { reportContexts } from "/sdk/context.js";
//   const contexts = reportContexts(conn, { panels }); // panels: attachPanels(...)
//
// Contexts are the page itself (its route and title) and every element the
// app marks with data-sb-context="id" (data-sb-context-kind, default
// "section"; data-sb-context-label, default its aria-label or first
// heading). Panels are the ones attachPanels shows plus elements marked
// data-sb-panel-id (data-sb-panel-type, data-sb-panel-title,
// data-sb-dirty, data-sb-minimized); a panel belongs to the nearest marked
// context around it, else to the page. Attention: focused = holds the
// keyboard focus, the text selection or the user's last edit; visible =
// in the viewport (IntersectionObserver); background = the rest, and
// everything while the tab is hidden. Reports go to
// PUT /api/v1/sessions/{id}/context, debounced, only when they changed.

const DEBOUNCE_MS = 250;
// The daemon's field limits (internal/workspace/contexts.go): trimmed here, refused there.
const MAX_ID = 200, MAX_KIND = 64, MAX_LABEL = 300, MAX_ROUTE = 2048, MAX_SELECTION = 1000;
// A report past this many panels is cut here (the daemon keeps 500 a tab
// and counts the rest); it bounds the request body.
const MAX_PANELS = 2000;
// An edit keeps its context focused this long after the last keystroke.
const EDIT_FOCUS_MS = 30_000;
// An edit is on its way to the daemon this long (the panels' debounce and the PUT).
const SETTLE_MS = 2_000;

function cut(s, n) {
  s = String(s ?? "").replace(/\s+/g, " ").trim();
  return [...s].length > n ? [...s].slice(0, n - 1).join("") + "…" : s;
}

function labelOf(el) {
  return el.getAttribute("data-sb-context-label") || el.getAttribute("aria-label") ||
    el.querySelector("h1,h2,h3,h4,[role=heading]")?.textContent || el.id || "";
}

/**
 * Report this tab's contexts to the daemon whenever they change.
 * Options: panels (the attachPanels host, for its panels' titles, types
 * and dirty state), root (default document), page() → {id, kind, label,
 * route} for the page context, debounceMs. Returns {flush(), destroy(),
 * contexts}.
 */
export function reportContexts(conn, { panels, root = document, page, debounceMs = DEBOUNCE_MS } = {}) {
  if (!conn || typeof conn.request !== "function") throw new TypeError("switchboard context: reportContexts needs a connection");
  const path = `/api/v1/sessions/${encodeURIComponent(conn.sessionId)}/context`;
  const visible = new Set(); // context elements in the viewport
  const observed = new Set();
  let lastEdit = null; // {el, at}
  // Panels the user edited that the daemon has not reported saved: the
  // daemon sends no update for the user's own edits, so the tab keeps them.
  const edited = new Map(); // instanceId → time of the last edit
  let timer = null, sent = null, sending = null, destroyed = false;

  const io = typeof IntersectionObserver === "function" ? new IntersectionObserver((entries) => {
    for (const e of entries) {
      if (e.isIntersecting) visible.add(e.target);
      else visible.delete(e.target);
    }
    schedule();
  }) : null;

  function contextEls() {
    return [...root.querySelectorAll("[data-sb-context]")].filter((el) => el.getAttribute("data-sb-context").length <= MAX_ID);
  }

  function observe(els) {
    if (!io) return;
    for (const el of els) if (!observed.has(el)) { io.observe(el); observed.add(el); }
    for (const el of [...observed]) if (!el.isConnected) { io.unobserve(el); observed.delete(el); visible.delete(el); }
  }

  // The element the user is working in: the focus, the selection, the last edit.
  function hotSpots() {
    const out = [];
    const active = document.activeElement;
    if (active && active !== document.body && document.hasFocus?.() !== false) out.push(active);
    const sel = document.getSelection?.();
    if (sel && !sel.isCollapsed && sel.anchorNode) out.push(sel.anchorNode.nodeType === 1 ? sel.anchorNode : sel.anchorNode.parentElement);
    if (lastEdit && Date.now() - lastEdit.at < EDIT_FOCUS_MS && lastEdit.el.isConnected) out.push(lastEdit.el);
    return out.filter(Boolean);
  }

  function panelEntries() {
    const out = [];
    const snaps = panels?.instances ?? new Map();
    for (const el of root.querySelectorAll("[data-sb-instance]")) {
      const id = el.getAttribute("data-sb-instance");
      const snap = snaps.get(id);
      const rootType = snap?.spec?.nodes?.[snap.spec.root]?.type;
      const dirty = edited.has(id) || (!!snap?.dirty && Object.values(snap.dirty).some((v) => Array.isArray(v) && v.length > 0));
      out.push({ el, panel: { id: cut(id, MAX_ID), type: cut(snap?.panel || rootType || "panel", MAX_KIND), title: cut(snap?.title || "Panel", MAX_LABEL),
        ...(dirty ? { dirty: true } : {}), origin: snap?.origin === "agent" ? "agent" : "host", ...(el.hidden ? { minimized: true } : {}) } });
    }
    for (const el of root.querySelectorAll("[data-sb-panel-id]")) {
      const id = el.getAttribute("data-sb-panel-id");
      if (!id || id.length > MAX_ID) continue;
      out.push({ el, panel: { id, type: cut(el.getAttribute("data-sb-panel-type") || "panel", MAX_KIND),
        title: cut(el.getAttribute("data-sb-panel-title") || labelOf(el), MAX_LABEL),
        ...(el.hasAttribute("data-sb-dirty") ? { dirty: true } : {}), origin: el.getAttribute("data-sb-origin") === "agent" ? "agent" : "host",
        ...(el.hasAttribute("data-sb-minimized") || el.hidden ? { minimized: true } : {}) } });
    }
    return out;
  }

  function selectionIn(el, hot) {
    const inside = hot.find((h) => el.contains(h));
    if (!inside) return undefined;
    const s = {};
    const p = inside.closest("[data-sb-instance],[data-sb-panel-id]");
    if (p && el.contains(p)) s.panelId = cut(p.getAttribute("data-sb-instance") ?? p.getAttribute("data-sb-panel-id"), MAX_ID);
    const node = inside.closest("[data-sb-node]");
    if (node) s.nodeId = cut(node.getAttribute("data-sb-node"), MAX_ID);
    const text = document.getSelection?.()?.toString();
    if (text && el.contains(document.getSelection().anchorNode)) s.text = cut(text, MAX_SELECTION);
    return Object.keys(s).length ? s : undefined;
  }

  function compute() {
    const els = contextEls();
    observe(els);
    const hidden = document.visibilityState === "hidden";
    const hot = hotSpots();
    const p = page?.() ?? {};
    const route = location.pathname + location.search;
    const pageCtx = { id: cut(p.id ?? `route:${location.pathname}`, MAX_ID), kind: cut(p.kind ?? "page", MAX_KIND),
      label: cut(p.label ?? document.title, MAX_LABEL), attention: "visible", panels: [], route: cut(p.route ?? route, MAX_ROUTE) };
    const byEl = new Map();
    const contexts = [pageCtx];
    const seen = new Set([pageCtx.id]);
    for (const el of els) {
      const id = el.getAttribute("data-sb-context");
      if (seen.has(id)) continue;
      seen.add(id);
      const c = { id, kind: cut(el.getAttribute("data-sb-context-kind") || "section", MAX_KIND), label: cut(labelOf(el), MAX_LABEL),
        attention: hot.some((h) => el.contains(h)) ? "focused" : visible.has(el) || !io ? "visible" : "background", panels: [] };
      const sel = c.attention === "focused" ? selectionIn(el, hot) : undefined;
      if (sel) c.selection = sel;
      byEl.set(el, c);
      contexts.push(c);
    }
    let n = 0;
    for (const { el, panel } of panelEntries()) {
      if (n++ >= MAX_PANELS) break;
      const owner = el.parentElement?.closest("[data-sb-context]");
      const c = (owner && byEl.get(owner)) || pageCtx;
      if (!c.panels.some((q) => q.id === panel.id)) c.panels.push(panel);
    }
    // The page is focused when the user works in it outside any marked context.
    if (hot.length && !contexts.some((c) => c.attention === "focused")) {
      pageCtx.attention = "focused";
      const sel = selectionIn(document.documentElement, hot);
      if (sel) pageCtx.selection = sel;
    }
    if (hidden) for (const c of contexts) { c.attention = "background"; delete c.selection; }
    return contexts;
  }

  function schedule() {
    if (destroyed) return;
    clearTimeout(timer);
    timer = setTimeout(send, debounceMs);
  }

  async function send() {
    clearTimeout(timer);
    if (destroyed) return;
    const contexts = compute();
    const body = JSON.stringify(contexts);
    if (body === sent) return;
    await sending;
    sending = conn.request(path, { method: "PUT", body: { contexts } }).then(
      () => { sent = body; },
      (err) => { sent = null; if (err?.code !== "SESSION_GONE") console.warn("switchboard context:", err?.code ?? "", err?.message ?? err); });
    await sending;
  }

  const onEdit = (e) => {
    lastEdit = { el: e.target, at: Date.now() };
    const frame = e.target?.closest?.("[data-sb-instance]");
    if (frame) edited.set(frame.getAttribute("data-sb-instance"), Date.now());
    schedule();
  };
  const listeners = [
    [document, "focusin", schedule], [document, "focusout", schedule], [document, "selectionchange", schedule],
    [document, "input", onEdit], [document, "visibilitychange", schedule], [window, "popstate", schedule], [window, "hashchange", schedule],
  ];
  for (const [t, ev, fn] of listeners) t.addEventListener(ev, fn, true);
  const mo = new MutationObserver(schedule);
  mo.observe(root === document ? document.documentElement : root, { childList: true, subtree: true, attributes: true,
    attributeFilter: ["data-sb-context", "data-sb-context-label", "data-sb-panel-id", "data-sb-panel-title", "data-sb-dirty", "data-sb-minimized", "data-sb-version", "hidden"] });
  const titleEl = document.querySelector("title");
  const tmo = titleEl ? new MutationObserver(schedule) : null;
  tmo?.observe(titleEl, { childList: true, characterData: true, subtree: true });
  const offEvent = conn.on?.("event", ({ kind, data }) => {
    if (!String(kind).startsWith("panel.")) return;
    // A snapshot with nothing dirty, well after the last edit: saved (or reset).
    const id = data?.instanceId, at = edited.get(id);
    const clean = !data?.dirty || !Object.values(data.dirty).some((v) => Array.isArray(v) && v.length > 0);
    if (at !== undefined && (kind === "panel.close" || (clean && Date.now() - at > SETTLE_MS))) edited.delete(id);
    schedule();
  });
  const offStatus = conn.on?.("status", (s) => { if (s === "open") { sent = null; schedule(); } });
  schedule();

  return {
    /** Send the current contexts now (skipped when unchanged). */
    flush: send,
    /** The contexts as they would be reported now. */
    get contexts() { return compute(); },
    destroy() {
      destroyed = true;
      clearTimeout(timer);
      for (const [t, ev, fn] of listeners) t.removeEventListener(ev, fn, true);
      mo.disconnect();
      tmo?.disconnect();
      io?.disconnect();
      offEvent?.();
      offStatus?.();
    },
  };
}
