// switchboard browser SDK: WebMCP tools become the tab's browser tools.
//
// A page registers tools with the web's own API,
//
//   document.modelContext.registerTool({ name, description, inputSchema,
//     annotations: { readOnlyHint: true }, execute: async (input) => ... },
//     { signal });
//
// or declares them as forms (<form toolname tooldescription>), and connect()
// bridges every such tool to the daemon: it lists them with getTools(),
// advertises them beside the tools mounted with registerTool, and runs a
// dispatched call with executeTool(). The browser's own document.modelContext
// is used where it exists (Chromium with WebMCP enabled); elsewhere
// ensureModelContext() installs the vendored @mcp-b/webmcp-polyfill, which
// has the same surface (registerTool, getTools, executeTool, toolchange).
//
// Annotations map to switchboard's browser contract: readOnlyHint → class
// "read"; otherwise "ui" when the page declared the tool view-state-only
// (connect option webmcp.viewStateOnly); anything else is refused with
// EXEMPTION_VIOLATION, because a browser tool may only read or move the
// view — lasting changes are api tools with approvals.

/** The daemon's tool name grammar (internal/registry): two or more dot-separated lowercase segments. */
export const NAME_RE = /^[a-z0-9][a-z0-9_]*(\.[a-z0-9][a-z0-9_]*)+$/;
export const MAX_NAME = 128;

/**
 * toolName maps a WebMCP tool name onto the daemon's grammar: a name that
 * already fits is kept as it is; otherwise camelCase and kebab-case become
 * snake_case, other characters become "_", and a name of one segment gets
 * the "page." prefix ("searchFlights" → "page.search_flights"). Returns ""
 * when nothing usable is left.
 */
export function toolName(name) {
  if (typeof name !== "string") return "";
  if (name.length <= MAX_NAME && NAME_RE.test(name)) return name;
  const segs = name
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1_$2")
    .toLowerCase()
    .replace(/[^a-z0-9_.]/g, "_")
    .split(".")
    .map((s) => s.replace(/^_+|_+$/g, "").replace(/_+/g, "_"))
    .filter(Boolean);
  if (segs.length === 0) return "";
  if (segs.length === 1) segs.unshift("page");
  const out = segs.join(".");
  return out.length <= MAX_NAME && NAME_RE.test(out) ? out : "";
}

/** Where the vendored polyfill lives, beside this module (served at /sdk/vendor/...). */
const POLYFILL_URL = new URL("./vendor/webmcp-polyfill/index.js", import.meta.url).href;

/**
 * ensureModelContext makes document.modelContext available: the browser's
 * own when it has one ("native"), else the vendored polyfill
 * ("polyfill"). Resolves to "none" outside a document or in an insecure
 * context (WebMCP needs a secure context; http://localhost and
 * http://127.0.0.1 are secure).
 */
export async function ensureModelContext(doc = globalThis.document) {
  if (!doc) return "none";
  if (!doc.modelContext) {
    const { initializeWebMCPPolyfill } = await import(POLYFILL_URL);
    initializeWebMCPPolyfill();
  }
  return guardResults(doc.modelContext);
}

const GUARDED = Symbol.for("switchboard.webmcp.guarded");

/**
 * guardResults wraps mc.registerTool so that an execute() whose result
 * JSON cannot carry (a function, a symbol, a BigInt, a cycle) fails the
 * call instead of reaching the agent as "undefined" or a function's source
 * text (what the browser and the polyfill make of it). Tools registered
 * before the guard are bridged all the same, unguarded. Returns which
 * modelContext mc is: "native", "polyfill" or "none".
 */
export function guardResults(mc) {
  if (!mc) return "none";
  const kind = mc.__isWebMCPPolyfill ? "polyfill" : "native";
  if (mc[GUARDED]) return kind;
  const register = mc.registerTool;
  const guarded = function registerTool(tool, options) {
    if (!tool || typeof tool.execute !== "function") return register.call(this, tool, options);
    const execute = tool.execute;
    return register.call(this, {
      ...tool,
      async execute(...args) {
        const v = await execute.apply(this, args);
        if (typeof v === "function" || typeof v === "symbol" || typeof v === "bigint") {
          throw new TypeError(`WebMCP tool ${tool.name} returned a ${typeof v}, which JSON cannot carry`);
        }
        if (v !== null && typeof v === "object") JSON.stringify(v); // throws on a cycle
        return v;
      },
    }, options);
  };
  Object.defineProperty(mc, "registerTool", { value: guarded, configurable: true, writable: true });
  Object.defineProperty(mc, GUARDED, { value: true });
  return kind;
}

/** A coded refusal the bridge reports instead of advertising a tool. */
function refusal(code, message) {
  const e = new Error(message);
  e.name = "SwitchboardError";
  e.code = code;
  return e;
}

function parseSchema(s) {
  if (s === undefined || s === null || s === "") return { type: "object" };
  if (typeof s !== "string") return s;
  try {
    return JSON.parse(s);
  } catch {
    return undefined; // refused below as a schema that is not JSON
  }
}

/**
 * mapTool turns one RegisteredTool (from getTools()) into a switchboard
 * tool definition, or a refusal. viewStateOnly(webmcpName) says whether the
 * page declared a tool that is not read-only as view-state only.
 */
