-- A deleted user's uploads and edits are erased by the consumer of auth.users, a transaction done
-- for the service itself (app.service on, the inbox's setting), which may see every user's rows.
CREATE FUNCTION acting_as_service() RETURNS boolean
    LANGUAGE sql STABLE
    AS $$ SELECT coalesce(current_setting('app.service', true), '') = 'on' $$;

CREATE POLICY uploads_service ON uploads USING (acting_as_service());
CREATE POLICY edits_service ON edits USING (acting_as_service());
