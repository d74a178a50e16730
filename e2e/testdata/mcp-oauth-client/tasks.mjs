// An MCP client on the official TypeScript SDK's experimental tasks
// (2025-11-25), driven by e2e/mcp_tasks_test.go: it runs a job tool as a
// task to its result, lists its tasks, and cancels a second one.
//
// Usage: node tasks.mjs <mcp URL> <bearer token>
// Writes one JSON object per line to stdout: {"ready": {capability,
// tools}}, {"working": taskId} once the first task works (the test then
// lets its job finish), {"completed": {taskId, statuses, result}},
// {"listed": [taskIds]}, {"cancelling": taskId} once the second task
// works, then {"cancelled": {task, streamError, after}}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [mcpURL, token] = process.argv.slice(2);
const say = (o) => process.stdout.write(JSON.stringify(o) + "\n");

const client = new Client({ name: "e2e-tasks", version: "1.0.0" });
await client.connect(new StreamableHTTPClientTransport(new URL(mcpURL), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
}));
const { tools } = await client.listTools(); // teaches the client which tools run as tasks
say({ ready: { capability: client.getServerCapabilities().tasks ?? null,
  tools: tools.filter((t) => t.execution).map((t) => ({ name: t.name, execution: t.execution })) } });

// The first task runs to its end; no task option is passed: the SDK makes
// the call a task because the server lists the tool as one.
const tasks = client.experimental.tasks;
let taskId, result;
const statuses = [];
for await (const msg of tasks.callToolStream({ name: "reports-build", arguments: { pages: 7 } })) {
  if (msg.type === "taskCreated") taskId = msg.task.taskId;
  if (msg.type === "taskStatus") {
    if (msg.task.status === "working" && !statuses.includes("working")) say({ working: taskId });
    statuses.push(msg.task.status);
  }
  if (msg.type === "result") result = msg.result;
  if (msg.type === "error") throw msg.error;
}
say({ completed: { taskId, statuses, result } });
say({ listed: (await tasks.listTasks()).tasks.map((t) => t.taskId) });

// The second is cancelled while it works.
let second, cancelled, streamError;
for await (const msg of tasks.callToolStream({ name: "reports-build", arguments: { pages: 99 } })) {
  if (msg.type === "taskCreated") second = msg.task.taskId;
  if (msg.type === "taskStatus" && msg.task.status === "working" && !cancelled) {
    say({ cancelling: second });
    cancelled = await tasks.cancelTask(second);
  }
  if (msg.type === "error") streamError = msg.error.message;
  if (msg.type === "result") throw new Error("the cancelled task gave a result");
}
say({ cancelled: { task: cancelled, streamError, after: await tasks.getTask(second) } });
await client.close();
