#!/usr/bin/env bash
# segment/016_registry_marks_dropped_databases — the registry marks' (database, name) pairs of the
# databases a node dropped are given back by the node itself, without a superuser of the
# registry: a role with only CREATEDB that clones a template with a registry_marks tag, uses it
# and drops the clone cannot use up the node's 1024 pairs. Two clusters on ports 29099-29100
# (+ IT_PORT_OFFSET): R the registry, its node role idgen_node1 set up by the SQL block of
# docs/worker-ids.md ("Registry roles") as it stands; P a node (fixed lease of worker id 1,
# connecting as idgen_node1) with databases tpl (a template: tag 'tt' with registry_marks, keyed
# space 'kt' with registry => true, USAGE granted to creator) and app (tag 'early' in use), and
# the role creator (LOGIN CREATEDB, nothing else).
#  1. creator runs ROUNDS rounds (default 40; MARKS_ROUNDS=1024 runs the whole attack) of: CREATE
#     DATABASE cN TEMPLATE tpl, segment_next('tt') and keyed_next('kt', 1) in cN, DROP DATABASE
#     cN; and keeps one clone (keep) alive with both in use. Each round left one segment and one
#     keyed pair in the registry keyed by a database P no longer has (with the whole attack, the
#     bound is reached during the rounds: every round works, and fewer dead pairs than rounds are
#     left, the node having forgotten them; 1,024 rounds took 517 s here).
#  2. A registry superuser adds the pairs the remaining rounds of the attack would have left (rows
#     for database oids P does not have), up to 1024 pairs of each kind.
#  3. app: a new tag 'late' (registry_marks) and a new space 'kl' (registry => true) get their
#     first pairs: segment_next and keyed_next work (55000 "already name 1024 (database, tag)
#     pairs" before the fix); the pairs of every database P does not have are gone from the
#     registry; those of app and of the live clone keep are kept, with their bounds.
#  4. Another role's node cannot forget this node's marks (42501), nor can a role without the
#     grant call the function; PUBLIC may not execute it.
# MARKS_DOC=<file>: the SQL block of that copy of docs/worker-ids.md instead (a control run on
# 0.5.0's code uses 0.5.0's page, whose block names no pg_idgen_marks_forget).
# Pass/fail never depends on timing: waits poll for states (90 s bound).
set -euo pipefail
. "$(dirname "$0")/../lib.bash"
. "$(dirname "$0")/../lease.bash"

R=it_mdreg
P=it_mdp
PR=$(itport 29099)
ROUNDS=${MARKS_ROUNDS:-40}
rq() { q "$R" "$@"; }
DOC_SQL=$(awk '/<!-- registry-roles-sql -->/ { f = 1; next } f && /^```sql/ { g = 1; next } g && /^```/ { exit } g { print }' ${MARKS_DOC:-docs/worker-ids.md})
[ -n "$DOC_SQL" ] || { ko "docs/worker-ids.md has no SQL block after <!-- registry-roles-sql -->"; finish; }
cluster_start "$R" 29099 -c pg_idgen.worker_id=-1
rq "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
"$CLUSTER" psql "$R" -v ON_ERROR_STOP=1 -q <<<"$DOC_SQL" >/dev/null
"$CLUSTER" psql "$R" -v ON_ERROR_STOP=1 -q <<<"$(sed -n '/^-- per node/,$p' <<<"$DOC_SQL" | sed 's/idgen_node1/idgen_node2/g; s/, 1, 1)/, 2, 2)/')" >/dev/null
rq "CREATE ROLE plain_login LOGIN" >/dev/null

cluster_start "$P" 29100 -c pg_idgen.lease_mode=fixed -c pg_idgen.lease_ttl=6 -c pg_idgen.lease_margin=1 \
    -c pg_idgen.worker_id=1 -c pg_idgen.node_name=n1 -c max_connections=40 \
    -c "pg_idgen.registry=host=127.0.0.1 port=$PR user=idgen_node1 dbname=postgres connect_timeout=2"
