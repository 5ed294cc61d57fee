-- photo-catalog's state: Unsplash answers cached by normalised request, the shared rate-limit
-- budget, and the download-tracking queue. Nothing here is user-owned except the download queue,
-- which no API reads back; the service is the only reader of every table.

-- One cached upstream answer per normalised request (see UnsplashRequest.cacheKey). Rows are
-- replaced whole on refresh, never edited, so a reader never sees half an update.
CREATE TABLE responses (
    key           text PRIMARY KEY CHECK (length(key) <= 2048),
    -- 200, or 404 for a photo Unsplash does not have (cached too: asking again costs budget).
    status        smallint NOT NULL CHECK (status IN (200, 404)),
    body          bytea NOT NULL,
    -- Unsplash's X-Total, for the pagination headers; null where Unsplash sends none.
    total         integer,
    etag          text NOT NULL,
    stored_at     timestamptz NOT NULL,
    fresh_until   timestamptz NOT NULL,
    -- Least-recently-used eviction reads this; hits move it forward at most once a minute.
    last_used_at  timestamptz NOT NULL,
    size          integer NOT NULL
);
CREATE INDEX responses_last_used_at ON responses (last_used_at);

-- Unsplash's per-application budget as the last upstream answer reported it, shared by every
-- replica. One row.
CREATE TABLE budget (
    id           boolean PRIMARY KEY DEFAULT true CHECK (id),
    quota        integer,
    remaining    integer,
    -- When the current hour's budget is expected back: an hour after the first call of the window.
    resets_at    timestamptz,
    observed_at  timestamptz
);
INSERT INTO budget DEFAULT VALUES;

-- Downloads to report to Unsplash: at most one per user, photo and (UTC) day.
CREATE TABLE downloads (
    user_id          uuid NOT NULL,
    photo_id         text NOT NULL CHECK (length(photo_id) BETWEEN 1 AND 64),
    day              date NOT NULL,
    state            text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'reported', 'failed', 'offline')),
    attempts         integer NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    last_error       text,
    requested_at     timestamptz NOT NULL DEFAULT now(),
    completed_at     timestamptz,
    PRIMARY KEY (user_id, photo_id, day)
);
CREATE INDEX downloads_due ON downloads (next_attempt_at) WHERE state = 'pending';
