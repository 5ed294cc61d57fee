-- Writes an app queued offline replay safely: a collection has a version (an update with If-Match
-- of an older one is 412), and a create may carry an Idempotency-Key (a retry gets the
-- collection the first request made).
ALTER TABLE collections
    ADD COLUMN version integer NOT NULL DEFAULT 1,
    ADD COLUMN idempotency_key text CHECK (length(idempotency_key) BETWEEN 1 AND 255),
    ADD COLUMN request_hash text;
CREATE UNIQUE INDEX collections_idempotency ON collections (owner_id, idempotency_key) WHERE idempotency_key IS NOT NULL;

-- A photo added or taken out is a change of the collection too: its version goes up with it, so
-- a collection's version (its ETag) names all of what it shows.
CREATE OR REPLACE FUNCTION sync_touch_collection() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE collections SET sync_xid = pg_current_xact_id(), version = version + 1
    WHERE id = CASE WHEN TG_OP = 'DELETE' THEN OLD.collection_id ELSE NEW.collection_id END;
    RETURN NULL;
END
$$;

-- The triggers name social's tables unqualified: they find them whatever the writer's search_path
-- (a superuser's bulk load, an operator's session), not only the service's.
ALTER FUNCTION count_likes() SET search_path FROM CURRENT;
ALTER FUNCTION sync_forget() SET search_path FROM CURRENT;
ALTER FUNCTION sync_revive() SET search_path FROM CURRENT;
ALTER FUNCTION sync_touch_collection() SET search_path FROM CURRENT;
