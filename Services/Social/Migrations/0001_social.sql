-- social's schema: the projections it keeps of other services' data, likes and their counts,
-- collections, storage objects and posts.
--
-- Every request runs in a transaction whose app.user_id is the verified token's user. Work done
-- for the service itself — the projections, the orphan collector, a signed link's download — sets
-- app.service = 'on' instead. Row-level security (forced: the service connects as the owner)
-- enforces ownership a second time, behind the service's own checks.

CREATE FUNCTION request_user_id() RETURNS uuid
    LANGUAGE sql STABLE
    AS $$ SELECT nullif(current_setting('app.user_id', true), '')::uuid $$;

CREATE FUNCTION acting_as_service() RETURNS boolean
    LANGUAGE sql STABLE
    AS $$ SELECT coalesce(current_setting('app.service', true), '') = 'on' $$;

-- What the apps show of a person, from auth.users (auth.user.registered.v1,
-- auth.profile.updated.v1): written by the projection only, read by anyone signed in.
CREATE TABLE profiles (
    user_id     uuid PRIMARY KEY,
    username    text,
    avatar_url  text,
    updated_at  timestamptz NOT NULL
);
ALTER TABLE profiles ENABLE ROW LEVEL SECURITY;
ALTER TABLE profiles FORCE ROW LEVEL SECURITY;
CREATE POLICY profiles_read ON profiles FOR SELECT USING (request_user_id() IS NOT NULL OR acting_as_service());
CREATE POLICY profiles_write ON profiles USING (acting_as_service()) WITH CHECK (acting_as_service());

