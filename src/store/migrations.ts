/**
 * Schema migrations, applied in order, each once, under an advisory lock so that an API and a
 * worker starting together against one PostgreSQL do not race. Never edit a shipped migration:
 * append a new one.
 */
import type { Db } from './queryable';
import { backfillSecretOrigins } from './secret-origins';

export const MIGRATIONS: readonly string[] = [
  // 1: service secrets, API clients
  `
  CREATE TABLE service_secrets (
    name text PRIMARY KEY,
    value text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
  );
  CREATE TABLE api_clients (
    id text PRIMARY KEY,
    client_id text NOT NULL UNIQUE,
    secret_hash text NOT NULL,
    display_name text NOT NULL DEFAULT '',
    roles jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
  );
  `,
  // 2: apps, users, entitlements, ownership
  `
  CREATE TABLE apps (
    id text PRIMARY KEY,
    display_name text NOT NULL,
    description text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
  );
  CREATE TABLE users (
    id text PRIMARY KEY,
    display_name text NOT NULL,
    email text NOT NULL DEFAULT '',
    type text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
  );
  CREATE TABLE app_entitlements (
    id text PRIMARY KEY,
    app_id text NOT NULL REFERENCES apps(id),
    alias text NOT NULL DEFAULT '',
    display_name text NOT NULL DEFAULT '',
    description text NOT NULL DEFAULT '',
    slug text NOT NULL DEFAULT '',
    record jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    deleted_at timestamptz
  );
  CREATE INDEX app_entitlements_app_live ON app_entitlements (app_id, id) WHERE deleted_at IS NULL;
  CREATE INDEX app_entitlements_alias_live ON app_entitlements (alias, id) WHERE deleted_at IS NULL AND alias <> '';
  CREATE INDEX app_entitlements_live ON app_entitlements (id) WHERE deleted_at IS NULL;
  CREATE TABLE entitlement_owners (
    user_id text NOT NULL REFERENCES users(id),
    role_slug text NOT NULL,
    app_id text NOT NULL,
    entitlement_id text NOT NULL REFERENCES app_entitlements(id),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, role_slug, app_id, entitlement_id)
  );
  CREATE INDEX entitlement_owners_entitlement ON entitlement_owners (entitlement_id);
  `,
  // 3: automations
  `
  CREATE TABLE automations (
    id text PRIMARY KEY,
    display_name text NOT NULL,
    description text NOT NULL DEFAULT '',
    published boolean NOT NULL DEFAULT false,
    version integer NOT NULL DEFAULT 1,
    trigger jsonb NOT NULL,
    steps jsonb NOT NULL,
    listener_id text NOT NULL UNIQUE,
    signing_secret text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
  );
  `,
  // 4: audit trail of ownership and automation changes
  `
  CREATE TABLE audit_events (
    id text PRIMARY KEY,
    at timestamptz NOT NULL DEFAULT now(),
    actor text NOT NULL,
    action text NOT NULL,
    resource_type text NOT NULL,
    resource_id text NOT NULL,
    details jsonb NOT NULL DEFAULT '{}'::jsonb
  );
  CREATE INDEX audit_events_resource ON audit_events (resource_type, resource_id, id);
  `,
  // 5: published versions of automations (what the receiver runs); existing published ones backfilled
  `
  CREATE TABLE automation_versions (
    automation_id text NOT NULL REFERENCES automations(id) ON DELETE CASCADE,
    version integer NOT NULL,
    snapshot jsonb NOT NULL,
    published_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (automation_id, version)
  );
  INSERT INTO automation_versions (automation_id, version, snapshot, published_at)
    SELECT id, version, jsonb_build_object('displayName', display_name, 'steps', steps), updated_at
    FROM automations WHERE published;
  `,
  // 6: every change to an automation or its published versions NOTIFYs its listener id, so that
  // each process's listener cache (src/delivery/listener-cache.ts) drops the entry at once
  `
  CREATE OR REPLACE FUNCTION notify_listener_changed() RETURNS trigger LANGUAGE plpgsql AS $$
  DECLARE
    lid text;
  BEGIN
    IF TG_TABLE_NAME = 'automations' THEN
      IF TG_OP <> 'INSERT' THEN PERFORM pg_notify('listener_changed', OLD.listener_id); END IF;
      IF TG_OP <> 'DELETE' THEN PERFORM pg_notify('listener_changed', NEW.listener_id); END IF;
    ELSE
      SELECT listener_id INTO lid FROM automations
        WHERE id = (CASE WHEN TG_OP = 'DELETE' THEN OLD.automation_id ELSE NEW.automation_id END);
      IF lid IS NOT NULL THEN PERFORM pg_notify('listener_changed', lid); END IF;
    END IF;
    RETURN NULL;
  END $$;
  CREATE TRIGGER automations_listener_changed AFTER INSERT OR UPDATE OR DELETE ON automations
    FOR EACH ROW EXECUTE FUNCTION notify_listener_changed();
  CREATE TRIGGER automation_versions_listener_changed AFTER INSERT OR UPDATE OR DELETE ON automation_versions
    FOR EACH ROW EXECUTE FUNCTION notify_listener_changed();
  `,
  // 7: trigram indexes for the entitlement search "query" filter (substring ILIKE) where the
  // pg_trgm extension is available (PostgreSQL with contrib; kept in public, whatever the
  // search_path); elsewhere (PGlite) the filter scans
  `
  DO $$
  BEGIN
    CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public;
  EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'pg_trgm is not available: entitlement search by query scans the table';
  END $$;
  DO $$
  DECLARE
    ext_schema text;
    col text;
  BEGIN
    SELECT n.nspname INTO ext_schema FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm';
    IF ext_schema IS NOT NULL THEN
      FOREACH col IN ARRAY ARRAY['display_name', 'slug', 'description'] LOOP
        EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON app_entitlements USING gin (%I %I.gin_trgm_ops)', 'app_entitlements_' || col || '_trgm', col, ext_schema);
      END LOOP;
    END IF;
  END $$;
  `,
  // 8: signing-secret rotation with a grace period: the previous secret (sealed) and when it stops verifying
  `
  ALTER TABLE automations ADD COLUMN previous_signing_secret text;
  ALTER TABLE automations ADD COLUMN previous_secret_expires_at timestamptz;
  `,
  // 9: the webhook delivery log (7 days): detail rows, and per-minute counts of deliveries not kept in detail
  `
  CREATE TABLE webhook_deliveries (
    id text PRIMARY KEY,
    automation_id text NOT NULL,
    received_at timestamptz NOT NULL,
    status integer NOT NULL,
    reason text NOT NULL,
    event_id text,
    source_address text NOT NULL,
    execution_id text,
    latency_ms double precision NOT NULL
  );
  CREATE INDEX webhook_deliveries_by_automation ON webhook_deliveries (automation_id, id DESC);
  CREATE INDEX webhook_deliveries_by_time ON webhook_deliveries (received_at);
  CREATE TABLE webhook_delivery_counts (
    automation_id text NOT NULL,
    minute timestamptz NOT NULL,
    status integer NOT NULL,
    reason text NOT NULL,
    count bigint NOT NULL,
    PRIMARY KEY (automation_id, minute, status, reason)
  );
  CREATE INDEX webhook_delivery_counts_by_time ON webhook_delivery_counts (minute);
  `,
  // outbound credentials: named secrets read by callWebhook header values (`secrets.<name>`), sealed
  `
  CREATE TABLE outbound_secrets (
    name text PRIMARY KEY,
    sealed_value text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
  );
  `,
  // entitlement search: one trigram index over the three searched columns (joined by U+001F, which
  // no query contains when this index serves it) instead of one per column: a substring search
  // scans one index, not three. PostgreSQL with pg_trgm only, like migration 7.
  `
  DO $$
  DECLARE
    ext_schema text;
  BEGIN
    SELECT n.nspname INTO ext_schema FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm';
    IF ext_schema IS NOT NULL THEN
      EXECUTE format('CREATE INDEX IF NOT EXISTS app_entitlements_search_trgm ON app_entitlements USING gin ((display_name || E''\\x1f'' || slug || E''\\x1f'' || description) %I.gin_trgm_ops)', ext_schema);
      DROP INDEX IF EXISTS app_entitlements_display_name_trgm;
      DROP INDEX IF EXISTS app_entitlements_slug_trgm;
      DROP INDEX IF EXISTS app_entitlements_description_trgm;
    END IF;
  END $$;
  `,
  // entitlement search: ANALYZE keeps how often each trigram of the searched text occurs (most
  // common trigrams, fraction of rows), so a search leaves the trigrams found in nearly every row
  // out of the index condition (src/store/search-trigrams.ts). PostgreSQL ≥ 14 with pg_trgm only.
  `
  DO $$
  DECLARE
    ext_schema text;
  BEGIN
    SELECT n.nspname INTO ext_schema FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm';
    IF ext_schema IS NOT NULL AND current_setting('server_version_num')::int >= 140000 THEN
      EXECUTE format('CREATE STATISTICS IF NOT EXISTS app_entitlements_search_trgm_stats ON (%I.show_trgm(display_name || E''\\x1f'' || slug || E''\\x1f'' || description)) FROM app_entitlements', ext_schema);
      -- Now, not when autovacuum next analyses the table (after 10% of it has changed).
      ANALYZE app_entitlements;
    END IF;
  END $$;
  `,
  // 13: the bootstrap client made once: the BOOTSTRAP_CLIENT_ID clients ever made here, so that one
  // deleted through the API is not made again at the next start. Existing bootstrap clients are recorded.
  `
  CREATE TABLE bootstrap_clients (
    client_id text PRIMARY KEY,
    created_at timestamptz NOT NULL DEFAULT now()
  );
  INSERT INTO bootstrap_clients (client_id) SELECT client_id FROM api_clients WHERE display_name = 'bootstrap';
  `,
  // 14: outbound calls signed the Standard Webhooks way: a secret's rotation keeps the previous value
  // (sealed) until its grace period ends, and signed calls carry both signatures meanwhile
  `
  ALTER TABLE outbound_secrets ADD COLUMN previous_sealed_value text;
  ALTER TABLE outbound_secrets ADD COLUMN previous_expires_at timestamptz;
  `,
  // 15: pg_trgm in the embedded store. PGlite now opens with the pg_trgm contrib
  // extension, so a new store gets the search index and statistics from the migrations above; a
  // store migrated before (the extension was missing then) gets them here. A no-op where they
  // exist, and where pg_trgm is still not available.
  `
  DO $$
  BEGIN
    CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public;
  EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'pg_trgm is not available: entitlement search by query scans the table';
  END $$;
  DO $$
  DECLARE
    ext_schema text;
  BEGIN
    SELECT n.nspname INTO ext_schema FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm';
    IF ext_schema IS NOT NULL AND to_regclass('app_entitlements_search_trgm') IS NULL THEN
      EXECUTE format('CREATE INDEX app_entitlements_search_trgm ON app_entitlements USING gin ((display_name || E''\\x1f'' || slug || E''\\x1f'' || description) %I.gin_trgm_ops)', ext_schema);
      IF current_setting('server_version_num')::int >= 140000 THEN
        EXECUTE format('CREATE STATISTICS IF NOT EXISTS app_entitlements_search_trgm_stats ON (%I.show_trgm(display_name || E''\\x1f'' || slug || E''\\x1f'' || description)) FROM app_entitlements', ext_schema);
      END IF;
      ANALYZE app_entitlements;
    END IF;
  END $$;
  `,
  // 16: secret origins: where each named outbound secret may be sent. NULL only for rows from
  // before this migration; migrate() then fills them from the automations that read them
  // (src/store/secret-origins.ts, backfillSecretOrigins) in the same transaction.
  `
  ALTER TABLE outbound_secrets ADD COLUMN allowed_origins jsonb;
  `,
  // 17: sealed values bound to their row: whether the sealing migration (src/store/sealing.ts,
  // run in code at start-up: it needs SECRET_KEY) has sealed again what earlier versions stored. A
  // store with nothing sealed yet needs none.
  `
  CREATE TABLE secret_sealing (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    context_bound_at timestamptz
  );
  INSERT INTO secret_sealing (context_bound_at)
    SELECT CASE WHEN EXISTS (SELECT 1 FROM service_secrets) OR EXISTS (SELECT 1 FROM outbound_secrets)
      OR EXISTS (SELECT 1 FROM automations WHERE signing_secret IS NOT NULL OR previous_signing_secret IS NOT NULL)
      THEN NULL ELSE now() END;
  `,
  // 18: flow control between runs: an automation's filter, concurrency and rateLimit (also
  // in each version's snapshot); the ids of filtered events, so that a repeat answers 409; the
  // rate limits' state, one row per (automation, key) holding its GCRA theoretical arrival time.
  `
  ALTER TABLE automations ADD COLUMN flow jsonb NOT NULL DEFAULT '{}'::jsonb;
  CREATE TABLE filtered_events (
    listener_id text NOT NULL,
    event_id text NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (listener_id, event_id)
  );
  CREATE INDEX filtered_events_received ON filtered_events (received_at);
  CREATE TABLE rate_limits (
    automation_id text NOT NULL,
    key_hash text NOT NULL,
    tat_ms bigint NOT NULL,
    PRIMARY KEY (automation_id, key_hash)
  );
  `,
  // 19: the token endpoint's limits, shared by every API process: the per-source rate limit (GCRA,
  // one row per source: an IPv4 address or an IPv6 /64) and the failure backoff of a client id
  // from one source.
  `
  CREATE TABLE token_source_limits (
    source text PRIMARY KEY,
    tat_ms bigint NOT NULL
  );
  CREATE TABLE token_failures (
    client_id text NOT NULL,
    source text NOT NULL,
    failures integer NOT NULL,
    last_failure_ms bigint NOT NULL,
    blocked_until_ms bigint NOT NULL,
    PRIMARY KEY (client_id, source)
  );
  `,
  // 20: the console: people's sessions (only the hash of the cookie's id is kept), OIDC sign-ins
  // under way (state, nonce and PKCE verifier, one use each), the revision an
  // automation's ETag names (every write to it advances it), and the audit trail read newest first
  // by actor or action.
  `
  CREATE TABLE console_sessions (
    id_hash text PRIMARY KEY,
    csrf_token text NOT NULL,
    actor text NOT NULL,
    person jsonb NOT NULL,
    roles jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    last_seen_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL
  );
  CREATE INDEX console_sessions_expires ON console_sessions (expires_at);
  CREATE INDEX console_sessions_actor ON console_sessions (actor);
  CREATE TABLE console_logins (
    state_hash text PRIMARY KEY,
    browser_hash text NOT NULL,
    nonce text NOT NULL,
    code_verifier text NOT NULL,
    return_to text NOT NULL DEFAULT '/console',
    expires_at timestamptz NOT NULL
  );
  CREATE INDEX console_logins_expires ON console_logins (expires_at);
  ALTER TABLE automations ADD COLUMN revision bigint NOT NULL DEFAULT 1;
  CREATE INDEX audit_events_actor ON audit_events (actor, id);
  CREATE INDEX audit_events_action ON audit_events (action, id);
  `,
  // 21: the circuit breaker: live flow options of an automation (not versioned: the circuit
  // breaker's setting, under its name); the breaker's state, one row per
  // automation (the runs counted in the window, when it tripped); and its runs, one row per run it
  // counted or paused, in acceptance order (seq). breaker_take decides one delivery in one
  // statement: it locks the automation's state row, drops the counted runs that left the window
  // (each row is dropped once: amortised constant cost) and counts or pauses the run, keyed by its
  // id so that a repeat of the same start gets the same answer and counts nothing.
  `
  ALTER TABLE automations ADD COLUMN live_flow jsonb NOT NULL DEFAULT '{}'::jsonb;
  CREATE TABLE breaker_state (
    automation_id text PRIMARY KEY,
    runs_in_period integer NOT NULL DEFAULT 0,
    tripped_at timestamptz
  );
  CREATE TABLE breaker_runs (
    automation_id text NOT NULL,
    run_id text NOT NULL,
    seq bigint GENERATED ALWAYS AS IDENTITY,
    at_ms bigint NOT NULL,
    status text NOT NULL,
    PRIMARY KEY (automation_id, run_id)
  );
  CREATE INDEX breaker_runs_window ON breaker_runs (automation_id, status, at_ms);
  CREATE INDEX breaker_runs_order ON breaker_runs (automation_id, status, seq);
  CREATE FUNCTION breaker_take(p_automation text, p_run text, p_max integer, p_period_ms bigint)
    RETURNS TABLE (decision text, inserted boolean, tripped timestamptz) LANGUAGE plpgsql AS $$
  DECLARE
    now_ms bigint := (extract(epoch FROM clock_timestamp()) * 1000)::bigint;
    counted integer;
    open_since timestamptz;
    recorded text;
    expired integer;
  BEGIN
    INSERT INTO breaker_state AS s (automation_id) VALUES (p_automation)
      ON CONFLICT (automation_id) DO UPDATE SET runs_in_period = s.runs_in_period
      RETURNING s.runs_in_period, s.tripped_at INTO counted, open_since;
    SELECT r.status INTO recorded FROM breaker_runs r WHERE r.automation_id = p_automation AND r.run_id = p_run;
    IF FOUND THEN
      RETURN QUERY SELECT recorded, false, open_since;
      RETURN;
    END IF;
    DELETE FROM breaker_runs r WHERE r.automation_id = p_automation AND r.status = 'counted' AND r.at_ms <= now_ms - p_period_ms;
    GET DIAGNOSTICS expired = ROW_COUNT;
    counted := greatest(0, counted - expired);
    IF open_since IS NULL AND counted < p_max THEN
      INSERT INTO breaker_runs (automation_id, run_id, at_ms, status) VALUES (p_automation, p_run, now_ms, 'counted');
      UPDATE breaker_state SET runs_in_period = counted + 1 WHERE automation_id = p_automation;
      RETURN QUERY SELECT 'counted'::text, true, NULL::timestamptz;
    ELSE
      open_since := coalesce(open_since, clock_timestamp());
      INSERT INTO breaker_runs (automation_id, run_id, at_ms, status) VALUES (p_automation, p_run, now_ms, 'paused');
      UPDATE breaker_state SET runs_in_period = counted, tripped_at = open_since WHERE automation_id = p_automation;
      RETURN QUERY SELECT 'paused'::text, true, open_since;
    END IF;
  END $$;
  CREATE FUNCTION breaker_give_back(p_automation text, p_run text) RETURNS void LANGUAGE plpgsql AS $$
  DECLARE
    was text;
  BEGIN
    PERFORM 1 FROM breaker_state WHERE automation_id = p_automation FOR UPDATE;
    DELETE FROM breaker_runs WHERE automation_id = p_automation AND run_id = p_run RETURNING status INTO was;
    IF was = 'counted' THEN
      UPDATE breaker_state SET runs_in_period = greatest(0, runs_in_period - 1) WHERE automation_id = p_automation;
    END IF;
  END $$;
  `,
  // 22: bulk actions on runs: the action (or a dry run's preview, state PREVIEW) and its matched set,
  // one row per run with that run's outcome once acted on
  `
  CREATE TABLE bulk_actions (
    id text PRIMARY KEY,
    action text,
    automation_id text NOT NULL,
    filter jsonb NOT NULL,
    reason text NOT NULL DEFAULT '',
    actor text NOT NULL,
    state text NOT NULL,
    matched integer NOT NULL,
    where_errors integer NOT NULL DEFAULT 0,
    succeeded integer NOT NULL DEFAULT 0,
    skipped integer NOT NULL DEFAULT 0,
    failed integer NOT NULL DEFAULT 0,
    preview_id text,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz,
    finished_at timestamptz
  );
  CREATE INDEX bulk_actions_listed ON bulk_actions (id) WHERE state <> 'PREVIEW';
  CREATE INDEX bulk_actions_previews ON bulk_actions (expires_at) WHERE state = 'PREVIEW';
  CREATE TABLE bulk_action_runs (
    bulk_action_id text NOT NULL REFERENCES bulk_actions(id) ON DELETE CASCADE,
    seq integer NOT NULL,
    run_id text NOT NULL,
    claimed_at timestamptz,
    outcome text,
    outcome_reason text,
    new_execution_id text,
    acted_at timestamptz,
    PRIMARY KEY (bulk_action_id, seq)
  );
  CREATE INDEX bulk_action_runs_pending ON bulk_action_runs (bulk_action_id, seq) WHERE outcome IS NULL;
  CREATE INDEX bulk_action_runs_run ON bulk_action_runs (run_id, bulk_action_id);
  CREATE INDEX bulk_action_runs_new ON bulk_action_runs (new_execution_id) WHERE new_execution_id IS NOT NULL;
  `,
  // 23: the directory's own events (the transactional outbox): each change of a user or a grant
  // writes its event in the change's transaction; `seq` is the order they are dispatched in.
  `
  CREATE TABLE directory_events (
    seq bigserial PRIMARY KEY,
    id text NOT NULL UNIQUE,
    type text NOT NULL,
    occurred_at timestamptz NOT NULL DEFAULT now(),
    actor text NOT NULL,
    depth integer NOT NULL DEFAULT 1,
    payload jsonb NOT NULL,
    trace_context jsonb,
    dispatched_at timestamptz
  );
  CREATE INDEX directory_events_undispatched ON directory_events (seq) WHERE dispatched_at IS NULL;
  CREATE INDEX directory_events_occurred ON directory_events (occurred_at);
  `,
  // The places of the concurrency lanes' queues (src/store/lane-places.ts): one row per run that
  // holds a place in its key's lane (running or waiting) and one count per lane. lane_take admits
  // or refuses a run in one statement, under the lane's count row lock, so the bound is exact
  // across API processes; lane_free gives places back (a run's end, a reconcile). No index beyond
  // the keys: every read is of one lane (its primary key's prefix), on the delivery path as few
  // writes as can be.
  `
  CREATE TABLE lane_places (
    lane text NOT NULL,
    run_id text NOT NULL,
    taken_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (lane, run_id)
  );
  CREATE TABLE lane_counts (
    lane text PRIMARY KEY,
    taken integer NOT NULL DEFAULT 0,
    checked_at timestamptz
  );
  CREATE FUNCTION lane_take(p_lane text, p_run text, p_cap integer)
    RETURNS TABLE (admitted boolean, inserted boolean) LANGUAGE plpgsql AS $$
  DECLARE
    n integer;
  BEGIN
    INSERT INTO lane_counts AS c (lane) VALUES (p_lane)
      ON CONFLICT (lane) DO UPDATE SET taken = c.taken
      RETURNING c.taken INTO n;
    PERFORM 1 FROM lane_places p WHERE p.lane = p_lane AND p.run_id = p_run;
    IF FOUND THEN
      RETURN QUERY SELECT true, false;
      RETURN;
    END IF;
    IF n >= p_cap THEN
      RETURN QUERY SELECT false, false;
      RETURN;
    END IF;
    INSERT INTO lane_places (lane, run_id) VALUES (p_lane, p_run);
    UPDATE lane_counts SET taken = n + 1 WHERE lane = p_lane;
    RETURN QUERY SELECT true, true;
  END $$;
  CREATE FUNCTION lane_free(p_lane text, p_runs text[]) RETURNS integer LANGUAGE plpgsql AS $$
  DECLARE
    freed integer;
  BEGIN
    PERFORM 1 FROM lane_counts WHERE lane = p_lane FOR UPDATE;
    DELETE FROM lane_places WHERE lane = p_lane AND run_id = ANY(p_runs);
    GET DIAGNOSTICS freed = ROW_COUNT;
    IF freed > 0 THEN
      UPDATE lane_counts SET taken = greatest(0, taken - freed) WHERE lane = p_lane;
    END IF;
    RETURN freed;
  END $$;
  `,
  // grants: a user holding an entitlement, from request to revocation. At most one live grant
  // (PROVISIONING, GRANTED, DEPROVISIONING) per user and entitlement (grants_live); grantCount of
  // an entitlement counts its GRANTED and DEPROVISIONING grants (grants_open).
  `
  CREATE TABLE grants (
    id text PRIMARY KEY,
    user_id text NOT NULL,
    app_id text NOT NULL,
    app_entitlement_id text NOT NULL,
    state text NOT NULL,
    requested_by text NOT NULL,
    justification text NOT NULL DEFAULT '',
    duration_ms bigint,
    created_at timestamptz NOT NULL DEFAULT now(),
    granted_at timestamptz,
    expires_at timestamptz,
    revoked_at timestamptz,
    revoked_by text,
    revoke_reason text,
    error text,
    provisioner_policy jsonb,
    deprovisioner_policy jsonb,
    provisioning jsonb NOT NULL DEFAULT '[]'
  );
  CREATE UNIQUE INDEX grants_live ON grants (user_id, app_entitlement_id)
    WHERE state IN ('PROVISIONING', 'GRANTED', 'DEPROVISIONING');
  CREATE INDEX grants_open ON grants (app_entitlement_id) WHERE state IN ('GRANTED', 'DEPROVISIONING');
  CREATE INDEX grants_user ON grants (user_id, id);
  CREATE INDEX grants_entitlement ON grants (app_entitlement_id, id);
  CREATE INDEX grants_app ON grants (app_id, id);
  `,
  // the event trigger's dispatch: each event keeps the automations that listened to its type when
  // its change committed (with their published versions), so that exactly those run for it.
  `
  ALTER TABLE directory_events ADD COLUMN targets jsonb NOT NULL DEFAULT '[]'::jsonb;
  ALTER TABLE users ADD COLUMN status text NOT NULL DEFAULT 'USER_STATUS_ENABLED';
  `,
  // provisioning webhooks (a grant's `webhook` provisioner calls one) and the single-use callback
  // tokens of their calls (only a hash of each token is kept).
  `
  CREATE TABLE provisioning_webhooks (
    id text PRIMARY KEY,
    display_name text NOT NULL,
    url text NOT NULL,
    signing_secret text,
    created_at timestamptz NOT NULL DEFAULT now()
  );
  CREATE TABLE provisioning_callbacks (
    token_hash text PRIMARY KEY,
    grant_id text NOT NULL,
    phase text NOT NULL,
    step text NOT NULL,
    attempt integer NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    used_at timestamptz,
    status text,
    message text
  );
  CREATE INDEX provisioning_callbacks_grant ON provisioning_callbacks (grant_id);
  `,
  // provisioning tasks: a `manual` member's work for people, one per grant, phase, step path and
  // attempt (a repeat of the activity that opens one finds it).
  `
  CREATE TABLE provisioning_tasks (
    id text PRIMARY KEY,
    grant_id text NOT NULL,
    phase text NOT NULL,
    step text NOT NULL,
    attempt integer NOT NULL,
    instructions text NOT NULL DEFAULT '',
    assignee_user_ids jsonb NOT NULL DEFAULT '[]',
    state text NOT NULL DEFAULT 'OPEN',
    created_at timestamptz NOT NULL DEFAULT now(),
    closed_at timestamptz,
    closed_by text,
    comment text
  );
  CREATE UNIQUE INDEX provisioning_tasks_call ON provisioning_tasks (grant_id, phase, step, attempt);
  CREATE INDEX provisioning_tasks_open ON provisioning_tasks (id) WHERE state = 'OPEN';
  `,
  // schedule actions: one row per automation and scheduled time that started (or judged) its run, so
  // a backfill counts the times that already ran and a read answers the latest `firedAt`.
  `
  CREATE TABLE schedule_actions (
    automation_id text NOT NULL,
    scheduled_at timestamptz NOT NULL,
    kind text NOT NULL,
    fired_at timestamptz NOT NULL,
    execution_id text NOT NULL,
    PRIMARY KEY (automation_id, scheduled_at)
  );
  `,
  // the delivery log lists schedule actions and directory events too: their source, and no HTTP
  // status or source address.
  `
  ALTER TABLE webhook_deliveries ADD COLUMN source text NOT NULL DEFAULT 'webhook';
  ALTER TABLE webhook_deliveries ALTER COLUMN status DROP NOT NULL;
  ALTER TABLE webhook_deliveries ALTER COLUMN source_address DROP NOT NULL;
  `,
  // steps keep the order they were written in (jsonb sorts an object's keys): a waitForApproval
  // step's details are shown in that order. Rows stored before keep the order jsonb gave them.
  `
  ALTER TABLE automations ALTER COLUMN steps TYPE json USING steps::json;
  ALTER TABLE automation_versions ALTER COLUMN snapshot TYPE json USING snapshot::json;
  `,
];

