// switchboard browser SDK: attaches this tab to a switchboard daemon so an
// assistant can drive the page through browser tools the page mounts.
//
// An ES module with no build step and no dependency. Serve it from the
// daemon (/sdk/switchboard.js) or copy it into your app. Types are in
// switchboard.d.ts beside it.
//
//   import { connect } from "http://127.0.0.1:7766/sdk/switchboard.js";
//   const sb = connect({ url, sessionId, sessionToken });   // from your backend
//   const off = sb.registerTool({
//     name: "nav.goto", description: "Open a page of the app.",
//     inputSchema: { type: "object", properties: { page: { type: "string" } }, required: ["page"] },
//     handler: async ({ page }, { signal }) => { router.push(page); return { page }; },
//   });
//   // later, when the component unmounts: off();
//
// Protocol: the tab authenticates with `Authorization: Bearer <sessionToken>`
// (never a token in a URL); it reads its event stream with fetch (so headers
// work), PUTs the full set of its tools whenever it changes and on every
// (re)connect, runs each dispatched request's handler and POSTs the result.
//
// WebMCP: tools the page registers with document.modelContext.registerTool
// (or declares as <form toolname>) are mounted the same way (webmcp.js).

import { bridge, ensureModelContext } from "./webmcp.js";

export const PROTOCOL_VERSION = "2026-11-30";

const DEFAULTS = {
  handlerTimeoutMs: 30000, // a handler's own limit when neither tool nor request says
  minBackoffMs: 250,
  maxBackoffMs: 5000, // well inside the daemon's grace window (2 × heartbeat)
  advertiseDebounceMs: 10, // batch registrations made in one render
  endOnPageHide: true,
  watchdogFactor: 2.5, // reconnect when the stream is silent this many heartbeats
  resultRetries: 4,
  // The daemon's bounds (internal/session, internal/registry, internal/httpapi):
  // the SDK advertises within them, so one bad or excess tool is refused
  // alone instead of failing the whole advertisement.
  maxTools: 256,
  maxSchemaBytes: 256 << 10,
  maxAdvertiseBytes: (1 << 20) - (16 << 10),
};

/** A coded error, as handlers may throw to report a failure with a code. */
export class SwitchboardError extends Error {
  constructor(code, message, details) {
    super(message);
    this.name = "SwitchboardError";
    this.code = code;
    if (details !== undefined) this.details = details;
  }
}

/**
 * Attach this tab to the daemon. Returns a Connection at once; it connects
 * in the background and keeps reconnecting until close() or disconnect().
 */