export function mapTool(reg, viewStateOnly, run) {
  const name = toolName(reg?.name);
  if (!name) {
    return { error: refusal("INVALID_INPUT", `WebMCP tool ${JSON.stringify(String(reg?.name ?? "")).slice(0, 140)} has no name switchboard can use (two or more dot-separated lowercase segments, at most ${MAX_NAME} characters)`) };
  }
  const ann = reg.annotations ?? {};
  let cls;
  if (ann.readOnlyHint === true) cls = "read";
  else if (viewStateOnly(reg.name, reg)) cls = "ui";
  else {
    return { name, error: refusal("EXEMPTION_VIOLATION",
      `WebMCP tool ${reg.name} is not read-only (annotations.readOnlyHint) and not declared view-state-only (connect option webmcp.viewStateOnly); a browser tool may only read or move the view — expose a lasting change as an api tool`) };
  }
  const inputSchema = parseSchema(reg.inputSchema);
  if (inputSchema === undefined) {
    return { name, error: refusal("SCHEMA_VIOLATION", `WebMCP tool ${reg.name}: inputSchema is not JSON`) };
  }
  const def = {
    name,
    description: String(reg.description ?? ""),
    inputSchema,
    class: cls,
    webmcp: { name: reg.name, untrustedContent: ann.untrustedContentHint === true },
    handler: (input, ctx) => run(reg, input, ctx),
  };
  if (reg.title) def.ui = { title: String(reg.title) };
  return { name, def };
}

/**
 * resultOf turns what executeTool resolved to (a JSON string, a plain
 * string, null) into the call's result.
 */
export function resultOf(v) {
  if (v === undefined || v === null) return null;
  if (typeof v !== "string") return v;
  try {
    return JSON.parse(v);
  } catch {
    return v;
  }
}

// leavesPage says whether submitting form (with submitter) navigates this
// page: not a method=dialog form, not one that targets another window.
function leavesPage(form, submitter) {
  const attr = (name, override) => String(submitter?.getAttribute?.(override) ?? form.getAttribute(name) ?? "").toLowerCase();
  return attr("method", "formmethod") !== "dialog" && ["", "_self", "_parent", "_top"].includes(attr("target", "formtarget"));
}

/**
 * watchSubmits records, while a call of tool name runs, whether a
 * declarative form of that name (<form toolname=name>) was submitted with
 * its default action left in place — a submission that navigates the page.
 * Listening on the window in the capture phase sees the event before the
 * page's own listeners; defaultPrevented is read only after the call
 * settled, when they have all run.
 */
function watchSubmits(win, name) {
  if (!win || typeof win.addEventListener !== "function") return { navigating: () => false, stop() {} };
  const seen = [];
  const onSubmit = (e) => {
    const form = e.target;
    if (form && typeof form.getAttribute === "function" && form.getAttribute("toolname") === name) seen.push(e);
  };
  win.addEventListener("submit", onSubmit, true);
  return {
    navigating: () => seen.some((e) => !e.defaultPrevented && leavesPage(e.target, e.submitter)),
    stop: () => win.removeEventListener("submit", onSubmit, true),
  };
}

/**
 * bridge keeps the tools of modelContext mc mounted through onTools(defs,
 * refusals) — at once and after every toolchange — until the returned
 * function is called. Tools of other frames (RegisteredTool.window) are left
 * alone: each frame connects its own tab.
 */
export function bridge(mc, { onTools, viewStateOnly = () => false, self = globalThis.window } = {}) {
  const polyfill = mc.__isWebMCPPolyfill === true;
  let stopped = false, running = false, again = false;
  // The polyfill takes the input as JSON text (Chromium's earlier shape);
  // the browser's own API takes the object.
  const run = async (reg, input, { signal }) => {
    const submits = watchSubmits(self, reg.name);
    try {
      const v = await mc.executeTool(reg, polyfill ? JSON.stringify(input ?? {}) : (input ?? {}), { signal });
      if (submits.navigating() && (v === undefined || v === null || v === "undefined")) {
        // The form was submitted without preventDefault() and respondWith():
        // its default action takes the page away, so this call has no
        // result. Without this the agent would see a success carrying
        // "undefined" (the polyfill) or null (Chromium's own API).
        throw refusal("SESSION_GONE", `the form of WebMCP tool ${reg.name} was submitted without e.preventDefault() and e.respondWith(...), so the page navigated away and the call has no result; answer the agent's submission in the form's submit listener`);
      }
      return resultOf(v);
    } finally {
      submits.stop();
    }
  };

  async function refresh() {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      do {
        again = false;
        let list;
        try {
          list = await mc.getTools();
        } catch (err) {
          onTools(null, [err]);
          continue;
        }
        if (stopped) return;
        const defs = [], refused = [], taken = new Map();
        for (const reg of list ?? []) {
          if (self && reg.window !== undefined && reg.window !== self) continue;
          const m = mapTool(reg, viewStateOnly, run);
          if (!m.def) {
            refused.push(m.error);
          } else if (taken.has(m.name)) {
            // Two WebMCP names map to one (searchFlights, page.search_flights):
            // the first registered keeps it rather than one silently hiding the other.
            refused.push(refusal("CONFLICT", `WebMCP tool ${reg.name} maps to ${m.name}, which WebMCP tool ${taken.get(m.name)} already uses`));
          } else {
            taken.set(m.name, reg.name);
            defs.push(m.def);
          }
        }
        onTools(defs, refused);
      } while (again && !stopped);
    } finally {
      running = false;
    }
  }
  const onChange = () => { refresh(); };
  mc.addEventListener("toolchange", onChange);
  refresh();
  return () => {
    stopped = true;
    mc.removeEventListener("toolchange", onChange);
  };
}
