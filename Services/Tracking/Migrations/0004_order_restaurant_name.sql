-- The restaurant's name as each order was placed: its events carry it, so a consumer (notify's
-- pushes) words them without waiting for the restaurant's own announcement on another topic.
ALTER TABLE orders ADD COLUMN restaurant_name text;
UPDATE orders o SET restaurant_name = r.name FROM restaurants r WHERE r.id = o.restaurant_id;
