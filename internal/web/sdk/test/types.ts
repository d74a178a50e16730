// A program that uses the SDK as an app would; `npm run typecheck` (tsc)
// fails when the declarations stop fitting this use. Not run.
import { connect, SwitchboardError, type Connection, type Status } from "../switchboard.js";
import { toolName, ensureModelContext, type WebMCPTool } from "../webmcp.js";
import { modelContext } from "../modelcontext.js";
import { reportContexts } from "../context.js";
import { watchTasks, cancelTask, getTask, listTasks, isOpen, type Task } from "../tasks.js";
import { SwitchboardProvider, useConnectionStatus, useTool, useAgentContext, useConnection } from "../react.js";
import { createElement } from "react";

const sb: Connection = connect({
  url: "http://127.0.0.1:7766", sessionId: "s", sessionToken: "t",
  webmcp: { viewStateOnly: ["openDialog"] }, maxTools: 100,
});
const off: () => void = sb.registerTool<{ page: string }, { page: string }>({
  name: "nav.goto", description: "Open a page.", class: "ui",
  inputSchema: { type: "object", properties: { page: { type: "string" } }, required: ["page"] },
  handler: async ({ page }, { signal }) => {
    signal.throwIfAborted();
    if (!page) throw new SwitchboardError("INVALID_INPUT", "no page");
    return { page };
  },
});
off();
const mode: "native" | "polyfill" | "pending" | "none" | "off" = sb.webmcp;
const unsub = sb.on("status", (s: Status) => void s);
unsub();
connect({ sessionId: "s", sessionToken: "t", webmcp: false });
// @ts-expect-error a browser tool is never "mutate"
sb.registerTool({ name: "a.b", description: "x", class: "mutate", handler: () => null });

const tool: WebMCPTool = { name: "searchFlights", description: "Search.", annotations: { readOnlyHint: true }, execute: async (input) => ({ input }) };
const name: string = toolName(tool.name);
const which: Promise<"native" | "polyfill" | "none"> = ensureModelContext();
const installed: "native" | "polyfill" | "none" = modelContext;
reportContexts(sb).destroy();

function Search(): null {
  const conn: Connection = useConnection();
  const status: Status = useConnectionStatus(conn);
  useTool({ name: "search.open", description: "Open search.", handler: () => ({ open: status === "open" }) });
  useAgentContext({ id: "search", kind: "panel", label: "Search", selection: { text: "q" } });
  return null;
}
createElement(SwitchboardProvider, { connection: sb }, createElement(Search));
void [mode, name, which, installed];

const stopTasks: () => void = watchTasks(sb, (tasks: Task[]) => {
  for (const t of tasks) if (isOpen(t) && t.assignee !== "agent:assistant") void cancelTask(sb, t.id);
}, { intervalMs: 5000, status: ["working"], onError: (e) => void e });
stopTasks();
void listTasks(sb, { limit: 5 }).then((ts) => ts.map((t) => getTask(sb, t.id)));
