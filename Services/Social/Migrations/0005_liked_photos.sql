-- SplashEdit's own table, `liked_photos (id, user_id, unsplash_id, original_url, created_at)`, is
-- a view of likes (Shared/DataAPI's description in SocialDataTables): a like gets an id of its own
-- (the client's, when it sends one) and keeps the image URL the app liked it with.
ALTER TABLE likes
    ADD COLUMN id uuid NOT NULL DEFAULT gen_random_uuid(),
    ADD COLUMN original_url text CHECK (length(original_url) <= 2048);
CREATE UNIQUE INDEX likes_id ON likes (id);

-- like_photo as before, with the like's id and original URL (both optional). A duplicate like is
-- 'already'; an id another like has is the unique index's 23505.
DROP FUNCTION like_photo(uuid, text, timestamptz, uuid, text, text, text, text, text, bytea);
CREATE FUNCTION like_photo(
    p_user uuid, p_key text, p_at timestamptz,
    p_event_id uuid, p_topic text, p_event_key text, p_type text, p_source text, p_subject text, p_payload bytea,
    p_id uuid DEFAULT NULL, p_original_url text DEFAULT NULL
) RETURNS TABLE (outcome text, likes bigint)
LANGUAGE plpgsql AS $$
DECLARE
    v_owner uuid;
    v_payload bytea := p_payload;
BEGIN
    PERFORM set_config('app.user_id', p_user::text, true);
    IF p_key LIKE 'post:%' THEN
        SELECT user_id INTO v_owner FROM posts WHERE id = substr(p_key, 6)::uuid;
        IF NOT FOUND THEN outcome := 'not-found'; likes := 0; RETURN NEXT; RETURN; END IF;
    ELSIF p_key LIKE 'edit:%' THEN
        PERFORM 1 FROM edits WHERE edit_id = substr(p_key, 6)::uuid
            UNION ALL SELECT 1 FROM posts WHERE photo_key = p_key LIMIT 1;
        IF NOT FOUND THEN outcome := 'not-found'; likes := 0; RETURN NEXT; RETURN; END IF;
    ELSE
        PERFORM 1 FROM unsplash_photos WHERE photo_id = substr(p_key, 10);
        IF NOT FOUND THEN outcome := 'unknown-photo'; likes := 0; RETURN NEXT; RETURN; END IF;
    END IF;
    INSERT INTO likes (user_id, photo_key, created_at, id, original_url)
    VALUES (p_user, p_key, p_at, coalesce(p_id, gen_random_uuid()), p_original_url)
    ON CONFLICT (user_id, photo_key) DO NOTHING;
    IF FOUND THEN
        IF v_owner IS NOT NULL THEN
            v_payload := convert_to(
                (convert_from(p_payload, 'UTF8')::jsonb || jsonb_build_object('ownerId', v_owner))::text, 'UTF8'
            );
        END IF;
        INSERT INTO outbox (event_id, topic, key, type, source, subject, occurred_at, payload)
        VALUES (p_event_id, p_topic, p_event_key, p_type, p_source, p_subject, p_at, v_payload);
        outcome := 'liked';
    ELSE
        outcome := 'already';
    END IF;
    SELECT coalesce((SELECT c.likes FROM like_counts c WHERE c.photo_key = p_key), 0) INTO likes;
    RETURN NEXT;
END
$$;
