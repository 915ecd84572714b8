#!/usr/bin/env bash
# scripts/move-state.sh OLD_CONNINFO NEW_CONNINFO — moving to a new cluster: carries pg_idgen's
# state of one database from the old cluster to the new one (docs/operations.md, "Moving to a new
# cluster"): SELECT pg_idgen_state_export() on the old database, SELECT * FROM
# pg_idgen_state_import(that) on the new one. Both as a superuser (the state carries the mask
# keys: it goes through a file readable by this user only, removed at exit). Prints what the
# import did, one line per object (object|name|action). Only creates and raises: run it while the
# old cluster still takes writes, and once more after they stopped, before the writers move.
# For several databases, run it once per database. PSQL=<path> picks the psql (default: psql).
set -euo pipefail
[ $# -eq 2 ] || { sed -n '2,9p' "$0" >&2; exit 2; }
PSQL=${PSQL:-psql}
old=$1 new=$2
umask 077
state=$(mktemp)
trap 'rm -f "$state"' EXIT
schema_sql="SELECT pg_catalog.quote_ident(n.nspname) FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace WHERE e.extname OPERATOR(pg_catalog.=) 'pg_idgen'"
old_schema=$("$PSQL" -XAtq -v ON_ERROR_STOP=1 -d "$old" -c "$schema_sql")
new_schema=$("$PSQL" -XAtq -v ON_ERROR_STOP=1 -d "$new" -c "$schema_sql")
[ -n "$old_schema" ] || { echo "move-state: pg_idgen is not installed in the old database" >&2; exit 1; }
[ -n "$new_schema" ] || { echo "move-state: pg_idgen is not installed in the new database (CREATE EXTENSION pg_idgen)" >&2; exit 1; }
"$PSQL" -XAtq -v ON_ERROR_STOP=1 -d "$old" -c "SELECT $old_schema.pg_idgen_state_export()" > "$state"
# a dollar quote that the state does not contain
while :; do
    tag=s$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')
    grep -qF "\$$tag\$" "$state" || break
done
{
    printf 'SELECT * FROM %s.pg_idgen_state_import($%s$' "$new_schema" "$tag"
    cat "$state"
    printf '$%s$::pg_catalog.jsonb);\n' "$tag"
} | "$PSQL" -XAtq -v ON_ERROR_STOP=1 -d "$new" -f -
