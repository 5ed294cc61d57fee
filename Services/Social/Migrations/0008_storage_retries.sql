-- A Storage upload an app queued offline may be sent again: with an Idempotency-Key, the retry of
-- an upload that was stored gets its answer again (same name, same bytes) instead of 409
-- Duplicate, and the same key for another name or other bytes is refused.
ALTER TABLE objects
    ADD COLUMN idempotency_key text CHECK (length(idempotency_key) BETWEEN 1 AND 255),
    ADD COLUMN request_hash text,
    ADD CONSTRAINT objects_key_hashed CHECK ((idempotency_key IS NULL) = (request_hash IS NULL));
CREATE UNIQUE INDEX objects_idempotency ON objects (owner_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
