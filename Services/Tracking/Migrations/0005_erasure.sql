-- A deleted customer's orders stay in the restaurant's books without them (UserErasure): no
-- customer, no dropoff point.
ALTER TABLE orders ALTER COLUMN customer_id DROP NOT NULL;
ALTER TABLE orders ALTER COLUMN dropoff_lat DROP NOT NULL;
ALTER TABLE orders ALTER COLUMN dropoff_lng DROP NOT NULL;
