-- A post card names its object's blob too: the object's version, which a thumbnail's signed
-- render link pins (a new version, new links).
CREATE OR REPLACE VIEW post_cards WITH (security_invoker = true) AS
SELECT p.id, p.user_id, pr.username, pr.avatar_url, p.photo_key, p.caption, p.unsplash_url,
       o.name AS object_name, p.media_width, p.media_height, coalesce(c.likes, 0) AS likes, p.created_at,
       o.blob_key AS object_blob
FROM posts p
LEFT JOIN profiles pr ON pr.user_id = p.user_id
LEFT JOIN like_counts c ON c.photo_key = p.photo_key
LEFT JOIN objects o ON o.id = p.object_id;
