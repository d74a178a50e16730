// The switchboard demo: a small single-page app (projects, a media library,
// settings) that mounts browser tools with the SDK, so an assistant — or
// curl — can drive it. Plain ES modules, no build step.
import { connect, SwitchboardError } from "/sdk/switchboard.js";
import { attachPanels } from "/sdk/panels.js";
import { reportContexts } from "/sdk/context.js";
import "/sdk/chat.js"; // defines <switchboard-chat>
import { watchTasks, getTask, cancelTask, isOpen } from "/sdk/tasks.js";

// ---- data -----------------------------------------------------------------

const projects = [
  { id: "apollo", name: "Apollo launch site", tasks: ["Hero video", "Pricing table", "Press kit"] },
  { id: "borealis", name: "Borealis rebrand", tasks: ["Logo grid", "Colour tokens"] },
  { id: "cascade", name: "Cascade onboarding", tasks: ["Welcome email", "Checklist", "Tooltips", "Survey"] },
  { id: "delta", name: "Delta annual report", tasks: ["Charts", "CEO letter"] },
  { id: "ember", name: "Ember mobile app", tasks: ["Splash screen", "Push copy"] },
  { id: "fjord", name: "Fjord podcast", tasks: ["Episode 12 art", "Show notes"] },
];
const kinds = { photo: "🖼️", video: "🎬", audio: "🎧" };
const media = Array.from({ length: 24 }, (_, i) => {
  const kind = ["photo", "video", "audio"][i % 3];
  return { id: `media-${i + 1}`, kind, title: `${kind[0].toUpperCase()}${kind.slice(1)} ${i + 1}` };
});
const settings = { name: "Alex Doe", theme: "system", language: "en", digest: "weekly" };

// ---- pages ----------------------------------------------------------------

const pages = {
  projects: { title: "Projects", render: renderProjects },
  media: { title: "Media library", render: renderMedia, mount: mountMedia },
  settings: { title: "Settings", render: renderSettings },
};

const main = document.getElementById("page");
let current = null; // {name, unmount}

function routeOf(path) {
  const rest = path.replace(/^\/demo\/?/, "").split("/").filter(Boolean);
  const name = pages[rest[0]] ? rest[0] : "projects";
  return { name, id: rest[1] };
}

function show(path, { push = false } = {}) {
  const { name, id } = routeOf(path);
  const url = `/demo/${name}${id ? "/" + encodeURIComponent(id) : ""}`;
  if (push && location.pathname !== url) history.pushState(null, "", url);
  current?.unmount?.();
  const page = pages[name];
  main.replaceChildren(page.render(id));
  document.title = `${page.title} · Acme Studio`;
  document.body.dataset.page = name;
  for (const a of document.querySelectorAll("header nav a")) {
    a.toggleAttribute("aria-current", a.getAttribute("href") === `/demo/${name}`);
    if (a.hasAttribute("aria-current")) a.setAttribute("aria-current", "page");
  }
  current = { name, unmount: page.mount?.() };
  if (id) {
    const el = findTarget(id) ?? findTarget(`${name === "projects" ? "project" : name}-${id}`);
    el?.classList.add("highlight");
    el?.scrollIntoView({ block: "center" });
  }
  return { page: name, url, title: page.title };
}

function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (v !== false && v != null) el.setAttribute(k, v === true ? "" : v);
  }
  el.append(...children.flat());
  return el;
}

function renderProjects() {
  return h("div", {},
    h("h1", {}, "Projects"),
    h("button", { type: "button", class: "link", "data-open-dashboard": "", onclick: openDashboard }, "Studio dashboard"),
    projects.map((p) =>
      h("article", { class: "card", id: `project-${p.id}`, "data-target": `project-${p.id}`, "data-label": p.name,
                     "data-sb-context": `project:${p.id}`, "data-sb-context-kind": "project", "data-sb-context-label": p.name },
        h("h3", {}, p.name),
        h("ul", { class: "tasks" }, p.tasks.map((t) => h("li", {}, t))),
        h("button", { type: "button", class: "link", "data-open-settings": p.id, onclick: () => openSettings(p.id) }, "Project settings"))));
}

