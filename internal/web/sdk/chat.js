// switchboard chat: <switchboard-chat>, one assistant for every page of an
// app. A custom element with no framework and no dependency, served beside
// switchboard.js.
//
//   import { connect } from "/sdk/switchboard.js";
//   import "/sdk/chat.js";
//   const sb = connect({ url, sessionId, sessionToken });
//   const chat = document.querySelector("switchboard-chat");
//   chat.toolRenderers = { "tasks.list": (part) => myTaskTable(part.result) }; // optional
//   chat.connection = sb;
//
// It uses only the tab's session token (through the connection): it starts
// runs (POST /api/v1/runs) and streams their AG-UI events (GET
// /api/v1/runs/{id}/events), showing the answer as it is written (a strict
// Markdown subset, see renderMarkdown) and each tool call as a card with its
// arguments, live status (waiting for approval, running with progress, done,
// failed, denied) and result; it keeps the run id and the last event id in
// sessionStorage, so an element that comes back (a page navigation, a
// re-mount) resumes with Last-Event-ID. An approval request from the tab's
// event stream (approval.request) joins the tool call it is about (the run's
// switchboard.tool.invocation event names the invocation) as one card that
// says who wants to do what, with the arguments and Approve / Deny (POST
// /api/v1/approvals/{id}), then the outcome. An empty chat answers "what
// can you do?" from the assistant's catalog (GET /api/v1/agent/tools) and
// the digest (GET /api/v1/digest). It applies the composer busy policy of
// GET /api/v1/agent/capabilities: while a run is busy and the runtime has no
// native follow-up, send is disabled, Enter does nothing and the text stays;
// with native follow-up, a busy send shows a queued bubble and posts
// /api/v1/agent/chat/{thread}/followup.
//
// Nothing from the model, a tool or the server is parsed as HTML or run as
// code: text goes into text nodes, and the only renderers are the host's
// own functions in toolRenderers (by tool name) and renderers (by the
// rendererId a tool declares).

const STORE = "switchboard.chat.";
const MAX_LIVE = 200; // items kept for resume
const FOLLOWUP_RETRIES = 3;

function el(tag, cls, text) {
  const n = document.createElement(tag);
  if (cls) n.className = cls;
  if (text !== undefined) n.textContent = text;
  return n;
}

