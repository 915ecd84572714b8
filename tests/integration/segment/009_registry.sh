#!/usr/bin/env bash
# segment/009_registry: stride slots owned through the lease registry (segment_create(...,
# registry => true)), moved while load runs. A fleet of four nodes with leased worker ids
# (scripts/fleet.sh start --lease, ttl 6 s), the aggregator is the registry; ports 29070-29074
# (+ IT_PORT_OFFSET). Tag 'o' with slots => 12 (unit 10) on every node; the registry assigns
# N1, N2, N3 four slots each, N4 none. One load client per serving node (many short
# transactions, each statement's values in order).
#  0. argument errors: registry => true on a server without a lease registry (55000), with
#     owned (22023); explicit release/adopt of a registry-owned slot (0A000); N4 holds no slot
#     (55000).
#  A. N4 joins: `fleet.sh registry-move-slots o 3 4` (one registry operation) while load runs:
#     N4 takes 3 slots, each after its owner stopped serving it, and continues at its ceiling.
#  B. a stale mark is refused by the explicit hand-over (22023) on a tag without the registry.
#  C. N2 leaves: `fleet.sh registry-drain-slots o 2` while load runs; N2's segment_next then
#     fails (55000).
#  D. N3 killed (kill -9) while it serves; `fleet.sh registry-drain-slots o 3`: its slots move
#     only after its lease expired (the registry's rows changed after the lease's end), to N1
#     and N4, while load runs there.
#  D2. a slot of N4 is set moving to N2, and N2 is killed: the move can be sent elsewhere (N1)
#     only once N2's lease ended (55000 before), and N1 takes it.
#  E. N1 restarted (fast stop, start): the same slot set, continuing above its ceilings.
#     N4's database dumped, dropped and restored: the same slot set, values continue above; a
#     second database of N4 with the same registry tag is refused (55000).
#  F. over the whole run: 0 duplicates across all nodes; every value lies in a slot its node
#     held at the time (by the registry's floors: the owner of chunk c of slot s is the one that
#     took s at the highest floor <= c); values per slot increase on each node.
#  G. the registry stopped: once N1's lease ran out, its segment_next fails (55000), although
#     values of the tag were cached.
set -euo pipefail
. "$(dirname "$0")/../lib.bash"
. "$(dirname "$0")/../lease.bash"

FLEET=$ROOT/scripts/fleet.sh
F=it_sr
DB=app
BASE=$(itport 29070)   # the fleet: 29070 (agg = registry), 29071-29074
RUN_DIR=$("$CLUSTER" rundir)
for c in ${F}agg ${F}1 ${F}2 ${F}3 ${F}4; do register_cluster "$c"; done
trap 'rc=$?; set +e; rm -f "$RUN_DIR/$F.fleet"; (exit $rc); cleanup' EXIT
"$FLEET" start --name "$F" --nodes 4 --base-port "$BASE" --lease --lease-ttl 6 --db "$DB" >"$TMP/fleet.out" 2>&1 \
    || { cat "$TMP/fleet.out"; exit 1; }
# the options fleet.sh gave node i (for a restart)
node_opts() {
    echo "-c pg_idgen.worker_id=-1 -c pg_idgen.lease_mode=auto -c pg_idgen.node_name=node$1 -c pg_idgen.lease_range=1-4 -c pg_idgen.lease_ttl=6 -c pg_idgen.lease_margin=1"
}
nq() { local n=$1; shift; qdb "$F$n" "$DB" "$@"; }
reg() { qdb "${F}agg" "$DB" "$@"; }
held_lease() { [ "$(nq "$1" "SELECT state FROM snowflake_lease()")" = held ]; }
for n in 1 2 3 4; do wait_for "node $n holds a worker id lease" held_lease "$n"; done
W=()
for n in 1 2 3 4; do W[$n]=$(reg "SELECT worker_id FROM pg_idgen_leases WHERE node_name = 'node$n'"); done
log "worker ids: N1 ${W[1]}, N2 ${W[2]}, N3 ${W[3]}, N4 ${W[4]}"