// The project settings panel is registered by the daemon (--demo) over the
// demo's own database; the page opens it when the user asks, and the
// assistant can open, fill and save it too (saving asks for approval).
function openSettings(projectId) {
  return panels?.open("project.settings", { projectId }).catch((err) => console.warn("switchboard:", err.code ?? "", err.message));
}

// The dashboard (charts over the same projects) is a registered panel too;
// the assistant can open it, or compose its own from the example that
// panel.describe serves ("project-dashboard").
function openDashboard() {
  return panels?.open("studio.dashboard").catch((err) => console.warn("switchboard:", err.code ?? "", err.message));
}

function renderMedia() {
  return h("div", {},
    h("h1", {}, "Media library"),
    h("label", { for: "media-kind" }, "Show"),
    h("select", { id: "media-kind", "data-target": "media-kind", "data-label": "media kind filter", onchange: (e) => filterMedia(e.target.value) },
      h("option", { value: "all" }, "Everything"),
      Object.keys(kinds).map((k) => h("option", { value: k }, k))),
    h("p", {}, "Selected: ", h("strong", { id: "media-selected" }, "nothing")),
    h("div", { class: "grid", "data-target": "media", "data-label": "media grid (select an item)",
               "data-sb-context": "media-grid", "data-sb-context-kind": "list", "data-sb-context-label": "Media library grid" },
      media.map((m) =>
        h("div", { class: "media", id: m.id, "data-target": m.id, "data-label": m.title, "data-kind": m.kind, tabindex: 0,
                   onclick: () => selectMedia(m.id) },
          h("div", { class: "thumb", style: `background: hsl(${(parseInt(m.id.slice(6)) * 37) % 360} 70% 90%)` }, kinds[m.kind]),
          h("div", {}, m.title)))));
}

function filterMedia(kind) {
  document.getElementById("media-kind").value = kind;
  for (const el of document.querySelectorAll(".media")) el.hidden = kind !== "all" && el.dataset.kind !== kind;
  return document.querySelectorAll(".media:not([hidden])").length;
}

function selectMedia(id) {
  const el = document.getElementById(id);
  if (!el?.classList.contains("media")) throw new SwitchboardError("NOT_FOUND", `no media item ${id}`);
  for (const m of document.querySelectorAll(".media.selected")) m.classList.remove("selected");
  el.classList.add("selected");
  document.getElementById("media-selected").textContent = el.dataset.label;
  return el.dataset.label;
}

function renderSettings() {
  const field = (id, label, input) => [h("label", { for: id }, label), input];
  return h("form", { onsubmit: (e) => e.preventDefault(), "data-sb-context": "settings", "data-sb-context-kind": "form",
                     "data-sb-context-label": "Account settings" },
    h("h1", {}, "Settings"),
    field("settings-name", "Display name",
      h("input", { id: "settings-name", "data-target": "settings-name", "data-label": "display name", value: settings.name })),
    field("settings-theme", "Theme",
      h("select", { id: "settings-theme", "data-target": "settings-theme", "data-label": "theme" },
        ["system", "light", "dark"].map((v) => h("option", { value: v, selected: v === settings.theme }, v)))),
    field("settings-language", "Language",
      h("select", { id: "settings-language", "data-target": "settings-language", "data-label": "language" },
        [["en", "English"], ["fr", "Français"], ["de", "Deutsch"], ["ja", "日本語"]].map(([v, t]) =>
          h("option", { value: v, selected: v === settings.language }, t)))),
    field("settings-digest", "Email digest",
      h("select", { id: "settings-digest", "data-target": "settings-digest", "data-label": "email digest" },
        ["daily", "weekly", "never"].map((v) => h("option", { value: v, selected: v === settings.digest }, v)))),
    h("p", { class: "hint" }, "Browser tools only move the view: selecting a value here does not save it."));
}

