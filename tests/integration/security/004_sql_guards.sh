#!/usr/bin/env bash
# security/004_sql_guards — the guards against privilege holes in the extension's SQL and against errors
# without a real SQLSTATE, on a fresh install (the update tests run the first two after every
# update path):
#  1. the catalog audit (tests/security/audit.sql): every member of pg_idgen — views through their
#     rewrite rules, BEGIN ATOMIC bodies, column defaults, checks, triggers, indexes — binds only
#     pg_catalog's objects and its own; string-bodied and SECURITY DEFINER functions pin
#     search_path = pg_catalog, pg_temp; internal (pg_idgen_*) and SECURITY DEFINER functions are
#     not executable by PUBLIC (but the two listed in audit.sql), and PUBLIC writes no table of
#     the extension (a control shows each rule fires);
#  2. a hostile install: the ordinary role that owns the database (so its schema public, the
#     extension's schema) plants a shadow of every function and operator name the extension's SQL
#     and the library's SPI statements use (generated from the source and the catalog: tests/
#     security/shadow_names.py, bound_names.sql, plant.sql), puts its own schema first in the
#     database's search_path; a superuser installs, and a superuser and that role call every
#     function and read every view, and fire every trigger and event trigger (publications and
#     subscriptions by that role and by a superuser: tests/security/lib.bash,
#     fire_hostile_triggers): no shadow runs, the role stays an ordinary role. A control
#     view created the way 0.4.0's pg_idgen_metrics was (a bare / on (float8, integer)) proves that
#     the shadows and the audit catch such a hole;
#  3. a fuzz layer: every function of the extension, enumerated from pg_proc (gen_calls.sql, mode
#     fuzz), called with NULL in every and in each argument, the extremes of each argument's type
#     and a wrong type in each position, as an ordinary role and as a superuser, plainly and under
#     debug_parallel_query (force_parallel_mode on 15), with RUST_BACKTRACE=full in the server's
#     environment: no XX000, no panic text or backtrace, no backend lost, the postmaster never
#     restarted. Every call is bounded by statement_timeout (a long loop must answer the cancel).
# integration: cross-version
set -euo pipefail
. "$(dirname "$0")/../lib.bash"
. "$ROOT/tests/security/lib.bash"

C=guards
CLUSTER_RUST_BACKTRACE=full cluster_start "$C" 29060 -c pg_idgen.worker_id=3
started=$(q "$C" "SELECT pg_postmaster_start_time()")

# ---------------------------------------------------------------- 1. the catalog audit
q "$C" "CREATE DATABASE ref" >/dev/null
qdb "$C" ref "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
NEW_VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml" | head -1)
check "the version under test is installed" "$(qdb "$C" ref "SELECT extversion FROM pg_extension WHERE extname = 'pg_idgen'")" == "$NEW_VERSION"
check_sql_binds_inside "$C" ref "fresh install"
# the control of the EXECUTE rule: an internal function added to the extension without its REVOKE
# (PUBLIC may then call it) is reported, and no longer once revoked
qdb "$C" ref "CREATE FUNCTION public.pg_idgen_guard_control() RETURNS int LANGUAGE sql SET search_path = pg_catalog, pg_temp AS 'SELECT 1'" \
    "ALTER EXTENSION pg_idgen ADD FUNCTION public.pg_idgen_guard_control()" >/dev/null
check_match "control (EXECUTE): an internal function PUBLIC may execute is reported" \
    "$("$CLUSTER" psql "$C" -d ref -At -f "$SECURITY_DIR/audit.sql" 2>&1)" 'pg_idgen_guard_control\(\): internal or SECURITY DEFINER \(internal\), and PUBLIC may execute it'
qdb "$C" ref "REVOKE ALL ON FUNCTION public.pg_idgen_guard_control() FROM PUBLIC" >/dev/null
check "control (EXECUTE): revoked from PUBLIC, it is not reported" \
    "$("$CLUSTER" psql "$C" -d ref -At -f "$SECURITY_DIR/audit.sql" 2>&1 | grep -c guard_control || true)" -eq 0
