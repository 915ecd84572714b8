#!/usr/bin/env bash
# lease/012_registry_no_password: pg_idgen.registry never holds a password. A setting is shown as it
# is by SHOW, current_setting() and pg_settings (setting and reset_val) to members of
# pg_read_all_settings (so to pg_monitor, the exporter's role), and the postmaster logs each new
# value of a reloaded setting: the value is refused instead (docs/leases-tls.md).
#  1. ALTER SYSTEM with password= or a URI's user:password@: 22023, the error without the value.
#  2. postgresql.conf edited by hand, reloaded: refused, the old value kept; a pg_monitor member
#     and a pg_read_all_settings member see no password through SHOW, SHOW ALL, current_setting,
#     pg_settings (setting, reset_val, boot_val), pg_file_settings (refused to them),
#     pg_db_role_setting (ALTER DATABASE / ROLE ... SET refuse a reload-time setting); the
#     server log has the refusal and not the password (but in the text of a refused statement).
#  3. a password file instead (passfile=): accepted, shown (it holds no secret).
#  4. restarted with the password still in postgresql.conf: the server refuses to start, saying
#     why without the value; once removed, it starts.
# integration: cross-version
set -euo pipefail
. "$(dirname "$0")/../lib.bash"

P=it_regpw
cluster_start "$P" 29041
q "$P" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
    "CREATE ROLE mon LOGIN IN ROLE pg_monitor" "CREATE ROLE ras LOGIN IN ROLE pg_read_all_settings" >/dev/null
DATA=$("$CLUSTER" pgdata "$P")
LOG=$DATA/log/postgresql.log
SECRET=S3cretPw

# no_secret DESCRIPTION TEXT
no_secret() { check "$1: no password" "$([[ $2 == *"$SECRET"* ]] && echo "shows it" || echo clean)" == clean; }
# what ROLE sees of the setting through every view of it
seen_by() {
    q "$P" "SET ROLE $1" "SHOW pg_idgen.registry" "SELECT current_setting('pg_idgen.registry')" \
        "SELECT concat_ws(' | ', setting, reset_val, boot_val) FROM pg_settings WHERE name = 'pg_idgen.registry'" \
        "SELECT setting FROM pg_show_all_settings() WHERE name = 'pg_idgen.registry'" \
        "SHOW ALL" 2>&1
}

# ---- 1. ALTER SYSTEM ----
expect_sql_error "$P" 22023 'invalid value for parameter "pg_idgen.registry": pg_idgen.registry must not hold a password' \
    "ALTER SYSTEM SET pg_idgen.registry = 'host=reg.example user=node password=$SECRET dbname=reg'"
no_secret "1: ALTER SYSTEM with password=: the error" "$LAST_ERR"
expect_sql_error "$P" 22023 'must not hold a password' \
    "ALTER SYSTEM SET pg_idgen.registry = 'postgresql://node:$SECRET@reg.example/reg'"
no_secret "1: ALTER SYSTEM with a URI's password: the error" "$LAST_ERR"
check "1: nothing was written to postgresql.auto.conf" "$(grep -c registry "$DATA/postgresql.auto.conf" || true)" -eq 0
q "$P" "SELECT pg_reload_conf()" >/dev/null
for r in mon ras; do no_secret "1: what $r sees" "$(seen_by $r)"; done

# ---- 2. postgresql.conf by hand ----
q "$P" "ALTER SYSTEM SET pg_idgen.registry = 'host=reg.example user=node dbname=reg'" "SELECT pg_reload_conf()" >/dev/null
wait_until 10 "the first value applied" \
    grep -q 'parameter "pg_idgen.registry" changed to "host=reg.example user=node dbname=reg"' "$LOG"
