// switchboard chat: <switchboard-chat>, one assistant for every page of an
// app. A custom element with no framework and no dependency, served beside
// switchboard.js.
//
//   import { connect } from "/sdk/switchboard.js";
//   import "/sdk/chat.js";
//   const sb = connect({ url, sessionId, sessionToken });
//   document.querySelector("switchboard-chat").connection = sb;
//
// It uses only the tab's session token (through the connection): it starts
// runs (POST /api/v1/runs) and streams their AG-UI events (GET
// /api/v1/runs/{id}/events), showing text and tool calls as they happen;
// it keeps the run id and the last event id in sessionStorage, so an
// element that comes back (a page navigation, a re-mount) resumes with
// Last-Event-ID; it renders approval requests from the tab's event stream
// as cards the user answers (POST /api/v1/approvals/{id}); and it applies
// the composer busy policy of GET /api/v1/agent/capabilities: while a run
// is busy and the runtime has no native follow-up, send is disabled, Enter
// does nothing and the text stays; with native follow-up, a busy send shows
// a queued bubble and posts /api/v1/agent/chat/{thread}/followup.
//
// Everything shown is text (textContent); nothing from the model or a tool
// is parsed as HTML.

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
:where(switchboard-chat){display:flex;flex-direction:column;border:1px solid #d0d5dd;border-radius:.5rem;background:#fff;font-size:.9rem;max-height:70vh}
:where(.sbc-head){display:flex;gap:.5rem;align-items:center;padding:.4rem .75rem;border-bottom:1px solid #eaecf0;font-weight:600}
:where(.sbc-state){font-weight:400;font-size:.75rem;color:#667085;flex:1}
:where(.sbc-log){list-style:none;margin:0;padding:.5rem .75rem;overflow:auto;flex:1;display:flex;flex-direction:column;gap:.4rem;min-height:6rem}
:where(.sbc-msg){padding:.35rem .6rem;border-radius:.6rem;white-space:pre-wrap;max-width:90%}
:where(.sbc-user){align-self:flex-end;background:#3559e0;color:#fff}
:where(.sbc-queued){align-self:flex-end;background:#c7d7fe;color:#1d2939;font-style:italic}
:where(.sbc-assistant){align-self:flex-start;background:#f2f4f7}
:where(.sbc-tool){align-self:flex-start;font-family:ui-monospace,monospace;font-size:.8rem;color:#475467;border-left:3px solid #d0d5dd;padding-left:.5rem}
:where(.sbc-tool[data-sbc-status=failed]){border-color:#f97066}:where(.sbc-tool[data-sbc-status=succeeded]){border-color:#32d583}
:where(.sbc-args){display:block;white-space:pre-wrap;word-break:break-all;color:#667085}
:where(.sbc-approval){border:1px solid #fdb022;background:#fffaeb;border-radius:.5rem;padding:.5rem}
:where(.sbc-approval pre){white-space:pre-wrap;word-break:break-all;font-size:.75rem;margin:.25rem 0;max-height:10rem;overflow:auto}
:where(.sbc-error){color:#b42318}
:where(.sbc-composer){display:flex;gap:.4rem;padding:.5rem;border-top:1px solid #eaecf0}
:where(.sbc-composer textarea){flex:1;font:inherit;resize:vertical;min-height:2.2rem}
`;

let styled = false;
function injectStyles() {
  if (styled || typeof CSSStyleSheet === "undefined" || !document.adoptedStyleSheets) return;
  styled = true;
  const sheet = new CSSStyleSheet();
  sheet.replaceSync(CSS_TEXT);
  document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
}

export class SwitchboardChat extends HTMLElement {
  #conn = null;
  #thread = "";
  #native = true; // until the capabilities route says otherwise
  #busy = false;
  #runId = "";
  #lastEventId = "";
  #stream = null; // AbortController of the run stream
  #live = []; // items of the current run, for resume
  #nodes = new Map(); // item key → li
  #offEvent = null;
  #built = false;
  #log; #input; #send; #stop; #state;

  /** The Connection from connect(); setting it starts the element. */
  set connection(conn) {
    if (this.#conn === conn) return;
    this.#conn = conn;
    if (this.isConnected) this.#start();
  }

  get connection() {
    return this.#conn;
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
    try {
      const caps = await conn.request(`/api/v1/agent/capabilities?session=${encodeURIComponent(this.#thread)}`);
      this.#native = caps?.nativeFollowUp !== false;
    } catch {
      this.#native = false; // unknown: the safe policy
    }
    this.dataset.sbcNative = String(this.#native);
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
    this.#loadApprovals();
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
    for (const m of h?.messages ?? []) {
      if (m.role === "user" && typeof m.content === "string") this.#render({ k: "user", text: m.content }, false);
      else if (m.role === "assistant") {
        if (typeof m.content === "string" && m.content) this.#render({ k: "assistant", text: m.content }, false);
        for (const tc of m.toolCalls ?? []) this.#render({ k: "tool", name: tc.function?.name ?? "tool", args: "", status: "done" }, false);
      }
    }
  }

  async #loadApprovals() {
    try {
      const res = await this.#conn.request("/api/v1/approvals");
      for (const a of res?.items ?? res?.approvals ?? []) this.#approvalCard(a);
    } catch {
      // the route may be absent (an older daemon): cards still come as events
    }
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
        this.#push({ k: "tool", key: `t${ev.toolCallId}`, name: ev.toolCallName, args: "", status: "running" });
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
          item.status = meta.status === "succeeded" ? "succeeded" : meta.status ? "failed" : "done";
          if (meta.code) item.code = meta.code;
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
    if (kind === "approval.request") this.#approvalCard(data);
    else if (kind === "approval.resolved") this.#approvalResolved(data);
  }

  #approvalCard(a) {
    const id = a?.approvalId ?? a?.id;
    if (typeof id !== "string" || (a.status && a.status !== "pending")) return;
    const key = `a${id}`;
    if (this.#nodes.has(key)) return;
    const li = el("li", "sbc-approval");
    li.dataset.sbcApproval = id;
    li.dataset.sbcTool = String(a.tool ?? "");
    const title = el("div", "sbc-approval-title", `${a.agent ?? "The assistant"} wants to run ${a.tool ?? "a tool"}`);
    const summary = a.summary ? el("p", "sbc-approval-summary", String(a.summary)) : null;
    const input = el("pre", "sbc-approval-input", typeof a.input === "string" ? a.input : JSON.stringify(a.input ?? {}, null, 2));
    const approve = el("button", "sbc-approve", "Approve");
    const deny = el("button", "sbc-deny", "Deny");
    approve.type = deny.type = "button";
    const status = el("span", "sbc-approval-status", "");
    const decide = async (decision) => {
      approve.disabled = deny.disabled = true;
      status.textContent = "Sending…";
      try {
        await this.#conn.request(`/api/v1/approvals/${encodeURIComponent(id)}`, { method: "POST", body: { decision } });
        this.#approvalResolved({ approvalId: id, status: decision === "approve" ? "approved" : "denied" });
      } catch (err) {
        status.textContent = `${err.code ?? "ERROR"}: ${err.message}`;
        approve.disabled = deny.disabled = false;
      }
    };
    approve.addEventListener("click", () => decide("approve"));
    deny.addEventListener("click", () => decide("deny"));
    const row = el("div", "sbc-approval-actions");
    row.append(approve, deny, status);
    li.append(title);
    if (summary) li.append(summary);
    li.append(input, row);
    this.#nodes.set(key, li);
    this.#log.append(li);
    li.scrollIntoView({ block: "nearest" });
  }

  #approvalResolved(a) {
    const id = a?.approvalId ?? a?.id;
    const li = this.#nodes.get(`a${id}`);
    if (!li) return;
    const st = a.status ?? a.decision ?? "decided";
    li.dataset.sbcResolved = String(st);
    for (const b of li.querySelectorAll("button")) b.disabled = true;
    const status = li.querySelector(".sbc-approval-status");
    status.textContent = st === "approved" || st === "approve" ? "Approved." : st === "denied" || st === "deny" ? "Denied." : String(st);
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
    const li = this.#li(item);
    this.#log.append(li);
    if (scroll) li.scrollIntoView({ block: "nearest" });
  }

  #li(item) {
    let li;
    switch (item.k) {
      case "tool": {
        li = el("li", "sbc-tool");
        li.dataset.sbcTool = String(item.name ?? "");
        li.dataset.sbcStatus = String(item.status ?? "running");
        if (item.tab) li.dataset.sbcTab = "true";
        li.append(el("span", "sbc-tool-name", `${item.name}${item.tab ? " (in this tab)" : ""}`),
          el("span", "sbc-tool-status", ` — ${item.status}${item.code ? " " + item.code : ""}`));
        if (item.args) li.append(el("span", "sbc-args", item.args));
        break;
      }
      case "queued":
        li = el("li", "sbc-msg sbc-queued", item.text);
        li.dataset.sbcSeq = String(item.seq);
        li.title = "Queued: the assistant reads it at its next step";
        break;
      case "error":
        li = el("li", "sbc-error", item.text);
        break;
      case "note":
        li = el("li", "sbc-note", item.text);
        break;
      default:
        li = el("li", `sbc-msg sbc-${item.k === "user" ? "user" : "assistant"}`, item.text);
        if (item.seq) li.dataset.sbcSeq = String(item.seq);
    }
    li.dataset.sbcItem = item.k;
    this.#nodes.set(item.key, li);
    return li;
  }
}

if (typeof customElements !== "undefined" && !customElements.get("switchboard-chat")) {
  customElements.define("switchboard-chat", SwitchboardChat);
}