qdb "$C" ref "ALTER EXTENSION pg_idgen DROP FUNCTION public.pg_idgen_guard_control()" "DROP FUNCTION public.pg_idgen_guard_control()" >/dev/null
# the control of the table rule: PUBLIC given a write privilege on one of the extension's tables
qdb "$C" ref "GRANT INSERT, UPDATE ON pg_idgen_worker TO PUBLIC" >/dev/null
check_match "control (tables): a write privilege of PUBLIC on an extension's table is reported" \
    "$("$CLUSTER" psql "$C" -d ref -At -f "$SECURITY_DIR/audit.sql" 2>&1)" 'table (public\.)?pg_idgen_worker: PUBLIC has UPDATE on it'
qdb "$C" ref "REVOKE INSERT, UPDATE ON pg_idgen_worker FROM PUBLIC" >/dev/null
check "control (tables): revoked, it is not reported" \
    "$("$CLUSTER" psql "$C" -d ref -At -f "$SECURITY_DIR/audit.sql" 2>&1 | grep -c 'PUBLIC has' || true)" -eq 0
sites=$(python3 "$SECURITY_DIR/nonexact.py" report -- "$CLUSTER" psql "$C" -d ref)
log "call sites whose argument types the parser coerced (each must be schema-qualified):"
sed 's/^/    /' <<<"$sites"
check "the node-tree walk finds the coerced sites it must (pg_idgen_metrics calls jsonb_build_object on text)" \
    "$(grep -c 'pg_idgen_metrics: jsonb_build_object' <<<"$sites" || true)" -ge 1

# ---------------------------------------------------------------- 2. the hostile install
hostile_db "$C" hostile mallory ref
qdb "$C" hostile "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen SCHEMA public" >/dev/null
check "hostile: the version under test is installed in public" \
    "$(sec_q "$C" hostile postgres "SELECT extversion || ' ' || extnamespace::regnamespace FROM pg_extension WHERE extname = 'pg_idgen'")" == "$NEW_VERSION public"
