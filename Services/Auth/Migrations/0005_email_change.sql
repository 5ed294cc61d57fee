-- A changed email waits for confirmation (GoTrue's rule): PUT /user {"email"} keeps the new address
-- in email_change and mails a code and link to it (kind email_change) and, with
-- AUTH_SECURE_EMAIL_CHANGE on (the default), to the current address too (email_change_current);
-- the address changes once every mailed side is verified.
ALTER TABLE users ADD COLUMN email_change text CHECK (email_change = lower(email_change) AND length(email_change) <= 254);
ALTER TABLE users ADD COLUMN email_change_sent_at timestamptz;

ALTER TABLE one_time_tokens DROP CONSTRAINT one_time_tokens_kind_check;
ALTER TABLE one_time_tokens ADD CONSTRAINT one_time_tokens_kind_check
    CHECK (kind IN ('signup', 'magiclink', 'recovery', 'invite', 'email_change', 'email_change_current'));
