-- What auth mails: a one-time code and link per mail (recovery, magic link, sign-up confirmation),
-- the PKCE flows they start, and the counters that keep them from being guessed or sprayed.
-- Every table is read and written only in an auth flow (app.auth_flow): these flows come before a
-- user is known.

-- A mailed code and its link. Both are stored as hashes: the code's SHA-256 with the address it
-- went to (6 digits alone would be a lookup table), the link token's SHA-256. Single use: the row
-- goes when it is verified, or when a new one of its kind is mailed (/resend), or when it expires.
CREATE TABLE one_time_tokens (
    id                     uuid PRIMARY KEY,
    user_id                uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind                   text NOT NULL CHECK (kind IN ('signup', 'magiclink', 'recovery', 'invite')),
    address                text NOT NULL CHECK (address = lower(address)),
    code_hash              bytea NOT NULL CHECK (length(code_hash) = 32),
    link_hash              bytea NOT NULL UNIQUE CHECK (length(link_hash) = 32),
    code_challenge         text,
    code_challenge_method  text CHECK (code_challenge_method IN ('s256', 'plain')),
    redirect_to            text,
    created_at             timestamptz NOT NULL DEFAULT clock_timestamp(),
    expires_at             timestamptz NOT NULL,
    CHECK ((code_challenge IS NULL) = (code_challenge_method IS NULL))
);
CREATE INDEX one_time_tokens_address ON one_time_tokens (address, kind);
CREATE INDEX one_time_tokens_user ON one_time_tokens (user_id);

-- Wrong codes per address: five within 15 minutes lock the address's codes for 15 minutes.
CREATE TABLE code_failures (
    address       text PRIMARY KEY CHECK (address = lower(address)),
    failures      integer NOT NULL CHECK (failures >= 0),
    first_at      timestamptz NOT NULL,
    locked_until  timestamptz
);

-- The last mail of a kind to an address, whether or not the address has an account (so the
-- one-per-minute limit tells nothing about which addresses do).
CREATE TABLE mail_sends (
    address  text NOT NULL CHECK (address = lower(address)),
    kind     text NOT NULL,
    sent_at  timestamptz NOT NULL,
    PRIMARY KEY (address, kind)
);

-- A PKCE flow: a verified link answers with an auth code, exchanged once, within 5 minutes, with
-- the verifier whose challenge the request carried (POST /token?grant_type=pkce).
CREATE TABLE flow_states (
    auth_code_hash         bytea PRIMARY KEY CHECK (length(auth_code_hash) = 32),
    user_id                uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    code_challenge         text NOT NULL,
    code_challenge_method  text NOT NULL CHECK (code_challenge_method IN ('s256', 'plain')),
    authentication_method  text NOT NULL,
    created_at             timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX flow_states_user ON flow_states (user_id);

ALTER TABLE one_time_tokens ENABLE ROW LEVEL SECURITY;
ALTER TABLE one_time_tokens FORCE ROW LEVEL SECURITY;
CREATE POLICY one_time_tokens_flow ON one_time_tokens USING (in_auth_flow());
ALTER TABLE code_failures ENABLE ROW LEVEL SECURITY;
ALTER TABLE code_failures FORCE ROW LEVEL SECURITY;
CREATE POLICY code_failures_flow ON code_failures USING (in_auth_flow());
ALTER TABLE mail_sends ENABLE ROW LEVEL SECURITY;
ALTER TABLE mail_sends FORCE ROW LEVEL SECURITY;
CREATE POLICY mail_sends_flow ON mail_sends USING (in_auth_flow());
ALTER TABLE flow_states ENABLE ROW LEVEL SECURITY;
ALTER TABLE flow_states FORCE ROW LEVEL SECURITY;
CREATE POLICY flow_states_flow ON flow_states USING (in_auth_flow());
