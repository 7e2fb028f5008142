// The SQL of the migrations that make the tasks' tables and functions (services/postgres/migrations.ts lists them all,
// in order). A migration's text is never edited once released: a change is a new migration.

/** Migration 1: the tasks, their kept events, and the functions of their writes. */
export const TASKS = `
-- One row per task: the record as written, and what listing, expiry, the live cap and the interrupted sweep read.
CREATE TABLE a2a_tasks (
  id text PRIMARY KEY,
  -- Insertion order, without ties: listing is newest first by it, and its page tokens carry it.
  seq bigint GENERATED ALWAYS AS IDENTITY,
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
  -- An interrupted task handed out for cancellation is not handed out again before this (ms); a write clears it.
  claimed_until bigint,
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

-- An insert in one round trip: the owner's live cap counted under a lock of the owner's (each statement of a
-- function sees what committed before it, so two inserts cannot both take the last place), then the row and the
-- events of the first turn (the newest max_events of them). 1: inserted; 0: this very record is stored already (a
-- retried insert); 2: the id holds another record; -1: the owner holds max_live unfinished tasks.
CREATE FUNCTION a2a_insert_task (p_id text, p_owner text, p_context text, p_state text, p_version integer,
  p_created bigint, p_updated bigint, p_expires bigint, p_record text, p_max_live integer,
  p_event_versions integer[], p_event_bodies text[], p_max_events integer) RETURNS integer
LANGUAGE plpgsql AS $fn$
DECLARE
  held integer;
  stored text;
BEGIN
  IF p_expires IS NULL AND p_max_live IS NOT NULL THEN
    PERFORM pg_advisory_xact_lock(hashtextextended('a2a:live:' || p_owner, 0));
    SELECT count(*) INTO held FROM a2a_tasks WHERE owner = p_owner AND expires_at IS NULL;
    IF held >= p_max_live THEN
      RETURN -1;
    END IF;
  END IF;
  INSERT INTO a2a_tasks (id, owner, context_id, state, version, created_at, updated_at, expires_at, last_event, record)
  VALUES (p_id, p_owner, p_context, p_state, p_version, p_created, p_updated, p_expires,
    coalesce(p_event_versions[cardinality(p_event_versions)], 0), p_record)
  ON CONFLICT (id) DO NOTHING;
  IF NOT FOUND THEN
    SELECT record INTO stored FROM a2a_tasks WHERE id = p_id;
    RETURN CASE WHEN stored = p_record THEN 0 ELSE 2 END;
  END IF;
  INSERT INTO a2a_task_events (task_id, version, prev, body)
  SELECT p_id, version, prev, body FROM (
    SELECT e.version, coalesce(lag(e.version) OVER (ORDER BY e.ord), 0) AS prev, e.body, e.ord
    FROM unnest(p_event_versions, p_event_bodies) WITH ORDINALITY AS e (version, body, ord)
  ) AS events ORDER BY ord DESC LIMIT greatest(p_max_events, 0);
  RETURN 1;
END
$fn$;

-- Keeps an event of a task after the one before it, and only the task's newest max_events (none when it is 0).
CREATE FUNCTION a2a_add_event (p_id text, p_version integer, p_prev integer, p_body text, p_max_events integer) RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
  IF p_max_events > 0 THEN
    INSERT INTO a2a_task_events (task_id, version, prev, body) VALUES (p_id, p_version, p_prev, p_body);
    DELETE FROM a2a_task_events WHERE task_id = p_id AND version < (
      SELECT version FROM a2a_task_events WHERE task_id = p_id ORDER BY version DESC OFFSET p_max_events - 1 LIMIT 1);
  END IF;
END
$fn$;

-- The compare-and-set write in one round trip: the row moves on only from version p_version - 1, its event (if
-- any) is kept with it, each event naming the one before, and the task's events beyond the newest max_events go.
CREATE FUNCTION a2a_replace_task (p_id text, p_version integer, p_context text, p_state text, p_updated bigint,
  p_expires bigint, p_record text, p_event_body text, p_max_events integer) RETURNS boolean
LANGUAGE plpgsql AS $fn$
DECLARE
  before integer;
BEGIN
  UPDATE a2a_tasks AS t
  SET version = p_version, context_id = p_context, state = p_state, updated_at = p_updated, expires_at = p_expires,
    record = p_record, claimed_until = NULL,
    last_event = CASE WHEN p_event_body IS NULL THEN t.last_event ELSE p_version END
  FROM (SELECT last_event FROM a2a_tasks WHERE id = p_id FOR UPDATE) AS old
  WHERE t.id = p_id AND t.version = p_version - 1
  RETURNING old.last_event INTO before;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  IF p_event_body IS NOT NULL THEN
    PERFORM a2a_add_event(p_id, p_version, before, p_event_body, p_max_events);
  END IF;
  RETURN true;
END
$fn$;

-- An event kept after its write (the task service keeps it so when the store does not take it with the write):
-- only if it is newer than the task's last one, naming that one as the event before it.
CREATE FUNCTION a2a_keep_event (p_id text, p_version integer, p_body text, p_max_events integer) RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
  before integer;
BEGIN
  UPDATE a2a_tasks AS t SET last_event = p_version
  FROM (SELECT last_event FROM a2a_tasks WHERE id = p_id FOR UPDATE) AS old
  WHERE t.id = p_id AND t.last_event < p_version
  RETURNING old.last_event INTO before;
  IF FOUND THEN
    PERFORM a2a_add_event(p_id, p_version, before, p_body, p_max_events);
  END IF;
END
$fn$;
`