# ---- 0 ----
expect_sql_error_db() { local n=$1 db=$2; shift 2; PGDATABASE=$db expect_sql_error "$n" "$@"; }
expect_sql_error_db ${F}agg $DB 55000 "registry => true needs a lease registry" \
    "SELECT segment_create('x', 10, slots => 4, registry => true)"
for n in 1 2 3 4; do
    nq $n "SET client_min_messages = warning" "SELECT segment_create('o', 10, slots => 12, registry => true)" >/dev/null
done
expect_sql_error_db ${F}1 $DB 22023 "owned cannot be combined with registry" \
    "SELECT segment_create('x', 10, slots => 4, owned => '{1}', registry => true)"
check "0: the registry assigns 12 slots" \
    "$(reg "SELECT segment_registry_assign('o', 12, ARRAY[${W[1]}, ${W[2]}, ${W[3]}])")" -eq 12
owned() { nq "$1" "SELECT coalesce((SELECT owned_slots::text FROM segment_status WHERE tag = 'o'), '{}')"; }
owned_is() { [ "$(owned "$1")" = "$2" ]; }
wait_for "0: N1 serves 0,3,6,9" owned_is 1 "{0,3,6,9}"
wait_for "0: N2 serves 1,4,7,10" owned_is 2 "{1,4,7,10}"
wait_for "0: N3 serves 2,5,8,11" owned_is 3 "{2,5,8,11}"
check "0: N4 serves none" "$(owned 4)" == "{}"
n4_read() { { nq 4 "SELECT segment_next('o')" 2>&1 || true; } | grep -q "holds no slot"; }
wait_for "0: N4's lease worker read the registry (N4 holds no slot)" n4_read
expect_sql_error_db ${F}4 $DB 55000 "holds no slot of segment tag \"o\" in the registry" "SELECT segment_next('o')"
expect_sql_error_db ${F}1 $DB 0A000 "owned through the lease registry" "SELECT segment_slot_release('o', 0)"
expect_sql_error_db ${F}4 $DB 0A000 "owned through the lease registry" "SELECT segment_slot_adopt('o', 0, 100000)"

# a registry tag created and used in one transaction (its slots assigned to N1 beforehand)
reg "SELECT segment_registry_assign('o2', 4, ARRAY[${W[1]}])" >/dev/null
o2_taken() { [ "$(reg "SELECT count(*) FROM pg_idgen_segment_owners WHERE tag = 'o2' AND owner_token IS NOT NULL AND ceiling > 0")" = 4 ]; }
wait_for "0: N1 took the 4 slots of o2" o2_taken
check "0: o2 created and used in one transaction: 40 distinct values in its 4 slots" \
    "$(nq 1 "BEGIN" "SELECT segment_create('o2', 10, slots => 4, registry => true)" \
        "SELECT count(DISTINCT v) || ' ' || count(DISTINCT ((v - 1) / 10) % 4) FROM (SELECT segment_next('o2') AS v FROM generate_series(1, 40)) x" \
        "COMMIT" | sed -n 2p)" == "40 4"

# ownership history from the registry: one line `slot node floor seq` per (slot, holder, floor)
HO="$TMP/owners"; : >"$HO"; SEQ=0
snapshot() {
    SEQ=$((SEQ + 1))
    reg "SELECT o.slot || ' ' || substr(l.node_name, 5) || ' ' || o.floor || ' $SEQ' FROM pg_idgen_segment_owners o
         JOIN pg_idgen_leases l ON l.worker_id = o.owner WHERE o.tag = 'o' AND o.state = 'held' AND o.owner_token IS NOT NULL" >>"$HO"
}
snapshot
# fleet CMD ARGS: a fleet.sh registry command; logs its lines, snapshots the registry after
fleet() {
    local out
    out=$("$FLEET" "$1" --name "$F" --db "$DB" "${@:2}" 2>&1) || { ko "fleet.sh $*: $out"; return 1; }
    log "fleet.sh $1 ${*:2}: $(tr '\n' ';' <<<"$out")"
    snapshot
}

