#!/usr/bin/env bash
# lease/013_registry_node_roles — a node's registry credentials act for that node only, and a node set
# up with exactly the grants docs/worker-ids.md lists is healthy. Three clusters on ports
# 29160-29162 (+ IT_PORT_OFFSET): R the registry (leases off), N1 and N2 in fixed mode for worker
# ids 1 and 2, each connecting as its own role (idgen_node1, idgen_node2), set up by running the
# SQL block of docs/worker-ids.md ("Registry roles") as it stands there.
#  1. With exactly those grants, after several renewals: N1's failures = 0, one registry session
#     all along (no reconnection), no WARNING in N1's log. N1's worker id has no registry slot: its
#     lease worker sends only the renewal.
#  2. Tag 'o' (slots => 2, registry => true) on both nodes; the registry assigns slot 0 to worker
#     id 1, slot 1 to 2. N1 hands out 10 values of slot 0.
#  3. As idgen_node2 on the registry: the hostile UPDATE (slot 0 to owner 2, ceiling and floor 0)
#     and every other direct write (INSERT, UPDATE, DELETE, TRUNCATE, LOCK of both tables; a row
#     in pg_idgen_registry_nodes) and reading the tokens are refused (42501); so is every
#     registry function called for worker id 1 (42501 "may not act for worker id 1"); for its
#     own worker id 2 under a token that is not N2's, the functions change nothing. A role of the
#     group without a mapping row may lease no id (42501); a role without the grants may not
#     call the functions (42501). The functions are SECURITY DEFINER with a pinned search_path,
#     owned by the extension's owner, not executable by PUBLIC.
#  4. After two more rounds of each node: N1 still serves slot 0 and N2 slot 1; none of N1's
#     values is handed out again by N2 (0 duplicates among N1's 20 and N2's 40); failures = 0 on
#     both nodes.
#  5. A CREATEDB role's own database with the tag uses N1's slots first after a restart and shuts
#     N1's database out (pg_idgen.registry_database unset); with the setting naming N1's database
#     and a reload, that database serves them again, above every value the other handed out, and
#     the other gets 55000.
# Pass/fail never depends on timing: every wait polls for a state, with a generous bound (90 s).
set -euo pipefail
. "$(dirname "$0")/../lib.bash"
. "$(dirname "$0")/../lease.bash"

R=it_rnreg
N1=it_rnn1
N2=it_rnn2
PR=$(itport 29160)
L=(-c pg_idgen.lease_mode=fixed -c pg_idgen.lease_ttl=6 -c pg_idgen.lease_margin=1)
rq() { q "$R" "$@"; }
as() { local role=$1; shift; "$CLUSTER" psql "$R" -U "$role" -At "${@/#/-c}" 2>&1 || true; }

# The SQL block of docs/worker-ids.md after the marker line: the part before "-- per node" once,
# the rest per node with the role name and worker ids replaced.
DOC_SQL=$(awk '/<!-- registry-roles-sql -->/ { f = 1; next } f && /^```sql/ { g = 1; next } g && /^```/ { exit } g { print }' docs/worker-ids.md)
[ -n "$DOC_SQL" ] || { ko "docs/worker-ids.md has no SQL block after <!-- registry-roles-sql -->"; finish; }
ONCE=$(sed '/^-- per node/,$d' <<<"$DOC_SQL")
PER_NODE=$(sed -n '/^-- per node/,$p' <<<"$DOC_SQL")
grep -q "idgen_node1" <<<"$PER_NODE" || { ko "the per-node part of the documented SQL names no idgen_node1"; finish; }
node_sql() { sed "s/idgen_node1/$1/g; s/'$1', 1, 1)/'$1', $2, $2)/" <<<"$PER_NODE"; }

