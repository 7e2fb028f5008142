import { newId } from '../kernel/ids.js'
import { invalidParams } from '../kernel/errors.js'
import type { Logger } from '../kernel/logger.js'
import type { MaybePromise } from '../kernel/maybe-promise.js'
import type { Message } from '../../schemas/task.js'
import type { Principal } from '../auth/principal.js'
import { claimKey, messageHash } from './send-claims.js'
import { isSettled, isTerminal } from './states.js'
import type { SendClaim, StoredTask, TaskStore } from './store.js'

// Idempotent sends, the task service's side (docs/protocol.md, "Idempotent sends"): a send claims its principal's
// messageId in the store before its task is made or its message appended, so before the agent runs; a send that
// finds the claim taken gets the task the first send made, once it is there. The store's side is its `claimSend`.

/** A send whose `messageId` its principal used already within the window: the task the first send made or continued. */
export interface DuplicateSend {
  readonly duplicate: StoredTask
  /** The first send's claim. */
  readonly claim: SendClaim
}

export interface SendDedupeOptions {
  store: TaskStore & Required<Pick<TaskStore, 'claimSend' | 'releaseSend'>>
  /** `tasks.dedupe_window` in ms. */
  windowMs: number
  /**
   * A claim whose task has not come this long after it was taken is taken over by the next send of the message: the
   * first send failed without releasing it, or its instance died. (`tasks.lease_ttl`, as long as a run retries a write.)
   */
  staleMs: number
  now: () => number
  log: Logger
}

/** A duplicate that finds the first send's task not there yet looks again after this long, then twice as long. */
const FIRST_WAIT_MS = 20
const MAX_WAIT_MS = 500

export class SendDedupe {
  readonly #store: SendDedupeOptions['store']
  readonly #windowMs: number
  readonly #staleMs: number
  readonly #now: () => number
  readonly #log: Logger
  /** The first sends handled here and not yet done, by claim key: a duplicate arriving meanwhile waits for it. */
  readonly #pending = new Map<string, Promise<unknown>>()
  readonly #listeners: Array<(duplicate: DuplicateSend) => void> = []

  constructor (opts: SendDedupeOptions) {
    this.#store = opts.store
    this.#windowMs = opts.windowMs
    this.#staleMs = opts.staleMs
    this.#now = opts.now
    this.#log = opts.log
  }

  /** Called with every duplicate found (metrics count them). It must not throw. */
  onDuplicate (listener: (duplicate: DuplicateSend) => void): void {
    this.#listeners.push(listener)
  }

  /**
   * Claims the message's id for its principal: the claim when this send is the first (its task id is the one to make,
   * or the message's taskId), else the task of the first. -32602 when the id was used for another message.
   */
  claim (message: Message, principal: Principal): MaybePromise<SendClaim | DuplicateSend> {
    const claim: SendClaim = {
      owner: principal.id, messageId: message.messageId, taskId: message.taskId ?? newId(), hash: messageHash(message), at: this.#now()
    }
    const held = this.#store.claimSend(claim, this.#windowMs)
    if (held instanceof Promise) return held.then(found => found === null ? claim : this.#follow(claim, found))
    return held === null ? claim : this.#follow(claim, held)
  }

  /**
   * Runs the first send of a claim. A send that fails (refused, store down) releases its claim, so that a retry is a
   * first send again; while it runs, a duplicate here waits for it.
   */
  run (claim: SendClaim, send: () => MaybePromise<StoredTask>): MaybePromise<StoredTask> {
    let sent: MaybePromise<StoredTask>
    try {
      sent = send()
    } catch (err) {
      // A store in this process releases at once: a retry right after finds the key free. (`#release` never rejects.)
      this.#release(claim).catch(() => {})
      throw err
    }
    if (!(sent instanceof Promise)) return sent
    const key = claimKey(claim.owner, claim.messageId)
    this.#pending.set(key, sent)
    sent.then(() => { this.#pending.delete(key) }, async () => {
      this.#pending.delete(key)
      await this.#release(claim)
    })
    return sent
  }

  /**
   * Whether the first send's answer is in `duplicate` already: the task is terminal, or interrupted since the first
   * send's message came (its status is newer than the claim). Otherwise a blocking send waits for it to settle.
   */
  answered ({ duplicate, claim }: DuplicateSend): boolean {
    const status = duplicate.task.status
    return isTerminal(status.state) || (isSettled(status.state) && Date.parse(status.timestamp) >= claim.at)
  }

  /**
   * The task of the claim `held`, once the first send has made it or appended its message to it. Until then this
   * waits: for the first send when it runs here, else looking again now and then. A claim released meanwhile is
   * taken, as is one whose task has not come for `staleMs`: this send is then the first.
   */
  async #follow (claim: SendClaim, held: SendClaim): Promise<SendClaim | DuplicateSend> {
    const key = claimKey(claim.owner, claim.messageId)
    for (let wait = FIRST_WAIT_MS; ; wait = Math.min(2 * wait, MAX_WAIT_MS)) {
      if (held.hash !== claim.hash) {
        throw invalidParams(`params.message.messageId: "${claim.messageId}" was already used for another message`)
      }
      const record = await this.#store.get(held.taskId)
      if (record !== null && holds(record, claim.messageId)) {
        const duplicate = { duplicate: record, claim: held }
        for (const listener of this.#listeners) listener(duplicate)
        return duplicate
      }
      const first = this.#pending.get(key)
      const stale = first === undefined && this.#now() - held.at >= this.#staleMs
      // A first send that fails releases its claim: the claim below is then this send's.
      if (first !== undefined) await first.then(() => {}, () => {})
      else if (!stale) await new Promise(resolve => setTimeout(resolve, wait))
      const mine: SendClaim = { ...claim, at: this.#now() }
      const found = await this.#store.claimSend(mine, this.#windowMs, stale ? held : undefined)
      if (found === null) {
        if (stale) this.#log.warn({ taskId: held.taskId }, 'a send claim whose task never came is taken over')
        return mine
      }
      held = found
    }
  }

  async #release (claim: SendClaim): Promise<void> {
    try {
      await this.#store.releaseSend(claim)
    } catch (err) {
      // Left to lapse: the next send of the message takes it over once it is stale.
      this.#log.warn({ err }, 'send claim not released')
    }
  }
}

/** The task holds the message: the first send stored it, or appended it. */
function holds (record: StoredTask, messageId: string): boolean {
  const history = record.task.history
  for (let i = history.length - 1; i >= 0; i--) if (history[i].messageId === messageId) return true
  return false
}
