#!/usr/bin/env bash
# security/003_migrate_as_owner — pg_idgen_migrate_as_owner (the step of uid_migrate_key that runs a
# statement on a table as the table's owner) gives a caller nothing it could not do itself:
#   A  a member of a superuser role without the SET option (PostgreSQL 16+: GRANT ... WITH SET
#      FALSE; it has the role's privileges but not its attributes) cannot run a statement as that
#      role through it: 42501, and it stays NOSUPERUSER. With the SET option (it could SET ROLE
#      anyway) the statement runs as the owner in a security-restricted context: SET ROLE and
#      RESET ROLE inside are refused.
#   B  a non-member: 42501; NULL arguments: 22004; an unknown table: 42P01.
# integration: major 19
# (in make test's share of 15 and 18: part A's check of GRANT ... WITH SET FALSE needs 16+)
set -euo pipefail
. "$(dirname "$0")/../lib.bash"

cluster_start mao 28956
q mao "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
      "CREATE ROLE regress_boss SUPERUSER NOLOGIN" "CREATE ROLE regress_eve LOGIN" \
      "CREATE TABLE boss_t (id int)" "ALTER TABLE boss_t OWNER TO regress_boss" >/dev/null

# ---- B ----
expect_sql_error mao 42501 'must be owner of table public.boss_t' \
    "SET ROLE regress_eve" "SELECT pg_idgen_migrate_as_owner('boss_t', 'ALTER ROLE regress_eve SUPERUSER')"
expect_sql_error mao 22004 'argument "stmt" must not be NULL' "SELECT pg_idgen_migrate_as_owner('boss_t', NULL)"
expect_sql_error mao 22004 'argument "tbl" must not be NULL' "SELECT pg_idgen_migrate_as_owner(NULL, 'SELECT 1')"
expect_sql_error mao 42P01 'does not exist' "SELECT pg_idgen_migrate_as_owner(4294967295::oid::regclass, 'SELECT 1')"

# ---- A ----
if [ "$PG" -ge 16 ]; then
    q mao "GRANT regress_boss TO regress_eve WITH INHERIT TRUE, SET FALSE" >/dev/null
    expect_sql_error mao 42501 'must be owner of table public.boss_t' \
        "SET SESSION AUTHORIZATION regress_eve" \
        "SELECT pg_idgen_migrate_as_owner('boss_t', 'ALTER ROLE regress_eve SUPERUSER')"
    check "regress_eve (inherits, cannot SET ROLE) is still not superuser" \
        "$(q mao "SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_eve'")" == f
    q mao "REVOKE regress_boss FROM regress_eve" "GRANT regress_boss TO regress_eve WITH INHERIT TRUE, SET TRUE" >/dev/null
else
    q mao "GRANT regress_boss TO regress_eve" >/dev/null   # before 16 a member may always SET ROLE
fi
# a member that may SET ROLE: the statement runs as the owner, security-restricted
check "a member that may SET ROLE runs it as the owner" \
    "$(q mao "SET SESSION AUTHORIZATION regress_eve" \
        "SELECT pg_idgen_migrate_as_owner('boss_t', 'SELECT (current_user = ''regress_boss'')::int::bigint')")" == 1
expect_sql_error mao 42501 'cannot set parameter "role" within security-' \
    "SELECT pg_idgen_migrate_as_owner('boss_t', 'SET ROLE NONE')"
expect_sql_error mao 42501 'security-restricted operation' \
    "SELECT pg_idgen_migrate_as_owner('boss_t', 'CREATE TEMP TABLE tmp_x (i int)')"
check "the caller's user and search_path are back after the call" \
    "$(q mao "SET search_path = public" "SELECT pg_idgen_migrate_as_owner('boss_t', 'SELECT 1::bigint')" \
        "SELECT current_user || ' ' || current_setting('search_path')" | tail -1)" == "postgres public"

finish