cluster_start "$R" 29160 -c pg_idgen.worker_id=-1
rq "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
"$CLUSTER" psql "$R" -v ON_ERROR_STOP=1 -q <<<"$ONCE" >/dev/null
"$CLUSTER" psql "$R" -v ON_ERROR_STOP=1 -q <<<"$(node_sql idgen_node1 1)" >/dev/null
"$CLUSTER" psql "$R" -v ON_ERROR_STOP=1 -q <<<"$(node_sql idgen_node2 2)" >/dev/null
check "the documented SQL mapped each node's role to its worker id" \
    "$(rq "SELECT string_agg(role_name || ':' || first_worker || '-' || last_worker, ',' ORDER BY role_name) FROM pg_idgen_registry_nodes")" \
    == "idgen_node1:1-1,idgen_node2:2-2"

reg_of() { echo "host=127.0.0.1 port=$PR user=$1 dbname=postgres connect_timeout=2"; }
cluster_start "$N1" 29161 "${L[@]}" -c pg_idgen.worker_id=1 -c pg_idgen.node_name=n1 -c "pg_idgen.registry=$(reg_of idgen_node1)"
cluster_start "$N2" 29162 "${L[@]}" -c pg_idgen.worker_id=2 -c pg_idgen.node_name=n2 -c "pg_idgen.registry=$(reg_of idgen_node2)"
for n in "$N1" "$N2"; do q "$n" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null; done
wait_for "N1 holds worker id 1" state_is "$N1" held
wait_for "N2 holds worker id 2" state_is "$N2" held

# ---- 1. exactly the documented grants: healthy ----
session() { rq "SELECT string_agg(pid || '@' || backend_start, ',') FROM pg_stat_activity WHERE usename = '$1'"; }
S1=$(session idgen_node1)
R0=$(lease "$N1" renewals)
renewed() { [ "$(lease "$N1" renewals)" -ge $((R0 + 4)) ]; }
wait_for "1: N1 renewed 4 more times" renewed
check "1: N1's failures after $(lease "$N1" renewals) renewals" "$(lease "$N1" failures)" -eq 0
check "1: N1 kept its one registry session (no reconnection)" "$(session idgen_node1)" == "$S1"
check "1: no WARNING in N1's log" "$(grep -c 'WARNING' "$("$CLUSTER" pgdata "$N1")/log/postgresql.log" || true)" -eq 0

# ---- 2. registry slots ----
for n in "$N1" "$N2"; do
    q "$n" "SET client_min_messages = warning" "SELECT segment_create('o', 10, slots => 2, registry => true)" >/dev/null
done
check "2: the registry assigns slot 0 to worker id 1, slot 1 to 2" "$(rq "SELECT segment_registry_assign('o', 2, ARRAY[1, 2])")" -eq 2
owned_is() { [ "$(q "$1" "SELECT coalesce((SELECT owned_slots::text FROM segment_status WHERE tag = 'o'), '{}')")" = "$2" ]; }
wait_for "2: N1 serves slot 0" owned_is "$N1" "{0}"
wait_for "2: N2 serves slot 1" owned_is "$N2" "{1}"
q "$N1" "SELECT segment_next('o') FROM generate_series(1, 10)" >"$TMP/n1.vals"
check "2: N1 handed out 10 values" "$(sort -u "$TMP/n1.vals" | wc -l)" -eq 10

# ---- 3. node 2's credentials against node 1's rows ----
OWNERS="SELECT string_agg(concat_ws(' ', tag, slot, owner, owner_token, state, move_to, ceiling, floor), ';' ORDER BY tag, slot) FROM pg_idgen_segment_owners"
BEFORE=$(rq "$OWNERS")
refused() {   # DESC ROLE SQLSTATE-REGEX SQL: SQL as ROLE fails with an error matching the regex
    local desc=$1 role=$2 re=$3 out; shift 3
    out=$(as "$role" '\set VERBOSITY verbose' "$@")
    if [[ $out =~ ERROR:\ +$re ]]; then ok "3: $desc: refused (${BASH_REMATCH[0]})"; else ko "3: $desc: not refused: $(head -c 300 <<<"$out" | tr '\n' ' ')"; fi
}
refused "the hostile UPDATE (slot 0 to owner 2, ceiling and floor 0)" idgen_node2 "42501: permission denied for table pg_idgen_segment_owners" \
    "UPDATE pg_idgen_segment_owners SET owner = 2, owner_token = NULL, ceiling = 0, floor = 0 WHERE tag = 'o' AND slot = 0"
