-- An upload an app queued offline may be sent again: with an Idempotency-Key, the retry gets the
-- upload the first request made (same key, same bytes) or is refused (same key, other bytes).
ALTER TABLE uploads
    ADD COLUMN idempotency_key text CHECK (length(idempotency_key) BETWEEN 1 AND 255),
    ADD COLUMN request_hash text,
    ADD CONSTRAINT uploads_key_hashed CHECK ((idempotency_key IS NULL) = (request_hash IS NULL));
CREATE UNIQUE INDEX uploads_idempotency ON uploads (user_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