q "$P" "ALTER SYSTEM RESET pg_idgen.registry" >/dev/null   # postgresql.conf's line below applies
echo "pg_idgen.registry = 'host=reg.example user=node password=$SECRET dbname=reg'" >>"$DATA/postgresql.conf"
q "$P" "SELECT pg_reload_conf()" >/dev/null
wait_until 10 "the reload refuses the value" grep -q 'pg_idgen.registry must not hold a password' "$LOG"
check "2: the old value is kept" "$(q "$P" "SHOW pg_idgen.registry")" == "host=reg.example user=node dbname=reg"
for r in mon ras; do
    no_secret "2: what $r sees (SHOW, current_setting, pg_settings, SHOW ALL)" "$(seen_by $r)"
    expect_sql_error "$P" 42501 'permission denied' "SET ROLE $r" "SELECT setting FROM pg_file_settings"
done
expect_sql_error "$P" 55P02 'cannot be changed now' "ALTER DATABASE postgres SET pg_idgen.registry = 'host=x password=$SECRET'"
expect_sql_error "$P" 55P02 'cannot be changed now' "ALTER ROLE mon SET pg_idgen.registry = 'host=x password=$SECRET'"
no_secret "2: pg_db_role_setting" "$(q "$P" "SELECT coalesce(string_agg(array_to_string(setconfig, ' '), ' '), '') FROM pg_db_role_setting")"
# (a failed statement is logged with its text, log_min_error_statement = error: the refused
# ALTER SYSTEM, ALTER DATABASE and ALTER ROLE of this test are, as a failed ALTER ROLE ...
# PASSWORD is — PostgreSQL's, not the setting's)
no_secret "2: the server log, but for the text of the refused statements" "$(grep -v 'STATEMENT: ' "$LOG")"
check "2: the server log has the refusal of the reload" \
    "$(grep -c 'invalid value for parameter "pg_idgen.registry": pg_idgen.registry must not hold a password' "$LOG")" -ge 1

# ---- 3. the password in a password file ----
PASSFILE=$TMP/pgpass
printf 'reg.example:*:reg:node:%s\n' "$SECRET" >"$PASSFILE"; chmod 600 "$PASSFILE"
sed -i '/^pg_idgen.registry/d' "$DATA/postgresql.conf"
q "$P" "ALTER SYSTEM SET pg_idgen.registry = 'host=reg.example user=node passfile=$PASSFILE dbname=reg'" "SELECT pg_reload_conf()" >/dev/null
wait_until 10 "a passfile= value applies" \
    grep -q "parameter \"pg_idgen.registry\" changed to \"host=reg.example user=node passfile=$PASSFILE dbname=reg\"" "$LOG"
check "3: passfile=: accepted, pg_monitor sees it" "$(q "$P" "SET ROLE mon" "SHOW pg_idgen.registry")" \
    == "host=reg.example user=node passfile=$PASSFILE dbname=reg"
q "$P" "ALTER SYSTEM RESET pg_idgen.registry" >/dev/null

# ---- 4. a password in postgresql.conf at start ----
"$CLUSTER" stop "$P" 2>/dev/null
echo "pg_idgen.registry = 'host=reg.example user=node password=$SECRET dbname=reg'" >>"$DATA/postgresql.conf"
SL=$("$CLUSTER" sockdir "$P")/startup.log
before=$(wc -l <"$SL")
if "$CLUSTER" start "$P" "$(itport 29041)" >/dev/null 2>&1; then
    ko "4: the server started with a password in pg_idgen.registry"
else
    why=$(tail -n +"$((before + 1))" "$SL")
    check_match "4: the server refuses to start, saying why" "$why" 'FATAL: +invalid value for pg_idgen\.registry: pg_idgen\.registry must not hold a password'
    no_secret "4: the startup log" "$why"
fi
sed -i '/^pg_idgen.registry/d' "$DATA/postgresql.conf"
"$CLUSTER" start "$P" "$(itport 29041)" >/dev/null 2>&1
check "4: without it, the server starts" "$(q "$P" "SELECT 1")" -eq 1
finish
