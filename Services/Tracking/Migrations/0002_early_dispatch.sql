-- Early dispatch (TRACKING_DISPATCH_EARLY): a driver may be reserved for an order the kitchen is
-- still preparing. A driver still has one order at most: any order not yet ended that names them.
DROP INDEX orders_one_per_driver;
CREATE UNIQUE INDEX orders_one_per_driver ON orders (driver_id)
    WHERE driver_id IS NOT NULL AND status NOT IN ('delivered', 'rejected', 'cancelled');
-- The dispatcher's queue: orders without a driver, ready first, oldest first.
DROP INDEX orders_waiting;
CREATE INDEX orders_waiting ON orders ((status <> 'ready_for_pickup'), updated_at, id)
    WHERE driver_id IS NULL AND status IN ('accepted', 'preparing', 'ready_for_pickup');
