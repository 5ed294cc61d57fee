-- Users' uploaded photos and their edits. Both are user-owned: a request runs with app.user_id set
-- to the verified token's user and sees only that user's rows, and so does a render worker working
-- on a user's job.

CREATE FUNCTION request_user_id() RETURNS uuid
    LANGUAGE sql STABLE
    AS $$ SELECT nullif(current_setting('app.user_id', true), '')::uuid $$;

CREATE TABLE uploads (
    id          uuid PRIMARY KEY,
    user_id     uuid NOT NULL,
    blob_key    text NOT NULL UNIQUE,
    format      text NOT NULL CHECK (format IN ('jpeg', 'png', 'webp')),
    width       integer NOT NULL CHECK (width > 0),
    height      integer NOT NULL CHECK (height > 0),
    bytes       bigint NOT NULL CHECK (bytes > 0),
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX uploads_user_idx ON uploads (user_id, created_at DESC);

-- An edit: what to render (source, filters, output) and what came of it. The Idempotency-Key of
-- the request that created it is unique per user, with a hash of the request body, so a retry gets
-- the same edit and a different body under the same key is refused.
CREATE TABLE edits (
    id                uuid PRIMARY KEY,
    user_id           uuid NOT NULL,
    idempotency_key   text NOT NULL CHECK (length(idempotency_key) BETWEEN 1 AND 255),
    request_hash      text NOT NULL,
    source            jsonb NOT NULL,
    filters           jsonb NOT NULL,
    output            jsonb NOT NULL,
    status            text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'rendering', 'completed', 'failed')),
    attempts          integer NOT NULL DEFAULT 0,
    result_key        text,
    width             integer,
    height            integer,
    bytes             bigint,
    quality           integer,
    failure_reason    text,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    finished_at       timestamptz,
    UNIQUE (user_id, idempotency_key)
);
CREATE INDEX edits_user_idx ON edits (user_id, created_at DESC, id DESC);

ALTER TABLE uploads ENABLE ROW LEVEL SECURITY;
ALTER TABLE uploads FORCE ROW LEVEL SECURITY;
CREATE POLICY uploads_owner ON uploads USING (user_id = request_user_id()) WITH CHECK (user_id = request_user_id());

ALTER TABLE edits ENABLE ROW LEVEL SECURITY;
ALTER TABLE edits FORCE ROW LEVEL SECURITY;
CREATE POLICY edits_owner ON edits USING (user_id = request_user_id()) WITH CHECK (user_id = request_user_id());