export async function migrate(db: Db): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock(727274)');
    await tx.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    const rows = await tx.query<{ version: number }>('SELECT version FROM schema_migrations');
    const applied = new Set(rows.map((row) => Number(row.version)));
    for (const [index, sql] of MIGRATIONS.entries()) {
      const version = index + 1;
      if (applied.has(version)) continue;
      for (const statement of splitStatements(sql)) await tx.query(statement);
      await tx.query('INSERT INTO schema_migrations (version) VALUES ($1)', [version]);
    }
    // Data migration in code (it parses the automations' CEL): secrets stored before allowedOrigins.
    await backfillSecretOrigins(tx);
  });
}

/**
 * Migrations hold plain DDL, so splitting on `;` at line ends is safe, except inside `$$` bodies
 * (functions, DO blocks), which are kept whole.
 */
function splitStatements(sql: string): string[] {
  const parts = sql.split(/;\s*$/m);
  const statements: string[] = [];
  let pending = '';
  for (const part of parts) {
    pending = pending ? `${pending};${part}` : part;
    if ((pending.match(/\$\$/g)?.length ?? 0) % 2 === 0) {
      statements.push(pending);
      pending = '';
    }
  }
  if (pending) statements.push(pending);
  return statements.map((part) => part.trim()).filter((part) => part.length > 0);
}