q "$P" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
wait_for "P holds worker id 1" state_is "$P" held
q "$P" "SET client_min_messages = warning" "CREATE ROLE creator LOGIN CREATEDB" "CREATE DATABASE tpl" "CREATE DATABASE app" >/dev/null
qdb "$P" tpl "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
    "SELECT segment_create('tt', 10, registry_marks => true)" \
    "SELECT keyed_create('kt', registry => true)" "SELECT keyed_grant('kt', 'creator')" \
    "ALTER DATABASE tpl IS_TEMPLATE true" >/dev/null
qdb "$P" app "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
    "SELECT segment_create('early', 10, registry_marks => true)" "SELECT segment_next('early')" >/dev/null
SYSID=$(q "$P" "SELECT system_identifier FROM pg_control_system()")
check "the creator role holds CREATEDB and nothing else" \
    "$(q "$P" "SELECT rolsuper OR rolcreaterole OR rolreplication OR rolbypassrls, rolcreatedb FROM pg_roles WHERE rolname = 'creator'")" == "f|t"

# ---- 1. the clone, use and drop rounds ----
T0=$(date +%s.%N)
{
    for i in $(seq 1 "$ROUNDS"); do
        printf 'CREATE DATABASE c%d TEMPLATE tpl;\n\\c c%d\nSELECT segment_next(%s), keyed_next(%s, 1);\n\\c postgres\nDROP DATABASE c%d;\n' \
            "$i" "$i" "'tt'" "'kt'" "$i"
    done
    printf 'CREATE DATABASE keep TEMPLATE tpl;\n\\c keep\nSELECT segment_next(%s), keyed_next(%s, 1);\n' "'tt'" "'kt'"
} >"$TMP/rounds.sql"
"$CLUSTER" psql "$P" -At -U creator -d postgres -v ON_ERROR_STOP=1 -q -f "$TMP/rounds.sql" >"$TMP/rounds.out" 2>"$TMP/rounds.err" || true
check "1: creator's $ROUNDS rounds and the live clone ran without an error" "$(grep -c ERROR "$TMP/rounds.err" || true)" -eq 0
log "1: $ROUNDS rounds in $(awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
DBS=$(q "$P" "SELECT string_agg(oid::text, ',') FROM pg_database")
dead_pairs() { rq "SELECT count(DISTINCT (database, $2)) FROM $1 WHERE system_identifier = $SYSID AND database NOT IN ($DBS)"; }
if [ $((ROUNDS + 2)) -le 1024 ]; then
    check "1: segment pairs of databases P no longer has" "$(dead_pairs pg_idgen_segment_marks tag)" -eq "$ROUNDS"
    check "1: keyed pairs of databases P no longer has" "$(dead_pairs pg_idgen_keyed_marks space)" -eq "$ROUNDS"
else   # the whole attack: the bound was reached during the rounds, and the node forgot the dead pairs then
    check "1: segment pairs of databases P no longer has, fewer than the rounds (forgotten when the bound was reached)" \
        "$(dead_pairs pg_idgen_segment_marks tag)" -lt "$ROUNDS"
    check "1: keyed pairs of databases P no longer has, fewer than the rounds" "$(dead_pairs pg_idgen_keyed_marks space)" -lt "$ROUNDS"
fi

# ---- 2. the rest of the attack's pairs ----
rq "INSERT INTO pg_idgen_segment_marks (system_identifier, database, tag, slot, bound)
    SELECT $SYSID, 4000000000 - g, 'tt', 0, 10 FROM generate_series(1, 1024 - (SELECT count(DISTINCT (database, tag)) FROM pg_idgen_segment_marks WHERE system_identifier = $SYSID)) g" \
   "INSERT INTO pg_idgen_keyed_marks (system_identifier, database, space, bucket, bound)
    SELECT $SYSID, 4000000000 - g, 'kt', 0, 10 FROM generate_series(1, 1024 - (SELECT count(DISTINCT (database, space)) FROM pg_idgen_keyed_marks WHERE system_identifier = $SYSID)) g" >/dev/null
