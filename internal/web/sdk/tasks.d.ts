// Type declarations for tasks.js: the user's delegated tasks, from a tab.

import type { Connection, SwitchboardError } from "./switchboard.js";

export type TaskStatus = "submitted" | "working" | "input_required" | "completed" | "failed" | "cancelled";

/** One call, approval or handoff a task caused. */
export interface TaskStep {
  kind: "call" | "approval" | "handoff";
  invocationId?: string;
  tool?: string;
  status?: string;
  approvalId?: string;
  runId?: string;
  at: string;
}

/** Something a task produced: the assistant's answer, an agent's result. */
export interface TaskArtifact {
  id: string;
  name: string;
  text?: string;
  data?: unknown;
}

/** A delegated task's record (GET /api/v1/tasks/{id}). */
export interface Task {
  id: string;
  owner: string;
  creator: string;
  /** "agent:assistant", or the agent acting for the same user that works it. */
  assignee: string;
  goal: string;
  projects?: string[];
  envelope: { allow?: string[]; deny?: string[]; maxCalls?: number; maxTokens?: number; maxCost?: number; deadline?: string };
  narrowed?: string[];
  status: TaskStatus;
  error?: { code: string; message: string; details?: unknown };
  steps: TaskStep[];
  artifacts: TaskArtifact[];
  usage: { calls: number; tokens: number; cost?: number };
  runs?: string[];
  revision: number;
  createdAt: string;
  updatedAt: string;
  finishedAt?: string;
}

export interface ListOptions {
  status?: TaskStatus[];
  limit?: number;
}

export interface WatchOptions extends ListOptions {
  /** How often the list is read again while the page is visible. Default 2000. */
  intervalMs?: number;
  /** Hears a failed read (default: console.warn); watching goes on. */
  onError?: (err: SwitchboardError | Error) => void;
}

/** True while a task can still change: submitted, working or input_required. */
export declare function isOpen(task: Pick<Task, "status"> | null | undefined): boolean;
/** The user's tasks, newest first. */
export declare function listTasks(sb: Connection, options?: ListOptions): Promise<Task[]>;
/** One task of the user's. */
export declare function getTask(sb: Connection, id: string): Promise<Task>;
/** Cancel an open task; a finished one rejects with CONFLICT. */
export declare function cancelTask(sb: Connection, id: string): Promise<Task>;
/** onChange(tasks) now and whenever one changes; returns a function that stops watching. */
export declare function watchTasks(sb: Connection, onChange: (tasks: Task[]) => void, options?: WatchOptions): () => void;