function randomId(prefix) {
  const b = new Uint8Array(12);
  crypto.getRandomValues(b);
  return prefix + Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

function load(key) {
  try {
    return JSON.parse(sessionStorage.getItem(STORE + key) ?? "null");
  } catch {
    return null;
  }
}

function save(key, value) {
  try {
    if (value === null) sessionStorage.removeItem(STORE + key);
    else sessionStorage.setItem(STORE + key, JSON.stringify(value));
  } catch {
    // storage full or disabled: resume is best effort
  }
}

// ---- Markdown: a strict subset, built with DOM APIs -------------------------------
//
// Headings, paragraphs (a single newline is a line break, as people type
// in chat), emphasis, inline code, fenced code blocks, lists (nested by
// indentation), block quotes, rules, and links whose URL is http(s) only
// (opened with rel=noopener). Every piece of model text becomes a text
// node; nothing is ever parsed as HTML, so markup in an answer shows as
// the characters it is.

const INLINE = new RegExp([
  /(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/.source, // 1,2 code
  /\[([^\]\n]+)\]\(\s*<?([^()\s<>]+)>?\s*\)/.source, // 3,4 link
  /\*\*(?=\S)([\s\S]+?)\*\*/.source, // 5 strong
  /(?<![\w])__(?=\S)([\s\S]+?)__(?![\w])/.source, // 6 strong
  /\*(?=[^\s*])([^*\n]+?)\*/.source, // 7 em
  /(?<![\w])_(?=[^\s_])([^_\n]+?)_(?![\w])/.source, // 8 em
  /~~(?=\S)([^~\n]+?)~~/.source, // 9 del
  /(https?:\/\/[^\s<>()]+[^\s<>().,;:!?'"*_~\]])/.source, // 10 bare URL
].join("|"), "g");

/** safeHref returns url when it is an absolute http(s) URL, else "". */
export function safeHref(url) {
  try {
    const u = new URL(url);
    return u.protocol === "http:" || u.protocol === "https:" ? u.href : "";
  } catch {
    return "";
  }
}

function link(href) {
  const a = document.createElement("a");
  a.href = href;
  a.target = "_blank";
  a.rel = "noopener noreferrer nofollow";
  return a;
}

function inline(parent, text) {
  let last = 0;
  for (const m of text.matchAll(INLINE)) {
    if (m.index > last) parent.append(text.slice(last, m.index));
    last = m.index + m[0].length;
    let n;
    if (m[2] !== undefined) {
      n = el("code", null, m[2].length > 2 && m[2][0] === " " && m[2].at(-1) === " " ? m[2].slice(1, -1) : m[2]);
    } else if (m[3] !== undefined) {
      const href = safeHref(m[4]);
      if (!href) { // not a web link: show what was written, as text
        parent.append(m[0]);
        continue;
      }
      n = link(href);
      inline(n, m[3]);
    } else if (m[10] !== undefined) {
      const href = safeHref(m[10]);
      n = href ? link(href) : null;
      if (!n) {
        parent.append(m[0]);
        continue;
      }
      n.textContent = m[10];
    } else {
      const [tag, inner] = m[5] !== undefined ? ["strong", m[5]] : m[6] !== undefined ? ["strong", m[6]]
        : m[7] !== undefined ? ["em", m[7]] : m[8] !== undefined ? ["em", m[8]] : ["del", m[9]];
      n = document.createElement(tag);
      inline(n, inner);
    }
    parent.append(n);
  }
  if (last < text.length) parent.append(text.slice(last));
}

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*)[^`]*$/;
const HEADING = /^ {0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$/;
const ITEM = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;
const RULE = /^ {0,3}([-*_])(?:\s*\1){2,}\s*$/;
const QUOTE = /^ {0,3}>\s?(.*)$/;

function startsBlock(line) {
  return FENCE.test(line) || HEADING.test(line) || ITEM.test(line) || RULE.test(line) || QUOTE.test(line);
}

/** renderMarkdown returns a DocumentFragment of src rendered safely. */
export function renderMarkdown(src) {
  const frag = document.createDocumentFragment();
  blocks(frag, String(src ?? "").replace(/\r\n?/g, "\n").split("\n"), 0);
  return frag;
}

function blocks(parent, lines, depth) {
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    let m;
    if (/^\s*$/.test(line)) {
      i++;
    } else if ((m = FENCE.exec(line))) {
      const fence = m[1];
      const body = [];
      for (i++; i < lines.length && !new RegExp(`^ {0,3}${fence[0]}{${fence.length},}\\s*$`).test(lines[i]); i++) body.push(lines[i]);
      i++; // the closing fence (or the end: a code block still streaming)
      const pre = el("pre", "sbc-code");
      const code = el("code", null, body.join("\n"));
      if (m[2]) code.dataset.lang = m[2];
      pre.append(code);
      parent.append(pre);
    } else if ((m = HEADING.exec(line))) {
      const h = document.createElement(`h${m[1].length}`);
      inline(h, m[2]);
      parent.append(h);
      i++;
    } else if (RULE.test(line)) {
      parent.append(document.createElement("hr"));
      i++;
    } else if (QUOTE.test(line)) {
      const inner = [];
      for (; i < lines.length && (m = QUOTE.exec(lines[i])); i++) inner.push(m[1]);
      const q = document.createElement("blockquote");
      if (depth < 8) blocks(q, inner, depth + 1);
      else inline(q, inner.join(" "));
      parent.append(q);
    } else if (ITEM.test(line)) {
      i = list(parent, lines, i, depth);
    } else {
      const p = document.createElement("p");
      for (let first = true; i < lines.length && !/^\s*$/.test(lines[i]) && (first || !startsBlock(lines[i])); i++, first = false) {
        if (!first) p.append(document.createElement("br"));
        inline(p, lines[i].trim());
      }
      parent.append(p);
    }
  }
}

// list renders the list starting at lines[i]; items indented deeper than
// its first one, and the lines that continue an item, belong to that item.
function list(parent, lines, i, depth) {
  const first = ITEM.exec(lines[i]);
  const indent = first[1].length;
  const ordered = /\d/.test(first[2]);
  const ul = document.createElement(ordered ? "ol" : "ul");
  if (ordered && parseInt(first[2], 10) !== 1) ul.start = parseInt(first[2], 10);
  while (i < lines.length) {
    const m = ITEM.exec(lines[i]);
    if (!m || m[1].length !== indent || /\d/.test(m[2]) !== ordered) break;
    const li = document.createElement("li");
    const body = [m[3]];
    for (i++; i < lines.length; i++) {
      const next = lines[i];
      if (/^\s*$/.test(next)) {
        if (i + 1 < lines.length && (lines[i + 1].match(/^\s*/)[0].length > indent)) {
          body.push("");
          continue;
        }
        break;
      }
      const lead = next.match(/^\s*/)[0].length;
      if (lead <= indent && (ITEM.test(next) || startsBlock(next))) break;
      body.push(lead > indent ? next.slice(Math.min(lead, indent + 2)) : next.trim());
    }
    if (depth < 8 && body.length > 1) blocks(li, body, depth + 1);
    else inline(li, body.join(" "));
    // a lone paragraph in an item reads as the item itself
    if (li.childElementCount >= 1 && li.firstElementChild.tagName === "P") li.firstElementChild.replaceWith(...li.firstElementChild.childNodes);
    ul.append(li);
  }
  parent.append(ul);
  return i;
}

/** readSSE calls onFrame({id, event, data}) for each frame of an event-stream body. */
export async function readSSE(body, onFrame) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = "", id = "", event = "", data = [];
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += decoder.decode(value, { stream: true });
      let nl;
      while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
        if (buf[nl] === "\r" && nl === buf.length - 1) break;
        const line = buf.slice(0, nl);
        buf = buf.slice(buf[nl] === "\r" && buf[nl + 1] === "\n" ? nl + 2 : nl + 1);
        if (line === "") {
          if (data.length) onFrame({ id, event: event || "message", data: data.join("\n") });
          event = ""; data = [];
          continue;
        }
        if (line[0] === ":") continue;
        const i = line.indexOf(":");
        const field = i < 0 ? line : line.slice(0, i);
        let val = i < 0 ? "" : line.slice(i + 1);
        if (val[0] === " ") val = val.slice(1);
        if (field === "data") data.push(val);
        else if (field === "event") event = val;
        else if (field === "id") id = val;
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

const CSS_TEXT = `
:where(switchboard-chat){display:flex;flex-direction:column;border:1px solid #d0d5dd;border-radius:.75rem;background:#fff;font-size:.9rem;line-height:1.45;color:#101828;max-height:70vh;overflow:hidden}
:where(.sbc-head){display:flex;gap:.5rem;align-items:center;padding:.5rem .75rem;border-bottom:1px solid #eaecf0;font-weight:600}
:where(.sbc-state){font-weight:400;font-size:.75rem;color:#667085;flex:1}
:where(.sbc-log){list-style:none;margin:0;padding:.75rem;overflow:auto;flex:1;display:flex;flex-direction:column;gap:.55rem;min-height:6rem}
:where(.sbc-msg){padding:.45rem .7rem;border-radius:.75rem;max-width:88%;overflow-wrap:anywhere}
:where(.sbc-user),:where(.sbc-queued){white-space:pre-wrap}
:where(.sbc-user){align-self:flex-end;background:#3559e0;color:#fff;border-bottom-right-radius:.2rem}
:where(.sbc-queued){align-self:flex-end;background:#c7d7fe;color:#1d2939;font-style:italic}
:where(.sbc-assistant){align-self:flex-start;background:#f2f4f7;border-bottom-left-radius:.2rem}
:where(.sbc-assistant>:first-child){margin-top:0}:where(.sbc-assistant>:last-child){margin-bottom:0}
:where(.sbc-assistant :is(p,ul,ol,pre,blockquote,h1,h2,h3,h4,h5,h6)){margin:.4rem 0}
:where(.sbc-assistant :is(h1,h2,h3,h4,h5,h6)){font-size:1rem;line-height:1.3}:where(.sbc-assistant h1){font-size:1.1rem}
:where(.sbc-assistant :is(ul,ol)){padding-left:1.3rem}
:where(.sbc-assistant code){font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.82em;background:#e4e7ec;border-radius:.25rem;padding:.05rem .25rem}
:where(.sbc-assistant pre){background:#101828;color:#f2f4f7;border-radius:.4rem;padding:.5rem .65rem;overflow:auto}
:where(.sbc-assistant pre code){background:none;padding:0;color:inherit;white-space:pre}
:where(.sbc-assistant blockquote){border-left:3px solid #d0d5dd;margin-left:0;padding-left:.6rem;color:#475467}
:where(.sbc-assistant a){color:#3559e0}
:where(.sbc-tool),:where(.sbc-approval){align-self:stretch;border:1px solid #eaecf0;border-radius:.6rem;background:#fcfcfd;padding:.45rem .6rem;font-size:.82rem}
:where(.sbc-tool-head){display:flex;align-items:center;gap:.45rem}
:where(.sbc-dot){width:.55rem;height:.55rem;border-radius:50%;background:#98a2b3;flex:none}
:where(.sbc-tool[data-sbc-status=running] .sbc-dot){background:#3559e0;animation:sbc-pulse 1s ease-in-out infinite alternate}
:where(.sbc-tool[data-sbc-status=waiting] .sbc-dot){background:#f79009}
:where(.sbc-tool[data-sbc-status=succeeded] .sbc-dot){background:#12b76a}
:where(.sbc-tool[data-sbc-status=failed] .sbc-dot){background:#f04438}
:where(.sbc-tool[data-sbc-status=denied] .sbc-dot){background:#667085}
@keyframes sbc-pulse{from{opacity:.35}to{opacity:1}}
:where(.sbc-tool-name){font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-weight:600;color:#344054}
:where(.sbc-tool-status){color:#475467;flex:1}
:where(.sbc-tool[data-sbc-status=failed] .sbc-tool-status){color:#b42318}
:where(.sbc-progress){width:100%;height:.35rem;margin:.35rem 0 0;accent-color:#3559e0}
:where(.sbc-tool details){margin-top:.3rem}:where(.sbc-tool summary){cursor:pointer;color:#475467}
:where(.sbc-kv){display:grid;grid-template-columns:max-content 1fr;gap:.1rem .6rem;margin:.3rem 0 0}
:where(.sbc-kv dt){color:#667085}:where(.sbc-kv dd){margin:0;font-family:ui-monospace,SFMono-Regular,Menlo,monospace;overflow-wrap:anywhere;white-space:pre-wrap}
:where(.sbc-result){margin:.3rem 0 0;max-height:14rem;overflow:auto;white-space:pre-wrap;overflow-wrap:anywhere;font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.78rem;background:#f2f4f7;border-radius:.35rem;padding:.35rem .5rem}
:where(.sbc-approval-card){margin-top:.45rem;border:1px solid #fec84b;background:#fffaeb;border-radius:.5rem;padding:.5rem .6rem}
:where(.sbc-approval){border-color:#fec84b;background:#fffaeb}
:where(.sbc-approval-title){font-weight:600;color:#101828;font-size:.85rem}
:where(.sbc-approval-summary){margin:.2rem 0 0;color:#475467}
:where(.sbc-approval-actions){display:flex;gap:.4rem;align-items:center;margin-top:.5rem}
:where(.sbc-approval-status){color:#475467;font-size:.8rem}
:where([data-sbc-resolved]) :where(.sbc-approval-status){font-weight:600}
:where(.sbc-approval-card[data-sbc-resolved=approved]){background:#ecfdf3;border-color:#abefc6}
:where(.sbc-approval-card:is([data-sbc-resolved=denied],[data-sbc-resolved=expired],[data-sbc-resolved=cancelled])){background:#fef3f2;border-color:#fecdca}
:where([data-sbc-resolved=approved]) :where(.sbc-approval-status){color:#067647}
:where([data-sbc-resolved=denied]) :where(.sbc-approval-status),:where([data-sbc-resolved=expired]) :where(.sbc-approval-status){color:#b42318}
:where(switchboard-chat button){font:inherit;border-radius:.45rem;padding:.3rem .75rem;border:1px solid #d0d5dd;background:#fff;color:#344054;cursor:pointer}
:where(switchboard-chat button:disabled){opacity:.55;cursor:default}
:where(switchboard-chat button.sbc-approve),:where(switchboard-chat button.sbc-send){background:#3559e0;border-color:#3559e0;color:#fff;font-weight:600}
:where(switchboard-chat button.sbc-deny){color:#b42318;border-color:#fda29b}
:where(.sbc-error){color:#b42318;font-size:.85rem}
:where(.sbc-error){white-space:pre-wrap;overflow-wrap:anywhere}
:where(.sbc-setup){border:1px solid #fedf89;background:#fffaeb;border-radius:.6rem;padding:.6rem .75rem;font-size:.85rem;color:#344054}
:where(.sbc-setup-title){font-weight:600;margin:0 0 .3rem;color:#101828}
:where(.sbc-setup-how){margin:0 0 .4rem}
:where(.sbc-setup-yaml){white-space:pre;overflow-x:auto;margin:0;padding:.5rem;background:#fff;border:1px solid #eaecf0;border-radius:.4rem;font-size:.78rem}
:where(.sbc-note){color:#667085;font-size:.8rem;align-self:center}
:where(.sbc-empty){display:flex;flex-direction:column;gap:.6rem;color:#475467;padding:.25rem}
:where(.sbc-empty-title){font-weight:600;color:#101828;font-size:.95rem;margin:0}
:where(.sbc-empty-where){margin:0;font-size:.82rem}
:where(.sbc-suggestions){display:flex;flex-direction:column;align-items:flex-start;gap:.35rem}
:where(switchboard-chat button.sbc-suggestion){text-align:left;border-color:#c7d7fe;background:#eef4ff;color:#3559e0}
:where(.sbc-groups){display:flex;flex-wrap:wrap;gap:.3rem;margin:0;padding:0;list-style:none}
:where(.sbc-group){border:1px solid #eaecf0;border-radius:1rem;padding:.1rem .55rem;font-size:.78rem;background:#f9fafb}
:where(.sbc-composer){display:flex;gap:.4rem;padding:.5rem;border-top:1px solid #eaecf0}
:where(.sbc-composer textarea){flex:1;font:inherit;resize:vertical;min-height:2.2rem;border:1px solid #d0d5dd;border-radius:.45rem;padding:.35rem .5rem}
`;

let styled = false;
function injectStyles() {
  if (styled || typeof CSSStyleSheet === "undefined" || !document.adoptedStyleSheets) return;
  styled = true;
  const sheet = new CSSStyleSheet();
  sheet.replaceSync(CSS_TEXT);
  document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
}

const MAX_RESULT_CHARS = 4000; // of a tool result kept and shown
const STATUS_TEXT = {
  running: "Running…", waiting: "Waiting for your approval", succeeded: "Done", failed: "Failed", denied: "Denied",
};

function parseJSON(s) {
  if (typeof s !== "string") return s;
  try {
    return JSON.parse(s);
  } catch {
    return s;
  }
}

function pretty(v) {
  if (typeof v === "string") return v;
  try {
    return JSON.stringify(v, null, 2);
  } catch {
    return String(v);
  }
}

// kv renders an object's top-level fields as a definition list (values as
// compact JSON); anything else as preformatted text.
function kv(v) {
  if (!v || typeof v !== "object" || Array.isArray(v)) return el("pre", "sbc-result", pretty(v));
  const dl = el("dl", "sbc-kv");
  for (const [k, val] of Object.entries(v)) dl.append(el("dt", null, k), el("dd", null, typeof val === "string" ? val : JSON.stringify(val)));
  return dl;
}

function groupName(t) {
  const g = t.ui?.displayGroup || (t.name.includes(".") ? t.name.slice(0, t.name.indexOf(".")) : t.name);
  return g.length <= 2 ? g.toUpperCase() : g.charAt(0).toUpperCase() + g.slice(1);
}

export class SwitchboardChat extends HTMLElement {
  #conn = null;
  #thread = "";
  #native = false; // the safe policy until the capabilities route says otherwise
  #busy = false;
  #runId = "";
  #lastEventId = "";
  #stream = null; // AbortController of the run stream
  #live = []; // items of the current run, for resume
  #nodes = new Map(); // item key → li
  #approvals = new Map(); // approval id → the request, until it joins its tool call
  #offEvent = null;
  #built = false;
  #renderers = {};
  #byRenderer = {}; // rendererId → renderer
  #agents = new Map(); // agent session id → label, from the digest
  #early = new Map(); // approval id → a resolution that came before its card
  #digest = null; // the digest read at start (a promise)
  #suggestions = null;
  #log; #input; #send; #stop; #state; #empty = null;

  /** The Connection from connect(); setting it starts the element. */
  set connection(conn) {
    if (this.#conn === conn) return;
    this.#conn = conn;
    if (this.isConnected) this.#start();
  }

  get connection() {
    return this.#conn;
  }

  /**
   * Per-tool renderers: {toolName: (part) => Node}. A renderer shows a tool
   * call's body (arguments and result) its own way; the element keeps the
   * name, status and approval. Functions the host imports itself — never
   * code from the server.
   */
  set toolRenderers(map) {
    const out = {};
    for (const [name, fn] of Object.entries(map ?? {})) if (typeof fn === "function") out[name] = fn;
    this.#renderers = out;
    for (const item of this.#live) if (item.k === "tool") this.#update(item);
  }

  get toolRenderers() {
    return { ...this.#renderers };
  }

  /**
   * Renderers by the rendererId a tool declares in its UI hints
   * ({rendererId: (part) => Node}): one renderer serves every tool that
   * names it. A tool's own entry in toolRenderers comes first; a call whose
   * rendererId has no renderer here gets the default card body.
   */
  set renderers(map) {
    const out = {};
    for (const [id, fn] of Object.entries(map ?? {})) if (typeof fn === "function") out[id] = fn;
    this.#byRenderer = out;
    for (const item of this.#live) if (item.k === "tool") this.#update(item);
  }

  get renderers() {
    return { ...this.#byRenderer };
  }

  /** Suggested first prompts for the empty chat; null derives them from the catalog. */
  set suggestions(list) {
    this.#suggestions = Array.isArray(list) ? list.map(String) : null;
    if (this.#empty) this.#showEmpty();
  }

  get suggestions() {
    return this.#suggestions ? [...this.#suggestions] : null;
  }

  /** The chat (thread) id this element shows. */
  get thread() {
    return this.#thread;
  }

  /** Whether a run is busy. */
  get busy() {
    return this.#busy;
  }

  connectedCallback() {
    this.#build();
    if (this.#conn) this.#start();
  }

  disconnectedCallback() {
    this.#stream?.abort(); // the run goes on; the next element resumes it
    this.#stream = null;
    this.#offEvent?.();
    this.#offEvent = null;
  }

  #build() {
    if (this.#built) return;
    this.#built = true;
    injectStyles();
    const head = el("div", "sbc-head", this.getAttribute("heading") ?? "Assistant");
    this.#state = el("span", "sbc-state", "");
    this.#state.dataset.sbcState = "idle";
    this.#stop = el("button", "sbc-stop", "Stop");
    this.#stop.type = "button";
    this.#stop.hidden = true;
    this.#stop.addEventListener("click", () => this.#cancel());
    head.append(this.#state, this.#stop);
    this.#log = el("ol", "sbc-log");
    this.#log.setAttribute("aria-live", "polite");
    const form = el("form", "sbc-composer");
    this.#input = el("textarea");
    this.#input.rows = 2;
    this.#input.placeholder = "Ask the assistant…";
    this.#input.setAttribute("aria-label", "Message");
    this.#send = el("button", "sbc-send", "Send");
    this.#send.type = "submit";
    form.append(this.#input, this.#send);
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      this.#submit();
    });
    this.#input.addEventListener("keydown", (e) => {
      if (e.key !== "Enter" || e.shiftKey || e.isComposing) return;
      e.preventDefault(); // Enter never inserts a newline; while blocked it does nothing at all
      this.#submit();
    });
    this.replaceChildren(head, this.#log, form);
    this.#setBusy(false);
  }

  async #start() {
    const conn = this.#conn;
    this.#offEvent?.();
    this.#offEvent = conn.on("event", ({ kind, data }) => this.#onTabEvent(kind, data));
    this.#thread = this.getAttribute("thread") || load("thread") || randomId("chat_");
    save("thread", this.#thread);
    this.dataset.sbcThread = this.#thread;
    this.#log.replaceChildren();
    this.#nodes.clear();
    this.#empty = null;
    this.#digest = this.#readDigest();
    // Until this connection's capabilities arrive, a busy send waits (no
    // follow-up is posted to a runtime that may not take one).
    this.#native = false;
    this.dataset.sbcNative = "false";
    this.#setBusy(this.#busy);
    try {
      const caps = await conn.request(`/api/v1/agent/capabilities?session=${encodeURIComponent(this.#thread)}`);
      this.#native = caps?.nativeFollowUp === true;
    } catch {
      this.#native = false; // unknown: the safe policy
    }
    this.dataset.sbcNative = String(this.#native);
    this.#setBusy(this.#busy); // a send made meanwhile may now follow up
    // A run still going when this element last saw it is resumed after the
    // last event shown; one that has ended is in the history already.
    let resume = load(`run.${this.#thread}`);
    if (resume?.runId) {
      const info = await conn.request(`/api/v1/runs/${encodeURIComponent(resume.runId)}`).catch(() => null);
      if (info?.status !== "running" && info?.status !== "waiting") {
        resume = null;
        save(`run.${this.#thread}`, null);
      }
    }
    await this.#loadHistory();
    if (resume?.runId) {
      this.#live = Array.isArray(resume.live) ? resume.live : [];
      for (const item of this.#live) this.#render(item);
      this.#follow(resume.runId, resume.lastEventId ?? "");
    }
    await this.#loadApprovals();
    if (!this.#log.childElementCount) await this.#showEmpty();
    this.dataset.sbcReady = "true";
  }

  async #loadHistory() {
    let h;
    try {
      h = await this.#conn.request(`/api/v1/agent/chat/${encodeURIComponent(this.#thread)}/messages`);
    } catch (err) {
      if (err?.code === "NOT_FOUND" || err?.code === "FORBIDDEN") {
        if (!this.getAttribute("thread")) { // another tab's chat (a new session): start afresh
          this.#thread = randomId("chat_");
          save("thread", this.#thread);
          this.dataset.sbcThread = this.#thread;
        }
      }
      return;
    }
    const msgs = h?.messages ?? [];
    const results = new Map(msgs.filter((m) => m.role === "tool").map((m) => [m.toolCallId, m]));
    for (const m of msgs) {
      if (m.role === "user" && typeof m.content === "string") this.#render({ k: "user", text: m.content }, false);
      else if (m.role === "assistant") {
        // as the run showed it: the step's words, then its calls
        if (typeof m.content === "string" && m.content) this.#render({ k: "assistant", text: m.content }, false);
        for (const tc of m.toolCalls ?? []) {
          const res = results.get(tc.id);
          const denied = /^USER_DENIED\b/.test(res?.error ?? "");
          this.#render({
            k: "tool", key: `h${tc.id}`, id: tc.id, name: tc.function?.name ?? "tool", args: tc.function?.arguments ?? "",
            status: !res ? "succeeded" : denied ? "denied" : res.error ? "failed" : "succeeded",
            error: res?.error && !denied ? res.error : "", result: res && !res.error ? String(res.content ?? "").slice(0, MAX_RESULT_CHARS) : undefined,
          }, false);
        }
      }
    }
  }

  async #loadApprovals() {
    try {
      const res = await this.#conn.request("/api/v1/approvals");
      for (const a of res?.items ?? res?.approvals ?? []) this.#approvalRequested(a);
    } catch {
      // the route may be absent (an older daemon): cards still come as events
    }
  }

  // ---- the empty state: what can you do? ------------------------------------------

  async #showEmpty() {
    const box = el("li", "sbc-empty");
    box.dataset.sbcItem = "empty";
    this.#empty = box;
    const [catalog, digest] = await Promise.all([this.#conn?.request("/api/v1/agent/tools").catch(() => null), this.#digest]);
    if (this.#empty !== box || this.#log.querySelector(":scope > li:not(.sbc-empty)")) return; // the chat began meanwhile
    const tools = (catalog?.tools ?? []).filter((t) => t.class !== "meta" && t.description);
    const groups = new Map();
    for (const t of tools) {
      const g = groupName(t);
      if (!groups.has(g)) groups.set(g, []);
      groups.get(g).push(t);
    }
    box.append(el("p", "sbc-empty-title", "What can I do?"));
    // Only this tab's own context: another tab's page is not "what you
    // have open" here (a new tab would be told the page of an older one).
    const here = (digest?.contexts ?? []).find((c) => c.sessionId === this.#conn?.sessionId && c.label);
    if (here) box.append(el("p", "sbc-empty-where", `I can see what you have open: ${here.label}.`));
    let prompts = this.#suggestions;
    if (!prompts) {
      prompts = [];
      if (here) prompts.push(`What can I do on ${here.label}?`);
      if (digest?.pendingApprovals?.length) prompts.push("What is waiting for my approval?");
      // One read tool per group, the app's own tools before switchboard's
      // built-in ones, as the first clause of its description.
      const own = (t) => (t.origin?.source === "core" ? 1 : 0);
      const picks = [...groups.values()].map((ts) => ts.find((t) => t.class === "read") ?? ts[0]).sort((a, b) => own(a) - own(b));
      for (const t of picks) {
        if (prompts.length >= 3) break;
        const clause = t.description.split(/[.:;(\n]/)[0].trim();
        if (clause.length >= 8 && clause.length <= 80) prompts.push(clause);
      }
    }
    if (prompts.length) {
      const list = el("div", "sbc-suggestions");
      for (const text of prompts.slice(0, 4)) {
        const b = el("button", "sbc-suggestion", text);
        b.type = "button";
        b.addEventListener("click", () => {
          this.#input.value = text;
          this.#submit();
        });
        list.append(b);
      }
      box.append(list);
    }
    if (groups.size) {
      const ul = el("ul", "sbc-groups");
      ul.setAttribute("aria-label", "What I can work with");
      const core = (ts) => (ts.every((t) => t.origin?.source === "core") ? 1 : 0);
      for (const [g, ts] of [...groups].sort((a, b) => core(a[1]) - core(b[1]) || b[1].length - a[1].length).slice(0, 8)) {
        const li = el("li", "sbc-group", g);
        li.title = ts.slice(0, 5).map((t) => `${t.name}: ${t.description.split("\n")[0]}`).join("\n");
        ul.append(li);
      }
      box.append(el("p", "sbc-empty-where", "I can work with:"), ul);
    }
    this.#log.prepend(box);
  }

  // #readDigest reads the user's digest and learns the agents' labels from
  // it (approval cards name the agent that asks).
  async #readDigest() {
    const d = await this.#conn?.request("/api/v1/digest").catch(() => null);
    for (const a of d?.agents ?? []) if (a.id && a.label) this.#agents.set(a.id, String(a.label));
    return d;
  }

  // #agentLabel is the label of agent session id; an agent this element has
  // not heard of is looked up once in a fresh digest.
  async #agentLabel(id) {
    if (!id) return "";
    await this.#digest;
    if (!this.#agents.has(id)) {
      this.#agents.set(id, "");
      await this.#readDigest();
    }
    return this.#agents.get(id) ?? "";
  }

  #hideEmpty() {
    this.#empty?.remove();
    this.#empty = null;
  }

  // ---- the composer and its busy policy ------------------------------------------

  #setBusy(busy) {
    this.#busy = busy;
    this.dataset.sbcBusy = String(busy);
    this.#state.dataset.sbcState = busy ? "busy" : "idle";
    this.#state.textContent = busy ? "working…" : "";
    this.#stop.hidden = !busy;
    this.#send.disabled = busy && !this.#native;
    this.#send.title = this.#send.disabled ? "The assistant is busy; send when it is done" : "";
  }

  #submit() {
    const text = this.#input.value.trim();
    if (!text || !this.#conn) return;
    if (this.#busy && !this.#native) return; // the text stays in the box
    this.#input.value = "";
    if (this.#busy) this.#followUp(text);
    else this.#startRun(text);
  }

  async #startRun(text) {
    this.#live = [];
    this.#push({ k: "user", text });
    this.#setBusy(true);
    try {
      const run = await this.#conn.request("/api/v1/runs", {
        method: "POST",
        body: {
          threadId: this.#thread,
          input: text,
          context: [{ description: "The user's browser tab: the sessionId for panel tools", value: this.#conn.sessionId }],
        },
      });
      this.#follow(run.runId, "");
    } catch (err) {
      this.#push({ k: "error", text: `${err.code ?? "ERROR"}: ${err.message}` });
      this.#setBusy(false);
    }
  }

  async #followUp(text) {
    const seq = (load(`seq.${this.#thread}`) ?? 0) + 1;
    save(`seq.${this.#thread}`, seq);
    const nonce = randomId("");
    const item = { k: "queued", key: `q${seq}`, seq, text };
    this.#push(item);
    for (let attempt = 0; ; attempt++) {
      try {
        const res = await this.#conn.request(`/api/v1/agent/chat/${encodeURIComponent(this.#thread)}/followup`, {
          method: "POST", body: { text, clientSeq: seq, clientNonce: nonce },
        });
        if (res?.status === "started" && res.runId) { // the run ended meanwhile: this started the next one
          item.k = "user";
          this.#update(item);
          this.#setBusy(true);
          this.#follow(res.runId, "");
        }
        return;
      } catch (err) {
        const retriable = !err?.code || String(err.code).startsWith("HTTP_5"); // the network, not a refusal
        if (!retriable || attempt >= FOLLOWUP_RETRIES) {
          item.k = "error";
          item.text = `Not sent (${err.code ?? "ERROR"}): ${text}`;
          this.#update(item);
          return;
        }
        await new Promise((r) => setTimeout(r, 250 * (attempt + 1))); // the same pair again is idempotent
      }
    }
  }

  async #cancel() {
    if (!this.#runId) return;
    try {
      await this.#conn.request(`/api/v1/runs/${encodeURIComponent(this.#runId)}/cancel`, { method: "POST" });
    } catch (err) {
      this.#push({ k: "error", text: `${err.code ?? "ERROR"}: ${err.message}` });
    }
  }

  // ---- the run stream ----------------------------------------------------------------

  async #follow(runId, lastEventId) {
    this.#stream?.abort();
    const ctl = new AbortController();
    this.#stream = ctl;
    this.#runId = runId;
    this.#lastEventId = lastEventId;
    this.dataset.sbcRun = runId;
    this.#setBusy(true);
    this.#persist();
    let done = false;
    for (let attempt = 0; !done && !ctl.signal.aborted; attempt++) {
      try {
        const headers = this.#lastEventId ? { "Last-Event-ID": this.#lastEventId } : {};
        const res = await this.#conn.stream(`/api/v1/runs/${encodeURIComponent(runId)}/events`, { signal: ctl.signal, headers });
        attempt = 0;
        await readSSE(res.body, (f) => {
          if (f.id) this.#lastEventId = f.id;
          let ev;
          try {
            ev = JSON.parse(f.data);
          } catch {
            return;
          }
          if (this.#onRunEvent(ev)) done = true;
          this.#persist();
        });
        if (!done) { // the stream ended without a terminal event: ask how the run is
          const info = await this.#conn.request(`/api/v1/runs/${encodeURIComponent(runId)}`).catch(() => null);
          if (!info || info.status !== "running") done = true;
        }
      } catch (err) {
        if (ctl.signal.aborted) return;
        if (err?.code === "NOT_FOUND" || err?.code === "FORBIDDEN" || attempt >= 5) {
          if (err?.code !== "NOT_FOUND") this.#push({ k: "error", text: `${err.code ?? "ERROR"}: ${err.message}` });
          done = true;
        } else {
          await new Promise((r) => setTimeout(r, 250 * 2 ** attempt));
        }
      }
    }
    if (ctl.signal.aborted) return;
    this.#runId = "";
    this.#live = [];
    save(`run.${this.#thread}`, null);
    delete this.dataset.sbcRun;
    this.#setBusy(false);
  }

  #persist() {
    if (!this.#runId) return;
    save(`run.${this.#thread}`, { runId: this.#runId, lastEventId: this.#lastEventId, live: this.#live.slice(-MAX_LIVE) });
  }

  // #onRunEvent applies one AG-UI event; true when the run is over.
  #onRunEvent(ev) {
    switch (ev.type) {
      case "TEXT_MESSAGE_START":
        if (ev.role && ev.role !== "assistant") return false; // the user's own words are shown already
        this.#push({ k: "assistant", key: `m${ev.messageId}`, text: "" });
        return false;
      case "TEXT_MESSAGE_CONTENT": {
        const item = this.#item(`m${ev.messageId}`);
        if (item) {
          item.text += ev.delta ?? "";
          this.#update(item);
        }
        return false;
      }
      case "TOOL_CALL_START":
        this.#push({ k: "tool", key: `t${ev.toolCallId}`, id: ev.toolCallId, name: ev.toolCallName, args: "", status: "running", ui: ev.metadata?.switchboard?.ui });
        return false;
      case "TOOL_CALL_ARGS": {
        const item = this.#item(`t${ev.toolCallId}`);
        if (item) {
          item.args += ev.delta ?? "";
          this.#update(item);
        }
        return false;
      }
      case "TOOL_CALL_RESULT": {
        const item = this.#item(`t${ev.toolCallId}`);
        if (item) {
          const meta = ev.metadata?.switchboard ?? {};
          const code = meta.code ?? "";
          item.status = code === "USER_DENIED" ? "denied" : ev.isError || code || (meta.status && meta.status !== "succeeded") ? "failed" : "succeeded";
          item.progress = null;
          if (item.status === "succeeded") item.result = String(ev.content ?? "").slice(0, MAX_RESULT_CHARS);
          else {
            const env = parseJSON(ev.content);
            item.error = env?.error?.message ? `${env.error.code ?? code}: ${env.error.message}` : code || String(ev.content ?? "");
          }
          if (item.approval && item.approval.status === "pending") item.approval.status = item.status === "denied" ? "denied" : "approved";
          this.#update(item);
        }
        return false;
      }
      case "CUSTOM":
        this.#onCustom(ev.name, ev.value ?? {});
        return false;
      case "RUN_FINISHED":
        if (ev.outcome?.type === "interrupt") this.#push({ k: "note", text: "Waiting for your approval." });
        if (ev.outcome?.type === "cancelled") this.#push({ k: "note", text: "Stopped." });
        return true;
      case "RUN_ERROR":
        this.#push({ k: "error", text: `${ev.code ? ev.code + ": " : ""}${ev.message ?? "the run failed"}` });
        return true;
    }
    return false;
  }

  #onCustom(name, v) {
    switch (name) {
      case "switchboard.browser.dispatch": {
        const item = this.#item(`t${v.toolCallId}`);
        if (item && v.sessionId === this.#conn?.sessionId) {
          item.tab = true;
          this.#update(item);
        }
        break;
      }
      case "switchboard.tool.invocation": {
        const item = this.#item(`t${v.toolCallId}`);
        if (item && v.invocationId) {
          item.invocationId = v.invocationId;
          const waiting = [...this.#approvals.values()].find((a) => a.invocationId === v.invocationId);
          if (waiting) this.#bindApproval(item, waiting);
          else this.#update(item);
        }
        break;
      }
      case "switchboard.tool.progress": {
        const item = this.#item(`t${v.toolCallId}`);
        if (item && item.status === "running") {
          item.progress = { progress: v.progress ?? 0, total: v.total ?? 0, message: v.message ?? "" };
          this.#update(item);
        }
        break;
      }
      case "switchboard.followup.consumed":
      case "switchboard.followup.cancelled": {
        const item = this.#item(`q${v.clientSeq}`);
        if (item) {
          item.k = name.endsWith("consumed") ? "user" : "error";
          if (item.k === "error") item.text = `Not sent (${v.reason ?? "cancelled"}): ${item.text}`;
          this.#update(item);
        }
        break;
      }
    }
  }

  // ---- approvals -------------------------------------------------------------------------

  #onTabEvent(kind, data) {
    if (kind === "approval.request") this.#approvalRequested(data);
    else if (kind === "approval.resolved") this.#approvalResolved(data);
  }

  // #approvalRequested joins a request to its tool call when this element
  // shows the call; otherwise (another agent's call, a run not shown here)
  // it stands alone in the log.
  async #approvalRequested(a) {
    const id = a?.approvalId ?? a?.id;
    if (typeof id !== "string" || (a.status && a.status !== "pending")) return;
    const seen = () => this.#approvals.has(id) || this.#live.some((i) => i.approval?.id === id);
    if (seen()) return;
    const agentId = String(a.agentId ?? "");
    const agentLabel = await this.#agentLabel(agentId);
    if (seen()) return;
    const req = {
      id, invocationId: a.invocationId ?? "", tool: String(a.tool ?? ""), summary: String(a.summary ?? ""),
      input: parseJSON(a.input ?? {}), agent: String(a.agent ?? ""), agentId, agentLabel, status: "pending",
    };
    const early = this.#early.get(id);
    if (early) Object.assign(req, { status: early.status, decidedBy: early.decidedBy ?? "", reason: early.reason ?? "" });
    const item = req.invocationId && this.#live.find((i) => i.k === "tool" && i.invocationId === req.invocationId);
    if (item) {
      this.#bindApproval(item, req);
      return;
    }
    this.#approvals.set(id, req);
    this.#hideEmpty();
    const li = el("li", "sbc-approval");
    li.dataset.sbcItem = "approval";
    li.dataset.sbcApproval = id;
    li.dataset.sbcTool = req.tool;
    this.#fillCard(li, req, true);
    this.#nodes.set(`a${id}`, li);
    this.#log.append(li);
    li.scrollIntoView({ block: "nearest" });
  }

  #bindApproval(item, req) {
    this.#approvals.delete(req.id);
    this.#nodes.get(`a${req.id}`)?.remove();
    this.#nodes.delete(`a${req.id}`);
    item.approval = req;
    if (req.status === "pending" && item.status === "running") item.status = "waiting";
    this.#update(item);
    this.#nodes.get(item.key)?.scrollIntoView({ block: "nearest" }); // it needs the user now
  }

  // #fillCard writes the approval card into node: who wants to do what
  // (once), the arguments (unless the tool card above shows them), the
  // buttons, then the decision's outcome.
  #fillCard(node, req, withArgs) {
    node.classList.add("sbc-approval-card");
    node.dataset.sbcApproval = req.id;
    if (req.agentId) node.dataset.sbcAgentId = req.agentId;
    if (req.status !== "pending") node.dataset.sbcResolved = req.status;
    // Who, once: the built-in assistant by the element's heading, another
    // agent by its label. The server's summary already reads "<agent>
    // wants to call <tool>: <what the tool does>"; only its last part is
    // kept, so nothing is said twice.
    const agent = req.agent.replace(/^agent:/, "");
    const who = !agent || agent === "assistant" ? (this.getAttribute("heading") ?? "Assistant") : req.agentLabel || agent;
    node.append(el("div", "sbc-approval-title", `${who} wants to run ${req.tool || "a tool"}`));
    const what = /\bwants to call \S+?:\s*([\s\S]*)$/.exec(req.summary)?.[1] ?? (/\bwants to\b/.test(req.summary) ? "" : req.summary);
    if (what && req.status === "pending") node.append(el("p", "sbc-approval-summary", what));
    if (withArgs) node.append(kv(req.input));
    const row = el("div", "sbc-approval-actions");
    const status = el("span", "sbc-approval-status", "");
    if (req.status === "pending") {
      const approve = el("button", "sbc-approve", "Approve");
      const deny = el("button", "sbc-deny", "Deny");
      approve.type = deny.type = "button";
      const decide = async (decision) => {
        approve.disabled = deny.disabled = true;
        req.mine = true; // the outcome then reads as this user's own
        status.textContent = "Sending…";
        try {
          await this.#conn.request(`/api/v1/approvals/${encodeURIComponent(req.id)}`, { method: "POST", body: { decision } });
          this.#approvalResolved({ approvalId: req.id, status: decision === "approve" ? "approved" : "denied", decidedBy: "you" });
        } catch (err) {
          if (err?.code === "CONFLICT") { // decided elsewhere first: show that
            const a = await this.#conn.request(`/api/v1/approvals/${encodeURIComponent(req.id)}`).catch(() => null);
            if (a?.status && a.status !== "pending") return this.#approvalResolved(a);
          }
          status.textContent = `${err.code ?? "ERROR"}: ${err.message}`;
          approve.disabled = deny.disabled = false;
        }
      };
      approve.addEventListener("click", () => decide("approve"));
      deny.addEventListener("click", () => decide("deny"));
      row.append(approve, deny);
    } else {
      const by = req.decidedBy && !req.mine ? ` by ${req.decidedBy}` : "";
      status.textContent = req.status === "approved" ? `Approved${by}.` : req.status === "denied" ? `Denied${by}${req.reason ? `: ${req.reason}` : "."}`
        : req.status === "expired" ? "Expired before anyone decided." : `${req.status.charAt(0).toUpperCase()}${req.status.slice(1)}.`;
    }
    row.append(status);
    node.append(row);
  }

  #approvalResolved(a) {
    const id = a?.approvalId ?? a?.id;
    const st = String(a.status ?? a.decision ?? "decided").replace(/^approve$/, "approved").replace(/^deny$/, "denied");
    const item = this.#live.find((i) => i.approval?.id === id);
    if (item) {
      if (item.approval.status !== "pending") return;
      Object.assign(item.approval, { status: st, decidedBy: a.decidedBy ?? "", reason: a.reason ?? "" });
      if (item.status === "waiting") item.status = st === "approved" ? "running" : item.status;
      this.#update(item);
      this.#persist();
      return;
    }
    const req = this.#approvals.get(id);
    const li = this.#nodes.get(`a${id}`);
    if (!req || !li) {
      if (typeof id === "string") this.#early.set(id, { status: st, decidedBy: a.decidedBy, reason: a.reason });
      if (this.#early.size > 100) this.#early.delete(this.#early.keys().next().value);
      return;
    }
    if (req.status !== "pending") return;
    Object.assign(req, { status: st, decidedBy: a.decidedBy ?? "", reason: a.reason ?? "" });
    li.replaceChildren();
    this.#fillCard(li, req, true);
  }

  // ---- items ---------------------------------------------------------------------------------

  #item(key) {
    return this.#live.find((i) => i.key === key);
  }

  #push(item) {
    if (!item.key) item.key = randomId("i");
    this.#live.push(item);
    this.#render(item);
  }

  #update(item) {
    const li = this.#nodes.get(item.key);
    if (li) li.replaceWith(this.#li(item, li));
    else this.#render(item);
  }

  #render(item, scroll = true) {
    if (!item.key) item.key = randomId("i");
    this.#hideEmpty();
    const li = this.#li(item);
    this.#log.append(li);
    if (scroll) li.scrollIntoView({ block: "nearest" });
  }

  #li(item, old) {
    let li;
    switch (item.k) {
      case "tool":
        li = this.#toolCard(item, old);
        break;
      case "queued":
        li = el("li", "sbc-msg sbc-queued", item.text);
        li.dataset.sbcSeq = String(item.seq);
        li.title = "Queued: the assistant reads it at its next step";
        break;
      case "error": {
        // A daemon without a model: a setup card, the config snippet with
        // its newlines, instead of one red line no one can copy from.
        const setup = /^MODEL_ERROR: (no model is configured[^\n]*?)(?:, e\.g\.)?\n([\s\S]*)$/.exec(item.text);
        if (setup) {
          li = el("li", "sbc-setup");
          li.append(el("p", "sbc-setup-title", "The assistant needs a model"),
            el("p", "sbc-setup-how", setup[1] + ":"), el("pre", "sbc-setup-yaml", setup[2]));
          break;
        }
        li = el("li", "sbc-error", item.text);
        break;
      }
      case "note":
        li = el("li", "sbc-note", item.text);
        break;
      case "assistant":
        li = el("li", "sbc-msg sbc-assistant");
        li.append(renderMarkdown(item.text));
        li.dataset.sbcText = item.text; // what the model wrote, for tests and copy
        break;
      default:
        li = el("li", "sbc-msg sbc-user", item.text);
        if (item.seq) li.dataset.sbcSeq = String(item.seq);
    }
    li.dataset.sbcItem = item.k;
    this.#nodes.set(item.key, li);
    return li;
  }

  // #toolCard shows one tool call: name and live status, then the host's
  // renderer for the tool or the arguments and result, then its approval.
  #toolCard(item, old) {
    const li = el("li", "sbc-tool");
    const status = item.status === "done" ? "succeeded" : item.status ?? "running";
    li.dataset.sbcTool = String(item.name ?? "");
    li.dataset.sbcStatus = status;
    if (item.id) li.dataset.sbcCall = item.id;
    if (item.tab) li.dataset.sbcTab = "true";
    const head = el("div", "sbc-tool-head");
    head.append(el("span", "sbc-dot"), el("span", "sbc-tool-name", String(item.name ?? "tool")));
    let label = STATUS_TEXT[status] ?? status;
    if (status === "running" && item.progress?.message) label = item.progress.message;
    if (status === "failed" && item.error) label = `Failed: ${item.error}`;
    if (item.tab) label += " · in this tab";
    head.append(el("span", "sbc-tool-status", label));
    li.append(head);
    if (status === "running" && item.progress?.total > 0) {
      const bar = el("progress", "sbc-progress");
      bar.max = item.progress.total;
      bar.value = item.progress.progress;
      li.append(bar);
    }
    const args = parseJSON(item.args || "{}");
    const result = item.result === undefined ? undefined : parseJSON(item.result);
    const rid = typeof item.ui?.rendererId === "string" ? item.ui.rendererId : "";
    const render = this.#renderers[item.name] ?? (rid && Object.hasOwn(this.#byRenderer, rid) ? this.#byRenderer[rid] : undefined);
    let body = null;
    if (render) {
      try {
        const node = render({ toolCallId: item.id, name: item.name, args, status, result, error: item.error ?? "", ui: item.ui ?? null });
        if (node instanceof Node) body = node;
      } catch (err) {
        body = el("div", "sbc-error", `The ${rid && !this.#renderers[item.name] ? rid : item.name} renderer failed: ${err?.message ?? err}`);
      }
    }
    if (body) {
      const wrap = el("div", "sbc-rendered");
      wrap.append(body);
      li.append(wrap);
    } else {
      const open = (sel) => old?.querySelector(sel)?.open; // keep what the user opened across updates
      if (item.args && (typeof args !== "object" || Object.keys(args ?? {}).length)) {
        const d = el("details", "sbc-args");
        // open while the call waits on the user; afterwards as the user left it
        d.open = status === "waiting" || item.approval?.status === "pending" || (old?.dataset.sbcStatus !== "waiting" && (open(".sbc-args") ?? false));
        d.append(el("summary", null, "Arguments"), kv(args));
        li.append(d);
      }
      if (result !== undefined && result !== null && status === "succeeded") {
        const d = el("details", "sbc-out");
        d.open = open(".sbc-out") ?? false;
        d.append(el("summary", null, "Result"), el("pre", "sbc-result", pretty(result)));
        li.append(d);
      }
    }
    if (item.approval) {
      const card = el("div", "sbc-approval-card");
      this.#fillCard(card, item.approval, false);
      li.dataset.sbcApproval = item.approval.id;
      li.append(card);
    }
    return li;
  }
}

if (typeof customElements !== "undefined" && !customElements.get("switchboard-chat")) {
  customElements.define("switchboard-chat", SwitchboardChat);
}