refused "INSERT into pg_idgen_segment_owners" idgen_node2 "42501: permission denied" \
    "INSERT INTO pg_idgen_segment_owners (tag, slot, slots, owner) VALUES ('p', 0, 1, 2)"
refused "DELETE from pg_idgen_segment_owners" idgen_node2 "42501: permission denied" "DELETE FROM pg_idgen_segment_owners"
refused "TRUNCATE pg_idgen_segment_owners" idgen_node2 "42501: permission denied" "TRUNCATE pg_idgen_segment_owners"
refused "LOCK pg_idgen_segment_owners" idgen_node2 "42501: permission denied" "BEGIN" "LOCK TABLE pg_idgen_segment_owners IN SHARE ROW EXCLUSIVE MODE"
refused "UPDATE of node 1's lease (hwm_ms 0)" idgen_node2 "42501: permission denied for table pg_idgen_leases" \
    "UPDATE pg_idgen_leases SET hwm_ms = 0, released_at = now() WHERE worker_id = 1"
refused "INSERT into pg_idgen_leases" idgen_node2 "42501: permission denied" \
    "INSERT INTO pg_idgen_leases (worker_id, system_identifier, node_name, host, port, token, since, renewed_at, lease_until) VALUES (9, 1, 'x', 'x', 1, 1, now(), now(), now())"
refused "DELETE from pg_idgen_leases" idgen_node2 "42501: permission denied" "DELETE FROM pg_idgen_leases"
refused "TRUNCATE pg_idgen_leases" idgen_node2 "42501: permission denied" "TRUNCATE pg_idgen_leases"
refused "LOCK pg_idgen_leases" idgen_node2 "42501: permission denied" "BEGIN" "LOCK TABLE pg_idgen_leases IN SHARE ROW EXCLUSIVE MODE"
refused "reading the tokens" idgen_node2 "42501: permission denied" "SELECT token FROM pg_idgen_leases"
refused "a row of its own in pg_idgen_registry_nodes" idgen_node2 "42501: permission denied" \
    "INSERT INTO pg_idgen_registry_nodes VALUES ('idgen_node2', 1, 1)"
NOT1="42501: role \"idgen_node2\" may not act for worker id 1"
refused "pg_idgen_lease_claim for worker id 1" idgen_node2 "$NOT1" \
    "SELECT * FROM pg_idgen_lease_claim(1, NULL, NULL, '1', 'n1', 'h', 1, 42, 6, true, 0, 0, NULL, NULL, NULL)"
refused "pg_idgen_lease_release of worker id 1" idgen_node2 "$NOT1" "SELECT pg_idgen_lease_release(1, 42, 0)"
refused "pg_idgen_slot_rows of worker id 1" idgen_node2 "$NOT1" "SELECT * FROM pg_idgen_slot_rows(1, 42)"
refused "pg_idgen_slot_take for worker id 1" idgen_node2 "$NOT1" "SELECT * FROM pg_idgen_slot_take('o', 0, 1, 42)"
refused "pg_idgen_slot_raise for worker id 1" idgen_node2 "$NOT1" "SELECT * FROM pg_idgen_slot_raise('o', 0, 1, 42, 1000000)"
refused "pg_idgen_slot_release for worker id 1" idgen_node2 "$NOT1" "SELECT pg_idgen_slot_release('o', 0, 1, 42, NULL)"
# its own worker id, not N2's token: nothing changes
check "3: pg_idgen_slot_take of slot 0 for worker id 2 under another token: refused (no row)" \
    "$(as idgen_node2 "SELECT count(*) FROM pg_idgen_slot_take('o', 0, 2, 42)")" == 0
