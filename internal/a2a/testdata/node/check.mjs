// Drives switchboard's A2A binding with the official A2A JavaScript SDK
// client (run by internal/a2a's Go tests). Input (argv[2], JSON): {base,
// token, badToken}. It fetches the agent card, streams one task to its
// end, sends one blocking message, starts one that it cancels, and tries
// a forged token and an unknown task; it prints what it saw as JSON.
import {
  ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory,
} from "@a2a-js/sdk/client";
import {
  SendMessageRequest, GetTaskRequest, CancelTaskRequest, taskStateToJSON,
} from "@a2a-js/sdk";

const { base, token, badToken } = JSON.parse(process.argv[2]);

function clientFor(tok) {
  const fetchImpl = (url, init = {}) =>
    fetch(url, { ...init, headers: { ...(init.headers || {}), Authorization: `Bearer ${tok}` } });
  return new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl })],
  })).createFromUrl(base);
}

const message = (id, text, extra = {}) =>
  SendMessageRequest.fromJSON({ message: { messageId: id, role: "ROLE_USER", parts: [{ text }] }, ...extra });
const state = (t) => taskStateToJSON(t.status.state);
const texts = (t) => t.artifacts.flatMap((a) => a.parts.map((p) => p.content?.value));
const out = {};

const client = await clientFor(token);
const card = await client.getAgentCard();
out.card = {
  name: card.name,
  skills: card.skills.map((s) => s.id),
  schemes: Object.keys(card.securitySchemes),
  interfaces: card.supportedInterfaces.map((i) => `${i.protocolBinding} ${i.protocolVersion} ${i.url}`),
  streaming: card.capabilities.streaming,
};

// 1. A streamed task, followed to its end.
out.stream = [];
let taskId;
for await (const ev of client.sendMessageStream(message("m-stream", "Prepare the Q3 board pack"))) {
  const p = ev.payload;
  if (p.$case === "task") { taskId = p.value.id; out.stream.push(`task ${state(p.value)}`); }
  if (p.$case === "statusUpdate") out.stream.push(`status ${taskStateToJSON(p.value.status.state)}`);
  if (p.$case === "artifactUpdate") out.stream.push(`artifact ${p.value.artifact.parts[0].content.value}`);
}
const streamed = await client.getTask(GetTaskRequest.fromJSON({ id: taskId }));
out.streamed = { id: taskId, state: state(streamed), artifacts: texts(streamed), history: streamed.history[0].parts[0].content.value };

// 2. A blocking send answers with the finished task.
const sent = await client.sendMessage(message("m-block", "Summarise the design project"));
out.blocking = { state: state(sent), artifacts: texts(sent) };

// 3. A task sent to return at once, then cancelled.
const started = await client.sendMessage(message("m-cancel", "Work until stopped", { configuration: { returnImmediately: true } }));
const cancelled = await client.cancelTask(CancelTaskRequest.fromJSON({ id: started.id }));
out.cancel = { before: state(started), after: state(cancelled) };
try {
  await client.cancelTask(CancelTaskRequest.fromJSON({ id: started.id }));
  out.cancelAgain = "no error";
} catch (e) { out.cancelAgain = e.name; }

// 4. An unknown task, and a forged token.
try {
  await client.getTask(GetTaskRequest.fromJSON({ id: "task_nope" }));
  out.unknown = "no error";
} catch (e) { out.unknown = e.name; }
const forged = await clientFor(badToken);
try {
  await forged.sendMessage(message("m-forged", "Do something"));
  out.forged = "no error";
} catch (e) { out.forged = e.message; }

console.log(JSON.stringify(out));
