#!/usr/bin/env bash
# security/005_shared_limits: the shared tables of keyed spaces (128 entries, all databases) and of
# segment tags (pg_idgen.max_segments) cannot be filled by a role short of superuser so that
# other databases' keyed_next or segment_next fails. Port 29117.
#  1. A keyed_next that resolves a space while keyed_drop + keyed_create of it are in flight, and
#     waits for them, continues with the space created again instead of failing.
#  2. A role with only CREATEDB clones a template database that has a space (USAGE granted to the
#     role in the template, so in every clone), calls keyed_next in
#     the clone and drops it, 140 times (more than the 128 entries): a space of another database,
#     claimed afterwards, still works (the entries of dropped databases are reclaimed).
#  3. The same role keeps 140 clones alive, each with its space and its segment tag in use: other
#     databases' spaces and tags keep working (entries are evicted, the least recently used
#     first; the segment table has 16 entries here), and a key of an evicted space continues
#     above every value it handed out.
#  4. A database holding a quarter of the segment table or more still gets 53400 for a new tag
#     (it does not evict other databases' tags).
#  5. A database using 40 spaces on the full keyed table holds at most 32 entries (a quarter):
#     beyond that it evicts its own, and every call works.
set -euo pipefail
. "$(dirname "$0")/../lib.bash"

P=it_keyed_limits
# 16 segment-table entries: a database holding 4 (a quarter) or more evicts no other's
cluster_start "$P" 29117 -c max_connections=40 -c pg_idgen.max_segments=16
q "$P" "SET client_min_messages = warning" \
    "CREATE ROLE creator LOGIN CREATEDB" \
    "CREATE DATABASE tpl" "CREATE DATABASE victim" >/dev/null
qdb "$P" tpl "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
    "SELECT keyed_create('msg')" "SELECT keyed_grant('msg', 'creator')" \
    "SELECT segment_create('sq')" "ALTER DATABASE tpl IS_TEMPLATE true" >/dev/null
qdb "$P" victim "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
    "SELECT keyed_create('early')" "SELECT keyed_create('late')" \
    "SELECT segment_create('vs')" "SELECT segment_create('vs2')" >/dev/null
# qc DB SQL...: as the CREATEDB role, connected to DB
qc() {
    local db=$1; shift
    local args=() s
    for s in "$@"; do args+=(-c "$s"); done
    PGDATABASE=$db "$CLUSTER" psql "$P" -At -U creator "${args[@]}"
}
check "the victim's first space works before the attack" \
    "$(qdb "$P" victim "SELECT keyed_next('early', 1)")" == 1
check "the clones are owned by the CREATEDB role" \
    "$(qc postgres "CREATE DATABASE probe TEMPLATE tpl" "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = 'probe'" "DROP DATABASE probe")" == creator
check "the creator role holds CREATEDB and nothing else" \
    "$(q "$P" "SELECT rolsuper OR rolcreaterole OR rolreplication OR rolbypassrls, rolcreatedb FROM pg_roles WHERE rolname = 'creator'")" == "f|t"

# ---- 1. keyed_next racing a committed keyed_drop + keyed_create ----
qdb "$P" victim "SELECT keyed_create('race')" "SELECT keyed_next('race', 1)" >/dev/null
oldseq=$(qdb "$P" victim "SELECT seq::regclass::text FROM pg_idgen_keyed_spaces WHERE space = 'race'")
mkfifo "$TMP/ddl"
PGDATABASE=victim "$CLUSTER" psql "$P" -At <"$TMP/ddl" >"$TMP/ddl.out" 2>&1 &
BG_PIDS+=($!)
exec 7>"$TMP/ddl"
echo "BEGIN; SELECT keyed_drop('race'); SELECT keyed_create('race'); SELECT 'ddl done';" >&7
ddl_done() { grep -q 'ddl done' "$TMP/ddl.out"; }
wait_until 20 "keyed_drop + keyed_create in an open transaction" ddl_done && ok "drop + create of 'race' open"
# this session's first use of 'race' reads the old row and waits for the sequence's drop
PGDATABASE=victim "$CLUSTER" psql "$P" -At -c "SELECT keyed_next('race', 1)" >"$TMP/race.out" 2>&1 &
RACE=$!
BG_PIDS+=($RACE)
# it waits for the space's lock, which keyed_drop holds until its commit: an object lock whose class
# is pg_idgen_keyed_spaces and whose object is the backing sequence's OID
waiting() { [ "$(qdb "$P" victim "SELECT count(*) FROM pg_catalog.pg_locks WHERE locktype = 'object' AND classid = 'pg_idgen_keyed_spaces'::pg_catalog.regclass AND objid = '$oldseq'::pg_catalog.regclass AND NOT granted")" -ge 1 ]; }
wait_until 20 "keyed_next waiting for the lock of the space being dropped" waiting && ok "keyed_next waits for the drop in flight"
echo "COMMIT;" >&7
exec 7>&-
rc=0; wait "$RACE" || rc=$?
check "keyed_next racing a committed drop and create continues with the new space" \
    "$rc:$(tr '\n' ' ' <"$TMP/race.out" | sed 's/ $//')" == "0:1"

# ---- 2. clone, keyed_next, drop, more times than there are entries ----
# qc_batch SCRIPT: one psql session of the CREATEDB role running SCRIPT (\c between databases):
# one process for many clones; a call's failure is a missing line of output, its message in
# $TMP/batch.err
qc_batch() { "$CLUSTER" psql "$P" -At -U creator -d postgres -v ON_ERROR_STOP=0 -f "$1" 2>>"$TMP/batch.err"; }
N=140
for i in $(seq 1 "$N"); do
    printf 'CREATE DATABASE c%d TEMPLATE tpl;\n\\c c%d\nSELECT %s, keyed_next(%s, 1);\n\\c postgres\nDROP DATABASE c%d;\n' \
        "$i" "$i" "'c$i'" "'msg'" "$i"
