import type { A2AConfig } from '../../schemas/config.js'
import type { PushNotificationConfig } from '../../schemas/push-config.js'
import type { Message, Task, TaskState } from '../../schemas/task.js'
import type { Principal } from '../auth/principal.js'
import { JsonRpcError, RpcCode, contentTypeNotSupported, invalidParams } from '../kernel/errors.js'
import type { MaybePromise } from '../kernel/maybe-promise.js'
import type { PushService } from '../push/service.js'
import type { SendClaim, StoredTask } from '../tasks/store.js'
import type { DuplicateSend, SendDedupe } from '../tasks/dedupe.js'
import type { SendOptions, SettledTask, TaskService } from '../tasks/task-service.js'
import { TaskEventStream, type Resume } from '../tasks/task-stream.js'
import { streamEncoder, type Wire } from './stream-encoders.js'
import { isTerminal } from '../tasks/states.js'
import { keyCount } from '../tasks/task-bytes.js'

// The A2A operations (docs/architecture.md): binding- and version-neutral, over the internal task model. A codec
// decodes a request into their input and encodes what they return; a binding frames it. The rules every version
// shares live here, once: media types, push configs in a message, joining a task, blocking, streams, paging.

/** What sending a message takes, in the internal form. */
export interface SendInput {
  message: Message
  metadata?: Record<string, unknown> | null
  /** A push config sent with the message, stored before the task starts (CONTRACT.md §5). */
  pushConfig?: PushNotificationConfig
  /** The wire version the push config was made in (CONTRACT.md §11.6). */
  pushVersion?: '1.0'
  /** Its params path, for -32602 details. */
  pushField: string
  /** The version's refusal of a push config while push notifications are off (v0.3: -32601, v1.0: -32003). */
  pushOff: () => JsonRpcError
  /** The extensions the request activated (docs/protocol.md, "Extensions"): the executor sees them. */
  extensions?: readonly string[]
}

export interface ListInput {
  contextId?: string
  state?: TaskState
  pageSize: number
  pageToken?: string
  /** Only tasks whose status changed after this time (ms since the epoch). */
  statusAfterMs?: number
  /** Count every match, not only this page's (v1.0 `totalSize`). */
  count?: boolean
}

export interface ListOutput {
  tasks: StoredTask[]
  nextPageToken: string
  /** Every match, when asked for. */
  total?: number
}

export interface OperationDeps {
  config: A2AConfig
  tasks: TaskService
  /** Push notification configs, when push notifications are on. */
  push?: PushService
}

/** One page of a count walks the list this many tasks at a time. */
const COUNT_PAGE = 100

export class A2AOperations {
  readonly tasks: TaskService
  readonly push: PushService | undefined
  readonly #timeoutMs: number
  readonly #checkMediaTypes: (message: Message) => void
  /** The seed dialect's frames carry ids only with `protocol.sse_event_ids`; every other wire's always do. */
  readonly #seedIds: boolean
  /** `tasks.max_parts` and `tasks.max_keys`: what one message may carry. */
  readonly #maxParts: number
  readonly #maxKeys: number

  constructor ({ config, tasks, push }: OperationDeps) {
    this.tasks = tasks
    this.push = push
    this.#timeoutMs = config.server.request_timeout * 1000
    this.#checkMediaTypes = mediaTypeCheck(config.agent.input_modes)
    this.#seedIds = config.protocol.sse_event_ids
    this.#maxParts = config.tasks.max_parts
    this.#maxKeys = config.tasks.max_keys
  }

