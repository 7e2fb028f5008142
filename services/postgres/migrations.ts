// The PostgreSQL schema, as numbered migrations (docs/stores.md, "PostgreSQL"). Each is applied once, in its own
// transaction, and recorded in a2a_schema_migrations. A migration is never edited once released: a change is a new
// one. Names and columns are the store contract's (services/tasks/store.ts); the record itself is kept as the JSON
// text it was written as (`text`, not `jsonb`, which reorders keys).

export interface Migration {
  readonly version: number
  readonly name: string
  readonly sql: string
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'tasks',
    sql: `
-- One row per task: the record as written, and what listing, expiry, the live cap and the interrupted sweep read.
CREATE TABLE a2a_tasks (
  id text PRIMARY KEY,
  -- Insertion order, without ties: listing is newest first by it, and its page tokens carry it.
  seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
  owner text NOT NULL,
  context_id text NOT NULL,
  state text NOT NULL,
  -- The compare-and-set token: one more on every write.
  version integer NOT NULL,
  -- ms since the epoch, as in the record.
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  -- When a terminal task stops being seen (tasks.ttl after its last write); null while it is unfinished.
  expires_at bigint,
  -- The version of the task's last event, kept or not: a reader that got every event is answered nothing.
  last_event integer NOT NULL DEFAULT 0,
  record text NOT NULL
);
-- A filtered page costs about its size: one index per filter, each in insertion order.
CREATE INDEX a2a_tasks_by_owner ON a2a_tasks (owner, seq);
CREATE INDEX a2a_tasks_by_context ON a2a_tasks (owner, context_id, seq);
CREATE INDEX a2a_tasks_by_state ON a2a_tasks (owner, state, seq);
CREATE INDEX a2a_tasks_expiring ON a2a_tasks (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX a2a_tasks_interrupted ON a2a_tasks (updated_at) WHERE state IN ('input_required', 'auth_required');
-- The live cap counts an owner's unfinished tasks: those not yet expiring.
CREATE INDEX a2a_tasks_live ON a2a_tasks (owner) WHERE expires_at IS NULL;

-- The events kept for streams that resume, each with the version of the event before it.
CREATE TABLE a2a_task_events (
  task_id text NOT NULL REFERENCES a2a_tasks (id) ON DELETE CASCADE,
  version integer NOT NULL,
  prev integer NOT NULL,
  body text NOT NULL,
  PRIMARY KEY (task_id, version)
);
`
  }
]

/** The schema version this code is written for: the last migration's. */
export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1].version