/** Migration 3: the leases of instances sharing the database, and their claims. */
export const TASK_LEASES = `
-- Which instance runs which task (services/tasks/postgres-leases.ts): one row per lease, with its expiry by the
-- database's clock (so instances with skewed clocks agree), and when a claim round first found it expired.
CREATE TABLE a2a_task_leases (
  task_id text PRIMARY KEY,
  expires_at bigint NOT NULL,
  doubted_at bigint
);
CREATE INDEX a2a_task_leases_expiry ON a2a_task_leases (expires_at);

-- Now, in epoch ms, by the database's clock.
CREATE FUNCTION a2a_now_ms () RETURNS bigint
LANGUAGE sql VOLATILE AS $fn$ SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint $fn$;

-- Claims expired leases, a batch at a time, skipping those another claimer holds. An expired lease is first doubted:
-- given p_grace more from now (the database takes writes now, so an owner that is alive renews it meanwhile, which
-- clears the doubt). An expired lease doubted within the last two graces is claimed: leased again, p_ttl, for the
-- claimer, so one claimer at a time, and a claim whose task is never settled lapses and is claimed again. With no
-- grace, an expired lease is claimed at once. Returns the claimed task ids.
CREATE FUNCTION a2a_claim_leases (p_batch integer, p_ttl bigint, p_grace bigint) RETURNS SETOF text
LANGUAGE plpgsql AS $fn$
DECLARE
  now_ms bigint := a2a_now_ms();
  lease record;
BEGIN
  FOR lease IN SELECT task_id, doubted_at FROM a2a_task_leases WHERE expires_at <= now_ms
    ORDER BY expires_at LIMIT p_batch FOR UPDATE SKIP LOCKED
  LOOP
    IF p_grace = 0 OR lease.doubted_at > now_ms - 2 * p_grace THEN
      UPDATE a2a_task_leases SET expires_at = now_ms + p_ttl, doubted_at = NULL WHERE task_id = lease.task_id;
      RETURN NEXT lease.task_id;
    ELSE
      UPDATE a2a_task_leases SET expires_at = now_ms + p_grace, doubted_at = now_ms WHERE task_id = lease.task_id;
    END IF;
  END LOOP;
END
$fn$;
`

