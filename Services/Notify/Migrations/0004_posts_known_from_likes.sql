-- A post's author is learnt from whichever comes first: its social.post.created.v1 or a like's
-- ownerId (the like is on the liker's partition and can be read before the post's event). A
-- deleted post stays as a tombstone, so a like read after the deletion does not bring it back.
ALTER TABLE posts ADD COLUMN deleted boolean NOT NULL DEFAULT false;
COMMENT ON TABLE posts IS 'A post''s author, from social.post.created.v1 or a like''s ownerId; deleted by social.post.deleted.v1 (kept as a tombstone).';
