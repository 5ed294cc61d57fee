-- A like or an unlike as one statement, so one round trip (a transaction of set_config, the
-- check, the row, the event and the count took seven): the viewer set for row-level security,
-- the photo checked as LikeStore checks it, the row, and the event's outbox row — whose columns
-- the service passes in, made by its Outbox — only when the like changed something. The count
-- is read after the likes_counted trigger kept it.

-- outcome: 'liked', 'already' (nothing changed, no event), 'not-found' (a post or edit that the
-- viewer may not like), 'unknown-photo' (an Unsplash photo not described here yet: the service
-- asks photo-catalog, then likes it in a transaction of its own).
CREATE FUNCTION like_photo(
    p_user uuid, p_key text, p_at timestamptz,
    p_event_id uuid, p_topic text, p_event_key text, p_type text, p_source text, p_subject text, p_payload bytea
) RETURNS TABLE (outcome text, likes bigint)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('app.user_id', p_user::text, true);
    IF p_key LIKE 'post:%' THEN
        PERFORM 1 FROM posts WHERE id = substr(p_key, 6)::uuid;
        IF NOT FOUND THEN outcome := 'not-found'; likes := 0; RETURN NEXT; RETURN; END IF;
    ELSIF p_key LIKE 'edit:%' THEN
        PERFORM 1 FROM edits WHERE edit_id = substr(p_key, 6)::uuid
            UNION ALL SELECT 1 FROM posts WHERE photo_key = p_key LIMIT 1;
        IF NOT FOUND THEN outcome := 'not-found'; likes := 0; RETURN NEXT; RETURN; END IF;
    ELSE
        PERFORM 1 FROM unsplash_photos WHERE photo_id = substr(p_key, 10);
        IF NOT FOUND THEN outcome := 'unknown-photo'; likes := 0; RETURN NEXT; RETURN; END IF;
    END IF;
    INSERT INTO likes (user_id, photo_key, created_at) VALUES (p_user, p_key, p_at) ON CONFLICT DO NOTHING;
    IF FOUND THEN
        INSERT INTO outbox (event_id, topic, key, type, source, subject, occurred_at, payload)
        VALUES (p_event_id, p_topic, p_event_key, p_type, p_source, p_subject, p_at, p_payload);
        outcome := 'liked';
    ELSE
        outcome := 'already';
    END IF;
    SELECT coalesce((SELECT c.likes FROM like_counts c WHERE c.photo_key = p_key), 0) INTO likes;
    RETURN NEXT;
END
$$;

-- Whether the like was there to take back; its event only then.
CREATE FUNCTION unlike_photo(
    p_user uuid, p_key text, p_at timestamptz,
    p_event_id uuid, p_topic text, p_event_key text, p_type text, p_source text, p_subject text, p_payload bytea
) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('app.user_id', p_user::text, true);
    DELETE FROM likes WHERE user_id = p_user AND photo_key = p_key;
    IF NOT FOUND THEN RETURN false; END IF;
    INSERT INTO outbox (event_id, topic, key, type, source, subject, occurred_at, payload)
    VALUES (p_event_id, p_topic, p_event_key, p_type, p_source, p_subject, p_at, p_payload);
    RETURN true;
END
$$;
