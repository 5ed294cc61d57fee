-- Whether an account's address was proven — by a mailed code or link, an admin's email_confirm,
-- or a verified identity such as Apple's — and not merely auto-confirmed at sign-up (the default
-- with AUTH_EMAIL_CONFIRM off). Sign in with Apple links to an account by its address only when
-- it was proven: nobody takes over an account someone opened with another person's address.
ALTER TABLE users ADD COLUMN email_proven_at timestamptz;
CREATE INDEX identities_provider_idx ON identities (provider, provider_id);
