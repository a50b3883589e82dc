/**
 * Identity of one subtask within one deployment of a job: vertex index and subtask index.
 * A branded string ("<vertex>:<subtask>"), so it keys maps and records, survives structured
 * clone between threads and JSON in checkpoint statistics, and cannot be confused with another
 * string by the type checker. Built and taken apart only here.
 */
export type TaskId = string & { readonly __brand: 'TaskId' };

export function taskId(vertex: number, subtask: number): TaskId {
  if (!(Number.isInteger(vertex) && vertex >= 0 && Number.isInteger(subtask) && subtask >= 0)) {
    throw new RangeError(`task id needs non-negative integer vertex and subtask, got ${vertex}, ${subtask}`);
  }
  return `${vertex}:${subtask}` as TaskId;
}

const TASK_ID = /^(\d+):(\d+)$/;

/** Reads a task id from outside the type system (JSON statistics, messages); throws on anything else. */
export function parseTaskId(s: string): TaskId {
  if (!TASK_ID.test(s)) throw new RangeError(`not a task id: ${JSON.stringify(s)}`);
  return s as TaskId;
}

export function vertexOf(id: TaskId): number {
  return Number(id.slice(0, id.indexOf(':')));
}

export function subtaskOf(id: TaskId): number {
  return Number(id.slice(id.indexOf(':') + 1));
}
