-- A resumable upload written in place (the file store): its chunks go into one blob, its one part
-- row at offset 0 listed with the whole length, and that blob becomes the object's. Uploads begun
-- before this (a blob per PATCH) go on as they began.
ALTER TABLE resumable_uploads ADD COLUMN in_place boolean NOT NULL DEFAULT false;
