-- Resumable uploads (TUS 1.0.0, as Supabase Storage serves it at /storage/v1/upload/resumable):
-- an upload's declared length and how much of it has arrived, and its parts, each a blob of its
-- own (listed in blob_intents while written), so any replica takes the next chunk. One writer at
-- a time: a PATCH takes a lease (writing_until) instead of holding a row lock for its transfer.
-- The object appears only when the last part lands, checked as any upload; an upload older than a
-- day has expired, and the collector deletes it and its parts.
CREATE TABLE resumable_uploads (
    id             uuid PRIMARY KEY,
    owner_id       uuid NOT NULL,
    bucket         text NOT NULL CHECK (bucket IN ('posts', 'avatars')),
    name           text NOT NULL CHECK (length(name) BETWEEN 1 AND 1024),
    upload_length  bigint NOT NULL CHECK (upload_length > 0),
    upload_offset  bigint NOT NULL DEFAULT 0 CHECK (upload_offset BETWEEN 0 AND upload_length),
    upsert         boolean NOT NULL,
    cache_control  text NOT NULL,
    writing_until  timestamptz,
    created_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    expires_at     timestamptz NOT NULL
);
CREATE INDEX resumable_uploads_owner ON resumable_uploads (owner_id);
CREATE INDEX resumable_uploads_expiry ON resumable_uploads (expires_at);
ALTER TABLE resumable_uploads ENABLE ROW LEVEL SECURITY;
ALTER TABLE resumable_uploads FORCE ROW LEVEL SECURITY;
CREATE POLICY resumable_uploads_owner ON resumable_uploads
    USING (owner_id = request_user_id() OR acting_as_service()) WITH CHECK (owner_id = request_user_id() OR acting_as_service());

CREATE TABLE resumable_parts (
    upload_id    uuid NOT NULL REFERENCES resumable_uploads (id),
    owner_id     uuid NOT NULL,
    part_offset  bigint NOT NULL CHECK (part_offset >= 0),
    size         bigint NOT NULL CHECK (size > 0),
    blob_key     text NOT NULL UNIQUE,
    PRIMARY KEY (upload_id, part_offset)
);
ALTER TABLE resumable_parts ENABLE ROW LEVEL SECURITY;
ALTER TABLE resumable_parts FORCE ROW LEVEL SECURITY;
CREATE POLICY resumable_parts_owner ON resumable_parts
    USING (owner_id = request_user_id() OR acting_as_service()) WITH CHECK (owner_id = request_user_id() OR acting_as_service());
