-- What a receipt shows of an order: its items with their prices and its total, from its placing.
ALTER TABLE orders ADD COLUMN items jsonb NOT NULL DEFAULT '[]';
ALTER TABLE orders ADD COLUMN total_cents integer;