check "3: pg_idgen_slot_rows of worker id 2 under another token: no row" \
    "$(as idgen_node2 "SELECT count(*) FROM pg_idgen_slot_rows(2, 42)")" == 0
check "3: pg_idgen_lease_release of worker id 2 under another token: false" \
    "$(as idgen_node2 "SELECT pg_idgen_lease_release(2, 42, 0)")" == f
check "3: pg_idgen_lease_claim of worker id 2 (held by N2) under another token: not granted" \
    "$(as idgen_node2 "SELECT granted FROM pg_idgen_lease_claim(2, NULL, NULL, '1', 'n2', 'h', 1, 42, 6, true, 0, 0, NULL, NULL, NULL)")" == f
check "3: pg_idgen_segment_owners unchanged by all of it" "$(rq "$OWNERS")" == "$BEFORE"
check "3: N2's holder fingerprint is not its token" \
    "$(rq "SELECT count(*) FROM pg_idgen_leases l, pg_idgen_registry_token_fp(l.token) fp WHERE fp = l.token")" == 0
rq "CREATE ROLE idgen_stranger LOGIN IN ROLE idgen_nodes" "CREATE ROLE idgen_nobody LOGIN" >/dev/null
refused "a role of the group without a mapping row, choosing in 0-100" idgen_stranger \
    "42501: role \"idgen_stranger\" may not act for any worker id of 0-100" \
    "SELECT * FROM pg_idgen_lease_claim(NULL, 0, 100, '1', 'x', 'h', 1, 42, 6, false, 0, 0, NULL, NULL, NULL)"
refused "a role without the grants" idgen_nobody "42501: permission denied for function pg_idgen_lease_release" \
    "SELECT pg_idgen_lease_release(1, 42, 0)"
check "3: the registry's node functions: SECURITY DEFINER, search_path pinned, owned by the extension's owner, no PUBLIC EXECUTE" \
    "$(rq "SELECT count(*) FILTER (WHERE p.prosecdef AND p.proconfig[1] = 'search_path=pg_catalog, pg_temp'
                 AND p.proowner = e.extowner AND NOT has_function_privilege('public', p.oid, 'EXECUTE')) || '/' || count(*)
           FROM pg_proc p, pg_extension e WHERE e.extname = 'pg_idgen'
            AND p.proname IN ('pg_idgen_lease_claim', 'pg_idgen_lease_release', 'pg_idgen_slot_rows',
                              'pg_idgen_slot_take', 'pg_idgen_slot_raise', 'pg_idgen_slot_release')")" == "6/6"
check "3: the internal helpers: not executable by PUBLIC nor by the nodes' group" \
    "$(rq "SELECT count(*) FROM pg_proc WHERE proname LIKE 'pg_idgen_registry\_%'
             AND NOT has_function_privilege('public', oid, 'EXECUTE') AND NOT has_function_privilege('idgen_node2', oid, 'EXECUTE')")" == 5

