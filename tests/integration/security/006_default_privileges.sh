#!/usr/bin/env bash
# security/006_default_privileges — what PUBLIC may do to the extension's tables and views does not
# depend on the default privileges of the superuser that installs it. One cluster on port 29189
# (+ IT_PORT_OFFSET), pg_idgen.worker_id unset (the database's stored worker id is used). The
# superuser sets ALTER DEFAULT PRIVILEGES ... GRANT ALL ON TABLES and ON SEQUENCES TO PUBLIC
# (everywhere and in schema public), then runs CREATE EXTENSION and set_worker_id(5):
#   * the catalog audit (tests/security/audit.sql) reports no privilege of PUBLIC but SELECT on
#     a table or view of the extension;
#   * the ordinary role app cannot change the worker id (UPDATE pg_idgen_worker: 42501; ids keep
#     worker id 5), register a layout (INSERT pg_idgen_layouts: 42501) or put a trigger of its own
#     on pg_idgen_worker (42501), and still reads both tables;
#   * control: a table the superuser creates itself gets PUBLIC's default privileges.
# (Before, the extension's tables that PUBLIC reads were granted SELECT without a revoke first:
# app moved the database's worker id to 9.)
set -euo pipefail
. "$(dirname "$0")/../lib.bash"

C=it_defpriv
SECURITY_DIR=$ROOT/tests/security
cluster_start "$C" 29189 -c pg_idgen.worker_id=-1
q "$C" "CREATE ROLE app LOGIN" "CREATE DATABASE dp" >/dev/null
qdb "$C" dp "ALTER DEFAULT PRIVILEGES GRANT ALL ON TABLES TO PUBLIC" \
    "ALTER DEFAULT PRIVILEGES GRANT ALL ON SEQUENCES TO PUBLIC" \
    "ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT ALL ON TABLES TO PUBLIC" \
    "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" "SELECT set_worker_id(5)" \
    "CREATE TABLE control_t (x int)" >/dev/null
check "control: a table the superuser creates gets PUBLIC's default privileges (UPDATE)" \
    "$(qdb "$C" dp "SELECT has_table_privilege('app', 'control_t', 'UPDATE')")" == t
audit=$("$CLUSTER" psql "$C" -d dp -At -f "$SECURITY_DIR/audit.sql" 2>&1)
check "the audit reports no privilege of PUBLIC but SELECT on the extension's tables and views" \
    "$(grep -c 'PUBLIC has' <<<"$audit" || true)" -eq 0
grep 'PUBLIC has' <<<"$audit" | sed 's/^/    /' | head -5 || true

# app SQL...: the SQLSTATE of the first error of SQL as app in dp (empty: none)
app() {
    local args=() s; for s in "$@"; do args+=(-c "$s"); done
    "$CLUSTER" psql "$C" -d dp -U app -At -v ON_ERROR_STOP=0 -c '\set VERBOSITY verbose' "${args[@]}" 2>&1 \
        | grep -oE 'ERROR: +[0-9A-Z]{5}' | head -1 | grep -oE '[0-9A-Z]{5}$' || true
}
check "app cannot change the database's worker id (UPDATE pg_idgen_worker)" \
    "$(app "UPDATE pg_idgen_worker SET worker_id = 9")" == 42501
check "ids keep the database's worker id 5" \
    "$("$CLUSTER" psql "$C" -d dp -U app -At -c "SELECT (uid_decode(snowflake_next())).worker_id")" -eq 5
check "app cannot register a layout (INSERT pg_idgen_layouts)" \
    "$(app "INSERT INTO pg_idgen_layouts (name, epoch, unit_ms, time_bits, worker_bits, sequence_bits) VALUES ('evil', now(), 1, 41, 10, 12)")" == 42501
check_match "app cannot put a trigger of its own (a function of pg_temp) on pg_idgen_worker" \
    "$("$CLUSTER" psql "$C" -d dp -U app -At -v ON_ERROR_STOP=1 -c '\set VERBOSITY verbose' \
        -c "CREATE FUNCTION pg_temp.app_trg() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NULL; END'" \
        -c "CREATE TRIGGER app_trg AFTER UPDATE ON pg_idgen_worker FOR EACH STATEMENT EXECUTE FUNCTION pg_temp.app_trg()" 2>&1)" \
    'ERROR: +42501: permission denied for table pg_idgen_worker'
check "app still reads pg_idgen_worker and pg_idgen_layouts" \
    "$("$CLUSTER" psql "$C" -d dp -U app -At -c "SELECT (SELECT count(*) FROM pg_idgen_worker) + (SELECT count(*) FROM pg_idgen_layouts) > 0")" == t
finish