/** Migration 4: several instances on one database (notices, leases taken and dropped by the writes, what a listener reads). */
export const INSTANCES = `
-- Several instances on one database (services/tasks/postgres-event-bus.ts). The functions of migration 1 stay, for an
-- instance of the release before that still runs while this one migrates; these overloads take one argument more.

-- An insert that also takes the new task's lease (p_lease_ttl ms, by the database's clock) when the task is
-- unfinished: a task is never stored unleased, so an instance that dies right after the insert leaves it to the
-- reaper instead of stranding it. The outcomes are those of the 13-argument insert.
CREATE FUNCTION a2a_insert_task (p_id text, p_owner text, p_context text, p_state text, p_version integer,
  p_created bigint, p_updated bigint, p_expires bigint, p_record text, p_max_live integer,
  p_event_versions integer[], p_event_bodies text[], p_max_events integer, p_lease_ttl bigint) RETURNS integer
LANGUAGE plpgsql AS $fn$
DECLARE
  outcome integer;
BEGIN
  outcome := a2a_insert_task(p_id, p_owner, p_context, p_state, p_version, p_created, p_updated, p_expires, p_record,
    p_max_live, p_event_versions, p_event_bodies, p_max_events);
  IF outcome = 1 AND p_expires IS NULL AND p_lease_ttl IS NOT NULL THEN
    INSERT INTO a2a_task_leases (task_id, expires_at) VALUES (p_id, a2a_now_ms() + p_lease_ttl)
    ON CONFLICT (task_id) DO UPDATE SET expires_at = EXCLUDED.expires_at, doubted_at = NULL;
  END IF;
  RETURN outcome;
END
$fn$;

-- The compare-and-set write of migration 1, which also tells the other instances: p_notify, when given, is sent on
-- the channel a2a_events once the write commits (a few dozen bytes: the listeners read the event rows). The write
-- that makes the task terminal (p_expires set) drops its lease.
CREATE FUNCTION a2a_replace_task (p_id text, p_version integer, p_context text, p_state text, p_updated bigint,
  p_expires bigint, p_record text, p_event_body text, p_max_events integer, p_notify text) RETURNS boolean
LANGUAGE plpgsql AS $fn$
BEGIN
  IF NOT a2a_replace_task(p_id, p_version, p_context, p_state, p_updated, p_expires, p_record, p_event_body, p_max_events) THEN
    RETURN false;
  END IF;
  IF p_expires IS NOT NULL THEN
    DELETE FROM a2a_task_leases WHERE task_id = p_id;
  END IF;
  IF p_notify IS NOT NULL THEN
    PERFORM pg_notify('a2a_events', p_notify);
  END IF;
  RETURN true;
END
$fn$;

-- What a listener reads when told of a task's writes: the task's version and last event, its record on the first row
-- only, and the events kept after p_after, oldest first. No row: the task is not stored, or has expired (p_now).
CREATE FUNCTION a2a_task_since (p_id text, p_after integer, p_now bigint)
  RETURNS TABLE (task_version integer, last_event integer, record text, version integer, prev integer, body text)
LANGUAGE sql STABLE AS $fn$
  SELECT t.version, t.last_event, CASE WHEN row_number() OVER (ORDER BY e.version) = 1 THEN t.record END,
    e.version, e.prev, e.body
  FROM a2a_tasks t LEFT JOIN a2a_task_events e ON e.task_id = t.id AND e.version > p_after
  WHERE t.id = p_id AND (t.expires_at IS NULL OR t.expires_at > p_now)
  ORDER BY e.version
$fn$;
`