  /** How a stream of a task is written: in `wire`, its frames with ids or not (docs/architecture.md, "Resumable streams"). */
  #streamOf (id: string, wire: Wire, mode: 'message' | 'resubscribe', local?: boolean): TaskEventStream {
    const ids = wire !== 'default' || this.#seedIds
    const stored = { version: () => this.tasks.storedVersion(id), read: () => this.tasks.stored(id) }
    const encoder = streamEncoder(wire)
    const stream = new TaskEventStream(this.tasks.bus, id, local === true ? { encoder, mode, ids, local, stored } : { encoder, mode, ids, stored })
    // Subscribed: the events from here are kept for a resume (a store that keeps none before a stream follows).
    this.tasks.store.follow?.(id)
    return stream
  }

  /**
   * The checks sending shares across versions, made before any task is touched. With push off a push config is
   * refused by the input's `pushOff` (each version has its own error for it).
   */
  #checkMessage (input: SendInput): void {
    if (input.pushConfig !== undefined) {
      if (this.push === undefined) throw input.pushOff()
      this.push.check(input.pushConfig, input.pushField, input.pushVersion)
    }
    this.#checkMediaTypes(input.message)
    this.#checkSize(input)
  }

  /**
   * `tasks.max_parts` and `tasks.max_keys` (docs/configuration.md): a message's keys cost the heap far more than their text (see
   * services/tasks/task-bytes.ts), and every binding decodes to here, so JSON-RPC, REST and gRPC refuse alike.
   */
  #checkSize ({ message, metadata }: SendInput): void {
    if (message.parts.length > this.#maxParts) {
      throw invalidParams(`params.message.parts: ${message.parts.length} parts, more than tasks.max_parts (${this.#maxParts})`)
    }
    const max = this.#maxKeys
    const keys = keyCount(message, max)
    if (keys > max || keys + keyCount(metadata, max - keys) > max) {
      throw invalidParams(`params.message: more object keys and array items than tasks.max_keys (${max}), all its objects together`)
    }
  }

  /**
   * Sends a message: a new task, or the one its taskId names (joined). Answers once the task has settled (a
   * terminal or interrupted state, or `server.request_timeout`), unless `wait` is false. Not async: over the memory
   * store, with an executor that answers at once, the task is answered at once.
   */
  send (input: SendInput, principal: Principal, wait: boolean): MaybePromise<SettledTask> {
    this.#checkMessage(input)
    const dedupe = this.tasks.dedupe
    if (dedupe === undefined) return this.#settled(this.#route(input, principal), wait)
    // Idempotent sends (docs/protocol.md): the messageId is claimed before the task is made or joined.
    const claimed = dedupe.claim(input.message, principal)
    if (claimed instanceof Promise) return claimed.then(found => this.#sendClaimed(dedupe, found, input, principal, wait))
    return this.#sendClaimed(dedupe, claimed, input, principal, wait)
  }

  /** A send's task, once it has settled unless `wait` is false. */
  #settled (routed: MaybePromise<StoredTask>, wait: boolean): MaybePromise<SettledTask> {
    if (!wait) return routed
    if (routed instanceof Promise) return routed.then(record => this.tasks.waitSettled(record, this.#timeoutMs))
    return this.tasks.waitSettled(routed, this.#timeoutMs)
  }

  /**
   * The first send of a messageId, or a duplicate: the first send's task, as it stands or once it has settled, as the
   * first send's answer was (no second run).
   */
  #sendClaimed (dedupe: SendDedupe, claimed: SendClaim | DuplicateSend, input: SendInput, principal: Principal, wait: boolean): MaybePromise<SettledTask> {
    if (!isDuplicate(claimed)) return this.#settled(dedupe.run(claimed, () => this.#route(input, principal, undefined, claimed.taskId)), wait)
    if (!wait || dedupe.answered(claimed)) return claimed.duplicate
    return this.tasks.waitSettled(claimed.duplicate, this.#timeoutMs)
  }

  /** Sends a message and follows its task: the stream of its events, in `wire`, until it settles. */
  async stream (input: SendInput, principal: Principal, wire: Wire): Promise<TaskEventStream> {
    this.#checkMessage(input)
    const { message } = input
    const dedupe = this.tasks.dedupe
    let route = (joined?: (record: StoredTask) => void): MaybePromise<StoredTask> => this.#route(input, principal, joined)
    if (dedupe !== undefined) {
      const claimed = await dedupe.claim(message, principal)
      if (isDuplicate(claimed)) return await this.#followDuplicate(claimed, input, principal, wire)
      route = joined => dedupe.run(claimed, () => this.#route(input, principal, joined, claimed.taskId))
    }
    if (message.taskId !== undefined) {
      // Subscribed before the message joins: the events of its turn cannot be missed.
      const events = this.#streamOf(message.taskId, wire, 'message')
      try {
        await events.ready
        return events.start(await route())
      } catch (err) {
        events.close()
        throw err
      }
    }
    // The task is stored before the first event is written, and followed before it starts.
    let events: TaskEventStream | undefined
    try {
      await route(record => {
        // Its run is in this process, which writes its events: no subscription in Redis (see TaskService.start).
        events = this.#streamOf(record.task.id, wire, 'message', true).start(record)
      })
    } catch (err) {
      // Followed, then not stored (its first turn ran before the insert, which failed).
      events?.close()
      throw err
    }
    return events as TaskEventStream
  }

  /**
   * The stream a duplicate of a streamed message gets: the first send's task, followed until it settles. A new task's
   * stream is replayed from its first event, as a stream resumed after event 0 is, when its events are kept from the
   * first (the write after its creation, version 2); else, and for a message that continued a task, it starts from the
   * task's snapshot, as a resubscribe does.
   */
  #followDuplicate ({ duplicate }: DuplicateSend, input: SendInput, principal: Principal, wire: Wire): Promise<TaskEventStream> {
    const id = duplicate.task.id
    const fresh = input.message.taskId === undefined
    return this.#follow(id, principal, wire, undefined, async () => {
      if (!fresh || wire === 'default') return undefined
      const kept = await this.tasks.store.eventsAfter(id, 0)
      return kept !== null && kept.length > 0 && kept[0].version === 2 ? { after: 0, kept } : undefined
    })
  }

  /**
   * Follows a task: its snapshot, then live events until it settles. `terminal` is the error for a task that has
   * ended (v1.0 refuses it); without it, such a task gets its snapshot and the stream ends (v0.3), as a task
   * waiting for input does in both. `lastEventId` (a client's `Last-Event-ID`, docs/architecture.md, "Resumable streams") resumes
   * after that event instead: the events it missed, then live ones; a task that has ended since is resumed too,
   * as a resync when its events are no longer kept.
   */
  async subscribe (id: string, principal: Principal, wire: Wire, terminal?: (task: Task) => JsonRpcError, lastEventId?: number): Promise<TaskEventStream> {
    return await this.#follow(id, principal, wire, terminal, async record => {
      if (lastEventId === undefined) return undefined
      if (lastEventId > record.version) {
        throw invalidParams(`lastEventId: ${lastEventId} is not an event of task "${id}" (its last is ${record.version})`)
      }
      return wire === 'default' ? undefined : { after: lastEventId, kept: await this.tasks.store.eventsAfter(id, lastEventId) }
    })
  }

  /** Follows a task from its snapshot, read once subscribed, or from where `resumeAt` says. */
  async #follow (id: string, principal: Principal, wire: Wire, terminal: ((task: Task) => JsonRpcError) | undefined,
    resumeAt: (record: StoredTask) => Promise<Resume | undefined>): Promise<TaskEventStream> {
    const events = this.#streamOf(id, wire, 'resubscribe')
    try {
      await events.ready
      const record = await this.tasks.get(id, principal)
      const resume = await resumeAt(record)
      // A resume whose events are no longer kept (`kept` null) gets the task marked as a resync, then the end, in
      // every version: a client that missed how the task ended learns it (docs/architecture.md, "Resumable streams").
      if (terminal !== undefined && isTerminal(record.task.status.state) && (resume === undefined || resume.kept?.length === 0)) {
        throw terminal(record.task)
      }
      return events.start(record, resume)
    } catch (err) {
      events.close()
      throw err
    }
  }

  get (id: string, principal: Principal): Promise<StoredTask> {
    return this.tasks.get(id, principal)
  }

  cancel (id: string, principal: Principal): Promise<StoredTask> {
    return this.tasks.cancel(id, principal)
  }

  /** The caller's tasks, newest first, a page at a time; with `count`, the number of every match too. */
  async list (input: ListInput, principal: Principal): Promise<ListOutput> {
    const { statusAfterMs } = input
    const where = statusAfterMs === undefined ? undefined : (task: Task) => Date.parse(task.status.timestamp) > statusAfterMs
    const query = { contextId: input.contextId, state: input.state, where }
    const page: ListOutput = await this.tasks.list({ ...query, pageSize: input.pageSize, pageToken: input.pageToken }, principal)
    if (input.count !== true) return page
    // Every match, walked a page at a time (v1.0 `totalSize`).
    let total = 0
    let token: string | undefined
    do {
      const next = await this.tasks.list({ ...query, pageSize: COUNT_PAGE, pageToken: token }, principal)
      total += next.tasks.length
      token = next.nextPageToken
    } while (token !== '')
    page.total = total
    return page
  }

  /**
   * The task a message goes to: a new one, or the one its taskId names (joined). A push config in the request is
   * stored before the executor starts, so the first state change is delivered (CONTRACT.md §5). A new task in a
   * store in this process, with no push config, is made and started at once.
   */
  #route (input: SendInput, principal: Principal, joined?: (record: StoredTask) => void, id?: string): MaybePromise<StoredTask> {
    const { message, pushConfig, pushVersion } = input
    if (message.taskId !== undefined) return this.#join(message.taskId, message, principal, input)
    const attach = pushConfig === undefined ? undefined : (taskId: string) => (this.push as PushService).set(taskId, pushConfig, pushVersion)
    return this.tasks.start(message, principal, input.metadata, attach, joined, id, extensionsOf(input))
  }

  async #join (taskId: string, message: Message, principal: Principal, input: SendInput): Promise<StoredTask> {
    await this.tasks.get(taskId, principal)
    if (input.pushConfig !== undefined) await (this.push as PushService).set(taskId, input.pushConfig, input.pushVersion)
    return this.tasks.join(taskId, message, principal, extensionsOf(input))
  }
}

