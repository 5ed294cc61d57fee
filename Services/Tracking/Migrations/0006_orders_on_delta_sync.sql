-- Orders move onto the shared delta sync (Shared/ResourceAPI's DeltaSync): an order keeps the
-- transaction that last wrote it, instead of a number taken under one service-wide lock at the end
-- of every write (which made every order move wait for every other's commit); a token is the
-- snapshot an answer was read in. Tokens of the numbered kind ("s123") are answered 410: start over.
CREATE FUNCTION sync_touch() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.sync_xid := pg_current_xact_id();
    RETURN NEW;
END
$$;

ALTER TABLE orders ADD COLUMN sync_xid xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE TRIGGER orders_sync_touch BEFORE UPDATE ON orders FOR EACH ROW EXECUTE FUNCTION sync_touch();
CREATE INDEX orders_sync ON orders (sync_xid, id);
CREATE INDEX orders_customer_sync ON orders (customer_id, sync_xid, id);
CREATE INDEX orders_owner_sync ON orders (restaurant_owner_id, sync_xid, id);
CREATE INDEX orders_driver_sync ON orders (driver_id, sync_xid, id) WHERE driver_id IS NOT NULL;
DROP INDEX orders_changes;
DROP INDEX orders_customer_changes;
DROP INDEX orders_owner_changes;
DROP INDEX orders_driver_changes;
ALTER TABLE orders DROP COLUMN change_seq;

ALTER TABLE order_tombstones
    ADD COLUMN sync_xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
    ADD COLUMN deleted_at timestamptz NOT NULL DEFAULT now();
DROP INDEX order_tombstones_changes;
ALTER TABLE order_tombstones DROP COLUMN change_seq;
CREATE INDEX order_tombstones_sync ON order_tombstones (user_id, sync_xid);
CREATE INDEX order_tombstones_age ON order_tombstones (deleted_at);
DROP SEQUENCE order_changes;

-- Restaurants (their menus in their rows) sync the same way: a public list, never deleted.
ALTER TABLE restaurants ADD COLUMN sync_xid xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE TRIGGER restaurants_sync_touch BEFORE UPDATE ON restaurants FOR EACH ROW EXECUTE FUNCTION sync_touch();
CREATE INDEX restaurants_sync ON restaurants (sync_xid, id);
