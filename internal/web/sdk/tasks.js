// switchboard browser SDK: the delegated tasks of the user this tab was
// opened for — what they handed to the assistant or to another agent
// (docs/tasks.md). A tab lists them, opens one and cancels one with its
// own session token; creating and resuming work stay with the person's
// sign-in and their agents' tokens.
//
//   import { connect } from "/sdk/switchboard.js";
//   import { watchTasks, cancelTask } from "/sdk/tasks.js";
//   const sb = connect({ url, sessionId, sessionToken });
//   const stop = watchTasks(sb, (tasks) => render(tasks));
//   await cancelTask(sb, tasks[0].id);
//
// The daemon pushes no task events to tabs; watchTasks reads the list
// again every intervalMs while the page is visible (and at once after a
// cancel through this module), and calls back only when something
// changed (a task's revision).

const DEFAULT_INTERVAL_MS = 2000;
const OPEN = new Set(["submitted", "working", "input_required"]);

/** True while a task can still change: submitted, working or input_required. */
export function isOpen(task) {
  return OPEN.has(task?.status);
}

/**
 * The user's tasks, newest first: {status?: string[], limit?: number}.
 * Rejects with a SwitchboardError carrying the daemon's code.
 */
export async function listTasks(sb, { status, limit } = {}) {
  const q = new URLSearchParams();
  if (status?.length) q.set("status", status.join(","));
  if (limit) q.set("limit", String(limit));
  const qs = q.toString();
  const out = await sb.request(`/api/v1/tasks${qs ? "?" + qs : ""}`);
  return out?.items ?? [];
}

/** One task: status, envelope, usage, steps, artifacts, error. */
export function getTask(sb, id) {
  return sb.request(`/api/v1/tasks/${encodeURIComponent(id)}`);
}

const watchers = new WeakMap(); // connection → Set of wake functions

/** Cancel an open task (its run stops); a finished one rejects with CONFLICT. */
export async function cancelTask(sb, id) {
  const t = await sb.request(`/api/v1/tasks/${encodeURIComponent(id)}/cancel`, { method: "POST", body: {} });
  for (const wake of watchers.get(sb) ?? []) wake();
  return t;
}

/**
 * Call onChange(tasks) with the user's tasks now and whenever one changes.
 * Options: {intervalMs = 2000, limit = 20, status, onError}. Returns a
 * function that stops watching.
 */
export function watchTasks(sb, onChange, { intervalMs = DEFAULT_INTERVAL_MS, limit = 20, status, onError } = {}) {
  let stopped = false;
  let timer = null;
  let last = null;
  let running = false;
  const visible = () => typeof document === "undefined" || document.visibilityState !== "hidden";
  const tick = async () => {
    clearTimeout(timer);
    if (stopped || running) return;
    running = true;
    try {
      const tasks = await listTasks(sb, { limit, status });
      const sig = tasks.map((t) => `${t.id}@${t.revision}`).join(",");
      if (!stopped && sig !== last) {
        last = sig;
        onChange(tasks);
      }
    } catch (err) {
      if (onError) onError(err);
      else console.warn("switchboard: tasks:", err?.code ?? "", err?.message ?? err);
    } finally {
      running = false;
      if (!stopped && visible()) timer = setTimeout(tick, intervalMs);
    }
  };
  const onVisible = () => {
    if (visible()) tick();
  };
  let set = watchers.get(sb);
  if (!set) watchers.set(sb, (set = new Set()));
  set.add(tick);
  if (typeof document !== "undefined") document.addEventListener("visibilitychange", onVisible);
  tick();
  return () => {
    stopped = true;
    clearTimeout(timer);
    set.delete(tick);
    if (typeof document !== "undefined") document.removeEventListener("visibilitychange", onVisible);
  };
}
