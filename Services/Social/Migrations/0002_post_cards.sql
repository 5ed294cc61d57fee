-- A post as lists show it: its author from the profiles projection, its like count and its
-- object's name. security_invoker: the reader's row-level security applies through the view.
CREATE VIEW post_cards WITH (security_invoker = true) AS
SELECT p.id, p.user_id, pr.username, pr.avatar_url, p.photo_key, p.caption, p.unsplash_url,
       o.name AS object_name, p.media_width, p.media_height, coalesce(c.likes, 0) AS likes, p.created_at
FROM posts p
LEFT JOIN profiles pr ON pr.user_id = p.user_id
LEFT JOIN like_counts c ON c.photo_key = p.photo_key
LEFT JOIN objects o ON o.id = p.object_id;