function findTarget(name) {
  return document.querySelector(`[data-target="${CSS.escape(String(name))}"]`) ?? document.getElementById(String(name));
}

function mustFind(name) {
  const el = findTarget(name);
  if (!el) {
    const known = [...document.querySelectorAll("[data-target]")].map((e) => e.dataset.target);
    throw new SwitchboardError("NOT_FOUND", `no element "${name}" on the ${current?.name} page; targets here: ${known.join(", ")}`);
  }
  return el;
}

// ---- the session ------------------------------------------------------------

// A real app's backend opens the session (with its admin token) and hands
// {sessionId, sessionToken} to the page. The demo has two stand-ins: a
// fragment (#session=..&token=..) made with curl, or the daemon's own
// demo-only bootstrap route, enabled by `switchboard serve --demo` and
// gated by the per-start key in the URL serve prints (/demo/?key=..).
// The key moves from the URL into this tab's sessionStorage at once (a
// reload or an in-app link keeps working; the address bar, history and
// Referer never show it again), as Jupyter moves its token into a cookie.
const demoKeyItem = "switchboard.demoKey";

function takeDemoKey() {
  const params = new URLSearchParams(location.search);
  const key = params.get("key");
  if (key) {
    sessionStorage.setItem(demoKeyItem, key);
    params.delete("key");
    const rest = params.toString();
    history.replaceState(history.state, "", location.pathname + (rest ? "?" + rest : "") + location.hash);
  }
  return sessionStorage.getItem(demoKeyItem);
}

async function session() {
  const key = takeDemoKey();
  const frag = new URLSearchParams(location.hash.slice(1));
  if (frag.get("session") && frag.get("token")) {
    history.replaceState(null, "", location.pathname);
    return { sessionId: frag.get("session"), sessionToken: frag.get("token") };
  }
  const headers = { "Content-Type": "application/json" };
  if (key) headers["X-Switchboard-Demo-Key"] = key;
  const res = await fetch("/demo/session", { method: "POST", headers, body: "{}" });
  if (!res.ok) {
    const body = await res.json().catch(() => null);
    if (res.status === 401) sessionStorage.removeItem(demoKeyItem); // a key from an earlier start
    throw new Error(body?.error ? `${body.error.code}: ${body.error.message}` : `HTTP ${res.status}`);
  }
  return res.json();
}

const statusEl = document.getElementById("status");
function setStatus(s) {
  statusEl.textContent = s;
  document.body.dataset.status = s;
}

function logAction({ phase, request, result }) {
  if (phase !== "end") return;
  const li = h("li", {}, h("code", {}, request.tool), " ", JSON.stringify(request.input), " → ",
    result.ok ? "ok" : `${result.error.code}: ${result.error.message}`);
  document.getElementById("activity").prepend(li);
}

function explain(sb) {
  document.getElementById("session-id").textContent = sb.sessionId;
  document.getElementById("tool-names").textContent = sb.tools.join(", ");
  document.getElementById("curl").textContent =
`curl -s -X POST http://${location.host}/api/v1/tools/nav.goto/call \\
  -H "Authorization: Bearer $(cat ~/.local/share/switchboard/admin.token)" \\
  -H "Content-Type: application/json" \\
  -d '{"sessionId": "${sb.sessionId}", "input": {"page": "media"}}'`;
}

