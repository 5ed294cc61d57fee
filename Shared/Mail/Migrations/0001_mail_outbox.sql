-- The mail a service sends, written in the transaction of what it tells (a mail exists if and
-- only if that committed) and delivered by the mail relay, at least once, retried with backoff.
-- A delivered mail's bodies are cleared (they may carry a code); the local stack's catcher keeps
-- them, to show on the console.
CREATE TABLE mail_outbox (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    mail_id          uuid NOT NULL UNIQUE,
    kind             text NOT NULL,
    to_address       text,
    to_user          uuid,
    subject          text NOT NULL,
    text_body        text,
    html_body        text,
    status           text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sending', 'sent', 'caught', 'failed')),
    attempts         integer NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    lease_until      timestamptz,
    error            text,
    created_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    finished_at      timestamptz,
    CHECK (to_address IS NOT NULL OR to_user IS NOT NULL)
);
CREATE INDEX mail_outbox_due ON mail_outbox (next_attempt_at) WHERE status IN ('pending', 'sending');
CREATE INDEX mail_outbox_caught ON mail_outbox (to_address, created_at DESC) WHERE status = 'caught';
