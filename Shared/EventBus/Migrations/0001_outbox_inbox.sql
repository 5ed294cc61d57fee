-- The event bus's tables in a service's schema (applied with search_path set to it).

-- Events waiting to be published, written in the same transaction as the state change.
CREATE TABLE outbox (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id     uuid        NOT NULL UNIQUE,
    topic        text        NOT NULL,
    key          text        NOT NULL,
    type         text        NOT NULL,
    source       text        NOT NULL,
    subject      text,
    occurred_at  timestamptz NOT NULL,
    payload      bytea       NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    published_at timestamptz,
    -- Set when Kafka refused the record for good (too large, no such topic): it is skipped.
    failed_at    timestamptz,
    attempts     integer     NOT NULL DEFAULT 0,
    last_error   text
);

-- The relay reads pending rows in id order; published ones drop out of this index.
CREATE INDEX outbox_pending ON outbox (id) WHERE published_at IS NULL AND failed_at IS NULL;
CREATE INDEX outbox_published ON outbox (published_at) WHERE published_at IS NOT NULL;

-- Wake relays as soon as a transaction that wrote events commits.
CREATE FUNCTION outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify(TG_TABLE_SCHEMA || '_outbox', '');
    RETURN NULL;
END;
$$;

CREATE TRIGGER outbox_notify AFTER INSERT ON outbox
    FOR EACH STATEMENT EXECUTE FUNCTION outbox_notify();

-- Events a consumer has already had its effect for, recorded in the effect's transaction.
CREATE TABLE inbox (
    consumer     text        NOT NULL,
    event_id     uuid        NOT NULL,
    type         text        NOT NULL,
    processed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer, event_id)
);

CREATE INDEX inbox_processed_at ON inbox (processed_at);
