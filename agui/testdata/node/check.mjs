// Conformance checks of switchboard's streams with the protocols' own
// packages, run by Go tests (agui, httpapi). Usage:
//
//   node check.mjs schema < events.jsonl       validate each AG-UI event with @ag-ui/core's EventSchema
//   node check.mjs capabilities < caps.json     validate an AgentCapabilities declaration
//   node check.mjs agui URL [opts-json]        run @ag-ui/client's HttpAgent against URL
//   node check.mjs aisdk URL body-json [hdrs]  POST body, read the UI Message Stream with `ai`
//   node check.mjs aisdkresume API chatId [hdrs]  reattach as useChat's `resume: true` does
//                                               (DefaultChatTransport.reconnectToStream) and read it
//
// Each prints one JSON document on stdout; a failure prints {"error": ...}.
import { AgentCapabilitiesSchema, EventSchema } from "@ag-ui/core/schemas";
import { HttpAgent } from "@ag-ui/client";
import { DefaultChatTransport, parseJsonEventStream, readUIMessageStream, uiMessageChunkSchema } from "ai";
import { readFileSync } from "node:fs";

process.env.SUPPRESS_TRANSFORMATION_WARNINGS = "true";
const [mode, url, arg, hdrs] = process.argv.slice(2);
const out = (v) => process.stdout.write(JSON.stringify(v) + "\n");

async function schema() {
  const lines = readFileSync(0, "utf8").split("\n").filter((l) => l.trim() !== "");
  const results = lines.map((line) => {
    const ev = JSON.parse(line);
    const r = EventSchema.safeParse(ev);
    return r.success ? { type: ev.type, ok: true } : { type: ev.type, ok: false, issues: r.error.issues };
  });
  out({ results });
}

async function capabilities() {
  const r = AgentCapabilitiesSchema.strict().safeParse(JSON.parse(readFileSync(0, "utf8")));
  out(r.success ? { ok: true } : { ok: false, issues: r.error.issues });
}

async function agui() {
  const opts = arg ? JSON.parse(arg) : {};
  const agent = new HttpAgent({ url, headers: opts.headers ?? {}, threadId: opts.threadId });
  if (opts.messages) agent.messages = opts.messages;
  const events = [];
  let runError = null;
  try {
    const res = await agent.runAgent(
      { runId: opts.runId, tools: opts.tools ?? [], forwardedProps: opts.forwardedProps ?? {}, resume: opts.resume },
      {
        onEvent: ({ event }) => { events.push(event); },
        onRunErrorEvent: ({ event }) => { runError = event; },
      },
    );
    out({ events, messages: agent.messages, result: res.result ?? null, runError });
  } catch (e) {
    out({ events, messages: agent.messages, runError, error: String(e?.message ?? e) });
  }
}

async function aisdk() {
  const headers = { "content-type": "application/json", ...(hdrs ? JSON.parse(hdrs) : {}) };
  const res = await fetch(url, { method: "POST", headers, body: arg });
  const header = res.headers.get("x-vercel-ai-ui-message-stream");
  if (!res.ok) {
    out({ status: res.status, header, error: await res.text() });
    return;
  }
  const chunks = [];
  const invalid = [];
  const parsed = parseJsonEventStream({ stream: res.body, schema: uiMessageChunkSchema });
  const chunkStream = parsed.pipeThrough(new TransformStream({
    transform(r, controller) {
      if (!r.success) { invalid.push({ raw: r.rawValue, error: String(r.error?.message ?? r.error) }); return; }
      chunks.push(r.value);
      controller.enqueue(r.value);
    },
  }));
  const errors = [];
  // As useChat does: a stream answering an assistant message (an approval
  // response) continues that message.
  const sent = JSON.parse(arg).messages ?? [];
  const lastSent = sent[sent.length - 1];
  let message = lastSent?.role === "assistant" ? structuredClone(lastSent) : null;
  for await (const m of readUIMessageStream({ message: message ?? undefined, stream: chunkStream, onError: (e) => errors.push(String(e?.message ?? e)) })) {
    message = m;
  }
  out({ status: res.status, header, contentType: res.headers.get("content-type"), chunks, invalid, errors, message });
}

// aisdkresume reattaches to a chat's active stream through the AI SDK's own
// transport, so the route and its 204 are the ones useChat uses.
async function aisdkresume() {
  const transport = new DefaultChatTransport({ api: url, headers: hdrs ? JSON.parse(hdrs) : {} });
  const stream = await transport.reconnectToStream({ chatId: arg });
  if (stream === null) {
    out({ active: false });
    return;
  }
  const chunks = [];
  const errors = [];
  let message = null;
  const tee = stream.pipeThrough(new TransformStream({ transform(c, ctl) { chunks.push(c); ctl.enqueue(c); } }));
  for await (const m of readUIMessageStream({ stream: tee, onError: (e) => errors.push(String(e?.message ?? e)) })) {
    message = m;
  }
  out({ active: true, chunks, errors, message });
}

const modes = { schema, capabilities, agui, aisdk, aisdkresume };
if (!modes[mode]) {
  out({ error: `unknown mode ${mode}` });
  process.exit(2);
}
modes[mode]().catch((e) => { out({ error: String(e?.stack ?? e) }); process.exit(1); });