# load NODE ROUND: 500 transactions of 100 values, in the background
LOADS=()
load() {
    local n=$1 r=$2 f="$TMP/load.$1.$2.sql"
    for i in $(seq 1 500); do
        echo "COPY (SELECT segment_next('o'), $n, $r, $i, g FROM generate_series(1, 100) g) TO STDOUT;"
    done >"$f"
    PGDATABASE=$DB "$CLUSTER" psql "$F$n" -q -v ON_ERROR_STOP=0 -f "$f" >"$TMP/vals.$n.$r" 2>"$TMP/err.$n.$r" &
    BG_PIDS+=($!); LOADS+=($!)
}
wait_loads() { local p; for p in "${LOADS[@]}"; do wait "$p" || true; done; LOADS=(); }
wait_rows() {   # NODE ROUND K: until that load has handed out at least K values (bounded)
    local f="$TMP/vals.$1.$2" i
    for i in $(seq 1 900); do
        [ "$(wc -l <"$f" 2>/dev/null || echo 0)" -ge "$3" ] && return 0
        sleep 0.05
    done
    ko "load $1.$2 did not reach $3 values"
}
# slots held by nodes 1..4 together, each once
all_once() {
    for n in "$@"; do nq "$n" "SELECT slot FROM segment_slot_status WHERE tag = 'o' AND owned"; done | sort -n | tr '\n' ' '
}

# ---- A ----
for n in 1 2 3; do load $n 1; done
wait_rows 1 1 2000; wait_rows 2 1 2000; wait_rows 3 1 2000
fleet registry-move-slots o 3 4
load 4 1
wait_loads
nslots() { owned "$1" | tr -d '{}' | tr ',' '\n' | grep -c . || true; }
check "A: N4 serves 3 slots" "$(nslots 4)" -eq 3
check "A: N1, N2, N3 serve 3 slots each" "$(nslots 1)$(nslots 2)$(nslots 3)" == "333"
check "A: the 12 slots are served once" "$(all_once 1 2 3 4)" == "0 1 2 3 4 5 6 7 8 9 10 11 "
check "A: N4's three slots as values: from the floor to below the ceiling, served" \
    "$(nq 4 "SELECT count(*) FROM segment_slot_leases() WHERE tag = 'o' AND serving AND last_value > first_value")" -eq 3
check "A: N4 handed out values" "$(wc -l <"$TMP/vals.4.1")" -ge 10000

# ---- B: explicit hand-over (no registry) refuses a stale mark ----
nq 1 "SELECT segment_create('x', 10, slots => 4, owned => '{0,1}')" >/dev/null
nq 4 "SELECT segment_create('x', 10, slots => 4, owned => '{2,3}')" >/dev/null
nq 1 "SELECT count(segment_next('x')) FROM generate_series(1, 50)" >/dev/null
m1=$(nq 1 "SELECT segment_slot_release('x', 1)")
nq 4 "SELECT segment_slot_adopt('x', 1, $m1)" >/dev/null
nq 4 "SELECT count(segment_next('x')) FROM generate_series(1, 200)" >/dev/null
m2=$(nq 4 "SELECT segment_slot_release('x', 1)")
check "B: N4's mark of slot 1 of x is above N1's" "$m2" -gt "$m1"
expect_sql_error_db ${F}4 $DB 22023 "cannot adopt slot 1.*may have been handed out" "SELECT segment_slot_adopt('x', 1, $m1)"

# ---- C ----
for n in 1 2 3 4; do load $n 2; done
wait_rows 2 2 3000
fleet registry-drain-slots o 2
wait_loads
check "C: N2 serves no slot" "$(owned 2)" == "{}"
expect_sql_error_db ${F}2 $DB 55000 "holds no slot" "SELECT segment_next('o')"
check "C: the 12 slots are served once by N1, N3, N4" "$(all_once 1 3 4)" == "0 1 2 3 4 5 6 7 8 9 10 11 "