/** Migration 6: the insert of migration 4 in one function body. */
export const ONE_CALL_INSERTS = `
-- The insert of migration 4 in one function body (it called the insert of migration 1, a second call per insert), and
-- without the statement that keeps a first turn's events when there are none (a send answered at once has none):
-- an insert is most of what a message/send costs the database.
CREATE OR REPLACE FUNCTION a2a_insert_task (p_id text, p_owner text, p_context text, p_state text, p_version integer,
  p_created bigint, p_updated bigint, p_expires bigint, p_record text, p_max_live integer,
  p_event_versions integer[], p_event_bodies text[], p_max_events integer, p_lease_ttl bigint) RETURNS integer
LANGUAGE plpgsql AS $fn$
DECLARE
  held integer;
  stored text;
BEGIN
  IF p_expires IS NULL AND p_max_live IS NOT NULL THEN
    PERFORM pg_advisory_xact_lock(hashtextextended('a2a:live:' || p_owner, 0));
    SELECT count(*) INTO held FROM a2a_tasks WHERE owner = p_owner AND expires_at IS NULL;
    IF held >= p_max_live THEN
      RETURN -1;
    END IF;
  END IF;
  INSERT INTO a2a_tasks (id, owner, context_id, state, version, created_at, updated_at, expires_at, last_event, record)
  VALUES (p_id, p_owner, p_context, p_state, p_version, p_created, p_updated, p_expires,
    coalesce(p_event_versions[cardinality(p_event_versions)], 0), p_record)
  ON CONFLICT (id) DO NOTHING;
  IF NOT FOUND THEN
    SELECT record INTO stored FROM a2a_tasks WHERE id = p_id;
    RETURN CASE WHEN stored = p_record THEN 0 ELSE 2 END;
  END IF;
  IF cardinality(p_event_versions) > 0 THEN
    INSERT INTO a2a_task_events (task_id, version, prev, body)
    SELECT p_id, version, prev, body FROM (
      SELECT e.version, coalesce(lag(e.version) OVER (ORDER BY e.ord), 0) AS prev, e.body, e.ord
      FROM unnest(p_event_versions, p_event_bodies) WITH ORDINALITY AS e (version, body, ord)
    ) AS events ORDER BY ord DESC LIMIT greatest(p_max_events, 0);
  END IF;
  IF p_expires IS NULL AND p_lease_ttl IS NOT NULL THEN
    INSERT INTO a2a_task_leases (task_id, expires_at) VALUES (p_id, a2a_now_ms() + p_lease_ttl)
    ON CONFLICT (task_id) DO UPDATE SET expires_at = EXCLUDED.expires_at, doubted_at = NULL;
  END IF;
  RETURN 1;
END
$fn$;
`

/**
 * Migration 8: the claims of idempotent sends (docs/protocol.md, "Idempotent sends"), one row per principal and
 * messageId while the window lasts. The primary key makes the first claim win across instances: `a2a_claim_send`
 * inserts the claim, or takes the key over when the claim there has expired or is exactly the one given (`p_over_*`:
 * a claim whose task never came), and otherwise answers the claim that holds it, as `<at> <hash> <taskId>`; NULL when
 * it took the key. Expired rows are deleted with the expired tasks.
 */
export const SEND_CLAIMS = `
CREATE TABLE a2a_send_claims (
  owner text NOT NULL,
  message_id text NOT NULL,
  task_id text NOT NULL,
  hash text NOT NULL,
  -- ms since the epoch: when the claim was taken, and when its window closes.
  claimed_at bigint NOT NULL,
  expires_at bigint NOT NULL,
  PRIMARY KEY (owner, message_id)
);
CREATE INDEX a2a_send_claims_expiring ON a2a_send_claims (expires_at);

CREATE FUNCTION a2a_claim_send (p_owner text, p_message text, p_task text, p_hash text, p_at bigint, p_now bigint,
  p_window bigint, p_over_task text, p_over_hash text, p_over_at bigint) RETURNS text
LANGUAGE plpgsql AS $fn$
DECLARE
  held text;
BEGIN
  LOOP
    INSERT INTO a2a_send_claims AS c (owner, message_id, task_id, hash, claimed_at, expires_at)
    VALUES (p_owner, p_message, p_task, p_hash, p_at, p_now + p_window)
    ON CONFLICT (owner, message_id) DO UPDATE SET task_id = EXCLUDED.task_id, hash = EXCLUDED.hash,
      claimed_at = EXCLUDED.claimed_at, expires_at = EXCLUDED.expires_at
    WHERE c.expires_at <= p_now OR (c.task_id = p_over_task AND c.hash = p_over_hash AND c.claimed_at = p_over_at);
    IF FOUND THEN
      RETURN NULL;
    END IF;
    -- A statement of its own, which sees the claim that won (it committed before the insert above returned).
    SELECT claimed_at || ' ' || hash || ' ' || task_id INTO held FROM a2a_send_claims
    WHERE owner = p_owner AND message_id = p_message;
    -- Deleted in between (expired): claim again.
    IF held IS NOT NULL THEN
      RETURN held;
    END IF;
  END LOOP;
END
$fn$;
`
