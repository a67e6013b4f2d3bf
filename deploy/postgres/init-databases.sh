#!/bin/sh
# First start of the postgres image (docker-entrypoint-initdb.d): two roles and three databases.
# Temporal has its own role, distinct from the service's: neither can read the other's data.
#   temporal → temporal (persistence), temporal_visibility (SQL visibility)
#   app      → app (the service's store)
# `npm run stack:prod` makes the same roles and databases (scripts/stack-prod.ts).
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
  -v temporal_password="$TEMPORAL_DB_PASSWORD" -v app_password="$APP_DB_PASSWORD" <<'SQL'
CREATE ROLE temporal LOGIN PASSWORD :'temporal_password';
CREATE ROLE app LOGIN PASSWORD :'app_password';
CREATE DATABASE temporal OWNER temporal;
CREATE DATABASE temporal_visibility OWNER temporal;
CREATE DATABASE app OWNER app;
SQL