# ---- D: kill -9 of N3 while it serves; its slots move after its lease expired ----
load 3 3; load 1 3; load 4 3
wait_rows 3 3 3000
"$CLUSTER" crash ${F}3 >/dev/null 2>&1
S3=$(reg "SELECT string_agg(slot::text, ',') FROM pg_idgen_segment_owners WHERE tag = 'o' AND owner = ${W[3]} AND state = 'held'")
log "D: N3 killed while holding slots ${S3}"
check "D: N3 held slots when it was killed" "$(tr ',' '\n' <<<"$S3" | grep -c . || true)" -ge 3
fleet registry-drain-slots o 3
wait_loads
check "D: N3's slots were taken only after its lease ended (by the registry's clock)" \
    "$(reg "SELECT count(*) FILTER (WHERE o.changed_at > l.lease_until) || '/' || count(*)
            FROM pg_idgen_segment_owners o, pg_idgen_leases l
            WHERE o.tag = 'o' AND l.worker_id = ${W[3]} AND o.slot IN ($S3) AND o.owner <> ${W[3]}")" \
    == "$(reg "SELECT count(*) || '/' || count(*) FROM pg_idgen_segment_owners WHERE tag = 'o' AND slot IN ($S3)")"
check "D: the 12 slots are served once by N1 and N4, six each" \
    "$(all_once 1 4)|$(nslots 1)|$(nslots 4)" == "0 1 2 3 4 5 6 7 8 9 10 11 |6|6"

# ---- D2: the target of a move killed during the move: once its lease ended, the move goes
# elsewhere ----
s2=$(reg "SELECT min(slot) FROM pg_idgen_segment_owners WHERE tag = 'o' AND owner = ${W[4]}")
check "D2: slot $s2 of N4 set moving to N2" "$(reg "SELECT segment_registry_move('o', $s2, ${W[2]})")" == moving
"$CLUSTER" crash ${F}2 >/dev/null 2>&1
# at once: refused while N2's lease runs (a few seconds; if this machine was slower than that,
# the move must have come after the lease's end)
if out=$(reg '\set VERBOSITY verbose' "SELECT segment_registry_move('o', $s2, ${W[1]})" 2>&1); then
    check "D2: re-targeted at once: only after N2's lease ended" \
        "$(reg "SELECT o.changed_at > l.lease_until FROM pg_idgen_segment_owners o, pg_idgen_leases l
                WHERE o.tag = 'o' AND o.slot = $s2 AND l.worker_id = ${W[2]}")" == t
else
    check_match "D2: re-targeting refused while N2's lease runs" "$out" "ERROR: +55000: slot $s2 of segment tag \"o\" is already moving to worker id ${W[2]}"
fi
retarget() { reg "SELECT segment_registry_move('o', $s2, ${W[1]})"; }
left() { [ "$(reg "SELECT count(*) FROM pg_idgen_segment_owners WHERE tag = 'o' AND state <> 'held'")" = 0 ]; }
wait_for "D2: the move goes to N1 once N2's lease ended" retarget
wait_for "D2: N1 took slot $s2" left
check "D2: N1 holds slot $s2" "$(reg "SELECT owner FROM pg_idgen_segment_owners WHERE tag = 'o' AND slot = $s2")" -eq "${W[1]}"
snapshot

# ---- E: restart; dump and restore ----
before1=$(owned 1)
ceil1=$(reg "SELECT string_agg(slot || ':' || ceiling, ',' ORDER BY slot) FROM pg_idgen_segment_owners WHERE tag = 'o' AND owner = ${W[1]}")
tok1=$(reg "SELECT DISTINCT owner_token FROM pg_idgen_segment_owners WHERE tag = 'o' AND owner = ${W[1]}")
"$CLUSTER" stop ${F}1 fast >/dev/null 2>&1
# shellcheck disable=SC2046
"$CLUSTER" start ${F}1 "$("$FLEET" port --name "$F" 1)" $(node_opts 1) \
    -c "pg_idgen.registry=host=127.0.0.1 port=$BASE user=postgres dbname=$DB" >/dev/null 2>&1
wait_for "E: N1 serves its slots again after a restart" owned_is 1 "$before1"
check "E: after the restart N1 took its slots again (a new token) at their ceilings" \
    "$(reg "SELECT string_agg(slot || ':' || floor, ',' ORDER BY slot) FROM pg_idgen_segment_owners WHERE tag = 'o' AND owner = ${W[1]} AND owner_token <> $tok1")" \
    == "$ceil1"
