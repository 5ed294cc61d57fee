CREATE TABLE widget_events (
    widget_id bigint NOT NULL REFERENCES widgets (id),
    note text NOT NULL DEFAULT 'it''s new; really'
);
INSERT INTO widget_events (widget_id, note)
    SELECT id, E'escaped \' quote; still one statement' FROM widgets;
