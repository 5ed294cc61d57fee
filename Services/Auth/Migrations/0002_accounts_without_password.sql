-- Accounts an admin or another Splash service creates (POST /admin/users) may have no password
-- until one is set: restaurants' owner accounts seeded by tracking, say. Such an account cannot
-- sign in with a password; the check still costs the same bcrypt work (PasswordHasher).
ALTER TABLE users ALTER COLUMN encrypted_password DROP NOT NULL;
