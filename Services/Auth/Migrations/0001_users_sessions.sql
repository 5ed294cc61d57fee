-- Users, their identities, sessions and refresh tokens.
--
-- Row-level security: every table is user-owned. A request made for a signed-in user runs with
-- app.user_id set to that user and sees only their rows. The flows that come before a user is
-- known (sign-up, sign-in, refresh) and the public read-outs (recent sign-ups, user count) set
-- app.auth_flow instead; a connection with neither setting sees nothing.

CREATE FUNCTION request_user_id() RETURNS uuid
    LANGUAGE sql STABLE
    AS $$ SELECT nullif(current_setting('app.user_id', true), '')::uuid $$;

CREATE FUNCTION in_auth_flow() RETURNS boolean
    LANGUAGE sql STABLE
    AS $$ SELECT coalesce(current_setting('app.auth_flow', true), '') = 'on' $$;

CREATE TABLE users (
    id                  uuid PRIMARY KEY,
    email               text NOT NULL CHECK (length(email) <= 254),
    encrypted_password  text NOT NULL,
    role                text NOT NULL DEFAULT 'customer'
                        CHECK (role IN ('customer', 'driver', 'restaurant', 'admin')),
    onboarded           boolean NOT NULL DEFAULT false,
    user_metadata       jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(user_metadata) = 'object'),
    email_confirmed_at  timestamptz,
    last_sign_in_at     timestamptz,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX users_email_key ON users (lower(email));
CREATE UNIQUE INDEX users_username_key ON users (lower(user_metadata ->> 'username'));
CREATE INDEX users_created_at_idx ON users (created_at DESC, id DESC);

CREATE TABLE identities (
    id               uuid PRIMARY KEY,
    user_id          uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    provider         text NOT NULL,
    provider_id      text NOT NULL,
    identity_data    jsonb NOT NULL,
    last_sign_in_at  timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    UNIQUE (provider, provider_id)
);
CREATE INDEX identities_user_id_idx ON identities (user_id);

-- A session lives until it is signed out, revoked for a reused refresh token, or idle for longer
-- than the inactivity timeout (refreshed_at).
CREATE TABLE sessions (
    id            uuid PRIMARY KEY,
    user_id       uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at    timestamptz NOT NULL DEFAULT now(),
    refreshed_at  timestamptz NOT NULL DEFAULT now(),
    user_agent    text
);
CREATE INDEX sessions_user_id_idx ON sessions (user_id);

-- Refresh tokens are stored as their SHA-256 only. A spent token keeps, sealed with a key derived
-- from its own value, the tokens it was exchanged for: presenting it again within the reuse
-- interval returns those same tokens, and nobody holding only the database can open them.
CREATE TABLE refresh_tokens (
    token_hash  bytea PRIMARY KEY CHECK (length(token_hash) = 32),
    session_id  uuid NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    user_id     uuid NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    spent_at    timestamptz,
    successor   bytea,
    CHECK ((spent_at IS NULL) = (successor IS NULL))
);
CREATE INDEX refresh_tokens_session_id_idx ON refresh_tokens (session_id);

ALTER TABLE users ENABLE ROW LEVEL SECURITY;
ALTER TABLE users FORCE ROW LEVEL SECURITY;
CREATE POLICY users_owner ON users USING (id = request_user_id() OR in_auth_flow());

ALTER TABLE identities ENABLE ROW LEVEL SECURITY;
ALTER TABLE identities FORCE ROW LEVEL SECURITY;
CREATE POLICY identities_owner ON identities USING (user_id = request_user_id() OR in_auth_flow());

ALTER TABLE sessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE sessions FORCE ROW LEVEL SECURITY;
CREATE POLICY sessions_owner ON sessions USING (user_id = request_user_id() OR in_auth_flow());

ALTER TABLE refresh_tokens ENABLE ROW LEVEL SECURITY;
ALTER TABLE refresh_tokens FORCE ROW LEVEL SECURITY;
CREATE POLICY refresh_tokens_owner ON refresh_tokens USING (user_id = request_user_id() OR in_auth_flow());