function mountTools(sb) {
  const target = { type: "string", description: "an element's data-target name (page.describe lists them)" };
  sb.registerTool({
    name: "nav.goto",
    description: "Open a page of the app: projects, media (the media library) or settings. With id, also highlight that item (a project id such as \"apollo\", or a media id such as \"media-7\").",
    inputSchema: { type: "object", properties: { page: { enum: Object.keys(pages) }, id: { type: "string" } }, required: ["page"], additionalProperties: false },
    outputSchema: { type: "object", properties: { page: { type: "string" }, url: { type: "string" }, title: { type: "string" } }, required: ["page", "url"] },
    handler: ({ page, id }) => show(`/demo/${page}${id ? "/" + id : ""}`, { push: true }),
  });
  sb.registerTool({
    name: "ui.scroll_to",
    description: "Scroll an element of the current page into view.",
    inputSchema: { type: "object", properties: { target }, required: ["target"], additionalProperties: false },
    handler: ({ target }) => {
      const el = mustFind(target);
      el.scrollIntoView({ block: "center" });
      return { target, top: Math.round(el.getBoundingClientRect().top) };
    },
  });
  sb.registerTool({
    name: "ui.focus",
    description: "Move keyboard focus to an element of the current page (a field, a media item).",
    inputSchema: { type: "object", properties: { target }, required: ["target"], additionalProperties: false },
    handler: ({ target }) => {
      const el = mustFind(target);
      el.focus({ preventScroll: false });
      return { target, focused: document.activeElement === el };
    },
  });
  sb.registerTool({
    name: "ui.select",
    description: "Select a value in a dropdown of the current page (e.g. target settings-theme, value dark), or select an item of the media grid (target media, value media-7). Selecting only moves the view; nothing is saved.",
    inputSchema: { type: "object", properties: { target, value: { type: "string" } }, required: ["target", "value"], additionalProperties: false },
    handler: ({ target, value }) => {
      const el = mustFind(target);
      if (el instanceof HTMLSelectElement) {
        const opts = [...el.options].map((o) => o.value);
        if (!opts.includes(value)) throw new SwitchboardError("INVALID_INPUT", `${target} has no option "${value}"; it has ${opts.join(", ")}`);
        el.value = value;
        el.dispatchEvent(new Event("change", { bubbles: true }));
        return { target, value, selected: el.value === value };
      }
      if (target === "media") return { target, value, selected: selectMedia(value) };
      throw new SwitchboardError("INVALID_INPUT", `${target} is not something that can be selected`);
    },
  });
  sb.registerTool({
    name: "page.describe",
    class: "read",
    description: "Describe the current page: its name, URL and the elements the ui.* tools can target.",
    inputSchema: { type: "object", additionalProperties: false },
    handler: () => ({
      page: current?.name,
      url: location.pathname,
      targets: [...main.querySelectorAll("[data-target]")].filter((e) => !e.hidden)
        .map((e) => ({ target: e.dataset.target, label: e.dataset.label ?? e.textContent.trim().slice(0, 60) })),
    }),
  });
}

// The media page mounts one more tool while it is shown, and withdraws it
// when the user leaves: tools follow what is on screen.
let sb = null;
let panels = null;
function mountMedia() {
  return sb?.registerTool({
    name: "media.filter",
    description: "Filter the media library grid by kind: photo, video, audio or all.",
    inputSchema: { type: "object", properties: { kind: { enum: ["all", ...Object.keys(kinds)] } }, required: ["kind"], additionalProperties: false },
    handler: ({ kind }) => ({ kind, shown: filterMedia(kind) }),
  });
}

// ---- tasks ----------------------------------------------------------------

// The user's delegated tasks, read with the tab's own session token: each
// shows its goal, status, who works on it and what it spent; opening one
// reads it afresh (its steps, its result or its error), and an open one
// can be cancelled. The list follows the tasks as they change.
const taskLabels = {
  submitted: "waiting", working: "working", input_required: "needs you",
  completed: "done", failed: "failed", cancelled: "cancelled",
};

function showTasks(sb) {
  const section = document.getElementById("tasks");
  const list = document.getElementById("task-list");
  const empty = document.getElementById("tasks-empty");
  const opened = new Set(); // task ids whose details are open
  const render = (tasks) => {
    section.hidden = false;
    empty.hidden = tasks.length > 0;
    list.replaceChildren(...tasks.map((t) => taskItem(sb, t, opened)));
  };
  watchTasks(sb, render, { limit: 10, onError: (err) => console.warn("switchboard: tasks:", err.code ?? "", err.message) });
}

