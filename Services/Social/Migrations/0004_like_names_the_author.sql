-- A like of a post names the post's author in its event (`ownerId`), so a consumer tells the
-- author without having seen the post's own event first (each user's events are on their own
-- partition, so a like can be read before the post it likes). The author is known only once
-- the statement has found the post: like_photo adds the field to the payload the service made.
CREATE OR REPLACE FUNCTION like_photo(
    p_user uuid, p_key text, p_at timestamptz,
    p_event_id uuid, p_topic text, p_event_key text, p_type text, p_source text, p_subject text, p_payload bytea
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
    INSERT INTO likes (user_id, photo_key, created_at) VALUES (p_user, p_key, p_at) ON CONFLICT DO NOTHING;
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
