-- What an Unsplash edit started from: the photo's id and URLs as photo-catalog gave them when the
-- edit was rendered. Unsplash's terms ask for a reference, never a copy of the bytes; an upload's
-- original is its own row in `uploads`.
ALTER TABLE edits ADD COLUMN original jsonb;