check "hostile: the superuser's CREATE EXTENSION ran no shadow" "$(sec_q "$C" hostile postgres "SELECT count(*) FROM public.hostile_calls")" -eq 0
check_sql_binds_inside "$C" hostile "hostile install"
hostile_state "$C" hostile
check_hostile_calls "$C" hostile mallory "hostile install"
# the controls: holes made by hand the way 0.4.0's pg_idgen_metrics was (a bare / on (float8,
# integer)), and through each other path a name resolves by: a function reached by an implicit
# cast, a polymorphic aggregate, a variadic function, an array operator. Each must be reported by
# the audit, and each must run its shadow when a superuser reads it — so the guards are not vacuous.
CONTROLS=(
    "operator /(double precision,integer)|SELECT 1::float8 / 1000 AS v"
    "function length(character varying)|SELECT length('x'::varchar) AS v"
    "function array_agg(integer)|SELECT array_agg(x) AS v FROM (VALUES (1), (2)) t(x)"
    "function jsonb_build_object(text,text)|SELECT jsonb_build_object('k', 'v'::text) AS v"
    "operator =(integer[],integer[])|SELECT ARRAY[1] = ARRAY[1] AS v"
)
i=0
for ctl in "${CONTROLS[@]}"; do
    what=${ctl%%|*} sql=${ctl#*|} i=$((i + 1))
    PGOPTIONS="-c search_path=public" sec_q "$C" hostile postgres "CREATE VIEW public.hostile_control_$i AS $sql" \
        "ALTER EXTENSION pg_idgen ADD VIEW public.hostile_control_$i" >/dev/null
    re="view (public\.)?hostile_control_$i binds ${what%% *} (public\.)?$(sed 's/[][()|.*+?^$]/\\&/g' <<<"${what#* }")"
    check_match "control $i ($what): the audit reports it" \
        "$("$CLUSTER" psql "$C" -d hostile -At -f "$SECURITY_DIR/audit.sql" 2>&1)" "$re"
    sec_q "$C" hostile postgres "TRUNCATE public.hostile_calls" "SELECT * FROM public.hostile_control_$i" >/dev/null
    check "control $i ($what): reading it as a superuser runs the planted code" \
        "$(sec_q "$C" hostile postgres "SELECT count(*) FROM public.hostile_calls")" -ge 1
done
# the control of the trigger step: an event trigger of the extension whose function lacks the
# pinned search_path (a bare length() on varchar): the step fires it and its shadow runs
sec_q "$C" hostile postgres "CREATE FUNCTION public.hostile_control_et() RETURNS event_trigger LANGUAGE plpgsql AS \$\$ BEGIN PERFORM length('x'::varchar); END \$\$" \
    "CREATE EVENT TRIGGER hostile_control_et ON ddl_command_end WHEN TAG IN ('CREATE PUBLICATION') EXECUTE FUNCTION public.hostile_control_et()" \
    "ALTER EXTENSION pg_idgen ADD FUNCTION public.hostile_control_et()" "ALTER EXTENSION pg_idgen ADD EVENT TRIGGER hostile_control_et" \
    "TRUNCATE public.hostile_calls" >/dev/null
fire_hostile_triggers "$C" hostile mallory "control (trigger step)" >/dev/null
check "control (trigger step): firing the extension's triggers runs the planted code of an unpinned event trigger function" \
    "$(sec_q "$C" hostile postgres "SELECT count(*) FROM public.hostile_calls")" -ge 1
check "the controls made mallory a superuser (what the guards prevent)" "$(sec_q "$C" hostile postgres "SELECT rolsuper FROM pg_roles WHERE rolname = 'mallory'")" == t

# ---------------------------------------------------------------- 3. the fuzz layer
q "$C" "CREATE DATABASE fuzz" "CREATE ROLE fuzzer LOGIN NOSUPERUSER" >/dev/null
qdb "$C" fuzz "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
    "SELECT segment_create('hostile', 10)" "SELECT keyed_create('hostile')" \
    "SELECT uid_mask_key_create('hostile')" "SELECT uid_layout_register('hostile', '2020-01-01Z', 41, 10, 12)" >/dev/null
calls=$TMP/fuzz.sql
"$CLUSTER" psql "$C" -d fuzz -At -v mode=fuzz -f "$SECURITY_DIR/gen_calls.sql" | grep -v '^SET$' > "$calls"
nfn=$(qdb "$C" fuzz "SELECT count(*) FROM pg_depend WHERE classid = 'pg_proc'::regclass AND deptype = 'e' AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_idgen')")
log "fuzz: $(wc -l < "$calls") calls over the extension's $nfn functions and its views"
parallel_opt=$([ "$PG" -ge 16 ] && echo "debug_parallel_query=regress" || echo "force_parallel_mode=regress")
for role in fuzzer postgres; do
    for par in plain parallel; do
        opts="-c statement_timeout=5s -c client_min_messages=error"
        [ $par = plain ] || opts="$opts -c $parallel_opt"
        out=$TMP/fuzz-$role-$par.out
        rc=0
        PGOPTIONS="$opts" timeout 900 "$CLUSTER" psql "$C" -U "$role" -d fuzz -At -v ON_ERROR_STOP=0 -v VERBOSITY=verbose \
            -c '\set VERBOSITY verbose' -c '\set ECHO errors' -f "$calls" >"$out" 2>&1 || rc=$?
        check "fuzz as $role ($par): psql ran every call to its end" "$rc" -eq 0
        errors=$(grep -c '^psql:.*ERROR:' "$out" || true)
        check "fuzz as $role ($par): $errors errors, none XX000" "$(grep -c 'ERROR:  XX000' "$out" || true)" -eq 0
        grep -B1 'ERROR:  XX000' "$out" | head -10 | sed 's/^/    /' || true
        check "fuzz as $role ($par): no panic text, no backtrace in any message" \
            "$(grep -v '^LOCATION:' "$out" | grep -Eci 'panick|backtrace|at src/|^ *[0-9]+: [a-z_]+::' || true)" -eq 0
        check "fuzz as $role ($par): no lost connection" "$(grep -Eci 'server closed the connection|connection to server .* lost|terminating connection' "$out" || true)" -eq 0
    done
done
log_file=$("$CLUSTER" pgdata "$C")/log/postgresql.log
check "no backend terminated by a signal" "$(grep -c 'terminated by signal' "$log_file" || true)" -eq 0
check "no panic text or backtrace in the server log" "$(grep -Eci 'panicked|stack backtrace|at src/[a-z_/]*\.rs' "$log_file" || true)" -eq 0
check "the postmaster never restarted" "$(q "$C" "SELECT pg_postmaster_start_time()")" == "$started"
finish