done >"$TMP/part2.sql"
qc_batch "$TMP/part2.sql" >"$TMP/part2.out" || true
fails=$((N - $(grep -cE '^c[0-9]+\|1$' "$TMP/part2.out" || true)))
check "keyed_next works in each of $N clones made and dropped by a CREATEDB role" "$fails" -eq 0
out=$(qdb "$P" victim "SELECT keyed_next('late', 7)" 2>&1) || true
check "a space of another database claimed after $N dropped clones works" "$out" == 1
check "an existing space of another database continues" \
    "$(qdb "$P" victim "SELECT keyed_next('early', 1)")" == 2

# ---- 3. clones kept alive, each with its space in use ----
M=140
for i in $(seq 1 "$M"); do echo "CREATE DATABASE live$i TEMPLATE tpl;"; done >"$TMP/part3a.sql"
qc_batch "$TMP/part3a.sql" >/dev/null || true
qdb "$P" victim "SELECT segment_next('vs')" >"$TMP/victim.out" 2>&1
# batches of 20 clones, the victim using its spaces and its tag between batches
for b in $(seq 0 $((M / 20 - 1))); do
    for i in $(seq $((b * 20 + 1)) $((b * 20 + 20))); do
        printf '\\c live%d\nSELECT %s, keyed_next(%s, 1), segment_next(%s);\n' "$i" "'live$i'" "'msg'" "'sq'"
    done >"$TMP/part3b.sql"
    qc_batch "$TMP/part3b.sql" >>"$TMP/part3.out" || true
    qdb "$P" victim "SELECT keyed_next('early', 1)" "SELECT keyed_next('late', 7)" "SELECT segment_next('vs')" >>"$TMP/victim.out" 2>&1 || true
done
fails=$((M - $(grep -cE '^live[0-9]+\|1\|1$' "$TMP/part3.out" || true)))
[ "$fails" = 0 ] || log "first failures: $(head -3 "$TMP/batch.err" | tr '\n' ' ')"
check "keyed_next and segment_next work in each of $M live clones of a CREATEDB role" "$fails" -eq 0
check "a new segment tag of the victim works after the attack" \
    "$(qdb "$P" victim "SELECT segment_next('vs2')" 2>&1)" == 1
check "the victim's tag kept increasing (every value above the one before)" \
    "$(qdb "$P" victim "SELECT segment_next('vs')" | awk -v prev="$(grep -v ERROR "$TMP/victim.out" | awk 'NR % 3 == 1' | tail -1)" '{ print ($1 > prev) ? "yes" : "no" }')" == yes
check "no error in the victim database while $M live clones used their spaces" \
    "$(grep -c ERROR "$TMP/victim.out" || true)" -eq 0
check "the victim's keys kept increasing meanwhile (key 1 of 'early')" \
    "$(qdb "$P" victim "SELECT keyed_next('early', 1)")" -gt 2
inuse=$(qdb "$P" victim "SELECT count(*) FROM keyed_status WHERE bound IS NOT NULL")
check "the victim's two spaces hold entries after the attack" "$inuse" -eq 2
# every clone's space is still usable, and the first ones (evicted by now) continue above 1
fails=0
for i in 1 2 3 $M; do
    v=$(qc "live$i" "SELECT keyed_next('msg', 1)" 2>&1) || true
    [[ $v =~ ^[0-9]+$ ]] && [ "$v" -gt 1 ] || { fails=$((fails + 1)); log "clone live$i again: $v"; }
done
check "a clone's key continues above its last value, evicted or not" "$fails" -eq 0
check_match "the eviction of live spaces is logged" \
    "$("$CLUSTER" log "$P" 2000 | grep -m1 'keyed spaces are in use in the instance' || true)" \
    'more than 128 keyed spaces are in use in the instance'

# ---- 4. a database over its share of the segment table: its own tags are its limit ----
qdb "$P" victim "SELECT segment_create('o' || g) FROM generate_series(1, 4) g" >/dev/null
qdb "$P" victim "SELECT segment_next('o1')" "SELECT segment_next('o2')" >/dev/null || true
out=$(qdb "$P" victim "SELECT segment_next('o3')" "SELECT segment_next('o4')" 2>&1) || true
check_match "a database holding 4 of the 16 segment entries gets 53400 for another tag, with a hint that fits" \
    "$out" "shared segment table is full.*HINT: +This database holds 4 entries or more"

# ---- 5. a database using more spaces than its share of the full keyed table ----
q "$P" "CREATE DATABASE big" >/dev/null
qdb "$P" big "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
    "SELECT count(keyed_create('s' || g)) FROM generate_series(1, 40) g" >/dev/null
got=$(qdb "$P" big "SELECT string_agg(keyed_next('s' || g, 1)::text, ',' ORDER BY g) FROM generate_series(1, 40) g" 2>&1) || true
check "each of 40 spaces of one database works on the full table" \
    "$got" == "$(seq -s, 1 40 | sed 's/[0-9]*/1/g')"
check "that database holds 32 entries (a quarter of 128), not 40" \
    "$(qdb "$P" big "SELECT count(*) FROM keyed_status WHERE bound IS NOT NULL")" -eq 32

finish