export function connect(options) {
  return new Connection(options);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Equal jitter: half the exponential delay plus a random half, so a fleet
// of tabs reconnecting after a daemon restart spreads out.
function backoff(attempt, min, max) {
  const d = Math.min(max, min * 2 ** Math.min(attempt, 16));
  return d / 2 + Math.random() * (d / 2);
}

const BROWSER_CLASSES = new Set(["read", "ui"]);

export class Connection {
  #url;
  #sessionId;
  #token;
  #opts;
  #fetch;
  #tools = new Map(); // name → definition (registerTool)
  #web = new Map(); // name → definition (WebMCP, replaced on every toolchange)
  #webmcp = "off"; // "pending" | "native" | "polyfill" | "none" | "off"
  #stopBridge = null;
  #refused = new Map(); // name → descriptor JSON the daemon refused (not sent again unchanged)
  #reported = new Set(); // refusal messages already reported
  #running = new Map(); // invocationId → {abort, cancelled}
  #answered = new Map(); // invocationId → posted body (bounded), for redelivery
  #listeners = { status: new Set(), error: new Set(), action: new Set(), event: new Set() };
  #lastEventId = "";
  #status = "connecting";
  #stopped = false;
  #stream = null; // AbortController of the current stream fetch
  #heartbeatMs = 15000;
  #advertiseTimer = null;
  #advertising = null; // promise of the PUT in flight
  #advertiseAgain = false;
  #onPageHide;
  #onPageShow;

  constructor({ url, sessionId, sessionToken, fetch: fetchImpl, webmcp = {}, ...opts } = {}) {
    if (!sessionId || !sessionToken) {
      throw new TypeError("switchboard: connect needs sessionId and sessionToken (from your backend)");
    }
    const base = url ?? (typeof location !== "undefined" ? location.origin : "");
    this.#url = String(base).replace(/\/+$/, "");
    this.#sessionId = sessionId;
    this.#token = sessionToken;
    this.#opts = { ...DEFAULTS, ...opts };
    this.#fetch = fetchImpl ?? globalThis.fetch.bind(globalThis);
    if (typeof addEventListener === "function") {
      // A page that goes away for good ends its session, so calls waiting on
      // it fail with SESSION_GONE at once. persisted=true means the page
      // went into the back/forward cache and may come back.
      this.#onPageHide = (e) => {
        if (e.persisted) {
          this.#stream?.abort();
        } else if (this.#opts.endOnPageHide) {
          this.close();
        }
      };
      this.#onPageShow = (e) => {
        if (e.persisted && !this.#stopped) this.#stream?.abort(); // reconnect now
      };
      addEventListener("pagehide", this.#onPageHide);
      addEventListener("pageshow", this.#onPageShow);
    }
    if (webmcp !== false && typeof document !== "undefined") this.#startWebMCP(webmcp);
    this.#run();
  }

  // #startWebMCP bridges document.modelContext (installing the polyfill
  // where the browser has none) into this connection's tools.
  async #startWebMCP({ viewStateOnly, polyfill = true } = {}) {
    this.#webmcp = "pending";
    const vso = typeof viewStateOnly === "function" ? viewStateOnly
      : Array.isArray(viewStateOnly) ? (n) => viewStateOnly.includes(n) : () => false;
    try {
      this.#webmcp = polyfill || document.modelContext ? await ensureModelContext(document) : "none";
    } catch (err) {
      this.#webmcp = "none";
      this.#error(err);
      return;
    }
    if (this.#webmcp === "none" || this.#stopped) return;
    this.#stopBridge = bridge(document.modelContext, {
      viewStateOnly: vso,
      onTools: (defs, refused) => {
        for (const err of refused) this.#report(err);
        if (!defs) return;
        this.#web = new Map(defs.map((d) => [d.name, d]));
        this.#scheduleAdvertise();
      },
    });
  }

  /** "native" or "polyfill" (which document.modelContext is bridged), "pending", "none" or "off". */
  get webmcp() {
    return this.#webmcp;
  }

  /** The session this connection belongs to. */
  get sessionId() {
    return this.#sessionId;
  }

  /** "connecting" | "open" | "reconnecting" | "closed" */
  get status() {
    return this.#status;
  }

  /** Names of the tools currently mounted (registerTool and WebMCP). */
  get tools() {
    return [...this.#mounted().keys()];
  }

  // #mounted is every tool of the tab: registerTool's first, then WebMCP's
  // (a WebMCP tool under a name registerTool already uses is refused).
  #mounted() {
    const all = new Map(this.#tools);
    for (const [name, def] of this.#web) {
      if (all.has(name)) {
        this.#report(new SwitchboardError("CONFLICT", `WebMCP tool ${def.webmcp?.name ?? name} maps to ${name}, which another tool of this tab already uses`));
        continue;
      }
      all.set(name, def);
    }
    return all;
  }

  // #report emits a refusal once (they recur on every advertisement).
  #report(err) {
    const key = `${err?.code}:${err?.message}`;
    if (this.#reported.has(key)) return;
    if (this.#reported.size > 1000) this.#reported.clear();
    this.#reported.add(key);
    this.#error(err);
  }

  /**
   * Listen for "status" (new status string), "error" (an Error; the SDK
   * keeps going), "action" ({phase, request, result?}) or "event" ({kind,
   * data, id}: every other event on the tab's stream, such as panel.open,
   * panel.update, panel.close, approval.request and approval.resolved).
   * Returns an unsubscribe function.
   */
  on(event, fn) {
    const set = this.#listeners[event];
    if (!set) throw new TypeError(`switchboard: unknown event "${event}"`);
    set.add(fn);
    return () => set.delete(fn);
  }

  /**
   * Mount a browser tool. It is advertised at once (batched with other
   * registrations in the same tick); the returned function unmounts it.
   */
  registerTool(def) {
    if (!def || typeof def.name !== "string" || !def.name) {
      throw new TypeError("switchboard: registerTool needs a name");
    }
    if (typeof def.handler !== "function") {
      throw new TypeError(`switchboard: tool ${def.name} needs a handler function`);
    }
    if (def.class !== undefined && !BROWSER_CLASSES.has(def.class)) {
      throw new SwitchboardError("EXEMPTION_VIOLATION",
        `browser tool ${def.name} has class ${def.class}; browser tools are read or ui — declare mutations as api tools`);
    }
    if (def.viewStateOnly === false) {
      throw new SwitchboardError("EXEMPTION_VIOLATION", `browser tool ${def.name} must be view-state only`);
    }
    const entry = { ...def };
    this.#tools.set(def.name, entry);
    this.#scheduleAdvertise();
    return () => {
      if (this.#tools.get(def.name) === entry) {
        this.#tools.delete(def.name);
        this.#scheduleAdvertise();
      }
    };
  }

  /**
   * End the session for good: the daemon withdraws its tools and fails calls
   * waiting on it with SESSION_GONE. Uses a keepalive request so it works
   * while the page unloads.
   */
  close() {
    if (this.#status === "closed") return Promise.resolve();
    this.#stop("closed");
    return this.#fetch(this.#api(`/api/v1/sessions/${encodeURIComponent(this.#sessionId)}`), {
      method: "DELETE",
      headers: { Authorization: `Bearer ${this.#token}` },
      keepalive: true,
    }).then(() => undefined, () => undefined);
  }

  /**
   * Stop the stream without ending the session (for example before handing
   * the session to another page). The daemon treats the tab as gone after
   * its grace window.
   */
  disconnect() {
    this.#stop("closed");
  }

  #stop(status) {
    this.#stopped = true;
    this.#stopBridge?.();
    this.#stream?.abort();
    for (const r of this.#running.values()) {
      r.cancelled = true; // nothing to post: the session is ending
      r.abort(new SwitchboardError("CANCELLED", "the connection was closed"));
    }
    if (typeof removeEventListener === "function" && this.#onPageHide) {
      removeEventListener("pagehide", this.#onPageHide);
      removeEventListener("pageshow", this.#onPageShow);
    }
    this.#setStatus(status);
  }

  #api(path) {
    return this.#url + path;
  }

  #emit(event, value) {
    for (const fn of this.#listeners[event]) {
      try {
        fn(value);
      } catch (e) {
        console.error("switchboard: listener failed", e);
      }
    }
  }

  #error(err) {
    if (this.#listeners.error.size === 0) console.warn("switchboard:", err);
    this.#emit("error", err);
  }

  #setStatus(s) {
    if (this.#status === s) return;
    this.#status = s;
    this.#emit("status", s);
  }

  // ---- the event stream ---------------------------------------------------

  async #run() {
    let attempt = 0;
    while (!this.#stopped) {
      const ctl = new AbortController();
      this.#stream = ctl;
      let opened = false;
      try {
        const headers = { Authorization: `Bearer ${this.#token}`, Accept: "text/event-stream" };
        if (this.#lastEventId) headers["Last-Event-ID"] = this.#lastEventId;
        const res = await this.#fetch(this.#api(`/api/v1/sessions/${encodeURIComponent(this.#sessionId)}/events`), {
          headers,
          signal: ctl.signal,
          cache: "no-store",
        });
        if (!res.ok) {
          const err = await errorOf(res);
          if (res.status === 401 || res.status === 404 || res.status === 410) {
            // The session is closed or the token is not valid: retrying
            // cannot help. The app opens a new session.
            this.#error(err);
            this.#stop("closed");
            return;
          }
          throw err;
        }
        opened = true;
        attempt = 0;
        this.#setStatus("open");
        this.#advertiseNow(); // the daemon forgets a gone tab's tools
        await this.#read(res.body, ctl);
      } catch (err) {
        if (this.#stopped) return;
        if (!ctl.signal.aborted) this.#error(err);
      }
      if (this.#stopped) return;
      this.#setStatus("reconnecting");
      await sleep(opened ? backoff(0, this.#opts.minBackoffMs, this.#opts.maxBackoffMs)
                         : backoff(attempt++, this.#opts.minBackoffMs, this.#opts.maxBackoffMs));
    }
  }

  // #read parses SSE frames (https://html.spec.whatwg.org/#event-stream-interpretation)
  // until the stream ends; a silent stream is aborted by the watchdog.
  async #read(body, ctl) {
    const reader = body.getReader();
    const decoder = new TextDecoder();
    let buf = "";
    let event = "", data = [], sawData = false;
    let watchdog;
    const arm = () => {
      clearTimeout(watchdog);
      watchdog = setTimeout(() => ctl.abort(), this.#heartbeatMs * this.#opts.watchdogFactor);
    };
    arm();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        arm();
        buf += decoder.decode(value, { stream: true });
        let nl;
        while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
          if (buf[nl] === "\r" && nl === buf.length - 1) break; // maybe half of \r\n
          const line = buf.slice(0, nl);
          buf = buf.slice(buf[nl] === "\r" && buf[nl + 1] === "\n" ? nl + 2 : nl + 1);
          if (line === "") {
            if (sawData) this.#dispatch(event || "message", data.join("\n"));
            event = ""; data = []; sawData = false;
            continue;
          }
          if (line[0] === ":") continue; // keep-alive comment
          const i = line.indexOf(":");
          const field = i < 0 ? line : line.slice(0, i);
          let val = i < 0 ? "" : line.slice(i + 1);
          if (val[0] === " ") val = val.slice(1);
          if (field === "event") event = val;
          else if (field === "data") { data.push(val); sawData = true; }
          else if (field === "id" && !val.includes("\0")) this.#lastEventId = val;
        }
      }
    } finally {
      clearTimeout(watchdog);
      reader.cancel().catch(() => {});
    }
  }

  #dispatch(kind, data) {
    let msg;
    try {
      msg = JSON.parse(data);
    } catch {
      this.#error(new Error(`switchboard: event ${kind} has data that is not JSON`));
      return;
    }
    switch (kind) {
      case "session.ready":
        if (msg.heartbeatMs > 0) this.#heartbeatMs = msg.heartbeatMs;
        break;
      case "browser.action.request":
        this.#handle(msg);
        break;
      case "browser.action.cancel": {
        const r = this.#running.get(msg.invocationId);
        if (r) {
          r.cancelled = true;
          r.abort(new SwitchboardError(msg.reason?.code ?? "CANCELLED", msg.reason?.message ?? "the call was cancelled"));
        }
        break;
      }
      default: // application events: panels, approvals, ...
        this.#emit("event", { kind, data: msg, id: this.#lastEventId });
    }
  }

  /**
   * Call a daemon route as this tab, with its session token (which never
   * leaves the SDK). path starts with /api/v1; body is sent as JSON.
   * Resolves to the parsed JSON answer (null for an empty one, the text
   * for an answer that is not JSON); rejects
   * with a SwitchboardError carrying the daemon's code.
   */
  async request(path, { method = "GET", body, signal, keepalive, headers } = {}) {
    if (typeof path !== "string" || !path.startsWith("/api/")) {
      throw new TypeError("switchboard: request paths start with /api/");
    }
    const init = { method, signal, keepalive, cache: "no-store",
      headers: { Authorization: `Bearer ${this.#token}`, ...headers } };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const res = await this.#fetch(this.#api(path), init);
    if (!res.ok) throw await errorOf(res);
    const text = await res.text();
    if (!text) return null;
    return /json/i.test(res.headers.get("Content-Type") ?? "") ? JSON.parse(text) : text;
  }

  /**
   * Open a streaming GET (an SSE route such as /api/v1/runs/{id}/events)
   * as this tab and return the Response; the caller reads its body.
   */
  async stream(path, { signal, headers } = {}) {
    if (typeof path !== "string" || !path.startsWith("/api/")) {
      throw new TypeError("switchboard: request paths start with /api/");
    }
    const res = await this.#fetch(this.#api(path), {
      signal, cache: "no-store",
      headers: { Authorization: `Bearer ${this.#token}`, Accept: "text/event-stream", ...headers },
    });
    if (!res.ok) throw await errorOf(res);
    return res;
  }

  // ---- running handlers ---------------------------------------------------

  async #handle(req) {
    const id = req.invocationId;
    if (this.#running.has(id)) return; // already running: a redelivery
    const prior = this.#answered.get(id);
    if (prior) return this.#post(req, prior); // answered, but the ack may be lost
    const tool = this.#tools.get(req.tool) ?? this.#web.get(req.tool);
    const ac = new AbortController();
    const run = { abort: (why) => ac.abort(why), cancelled: false };
    this.#running.set(id, run);
    this.#emit("action", { phase: "start", request: req });
    // The handler's own limit: the tool's handlerTimeoutMs, else its
    // timeoutMs, else the connection default; never past the daemon's wait.
    const limit = Math.min(
      tool?.handlerTimeoutMs ?? tool?.timeoutMs ?? this.#opts.handlerTimeoutMs,
      req.timeoutMs > 0 ? req.timeoutMs : Infinity,
    );
    const timer = setTimeout(
      () => ac.abort(new SwitchboardError("TIMEOUT", `the handler of ${req.tool} did not finish within ${limit} ms`)),
      limit,
    );
    let body;
    try {
      if (!tool) throw new SwitchboardError("TOOL_UNAVAILABLE", `this tab no longer mounts ${req.tool}`);
      const aborted = new Promise((_, reject) => {
        ac.signal.addEventListener("abort", () => reject(ac.signal.reason), { once: true });
      });
      const ctx = { signal: ac.signal, invocationId: id, runId: req.runId, tool: req.tool };
      const value = await Promise.race([Promise.resolve().then(() => tool.handler(req.input ?? {}, ctx)), aborted]);
      const result = value === undefined ? null : value;
      // Throws on a cycle or a BigInt; undefined for a function or a symbol.
      if (JSON.stringify(result) === undefined) {
        throw new SwitchboardError("INTERNAL", `the handler of ${req.tool} returned a ${typeof result}, which JSON cannot carry`);
      }
      body = { protocolVersion: PROTOCOL_VERSION, invocationId: id, ok: true, result };
    } catch (err) {
      body = {
        protocolVersion: PROTOCOL_VERSION,
        invocationId: id,
        ok: false,
        error: {
          code: typeof err?.code === "string" && err.code ? err.code : "INTERNAL",
          message: String(err?.message ?? err ?? "the handler failed").slice(0, 2000),
        },
      };
    } finally {
      clearTimeout(timer);
      this.#running.delete(id);
    }
    this.#emit("action", { phase: "end", request: req, result: body });
    if (run.cancelled) return; // the daemon already ended this call
    this.#remember(id, body);
    return this.#post(req, body);
  }

  #remember(id, body) {
    this.#answered.set(id, body);
    if (this.#answered.size > 64) this.#answered.delete(this.#answered.keys().next().value);
  }

  // #post sends a result, retrying network failures (the daemon accepts the
  // identical result again); an answer from the daemon is final.
  async #post(req, body) {
    const url = this.#api(`/api/v1/runs/${encodeURIComponent(req.runId || "-")}/actions/${encodeURIComponent(req.invocationId)}/result`);
    let json;
    try {
      json = JSON.stringify(body);
    } catch (err) {
      json = JSON.stringify({ protocolVersion: PROTOCOL_VERSION, invocationId: req.invocationId, ok: false,
        error: { code: "INTERNAL", message: `result is not JSON: ${err.message}` } });
    }
    for (let attempt = 0; ; attempt++) {
      try {
        const res = await this.#fetch(url, {
          method: "POST",
          headers: { Authorization: `Bearer ${this.#token}`, "Content-Type": "application/json" },
          body: json,
        });
        if (!res.ok) this.#error(await errorOf(res));
        return;
      } catch (err) {
        if (attempt >= this.#opts.resultRetries || this.#status === "closed") {
          this.#error(err);
          return;
        }
        await sleep(backoff(attempt, this.#opts.minBackoffMs, this.#opts.maxBackoffMs));
      }
    }
  }

  // ---- advertising tools --------------------------------------------------

  #scheduleAdvertise() {
    if (this.#stopped) return;
    clearTimeout(this.#advertiseTimer);
    this.#advertiseTimer = setTimeout(() => this.#advertiseNow(), this.#opts.advertiseDebounceMs);
  }

  // #advertiseNow PUTs the full current set; one PUT at a time, and a change
  // made meanwhile triggers one more.
  #advertiseNow() {
    clearTimeout(this.#advertiseTimer);
    if (this.#stopped) return;
    if (this.#advertising) {
      this.#advertiseAgain = true;
      return;
    }
    const sent = this.#advertisement();
    this.#advertising = this.#fetch(this.#api(`/api/v1/sessions/${encodeURIComponent(this.#sessionId)}/tools`), {
      method: "PUT",
      headers: { Authorization: `Bearer ${this.#token}`, "Content-Type": "application/json" },
      body: `{"tools":[${[...sent.values()].join(",")}]}`,
    })
      .then(async (res) => {
        if (res.ok) return;
        const err = await errorOf(res);
        // The daemon names each refused tool: leave those out and send
        // the rest again, so one bad tool does not take the others down.
        let dropped = 0;
        for (const issue of Array.isArray(err.details?.issues) ? err.details.issues : []) {
          const json = sent.get(issue?.name);
          if (json === undefined || this.#refused.get(issue.name) === json) continue;
          this.#refused.set(issue.name, json);
          this.#report(new SwitchboardError(issue.code ?? err.code, String(issue.message ?? err.message)));
          dropped++;
        }
        if (dropped > 0) this.#advertiseAgain = true;
        else this.#error(err);
      }, (err) => this.#error(err))
      .finally(() => {
        this.#advertising = null;
        if (this.#advertiseAgain) {
          this.#advertiseAgain = false;
          this.#advertiseNow();
        }
      });
  }
  // #advertisement is the JSON of each tool to send (name → descriptor),
  // within the daemon's bounds: a tool with a schema past maxSchemaBytes,
  // past maxTools or past the request's byte budget is refused here with
  // the daemon's code, and one the daemon refused is not sent again until
  // it changes.
  #advertisement() {
    const out = new Map();
    let bytes = 0;
    for (const [name, def] of this.#mounted()) {
      let json;
      try {
        json = JSON.stringify(descriptor(def));
      } catch (err) {
        this.#report(new SwitchboardError("SCHEMA_VIOLATION", `tool ${name}: its schema is not JSON (${err.message})`));
        continue;
      }
      if (this.#refused.get(name) === json) continue;
      this.#refused.delete(name);
      if (json.length > this.#opts.maxSchemaBytes + (16 << 10)) { // the schema and the rest of the descriptor
        this.#report(new SwitchboardError("PAYLOAD_TOO_LARGE", `tool ${name} is ${json.length} bytes; a tool's schema may have at most ${this.#opts.maxSchemaBytes}`));
        continue;
      }
      if (out.size >= this.#opts.maxTools) {
        this.#report(new SwitchboardError("INVALID_INPUT", `tool ${name} is not advertised: a tab may advertise at most ${this.#opts.maxTools} tools`));
        continue;
      }
      if (bytes + json.length > this.#opts.maxAdvertiseBytes) {
        this.#report(new SwitchboardError("PAYLOAD_TOO_LARGE", `tool ${name} is not advertised: this tab's tools pass the daemon's ${this.#opts.maxAdvertiseBytes}-byte limit`));
        continue;
      }
      bytes += json.length + 1;
      out.set(name, json);
    }
    return out;
  }
}

// descriptor is what the daemon stores for a mounted tool.
function descriptor(def) {
  const d = {
    name: def.name,
    description: def.description ?? "",
    inputSchema: def.inputSchema ?? { type: "object" },
    surface: "browser",
    class: def.class ?? "ui",
    viewStateOnly: true, // mounting a browser tool asserts it; the daemon enforces the class
  };
  for (const k of ["summary", "outputSchema", "timeoutMs", "maxConcurrency", "ui", "pinned"]) {
    if (def[k] !== undefined) d[k] = def[k];
  }
  if (def.webmcp?.untrustedContent) {
    // Every browser tool's result is already page data to the daemon
    // (provenance site-html); the hint is kept so a client can show it.
    d.ui = { ...d.ui, details: { ...d.ui?.details, untrustedContent: true } };
  }
  return d;
}

async function errorOf(res) {
  let e;
  try {
    e = (await res.json())?.error;
  } catch {
    // not JSON
  }
  return new SwitchboardError(e?.code ?? `HTTP_${res.status}`, e?.message ?? `daemon answered ${res.status}`, e?.details);
}