check "2: P's segment marks name 1024 (database, tag) pairs" \
    "$(rq "SELECT count(DISTINCT (database, tag)) FROM pg_idgen_segment_marks WHERE system_identifier = $SYSID")" -eq 1024
check "2: P's keyed marks name 1024 (database, space) pairs" \
    "$(rq "SELECT count(DISTINCT (database, space)) FROM pg_idgen_keyed_marks WHERE system_identifier = $SYSID")" -eq 1024
KEPT="SELECT string_agg(d.datname || ':' || m.tag || ':' || m.bound, ',' ORDER BY d.datname, m.tag) FROM pg_idgen_segment_marks m JOIN (VALUES %s) d(oid, datname) ON d.oid = m.database WHERE m.system_identifier = $SYSID AND m.tag <> 'late'"
VALS=$(q "$P" "SELECT string_agg(format('(%s::oid, %L)', oid, datname), ',') FROM pg_database WHERE datname IN ('app', 'keep')")
KEPT_BEFORE=$(rq "$(printf "$KEPT" "$VALS")")

# ---- 3. the application's new tag and space ----
out=$(qdb "$P" app "SET client_min_messages = warning" "SELECT segment_create('late', 10, registry_marks => true)" \
    "SELECT keyed_create('kl', registry => true)" '\set VERBOSITY verbose' \
    "SELECT segment_next('late') > 0" "SELECT keyed_next('kl', 7) > 0" 2>&1 || true)
check "3: app's new tag and space get their pairs: segment_next and keyed_next work" "$(grep -v '^$' <<<"$out" | tr '\n' ' ')" == "t t "
check "3: segment pairs of databases P no longer has, after" "$(dead_pairs pg_idgen_segment_marks tag)" -eq 0
check "3: keyed pairs of databases P no longer has, after" "$(dead_pairs pg_idgen_keyed_marks space)" -eq 0
check "3: the marks of app and of the live clone keep, kept" "$(rq "$(printf "$KEPT" "$VALS")")" == "$KEPT_BEFORE"
check "3: app's tag 'late' and space 'kl' have their marks" \
    "$(rq "SELECT (SELECT count(*) FROM pg_idgen_segment_marks WHERE system_identifier = $SYSID AND tag = 'late') || ' ' || (SELECT count(*) FROM pg_idgen_keyed_marks WHERE system_identifier = $SYSID AND space = 'kl')")" == "1 1"

# ---- 4. nobody else forgets them ----
sqlstate() { "$CLUSTER" psql "$R" -U "$1" -At -c '\set VERBOSITY verbose' -c "$2" 2>&1 | grep -oE 'ERROR: +[0-9A-Z]{5}' | head -1 | grep -oE '[0-9A-Z]{5}$' || true; }
APP=$(q "$P" "SELECT oid FROM pg_database WHERE datname = 'app'")
check "4: another node's role forgets P's marks of app: refused" \
    "$(sqlstate idgen_node2 "SELECT * FROM pg_idgen_marks_forget('$SYSID', '{$APP}')")" == 42501
check "4: a login role without the grant: refused" \
    "$(sqlstate plain_login "SELECT * FROM pg_idgen_marks_forget('$SYSID', '{$APP}')")" == 42501
check "4: app's marks still there" "$(rq "SELECT count(*) FROM pg_idgen_segment_marks WHERE system_identifier = $SYSID AND database = $APP")" -eq 2
check "4: pg_idgen_marks_forget: SECURITY DEFINER, search_path pinned, not executable by PUBLIC" \
    "$(rq "SELECT prosecdef AND proconfig = '{\"search_path=pg_catalog, pg_temp\"}' AND NOT has_function_privilege('public', oid, 'EXECUTE') FROM pg_proc WHERE proname = 'pg_idgen_marks_forget'")" == t
finish
