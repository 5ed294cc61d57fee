-- notify's schema: the devices people register and their settings, what notify keeps of other
-- services' events to address and word a notification, and the deliveries themselves (a queue
-- the sender works through, and the delivery log once they are done).
--
-- A request runs in a transaction whose app.user_id is the verified token's user; the consumers
-- and the sender set app.service = 'on'. Row-level security (forced: the service connects as the
-- owner) keeps each person's devices, settings and deliveries theirs.

CREATE FUNCTION request_user_id() RETURNS uuid
    LANGUAGE sql STABLE
    AS $$ SELECT nullif(current_setting('app.user_id', true), '')::uuid $$;

CREATE FUNCTION acting_as_service() RETURNS boolean
    LANGUAGE sql STABLE
    AS $$ SELECT coalesce(current_setting('app.service', true), '') = 'on' $$;

-- An iPhone that takes push notifications: its APNs device token (64 lower-case hex digits), the
-- app it is for (the APNs topic, a bundle id) and the APNs environment it was built against. A
-- token belongs to one user at a time: registering it again moves it.
CREATE TABLE devices (
    token          text PRIMARY KEY CHECK (token ~ '^[0-9a-f]{64}$'),
    user_id        uuid NOT NULL,
    platform       text NOT NULL CHECK (platform IN ('ios')),
    topic          text NOT NULL CHECK (length(topic) BETWEEN 1 AND 255),
    environment    text NOT NULL CHECK (environment IN ('production', 'sandbox')),
    locale         text NOT NULL DEFAULT 'en',
    registered_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at     timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX devices_user ON devices (user_id);
ALTER TABLE devices ENABLE ROW LEVEL SECURITY;
ALTER TABLE devices FORCE ROW LEVEL SECURITY;
-- A user sees and changes their own devices. Taking over a token another user registered is the
-- service's move (registering runs it as the service, having checked the caller).
CREATE POLICY devices_owner ON devices USING (user_id = request_user_id() OR acting_as_service())
    WITH CHECK (user_id = request_user_id() OR acting_as_service());

-- What a person wants to hear of: a missing row is every setting on.
CREATE TABLE settings (
    user_id         uuid PRIMARY KEY,
    orders          boolean NOT NULL DEFAULT true,
    edits           boolean NOT NULL DEFAULT true,
    likes           boolean NOT NULL DEFAULT true,
    email_receipts  boolean NOT NULL DEFAULT true,
    updated_at      timestamptz NOT NULL DEFAULT clock_timestamp()
);
ALTER TABLE settings ENABLE ROW LEVEL SECURITY;
ALTER TABLE settings FORCE ROW LEVEL SECURITY;
CREATE POLICY settings_owner ON settings USING (user_id = request_user_id() OR acting_as_service())
    WITH CHECK (user_id = request_user_id() OR acting_as_service());

-- Restaurants as tracking.restaurants tells them (tracking.restaurant.changed.v1): their names
-- and owners, for a notification's words. Written by the projection only.
CREATE TABLE restaurants (
    restaurant_id  uuid PRIMARY KEY,
    owner_id       uuid NOT NULL,
    name           text NOT NULL,
    version        integer NOT NULL
);
ALTER TABLE restaurants ENABLE ROW LEVEL SECURITY;
ALTER TABLE restaurants FORCE ROW LEVEL SECURITY;
CREATE POLICY restaurants_service ON restaurants USING (acting_as_service()) WITH CHECK (acting_as_service());

-- Orders as tracking.orders placed them: how many items, for a driver's offer later on.
CREATE TABLE orders (
    order_id       uuid PRIMARY KEY,
    restaurant_id  uuid NOT NULL,
    item_count     integer NOT NULL CHECK (item_count >= 0),
    placed_at      timestamptz NOT NULL
);
ALTER TABLE orders ENABLE ROW LEVEL SECURITY;
ALTER TABLE orders FORCE ROW LEVEL SECURITY;
CREATE POLICY orders_service ON orders USING (acting_as_service()) WITH CHECK (acting_as_service());

-- The apns-id of an event's notification to a device: a version-5-shaped UUID from a SHA-256 of
-- the two, the same however often the event is delivered or the notification sent.
CREATE FUNCTION notify_apns_id(event uuid, token text) RETURNS uuid
    LANGUAGE sql IMMUTABLE
    AS $$
        SELECT (substr(h, 1, 12) || '5' || substr(h, 14, 3)
                || substr('89ab', get_byte(decode(substr(h, 17, 2), 'hex'), 0) % 4 + 1, 1) || substr(h, 18, 15))::uuid
        FROM (SELECT encode(sha256(convert_to(event::text || ':' || token, 'UTF8')), 'hex') AS h) AS digest
    $$;

-- One notification for one device: made in the consumer's inbox transaction (so an event is
-- turned into deliveries once, whatever Kafka redelivers), then worked through by the sender.
-- apns_id is derived from the event and the device, so a retry is the same notification to Apple
-- and a second try at making it is a conflict. Done rows stay 7 days: the delivery log.
CREATE TABLE deliveries (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    apns_id          uuid NOT NULL UNIQUE,
    event_id         uuid NOT NULL,
    event_type       text NOT NULL,
    user_id          uuid NOT NULL,
    device_token     text NOT NULL,
    topic            text NOT NULL,
    environment      text NOT NULL CHECK (environment IN ('production', 'sandbox')),
    channel          text NOT NULL CHECK (channel IN ('apns', 'sink')),
    kind             text NOT NULL,
    collapse_id      text,
    priority         integer NOT NULL CHECK (priority IN (5, 10)),
    payload          text NOT NULL CHECK (octet_length(payload) <= 4096),  -- the JSON sent, byte for byte
    expires_at       timestamptz NOT NULL,
    status           text NOT NULL CHECK (status IN ('pending', 'sending', 'delivered', 'rejected', 'expired')),
    attempts         integer NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    lease_until      timestamptz,
    apns_status      integer,
    error            text,
    created_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    finished_at      timestamptz
);
-- The sender's queue: what is due, oldest first.
CREATE INDEX deliveries_due ON deliveries (next_attempt_at) WHERE status IN ('pending', 'sending');
CREATE INDEX deliveries_user ON deliveries (user_id, created_at DESC);
CREATE INDEX deliveries_finished ON deliveries (finished_at) WHERE finished_at IS NOT NULL;
ALTER TABLE deliveries ENABLE ROW LEVEL SECURITY;
ALTER TABLE deliveries FORCE ROW LEVEL SECURITY;
CREATE POLICY deliveries_read ON deliveries FOR SELECT USING (user_id = request_user_id() OR acting_as_service());
CREATE POLICY deliveries_write ON deliveries USING (acting_as_service()) WITH CHECK (acting_as_service());
