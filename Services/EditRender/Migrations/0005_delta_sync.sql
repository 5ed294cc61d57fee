-- Offline sync of a user's edits (Shared/ResourceAPI's DeltaSync): an edit keeps the transaction
-- that last wrote it (made, rendered, failed), a deleted one leaves a tombstone; a token is the
-- snapshot an answer was read in. No lock numbers the changes.
CREATE FUNCTION sync_touch() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.sync_xid := pg_current_xact_id();
    RETURN NEW;
END
$$;

ALTER TABLE edits ADD COLUMN sync_xid xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX edits_sync ON edits (user_id, sync_xid, id);
CREATE TRIGGER edits_sync_touch BEFORE UPDATE ON edits FOR EACH ROW EXECUTE FUNCTION sync_touch();

-- A deleted edit, for its owner's next sync; kept 30 days.
CREATE TABLE edit_tombstones (
    user_id     uuid NOT NULL,
    edit_id     uuid NOT NULL,
    sync_xid    xid8 NOT NULL DEFAULT pg_current_xact_id(),
    deleted_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, edit_id)
);
CREATE INDEX edit_tombstones_sync ON edit_tombstones (user_id, sync_xid);
CREATE INDEX edit_tombstones_age ON edit_tombstones (deleted_at);
ALTER TABLE edit_tombstones ENABLE ROW LEVEL SECURITY;
ALTER TABLE edit_tombstones FORCE ROW LEVEL SECURITY;
CREATE POLICY edit_tombstones_owner ON edit_tombstones
    USING (user_id = request_user_id() OR acting_as_service()) WITH CHECK (user_id = request_user_id() OR acting_as_service());

-- Its table named unqualified, found whatever the writer's search_path.
CREATE FUNCTION edits_sync_forget() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO edit_tombstones (user_id, edit_id) VALUES (OLD.user_id, OLD.id) ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;
CREATE TRIGGER edits_sync_forget AFTER DELETE ON edits FOR EACH ROW EXECUTE FUNCTION edits_sync_forget();