/** The task service's send options of a send: the extensions its request activated, when it activated any. */
function extensionsOf ({ extensions }: SendInput): SendOptions | undefined {
  return extensions === undefined || extensions.length === 0 ? undefined : { extensions }
}

/** A claim's answer is the first send's task: this send is a duplicate. */
function isDuplicate (claimed: SendClaim | DuplicateSend): claimed is DuplicateSend {
  return 'duplicate' in claimed
}

/** The media type a part is read as: its file's mimeType, JSON for data, plain text for text. */
function mediaTypeOf (part: Message['parts'][number]): string {
  if (part.kind === 'text') return 'text/plain'
  if (part.kind === 'data') return 'application/json'
  return part.file.mimeType ?? 'application/octet-stream'
}

/**
 * The -32005 check: a part whose media type is not among the agent's input modes (`type/*` and `*\/*` are
 * wildcards) is refused. The modes are looked up in a set made once.
 */
function mediaTypeCheck (accepted: readonly string[]): (message: Message) => void {
  const modes = new Set(accepted)
  if (modes.has('*/*')) return () => {}
  return message => {
    for (let i = 0; i < message.parts.length; i++) {
      const type = mediaTypeOf(message.parts[i]).toLowerCase()
      const slash = type.indexOf('/')
      const major = (slash < 0 ? type : type.slice(0, slash)) + '/*'
      if (!modes.has(type) && !modes.has(major)) {
        throw contentTypeNotSupported(`params.message.parts.${i}: media type ${type} is not accepted (${accepted.join(', ')})`)
      }
    }
  }
}

/** CONTRACT.md §4: with push notifications off, a v0.3 message carrying a push config is -32601 and no task is made. */
export function pushNotSupported (): JsonRpcError {
  return new JsonRpcError(RpcCode.methodNotFound, 'Method not found', 'push notifications are not supported')
}

/**
 * The event id a stream resumes after: the `Last-Event-ID` header, else `metadata.lastEventId` of the params (a
 * non-negative integer, or its decimal text). Undefined when neither is given; -32602 naming the field otherwise.
 */
export function resumePoint (header: string | undefined, metadata: Record<string, unknown> | null | undefined, field: string): number | undefined {
  if (header !== undefined) return eventId(header, 'Last-Event-ID')
  const value = metadata?.lastEventId
  return value === undefined ? undefined : eventId(value, `${field}.lastEventId`)
}

function eventId (value: unknown, field: string): number {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return value
  if (typeof value === 'string' && /^\d{1,15}$/.test(value.trim())) return Number(value.trim())
  throw invalidParams(`${field}: must be the id of an event of the task's stream, a non-negative integer`)
}
