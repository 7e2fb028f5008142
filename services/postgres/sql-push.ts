// The SQL of the migrations that make the push configs' and deliveries' tables and functions
// (services/postgres/migrations.ts lists them all, in order). A migration's text is never edited once released.

/** Migration 2: the push configs and their upsert. */
export const PUSH_CONFIGS = `
-- One row per push config: its url (the webhook's address, matched by an id-less put) in the clear, the rest of the
-- config as the JSON text it was written as, or sealed (services/push/sealing.ts) when a key is configured.
CREATE TABLE a2a_push_configs (
  task_id text NOT NULL,
  id text NOT NULL,
  -- Creation order (list), and the order of the last put (latest): one sequence for both.
  created bigint NOT NULL,
  touched bigint NOT NULL,
  url text NOT NULL,
  record text NOT NULL,
  -- Epoch ms past which the task's configs are gone (the put's ttl); null: kept until removed.
  expires_at bigint,
  PRIMARY KEY (task_id, id)
);
CREATE SEQUENCE a2a_push_config_seq;
CREATE INDEX a2a_push_configs_expiring ON a2a_push_configs (expires_at) WHERE expires_at IS NOT NULL;

-- The whole upsert rule of the push config store contract (services/push/store.ts) in one call, under a lock of the
-- task's own, so that concurrent puts on any number of instances never pass the limit. A config past its expiry is
-- gone first. Returns '+<id>' (created), '=<id>' (replaced) or '!' (over p_max; nothing written).
CREATE FUNCTION a2a_put_push_config (p_task text, p_id text, p_url text, p_record text, p_fresh_id text, p_max integer,
  p_expires bigint, p_now bigint) RETURNS text
LANGUAGE plpgsql AS $fn$
DECLARE
  target text;
  n integer;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('a2a_push:' || p_task, 0));
  DELETE FROM a2a_push_configs WHERE task_id = p_task AND expires_at <= p_now;
  IF p_id IS NOT NULL THEN
    SELECT id INTO target FROM a2a_push_configs WHERE task_id = p_task AND id = p_id;
  ELSE
    SELECT id INTO target FROM a2a_push_configs WHERE task_id = p_task AND url = p_url ORDER BY created LIMIT 1;
  END IF;
  IF FOUND THEN
    UPDATE a2a_push_configs SET url = p_url, record = p_record, touched = nextval('a2a_push_config_seq')
      WHERE task_id = p_task AND id = target;
  ELSE
    SELECT count(*) INTO n FROM a2a_push_configs WHERE task_id = p_task;
    IF n >= p_max THEN RETURN '!'; END IF;
    target := coalesce(p_id, CASE WHEN n = 0 THEN 'default' ELSE p_fresh_id END);
    INSERT INTO a2a_push_configs (task_id, id, created, touched, url, record)
      VALUES (p_task, target, nextval('a2a_push_config_seq'), nextval('a2a_push_config_seq'), p_url, p_record);
  END IF;
  IF p_expires IS NOT NULL THEN
    UPDATE a2a_push_configs SET expires_at = p_expires WHERE task_id = p_task;
  END IF;
  -- n is counted only on the way that creates.
  RETURN CASE WHEN n IS NULL THEN '=' ELSE '+' END || target;
END
$fn$;
`

