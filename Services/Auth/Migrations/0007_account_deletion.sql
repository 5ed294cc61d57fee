-- Deleting an account. GET /reauthenticate mails a nonce (kind reauthentication), spent by
-- DELETE /user for an account with no password to give.
ALTER TABLE one_time_tokens DROP CONSTRAINT one_time_tokens_kind_check;
ALTER TABLE one_time_tokens ADD CONSTRAINT one_time_tokens_kind_check
    CHECK (kind IN ('signup', 'magiclink', 'recovery', 'invite', 'email_change', 'email_change_current', 'reauthentication'));

-- Who owns which restaurant, from tracking's tracking.restaurant.changed.v1 (through the inbox):
-- an account that owns restaurants cannot be deleted until they are handed over (409
-- user_owns_restaurants). A handover is a change with a new owner; the newest version wins.
CREATE TABLE restaurant_owners (
    restaurant_id  uuid PRIMARY KEY,
    owner_id       uuid NOT NULL,
    version        integer NOT NULL
);
CREATE INDEX restaurant_owners_owner ON restaurant_owners (owner_id);

ALTER TABLE restaurant_owners ENABLE ROW LEVEL SECURITY;
ALTER TABLE restaurant_owners FORCE ROW LEVEL SECURITY;
-- Written by auth's consumer (app.service on, the inbox's setting), read by the deletion (an auth flow).
CREATE POLICY restaurant_owners_service ON restaurant_owners
    USING (coalesce(current_setting('app.service', true), '') = 'on' OR in_auth_flow());
