#!/usr/bin/env bash
# Runs once, when the Postgres container initialises its cluster: one login role per service
# schema (splash_<schema>), owning that schema and nothing else. Passwords come from the
# environment (see deploy/compose.env.example).
set -euo pipefail

create_role() {
  local schema="$1" password="$2"
  psql -v ON_ERROR_STOP=1 --username "${POSTGRES_USER}" --dbname "${POSTGRES_DB}" \
    -v role="splash_${schema}" -v schema="${schema}" -v password="${password}" <<'SQL'
CREATE ROLE :"role" LOGIN PASSWORD :'password';
GRANT CONNECT, TEMPORARY ON DATABASE :"DBNAME" TO :"role";
CREATE SCHEMA :"schema" AUTHORIZATION :"role";
ALTER ROLE :"role" IN DATABASE :"DBNAME" SET search_path = :"schema";
SQL
}

psql -v ON_ERROR_STOP=1 --username "${POSTGRES_USER}" --dbname "${POSTGRES_DB}" \
  -c "REVOKE ALL ON DATABASE \"${POSTGRES_DB}\" FROM PUBLIC"
create_role auth "${AUTH_DB_PASSWORD:?}"
create_role catalog "${CATALOG_DB_PASSWORD:?}"
create_role render "${RENDER_DB_PASSWORD:?}"
create_role social "${SOCIAL_DB_PASSWORD:?}"
create_role tracking "${TRACKING_DB_PASSWORD:?}"
create_role notify "${NOTIFY_DB_PASSWORD:?}"
