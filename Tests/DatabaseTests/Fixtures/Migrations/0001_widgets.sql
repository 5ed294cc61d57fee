-- Widgets, as a service's first migration would create them.
CREATE TABLE widgets (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    owner_id text NOT NULL,
    name text NOT NULL CHECK (name <> ';')
);

/* A function body holds semicolons; the splitter must keep it whole. */
CREATE FUNCTION widget_label(w widgets) RETURNS text LANGUAGE plpgsql AS $body$
BEGIN
    RETURN w.name || ' (' || w.owner_id || ');';
END;
$body$;