snapshot
load 1 4
wait_loads
SOCK=$("$CLUSTER" sockdir ${F}4); PORT=$("$CLUSTER" port ${F}4)
before4=$(owned 4)
"$PGBIN/pg_dump" -h "$SOCK" -p "$PORT" -U postgres -Fc -f "$TMP/db.dump" "$DB"
q ${F}4 "DROP DATABASE $DB WITH (FORCE)" "CREATE DATABASE $DB" >/dev/null
"$PGBIN/pg_restore" -h "$SOCK" -p "$PORT" -U postgres -d "$DB" "$TMP/db.dump"
check "E: the restored database serves N4's slot set" "$(owned 4)" == "$before4"
q ${F}4 "CREATE DATABASE other" >/dev/null
qdb ${F}4 other "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
    "SELECT segment_create('o', 10, slots => 12, registry => true)" >/dev/null
nq 4 "SELECT segment_next('o')" >/dev/null   # the restored database serves them (binds them)
expect_sql_error_db ${F}4 other 55000 "served by another database of this node" "SELECT segment_next('o')"
load 4 4
wait_loads

# ---- F ----
q ${F}agg "CREATE TABLE v (v bigint, node int, round int, tx int, g int)" \
    "CREATE TABLE ho (slot int, node int, floor bigint, seq int)" >/dev/null
cat "$TMP"/vals.* | q ${F}agg "COPY v FROM STDIN" >/dev/null
sort -u "$HO" | tr ' ' '\t' | q ${F}agg "COPY ho FROM STDIN" >/dev/null
read -r cnt dist <<<"$(q ${F}agg "SELECT count(*), count(DISTINCT v) FROM v" | tr '|' ' ')"
log "F: $cnt values; statements refused: N2 after its drain $(grep -c ERROR "$TMP/err.2.2" || true), N3 killed $(grep -c ERROR "$TMP/err.3.3" || true)"
check "F: no statement refused on a node while it held slots" \
    "$(for e in "$TMP"/err.*; do case $e in */err.2.2|*/err.3.3) ;; *) cat "$e" ;; esac; done | grep -c ERROR || true)" -eq 0
check "F: values handed out over the run" "$cnt" -gt 100000
check "F: 0 duplicates across the four nodes" "$((cnt - dist))" -eq 0
check "F: every value lies in a slot its node held then (the holder with the highest floor <= its chunk)" \
    "$(q ${F}agg "SELECT count(*) FROM v WHERE (SELECT h.node FROM ho h WHERE h.slot = ((v.v - 1) / 10) % 12
         AND h.floor <= ((v.v - 1) / 10) / 12 ORDER BY h.floor DESC, h.seq DESC LIMIT 1) IS DISTINCT FROM v.node")" -eq 0
check "F: values per slot increase on each node" \
    "$(q ${F}agg "SELECT count(*) FROM (SELECT v, lag(v) OVER (PARTITION BY node, round, ((v - 1) / 10) % 12 ORDER BY tx, g) AS p FROM v) x WHERE p >= v")" -eq 0
check "F: after the restart (N1) and the restore (N4), every value is above every earlier value of its slot" \
    "$(q ${F}agg "SELECT count(*) FROM (SELECT min(v) FILTER (WHERE round = 4) AS lo, max(v) FILTER (WHERE round < 4) AS hi
         FROM v GROUP BY ((v - 1) / 10) % 12) x WHERE lo <= hi")" -eq 0
check "F: every slot was served" "$(q ${F}agg "SELECT count(DISTINCT ((v - 1) / 10) % 12) FROM v")" -eq 12

# ---- G: a node that loses its lease stops serving its slots, cached values included ----
nq 1 "SELECT segment_next('o')" >/dev/null
cached=$(nq 1 "SELECT cursor IS NOT NULL FROM segment_status WHERE tag = 'o'")
"$CLUSTER" stop ${F}agg immediate >/dev/null 2>&1
lease_gone() { [ "$(nq 1 "SELECT valid_for_ms FROM snowflake_lease()")" = 0 ]; }
wait_for "G: N1's lease ran out (the registry is down)" lease_gone
check "G: N1 had values of the tag cached" "$cached" == t
expect_sql_error_db ${F}1 $DB 55000 "does not hold the slots of segment tag \"o\" now" "SELECT segment_next('o')"
check "G: N1 shows no slot served" "$(owned 1)" == "{}"
finish
