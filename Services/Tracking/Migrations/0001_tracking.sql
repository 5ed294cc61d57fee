-- tracking's schema: restaurants and their menus, orders and their history, drivers.
--
-- Every request runs in a transaction whose app.user_id and app.role are the verified token's
-- user and Splash role. Work done for the service itself (seeding, the dispatcher) sets
-- app.service = 'on'. Row-level security (forced: the service connects as the owner) enforces
-- who sees which order a second time, behind the service's own checks.

CREATE FUNCTION request_user_id() RETURNS uuid
    LANGUAGE sql STABLE
    AS $$ SELECT nullif(current_setting('app.user_id', true), '')::uuid $$;

CREATE FUNCTION request_role() RETURNS text
    LANGUAGE sql STABLE
    AS $$ SELECT coalesce(current_setting('app.role', true), '') $$;

CREATE FUNCTION acting_as_service() RETURNS boolean
    LANGUAGE sql STABLE
    AS $$ SELECT coalesce(current_setting('app.service', true), '') = 'on' $$;

-- Restaurants, public to anyone signed in; changed by their owner or an admin. The menu is
-- replaced whole: [{id, name, priceCents, available}].
CREATE TABLE restaurants (
    id             uuid PRIMARY KEY,
    owner_id       uuid NOT NULL,
    osm_node       bigint UNIQUE,
    name           text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    amenity        text NOT NULL DEFAULT 'restaurant',
    cuisine        text,
    address        text NOT NULL DEFAULT '',
    lat            double precision NOT NULL CHECK (lat BETWEEN -90 AND 90),
    lng            double precision NOT NULL CHECK (lng BETWEEN -180 AND 180),
    image_url      text,
    opening_hours  jsonb,
    is_open        boolean NOT NULL DEFAULT true,
    menu           jsonb NOT NULL DEFAULT '[]',
    version        integer NOT NULL DEFAULT 1,
    created_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at     timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX restaurants_owner ON restaurants (owner_id);
CREATE INDEX restaurants_listed ON restaurants (created_at, id);
ALTER TABLE restaurants ENABLE ROW LEVEL SECURITY;
ALTER TABLE restaurants FORCE ROW LEVEL SECURITY;
CREATE POLICY restaurants_read ON restaurants FOR SELECT USING (request_user_id() IS NOT NULL OR acting_as_service());
CREATE POLICY restaurants_insert ON restaurants FOR INSERT WITH CHECK (request_role() = 'admin' OR acting_as_service());
CREATE POLICY restaurants_update ON restaurants FOR UPDATE
    USING (owner_id = request_user_id() OR request_role() = 'admin' OR acting_as_service());

-- Orders. change_seq numbers the order's last change from order_changes, taken under one
-- transaction-level lock as a write's last step, so changes commit in the order of their numbers:
-- the largest number a reader sees is a sync token after which every later change has a greater
-- one (delta sync, exact).
CREATE SEQUENCE order_changes;
CREATE TABLE orders (
    id                   uuid PRIMARY KEY,
    customer_id          uuid NOT NULL,
    restaurant_id        uuid NOT NULL REFERENCES restaurants (id),
    restaurant_owner_id  uuid NOT NULL,
    driver_id            uuid,
    items                jsonb NOT NULL,
    total_cents          integer NOT NULL CHECK (total_cents >= 0),
    dropoff_address      text NOT NULL,
    dropoff_lat          double precision NOT NULL CHECK (dropoff_lat BETWEEN -90 AND 90),
    dropoff_lng          double precision NOT NULL CHECK (dropoff_lng BETWEEN -180 AND 180),
    notes                text NOT NULL DEFAULT '' CHECK (length(notes) <= 2000),
    status               text NOT NULL,
    status_history       jsonb NOT NULL,
    eta_seconds          integer,
    routing              text NOT NULL CHECK (routing IN ('road', 'estimate')),
    version              integer NOT NULL DEFAULT 1,
    change_seq           bigint NOT NULL DEFAULT 0,
    idempotency_key      text NOT NULL,
    request_hash         text NOT NULL,
    created_at           timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at           timestamptz NOT NULL DEFAULT clock_timestamp(),
    UNIQUE (customer_id, idempotency_key)
);
-- A driver has one active order at most: two dispatchers cannot both give one driver an order.
CREATE UNIQUE INDEX orders_one_per_driver ON orders (driver_id)
    WHERE status IN ('driver_assigned', 'enroute_to_pickup', 'arrived_at_pickup', 'picked_up', 'enroute_to_dropoff', 'arrived_at_dropoff');
CREATE INDEX orders_customer ON orders (customer_id, created_at DESC, id DESC);
CREATE INDEX orders_owner ON orders (restaurant_owner_id, created_at DESC, id DESC);
CREATE INDEX orders_driver ON orders (driver_id, created_at DESC, id DESC) WHERE driver_id IS NOT NULL;
CREATE INDEX orders_changes ON orders (change_seq);
CREATE INDEX orders_customer_changes ON orders (customer_id, change_seq);
CREATE INDEX orders_owner_changes ON orders (restaurant_owner_id, change_seq);
CREATE INDEX orders_driver_changes ON orders (driver_id, change_seq) WHERE driver_id IS NOT NULL;
CREATE INDEX orders_waiting ON orders (updated_at, id) WHERE status = 'ready_for_pickup';
ALTER TABLE orders ENABLE ROW LEVEL SECURITY;
ALTER TABLE orders FORCE ROW LEVEL SECURITY;
-- Its parties and admins see and change an order (a driver unassigning leaves it, hence no check
-- on the changed row); customers place their own.
CREATE POLICY orders_read ON orders FOR SELECT
    USING (customer_id = request_user_id() OR restaurant_owner_id = request_user_id() OR driver_id = request_user_id()
           OR request_role() = 'admin' OR acting_as_service());
CREATE POLICY orders_change ON orders FOR UPDATE
    USING (customer_id = request_user_id() OR restaurant_owner_id = request_user_id() OR driver_id = request_user_id()
           OR request_role() = 'admin' OR acting_as_service())
    WITH CHECK (true);
CREATE POLICY orders_place ON orders FOR INSERT
    WITH CHECK (customer_id = request_user_id() OR request_role() = 'admin' OR acting_as_service());

-- An order that left someone's view (a driver unassigned from it): delta sync hands them its id.
CREATE TABLE order_tombstones (
    user_id     uuid NOT NULL,
    order_id    uuid NOT NULL,
    change_seq  bigint NOT NULL,
    PRIMARY KEY (user_id, order_id)
);
CREATE INDEX order_tombstones_changes ON order_tombstones (user_id, change_seq);
ALTER TABLE order_tombstones ENABLE ROW LEVEL SECURITY;
ALTER TABLE order_tombstones FORCE ROW LEVEL SECURITY;
CREATE POLICY order_tombstones_own ON order_tombstones
    USING (user_id = request_user_id() OR acting_as_service()) WITH CHECK (acting_as_service() OR request_role() = 'admin' OR user_id = request_user_id());

-- Drivers: on shift or not, and their latest position (upserted at most once a second).
CREATE TABLE drivers (
    user_id      uuid PRIMARY KEY,
    on_shift     boolean NOT NULL DEFAULT false,
    lat          double precision,
    lng          double precision,
    speed_mps    double precision,
    position_at  timestamptz,
    updated_at   timestamptz NOT NULL DEFAULT clock_timestamp()
);
ALTER TABLE drivers ENABLE ROW LEVEL SECURITY;
ALTER TABLE drivers FORCE ROW LEVEL SECURITY;
CREATE POLICY drivers_own ON drivers
    USING (user_id = request_user_id() OR request_role() = 'admin' OR acting_as_service())
    WITH CHECK (user_id = request_user_id() OR request_role() = 'admin' OR acting_as_service());
