// The PostgreSQL schema, as numbered migrations (docs/stores.md, "PostgreSQL"). Each is applied once, in its own
// transaction, and recorded in a2a_schema_migrations. A migration is never edited once released: a change is a new
// one. Names and columns are the store contract's (services/tasks/store.ts); the record itself is kept as the JSON
// text it was written as (`text`, not `jsonb`, which reorders keys).

import { DELIVERY_TRACES, DURABLE_DELIVERY, PUSH_CONFIGS } from './sql-push.js'
import { INSTANCES, ONE_CALL_INSERTS, SEND_CLAIMS, TASK_LEASES, TASKS } from './sql-tasks.js'

export interface Migration {
  readonly version: number
  readonly name: string
  readonly sql: string
}

export const MIGRATIONS: readonly Migration[] = [
  { version: 1, name: 'tasks', sql: TASKS },
  { version: 2, name: 'push configs', sql: PUSH_CONFIGS },
  { version: 3, name: 'task leases', sql: TASK_LEASES },
  { version: 4, name: 'instances on postgres', sql: INSTANCES },
  { version: 5, name: 'durable webhook delivery', sql: DURABLE_DELIVERY },
  { version: 6, name: 'one-call inserts', sql: ONE_CALL_INSERTS },
  { version: 7, name: 'delivery traces', sql: DELIVERY_TRACES },
  { version: 8, name: 'send claims', sql: SEND_CLAIMS }
]

/** The schema version this code is written for: the last migration's. */
export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1].version
