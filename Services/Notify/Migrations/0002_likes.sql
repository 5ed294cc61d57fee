-- What a post's author is told of its likes: people's usernames (auth.users), posts' authors
-- (social.activity's post.created), and a window per post that gathers the likes after the first.

-- A person's public name, from auth.user.registered.v1 and auth.profile.updated.v1.
CREATE TABLE people (
    user_id     uuid PRIMARY KEY,
    username    text,
    updated_at  timestamptz NOT NULL
);
ALTER TABLE people ENABLE ROW LEVEL SECURITY;
ALTER TABLE people FORCE ROW LEVEL SECURITY;
CREATE POLICY people_service ON people USING (acting_as_service()) WITH CHECK (acting_as_service());

-- A post's author, from social.post.created.v1 (gone with social.post.deleted.v1).
CREATE TABLE posts (
    post_id    uuid PRIMARY KEY,
    author_id  uuid NOT NULL
);
ALTER TABLE posts ENABLE ROW LEVEL SECURITY;
ALTER TABLE posts FORCE ROW LEVEL SECURITY;
CREATE POLICY posts_service ON posts USING (acting_as_service()) WITH CHECK (acting_as_service());

-- The first like of a quiet post is pushed at once and opens a window of 10 minutes; the likes in
-- it are counted here and pushed as one when it closes.
CREATE TABLE like_windows (
    post_id      uuid PRIMARY KEY,
    author_id    uuid NOT NULL,
    closes_at    timestamptz NOT NULL,
    likes        integer NOT NULL DEFAULT 0 CHECK (likes >= 0),
    last_liker   uuid
);
CREATE INDEX like_windows_closing ON like_windows (closes_at);
ALTER TABLE like_windows ENABLE ROW LEVEL SECURITY;
ALTER TABLE like_windows FORCE ROW LEVEL SECURITY;
CREATE POLICY like_windows_service ON like_windows USING (acting_as_service()) WITH CHECK (acting_as_service());