function taskItem(sb, t, opened) {
  const body = h("div", { class: "task-body" }, taskDetails(t));
  const details = h("details", { open: opened.has(t.id) },
    h("summary", {},
      h("span", { class: "task-goal" }, t.goal),
      h("span", { class: "task-status", "data-status": t.status }, taskLabels[t.status] ?? t.status)),
    body);
  details.addEventListener("toggle", async () => {
    if (!details.open) return opened.delete(t.id);
    opened.add(t.id);
    try {
      body.replaceChildren(...taskDetails(await getTask(sb, t.id)));
      body.dataset.read = "true"; // read afresh since it was opened
    } catch (err) {
      body.replaceChildren(h("p", { class: "hint" }, `${err.code ?? ""} ${err.message}`));
    }
  });
  const who = t.assignee === "agent:assistant" ? "the assistant" : t.assignee.replace(/^agent:/, "");
  const meta = h("p", { class: "task-meta" }, `${who} · ${t.usage.calls} call${t.usage.calls === 1 ? "" : "s"}`);
  if (isOpen(t)) {
    meta.append(" · ", h("button", { type: "button", class: "link", "aria-label": `Cancel task: ${t.goal}`,
      onclick: async (e) => {
        e.currentTarget.disabled = true;
        await cancelTask(sb, t.id).catch((err) => console.warn("switchboard: cancel:", err.code ?? "", err.message));
      } }, "Cancel"));
  }
  return h("li", { class: "task", "data-task": t.id, "data-status": t.status }, details, meta);
}

function taskDetails(t) {
  const out = [];
  if (t.error) out.push(h("p", { class: "task-error" }, `${t.error.code}: ${t.error.message}`));
  for (const a of t.artifacts ?? []) {
    out.push(h("p", { class: "task-result" }, a.text ?? JSON.stringify(a.data)));
  }
  const steps = (t.steps ?? []).filter((s) => s.kind === "call" || s.kind === "approval");
  if (steps.length) {
    out.push(h("ol", { class: "task-steps" }, steps.map((s) => h("li", {}, `${s.tool} — ${s.kind === "approval" ? "waits for approval" : s.status}`))));
  }
  if (!out.length) out.push(h("p", { class: "hint" }, "No steps yet."));
  return out;
}

async function start() {
  let why = "";
  const creds = await session().catch((err) => { why = err.message; return null; });
  if (!creds) {
    setStatus("closed");
    // No session, nothing to drive: no "attached as session …" above an
    // empty command.
    document.getElementById("drive").hidden = true;
    main.replaceChildren(document.getElementById("no-session").content.cloneNode(true));
    if (why) main.querySelector("[data-why]").textContent = why;
    // The commands name this daemon, whatever port it listens on (the
    // template's default address is only right for the default port).
    main.querySelectorAll("code, pre").forEach((c) => {
      c.textContent = c.textContent.replaceAll("http://127.0.0.1:7766", location.origin);
    });
    return;
  }
  sb = connect({ url: location.origin, ...creds });
  sb.on("status", setStatus);
  sb.on("action", logAction);
  sb.on("error", (err) => console.warn("switchboard:", err.code ?? "", err.message));
  mountTools(sb);
  panels = attachPanels(sb, { container: document.getElementById("panels") });
  document.querySelector("switchboard-chat").connection = sb;
  window.switchboard = sb; // for the console and the end-to-end tests
  window.switchboardPanels = panels;
  // What the user sees (the page, the project cards, the media grid, the
  // panels) reaches the assistant's workspace digest.
  window.switchboardContexts = reportContexts(sb, { panels });
  showTasks(sb);
  show(location.pathname);
  explain(sb);
  document.body.dataset.session = sb.sessionId;
}

document.addEventListener("click", (e) => {
  const a = e.target.closest("a[href^='/demo/']");
  if (!a || e.metaKey || e.ctrlKey) return;
  e.preventDefault();
  show(a.getAttribute("href"), { push: true });
});
addEventListener("popstate", () => show(location.pathname));
start();
