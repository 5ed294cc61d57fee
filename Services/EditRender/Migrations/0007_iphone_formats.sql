-- Photos from an iPhone's library: HEIC/HEIF and AVIF uploads are kept as sent, like the others.
ALTER TABLE uploads DROP CONSTRAINT uploads_format_check;
ALTER TABLE uploads ADD CONSTRAINT uploads_format_check CHECK (format IN ('jpeg', 'png', 'webp', 'heif', 'avif'));
