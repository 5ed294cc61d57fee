-- The render workers running now. Each writes its row every few seconds, with the partitions of
-- render.jobs it holds, and deletes it when it stops; admins see them on the console's Consumers
-- page (GET /v1/workers). No user data, so not behind row-level security.
CREATE TABLE workers (
    id          text PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 200),
    host        text NOT NULL,
    pid         integer NOT NULL,
    threads     integer NOT NULL,
    partitions  integer[] NOT NULL DEFAULT '{}',
    started_at  timestamptz NOT NULL,
    seen_at     timestamptz NOT NULL
);
