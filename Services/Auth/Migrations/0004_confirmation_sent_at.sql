-- With AUTH_EMAIL_CONFIRM on, sign-up mails a code before the account can sign in; the User shows
-- when (GoTrue's confirmation_sent_at).
ALTER TABLE users ADD COLUMN confirmation_sent_at timestamptz;