# ---- 4. afterwards ----
A1=$(lease "$N1" renewals); A2=$(lease "$N2" renewals)
rounds() { [ "$(lease "$N1" renewals)" -ge $((A1 + 2)) ] && [ "$(lease "$N2" renewals)" -ge $((A2 + 2)) ]; }
wait_for "4: two more rounds of each node" rounds
check "4: N1 still serves slot 0" "$(q "$N1" "SELECT owned_slots::text FROM segment_status WHERE tag = 'o'")" == "{0}"
check "4: N2 still serves slot 1 only" "$(q "$N2" "SELECT owned_slots::text FROM segment_status WHERE tag = 'o'")" == "{1}"
q "$N1" "SELECT segment_next('o') FROM generate_series(1, 10)" >>"$TMP/n1.vals" 2>&1 || true
check "4: N1 handed out 10 more values" "$(grep -cE '^[0-9]+$' "$TMP/n1.vals")" -eq 20
q "$N2" "SELECT segment_next('o') FROM generate_series(1, 40)" >"$TMP/n2.vals" 2>&1 || true
check "4: N2 handed out 40 values" "$(grep -cE '^[0-9]+$' "$TMP/n2.vals")" -eq 40
check "4: duplicates among N1's 20 and N2's 40 values" "$(sort "$TMP/n1.vals" "$TMP/n2.vals" | uniq -d | wc -l)" -eq 0
check "4: failures on N1" "$(lease "$N1" failures)" -eq 0
check "4: failures on N2" "$(lease "$N2" failures)" -eq 0
# ---- 5. which database serves the node's slots ----
# A role with CREATEDB makes a database of its own with the tag; after a restart it uses the
# slots first and binds them (pg_idgen.registry_database unset): the node's own database is shut
# out. With the setting naming the node's database and a reload, that database serves the slots
# again (continuing above everything the other handed out) and the other gets 55000.
q "$N1" "CREATE ROLE mallory LOGIN CREATEDB" >/dev/null
"$CLUSTER" psql "$N1" -U mallory -d postgres -c "CREATE DATABASE mallorydb" >/dev/null
qdb "$N1" mallorydb "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
    "SELECT segment_create('o', 10, slots => 2, registry => true)" "GRANT USAGE ON SCHEMA public TO mallory" >/dev/null
"$CLUSTER" restart "$N1" "${L[@]}" -c pg_idgen.worker_id=1 -c pg_idgen.node_name=n1 -c "pg_idgen.registry=$(reg_of idgen_node1)" >/dev/null 2>&1
wait_for "5: N1 holds worker id 1 again after its restart" state_is "$N1" held
wait_for "5: N1 holds slot 0 again" owned_is "$N1" "{0}"
"$CLUSTER" psql "$N1" -U mallory -d mallorydb -At -c "SELECT segment_next('o') FROM generate_series(1, 5)" >"$TMP/m.vals" 2>&1 || true
check "5: unset, mallory's database used the slots first (5 values)" "$(grep -cE '^[0-9]+$' "$TMP/m.vals")" -eq 5
expect_sql_error "$N1" 55000 'served by another database of this node' "SELECT segment_next('o')"
check_match "5: its hint names the setting" "$LAST_ERR" "pg_idgen.registry_database"
q "$N1" "ALTER SYSTEM SET pg_idgen.registry_database = 'postgres'" "SELECT pg_reload_conf()" >/dev/null
setting_is() { [ "$(q "$1" "SHOW pg_idgen.registry_database")" = "$2" ]; }
wait_for "5: the setting reloaded" setting_is "$N1" postgres
q "$N1" "SELECT segment_next('o') FROM generate_series(1, 10)" >"$TMP/n1b.vals" 2>&1 || true
check "5: set, the node's database serves the slots again (10 values)" "$(grep -cE '^[0-9]+$' "$TMP/n1b.vals")" -eq 10
check "5: every one above every value mallory's database handed out" \
    "$(( $(sort -n "$TMP/n1b.vals" | head -1) > $(sort -n "$TMP/m.vals" | tail -1) ))" -eq 1
check "5: no value twice across the node's and mallory's databases and before" \
    "$(sort "$TMP/n1.vals" "$TMP/m.vals" "$TMP/n1b.vals" "$TMP/n2.vals" | uniq -d | wc -l)" -eq 0
out=$("$CLUSTER" psql "$N1" -U mallory -d mallorydb -At -c '\set VERBOSITY verbose' -c "SELECT segment_next('o') FROM generate_series(1, 50)" 2>&1 || true)
check_match "5: mallory's database gets 55000 naming the setting" "$out" "55000: the registry slots of segment tag \"o\" are served by database \"postgres\" on this node"
finish