/** Migration 5: the push outbox and the deliveries, and their claims. */
export const DURABLE_DELIVERY = `
-- The push outbox (services/push/postgres-queue.ts): a state change of a task that has push configs, written in the
-- transaction of the change itself. The instance that made it queues its deliveries and deletes the row; a row left
-- behind (that instance died) is claimed after a grace period by another instance's relay.
CREATE TABLE a2a_push_outbox (
  task_id text NOT NULL,
  version integer NOT NULL,
  -- The task record of that version: what the webhooks are told.
  record text NOT NULL,
  -- ms, by the database's clock: when it was written, or last claimed.
  due_at bigint NOT NULL,
  PRIMARY KEY (task_id, version)
);
CREATE INDEX a2a_push_outbox_due ON a2a_push_outbox (due_at);

-- One webhook delivery per (task, version, config): made at least once, by whichever instance claims it, in order
-- per (task, config). A row goes once the delivery has succeeded or failed for good.
CREATE TABLE a2a_push_deliveries (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  task_id text NOT NULL,
  version integer NOT NULL,
  config_id text NOT NULL,
  state text NOT NULL,
  body text NOT NULL,
  -- The same for every attempt: receivers dedupe on it.
  webhook_id text NOT NULL,
  attempts integer NOT NULL DEFAULT 0,
  -- ms, by the database's clock: when the next attempt may be made.
  due_at bigint NOT NULL,
  -- A claimed delivery is its claimer's until then; one whose claimer died is claimed again after.
  locked_until bigint,
  UNIQUE (task_id, version, config_id)
);
CREATE INDEX a2a_push_deliveries_due ON a2a_push_deliveries (due_at);
CREATE INDEX a2a_push_deliveries_pair ON a2a_push_deliveries (task_id, config_id, id);

-- The task write of migration 4, which also records a change of state in the push outbox when p_outbox is set and
-- the task has push configs (unexpired at p_updated). 0: not written (version mismatch), 1: written, 2: written and
-- recorded in the outbox.
CREATE FUNCTION a2a_write_task (p_id text, p_version integer, p_context text, p_state text, p_updated bigint,
  p_expires bigint, p_record text, p_event_body text, p_max_events integer, p_notify text, p_outbox boolean)
  RETURNS integer
LANGUAGE plpgsql AS $fn$
DECLARE
  before text;
BEGIN
  SELECT state INTO before FROM a2a_tasks WHERE id = p_id AND version = p_version - 1 FOR UPDATE;
  IF NOT FOUND OR NOT a2a_replace_task(p_id, p_version, p_context, p_state, p_updated, p_expires, p_record, p_event_body,
    p_max_events, p_notify) THEN
    RETURN 0;
  END IF;
  IF p_outbox AND before <> p_state AND EXISTS (SELECT 1 FROM a2a_push_configs
    WHERE task_id = p_id AND (expires_at IS NULL OR expires_at > p_updated)) THEN
    INSERT INTO a2a_push_outbox (task_id, version, record, due_at) VALUES (p_id, p_version, p_record, a2a_now_ms())
    ON CONFLICT DO NOTHING;
    RETURN 2;
  END IF;
  RETURN 1;
END
$fn$;

-- Outbox rows that waited past p_grace ms (their writer died, or could not queue them), oldest first, each claimed
-- for the next p_grace by pushing its due time to now.
CREATE FUNCTION a2a_claim_outbox (p_grace bigint, p_batch integer) RETURNS TABLE (task_id text, version integer, record text)
LANGUAGE sql AS $fn$
  UPDATE a2a_push_outbox o SET due_at = a2a_now_ms()
  FROM (SELECT task_id, version, due_at FROM a2a_push_outbox WHERE due_at <= a2a_now_ms() - p_grace
    ORDER BY due_at, version LIMIT p_batch FOR UPDATE SKIP LOCKED) AS due
  WHERE o.task_id = due.task_id AND o.version = due.version
  RETURNING o.task_id, o.version, o.record
$fn$;

-- Deliveries due, none of which has an earlier one of its (task, config) still pending, claimed for p_lock ms each
-- (one claimer each), their attempt counted.
CREATE FUNCTION a2a_claim_deliveries (p_batch integer, p_lock bigint)
  RETURNS TABLE (id bigint, task_id text, version integer, config_id text, state text, body text, webhook_id text, attempts integer)
LANGUAGE sql AS $fn$
  UPDATE a2a_push_deliveries d SET locked_until = a2a_now_ms() + p_lock, attempts = d.attempts + 1
  FROM (SELECT c.id FROM a2a_push_deliveries c
    WHERE c.due_at <= a2a_now_ms() AND (c.locked_until IS NULL OR c.locked_until <= a2a_now_ms())
      AND NOT EXISTS (SELECT 1 FROM a2a_push_deliveries p WHERE p.task_id = c.task_id AND p.config_id = c.config_id AND p.id < c.id)
    ORDER BY c.due_at, c.id LIMIT p_batch FOR UPDATE SKIP LOCKED) AS due
  WHERE d.id = due.id
  RETURNING d.id, d.task_id, d.version, d.config_id, d.state, d.body, d.webhook_id, d.attempts
$fn$;
`

/**
 * Migration 7: a delivery keeps the trace context of the change that queued it, so that its attempts' spans join that
 * trace whichever instance makes them. The claim that returns it is a function of its own: instances of the release
 * before still call `a2a_claim_deliveries`, whose result must not change under them.
 */
export const DELIVERY_TRACES = `
ALTER TABLE a2a_push_deliveries ADD COLUMN trace jsonb;

CREATE FUNCTION a2a_claim_traced_deliveries (p_batch integer, p_lock bigint)
  RETURNS TABLE (id bigint, task_id text, version integer, config_id text, state text, body text, webhook_id text,
    attempts integer, trace jsonb)
LANGUAGE sql AS $fn$
  UPDATE a2a_push_deliveries d SET locked_until = a2a_now_ms() + p_lock, attempts = d.attempts + 1
  FROM (SELECT c.id FROM a2a_push_deliveries c
    WHERE c.due_at <= a2a_now_ms() AND (c.locked_until IS NULL OR c.locked_until <= a2a_now_ms())
      AND NOT EXISTS (SELECT 1 FROM a2a_push_deliveries p WHERE p.task_id = c.task_id AND p.config_id = c.config_id AND p.id < c.id)
    ORDER BY c.due_at, c.id LIMIT p_batch FOR UPDATE SKIP LOCKED) AS due
  WHERE d.id = due.id
  RETURNING d.id, d.task_id, d.version, d.config_id, d.state, d.body, d.webhook_id, d.attempts, d.trace
$fn$;
`
