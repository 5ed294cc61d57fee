-- Offline sync of the lists the apps keep (likes, collections, a user's own posts): each row
-- keeps the transaction that last wrote it, each deletion a tombstone, and an answer's token is
-- the snapshot it was read in (Shared/ResourceAPI's DeltaSync). No lock numbers the changes, so
-- no write waits for another user's.
CREATE FUNCTION sync_touch() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.sync_xid := pg_current_xact_id();
    RETURN NEW;
END
$$;

-- What left each list: its owner's, by the key the list's items are known by; kept 30 days.
CREATE TABLE sync_tombstones (
    owner_id    uuid NOT NULL,
    list        text NOT NULL,
    key         text NOT NULL,
    sync_xid    xid8 NOT NULL DEFAULT pg_current_xact_id(),
    deleted_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (owner_id, list, key)
);
CREATE INDEX sync_tombstones_age ON sync_tombstones (deleted_at);
ALTER TABLE sync_tombstones ENABLE ROW LEVEL SECURITY;
ALTER TABLE sync_tombstones FORCE ROW LEVEL SECURITY;
-- Read and removed by their owner (and the service); made by the deletions' triggers, whoever
-- deletes (a post's deletion removes others' likes of it, so theirs are made too).
CREATE POLICY sync_tombstones_owner ON sync_tombstones USING (owner_id = request_user_id() OR acting_as_service());
CREATE POLICY sync_tombstones_made ON sync_tombstones FOR INSERT WITH CHECK (true);

-- sync_forget(list, owner column, key column): a deleted row's tombstone.
CREATE FUNCTION sync_forget() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    gone jsonb := to_jsonb(OLD);
BEGIN
    INSERT INTO sync_tombstones (owner_id, list, key)
    VALUES ((gone ->> TG_ARGV[1])::uuid, TG_ARGV[0], gone ->> TG_ARGV[2])
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;

-- sync_revive(list, owner column, key column): a row made again is no longer gone.
CREATE FUNCTION sync_revive() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    made jsonb := to_jsonb(NEW);
BEGIN
    DELETE FROM sync_tombstones
    WHERE owner_id = (made ->> TG_ARGV[1])::uuid AND list = TG_ARGV[0] AND key = made ->> TG_ARGV[2];
    RETURN NULL;
END
$$;

ALTER TABLE likes ADD COLUMN sync_xid xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX likes_sync ON likes (user_id, sync_xid, photo_key);
CREATE TRIGGER likes_sync_touch BEFORE UPDATE ON likes FOR EACH ROW EXECUTE FUNCTION sync_touch();
CREATE TRIGGER likes_sync_forget AFTER DELETE ON likes FOR EACH ROW EXECUTE FUNCTION sync_forget('likes', 'user_id', 'photo_key');
CREATE TRIGGER likes_sync_revive AFTER INSERT ON likes FOR EACH ROW EXECUTE FUNCTION sync_revive('likes', 'user_id', 'photo_key');

ALTER TABLE collections ADD COLUMN sync_xid xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX collections_sync ON collections (owner_id, sync_xid, id);
CREATE TRIGGER collections_sync_touch BEFORE UPDATE ON collections FOR EACH ROW EXECUTE FUNCTION sync_touch();
CREATE TRIGGER collections_sync_forget AFTER DELETE ON collections FOR EACH ROW EXECUTE FUNCTION sync_forget('collections', 'owner_id', 'id');
CREATE TRIGGER collections_sync_revive AFTER INSERT ON collections FOR EACH ROW EXECUTE FUNCTION sync_revive('collections', 'owner_id', 'id');

-- A photo added to or taken from a collection changes the collection (its count, its cover).
CREATE FUNCTION sync_touch_collection() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE collections SET sync_xid = pg_current_xact_id()
    WHERE id = CASE WHEN TG_OP = 'DELETE' THEN OLD.collection_id ELSE NEW.collection_id END;
    RETURN NULL;
END
$$;
CREATE TRIGGER collection_photos_sync AFTER INSERT OR DELETE ON collection_photos FOR EACH ROW EXECUTE FUNCTION sync_touch_collection();

ALTER TABLE posts ADD COLUMN sync_xid xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX posts_sync ON posts (user_id, sync_xid, id);
CREATE TRIGGER posts_sync_touch BEFORE UPDATE ON posts FOR EACH ROW EXECUTE FUNCTION sync_touch();
CREATE TRIGGER posts_sync_forget AFTER DELETE ON posts FOR EACH ROW EXECUTE FUNCTION sync_forget('posts', 'user_id', 'id');
CREATE TRIGGER posts_sync_revive AFTER INSERT ON posts FOR EACH ROW EXECUTE FUNCTION sync_revive('posts', 'user_id', 'id');
