-- When an order was announced as arriving (tracking.order.arriving.v1): once per order, whichever
-- replica's position ingest sees its ETA fall to three minutes first.
ALTER TABLE orders ADD COLUMN arriving_announced_at timestamptz;