-- Completed edits, from render.results: what an edit like or post needs (its owner, its rendered
-- image's format and size). Written by the projection; read by their owner.
CREATE TABLE edits (
    edit_id       uuid PRIMARY KEY,
    user_id       uuid NOT NULL,
    format        text NOT NULL CHECK (format IN ('jpeg', 'webp')),
    width         integer NOT NULL CHECK (width > 0),
    height        integer NOT NULL CHECK (height > 0),
    bytes         bigint NOT NULL CHECK (bytes > 0),
    completed_at  timestamptz NOT NULL
);
ALTER TABLE edits ENABLE ROW LEVEL SECURITY;
ALTER TABLE edits FORCE ROW LEVEL SECURITY;
CREATE POLICY edits_owner ON edits FOR SELECT USING (user_id = request_user_id() OR acting_as_service());
CREATE POLICY edits_write ON edits USING (acting_as_service()) WITH CHECK (acting_as_service());

-- An Unsplash photo as photo-catalog gave it when someone liked, collected or posted it: its
-- URLs and attribution, for "My Collection" without a call per photo. Shared by everyone.
CREATE TABLE unsplash_photos (
    photo_id    text PRIMARY KEY,
    photo       jsonb NOT NULL,
    fetched_at  timestamptz NOT NULL DEFAULT now()
);

-- A user's likes. photo_key is unsplash:<id>, edit:<uuid> or post:<uuid>.
CREATE TABLE likes (
    user_id     uuid NOT NULL,
    photo_key   text NOT NULL CHECK (length(photo_key) BETWEEN 3 AND 300),
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (user_id, photo_key)
);
CREATE INDEX likes_by_user ON likes (user_id, created_at DESC, photo_key DESC);
CREATE INDEX likes_by_photo ON likes (photo_key);
ALTER TABLE likes ENABLE ROW LEVEL SECURITY;
ALTER TABLE likes FORCE ROW LEVEL SECURITY;
CREATE POLICY likes_owner ON likes
    USING (user_id = request_user_id() OR acting_as_service())
    WITH CHECK (user_id = request_user_id() OR acting_as_service());

-- Each photo's like count, kept by a trigger on likes in the same transaction as the like itself:
-- the row lock of the count serialises concurrent toggles of one photo, so the count is exact
-- whatever writes the likes.
CREATE TABLE like_counts (
    photo_key  text PRIMARY KEY,
    likes      bigint NOT NULL CHECK (likes >= 0)
);
ALTER TABLE like_counts ENABLE ROW LEVEL SECURITY;
ALTER TABLE like_counts FORCE ROW LEVEL SECURITY;
CREATE POLICY like_counts_read ON like_counts FOR SELECT USING (true);
CREATE POLICY like_counts_kept ON like_counts USING (true) WITH CHECK (true);

CREATE FUNCTION count_likes() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO like_counts (photo_key, likes) VALUES (NEW.photo_key, 1)
        ON CONFLICT (photo_key) DO UPDATE SET likes = like_counts.likes + 1;
        RETURN NEW;
    END IF;
    UPDATE like_counts SET likes = likes - 1 WHERE photo_key = OLD.photo_key;
    RETURN OLD;
END
$$;
CREATE TRIGGER likes_counted AFTER INSERT OR DELETE ON likes FOR EACH ROW EXECUTE FUNCTION count_likes();

-- Named collections: private ones are their owner's alone, public ones readable by anyone signed
-- in. Lengths are checked in grapheme clusters by the service; these bounds are a backstop.
CREATE TABLE collections (
    id           uuid PRIMARY KEY,
    owner_id     uuid NOT NULL,
    title        text NOT NULL CHECK (char_length(title) BETWEEN 1 AND 1000),
    description  text NOT NULL DEFAULT '' CHECK (char_length(description) <= 5000),
    private      boolean NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at   timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX collections_by_owner ON collections (owner_id, created_at DESC, id DESC);
ALTER TABLE collections ENABLE ROW LEVEL SECURITY;
ALTER TABLE collections FORCE ROW LEVEL SECURITY;
CREATE POLICY collections_read ON collections FOR SELECT
    USING (owner_id = request_user_id() OR (NOT private AND request_user_id() IS NOT NULL) OR acting_as_service());
CREATE POLICY collections_insert ON collections FOR INSERT WITH CHECK (owner_id = request_user_id());
CREATE POLICY collections_update ON collections FOR UPDATE
    USING (owner_id = request_user_id()) WITH CHECK (owner_id = request_user_id());
CREATE POLICY collections_delete ON collections FOR DELETE USING (owner_id = request_user_id() OR acting_as_service());

-- A collection's photos in the order they were added; visible when the collection is (the
-- collections policy applies inside the subquery), changed by its owner only.
CREATE TABLE collection_photos (
    collection_id  uuid NOT NULL REFERENCES collections (id) ON DELETE CASCADE,
    photo_key      text NOT NULL CHECK (length(photo_key) BETWEEN 3 AND 300),
    added_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (collection_id, photo_key)
);
CREATE INDEX collection_photos_in_order ON collection_photos (collection_id, added_at, photo_key);
ALTER TABLE collection_photos ENABLE ROW LEVEL SECURITY;
ALTER TABLE collection_photos FORCE ROW LEVEL SECURITY;
CREATE POLICY collection_photos_read ON collection_photos FOR SELECT
    USING (EXISTS (SELECT 1 FROM collections c WHERE c.id = collection_id));
CREATE POLICY collection_photos_write ON collection_photos
    USING (EXISTS (SELECT 1 FROM collections c WHERE c.id = collection_id AND (c.owner_id = request_user_id() OR acting_as_service())))
    WITH CHECK (EXISTS (SELECT 1 FROM collections c WHERE c.id = collection_id AND c.owner_id = request_user_id()));

-- Storage objects (buckets posts and avatars). An object's bytes are a blob under blob_key, a key
-- of its own per version, written whole before the row points at it. A posts object is
-- 'pending' until a post attaches it ('attached'), and collected when it stays pending past
-- SOCIAL_ORPHAN_TTL; avatars are 'stored'. Readable by their owner, by anyone signed in once
-- attached to a post, and by anyone for the public avatars bucket.
CREATE TABLE objects (
    id             uuid PRIMARY KEY,
    bucket         text NOT NULL CHECK (bucket IN ('posts', 'avatars')),
    name           text NOT NULL CHECK (length(name) BETWEEN 1 AND 1024),
    owner_id       uuid NOT NULL,
    state          text NOT NULL CHECK (state IN ('pending', 'stored', 'attached')),
    blob_key       text NOT NULL UNIQUE,
    size           bigint NOT NULL CHECK (size > 0),
    mime_type      text NOT NULL,
    width          integer NOT NULL CHECK (width > 0),
    height         integer NOT NULL CHECK (height > 0),
    cache_control  text NOT NULL DEFAULT 'max-age=3600',
    created_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    UNIQUE (bucket, name)
);
CREATE INDEX objects_pending ON objects (updated_at) WHERE state = 'pending';
CREATE INDEX objects_by_owner ON objects (owner_id, bucket, name);
ALTER TABLE objects ENABLE ROW LEVEL SECURITY;
ALTER TABLE objects FORCE ROW LEVEL SECURITY;
CREATE POLICY objects_read ON objects FOR SELECT
    USING (owner_id = request_user_id() OR bucket = 'avatars' OR (state = 'attached' AND request_user_id() IS NOT NULL) OR acting_as_service());
CREATE POLICY objects_insert ON objects FOR INSERT WITH CHECK (owner_id = request_user_id());
CREATE POLICY objects_update ON objects FOR UPDATE
    USING (owner_id = request_user_id() OR acting_as_service()) WITH CHECK (owner_id = request_user_id() OR acting_as_service());
CREATE POLICY objects_delete ON objects FOR DELETE USING (owner_id = request_user_id() OR acting_as_service());

-- Blobs in flight: a blob about to be written (an upload) or no longer referenced (to delete),
-- recorded before the blob write or in the transaction that lets go of it. Whatever a crash
-- interrupts, what it leaves is listed here, and the collector finishes it.
CREATE TABLE blob_intents (
    blob_key    text PRIMARY KEY,
    action      text NOT NULL CHECK (action IN ('upload', 'delete')),
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- Posts: a photo with a caption, in everyone's feed. The photo is an Unsplash photo (hotlinked,
-- never re-hosted) or an object of the posts bucket attached to the post (a user's upload, or a
-- copy of their edit), which cannot be deleted while the post exists.
CREATE TABLE posts (
    id               uuid PRIMARY KEY,
    user_id          uuid NOT NULL,
    photo            jsonb NOT NULL,
    photo_key        text NOT NULL,
    object_id        uuid UNIQUE REFERENCES objects (id) ON DELETE RESTRICT,
    unsplash_url     text,
    media_width      integer NOT NULL CHECK (media_width > 0),
    media_height     integer NOT NULL CHECK (media_height > 0),
    caption          text NOT NULL CHECK (char_length(caption) <= 30000),
    idempotency_key  text NOT NULL CHECK (length(idempotency_key) BETWEEN 1 AND 255),
    request_hash     text NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    UNIQUE (user_id, idempotency_key),
    CHECK ((object_id IS NULL) <> (unsplash_url IS NULL))
);
CREATE INDEX posts_feed ON posts (created_at DESC, id DESC);
CREATE INDEX posts_by_author ON posts (user_id, created_at DESC, id DESC);
CREATE INDEX posts_by_photo ON posts (photo_key);
ALTER TABLE posts ENABLE ROW LEVEL SECURITY;
ALTER TABLE posts FORCE ROW LEVEL SECURITY;
CREATE POLICY posts_read ON posts FOR SELECT USING (request_user_id() IS NOT NULL OR acting_as_service());
CREATE POLICY posts_insert ON posts FOR INSERT WITH CHECK (user_id = request_user_id());
CREATE POLICY posts_delete ON posts FOR DELETE USING (user_id = request_user_id() OR acting_as_service());
