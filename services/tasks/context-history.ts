import type { Task } from '../../schemas/task.js'
import type { StoredTask, TaskStore } from './store.js'

/** Earlier tasks handed to an executor when it does not say how many. */
export const DEFAULT_CONTEXT_TASKS = 20
/** The most earlier tasks one call returns. */
export const MAX_CONTEXT_TASKS = 100
/** Pages of the store read at most: the context's newest 500 tasks are looked through, so the cost stays bounded. */
export const MAX_CONTEXT_PAGES = 5

/**
 * The tasks of `record`'s contextId and owner created before it, oldest first: at most `limit` of the newest,
 * `limit` clamped to 1..MAX_CONTEXT_TASKS. An executor that keeps a conversation per context reads it from these
 * (ExecutionContext.contextHistory). Another owner's tasks in the same context are never included (CONTRACT.md §9,
 * tenancy). Tasks created after `record` (it may be an old task resumed) are skipped, within the bounded look.
 */
export async function contextHistory (store: TaskStore, record: StoredTask, limit = DEFAULT_CONTEXT_TASKS): Promise<Task[]> {
  const size = Math.min(MAX_CONTEXT_TASKS, Math.max(1, Math.trunc(limit)))
  const found: Task[] = []
  let pageToken: string | undefined
  for (let page = 0; page < MAX_CONTEXT_PAGES && found.length < size; page++) {
    // Newest first.
    const { tasks, nextPageToken } = await store.list({
      owner: record.owner, contextId: record.task.contextId, pageSize: MAX_CONTEXT_TASKS, pageToken
    })
    for (const other of tasks) {
      if (found.length < size && other.task.id !== record.task.id && other.createdAt <= record.createdAt) found.push(other.task)
    }
    if (nextPageToken === '') break
    pageToken = nextPageToken
  }
  return found.reverse()
}
