#!/bin/sh
# The Temporal schemas, made and upgraded with temporal-sql-tool exactly as an operator does:
# `setup-schema -v 0.0` (the version tables; a no-op on a database already past 0.0), then
# `update-schema -d <versioned dir>` (applies only the versions not yet applied, so it is also the
# upgrade step after installing a newer server).
# Run by `npm run stack:prod` and by the one-shot `temporal-schema` job of docker-compose.yml.
# Environment: SQL_TOOL (default temporal-sql-tool), SCHEMA_DIR (…/schema/postgresql/v12),
# POSTGRES_HOST, POSTGRES_PORT, TEMPORAL_DB_USER, SQL_PASSWORD (read by the tool itself, so it is
# not on a command line), TEMPORAL_DB (default temporal), TEMPORAL_VISIBILITY_DB (default temporal_visibility).
set -eu
SQL_TOOL=${SQL_TOOL:-temporal-sql-tool}
SCHEMA_DIR=${SCHEMA_DIR:-/etc/temporal/schema/postgresql/v12}

tool() {
  db=$1
  shift
  "$SQL_TOOL" --plugin postgres12 --ep "$POSTGRES_HOST" -p "$POSTGRES_PORT" -u "$TEMPORAL_DB_USER" --db "$db" "$@"
}

for pair in "${TEMPORAL_DB:-temporal}:temporal" "${TEMPORAL_VISIBILITY_DB:-temporal_visibility}:visibility"; do
  db=${pair%%:*}
  dir=${pair#*:}
  tool "$db" setup-schema -v 0.0
  tool "$db" update-schema -d "$SCHEMA_DIR/$dir/versioned"
done
