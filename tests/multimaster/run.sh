#!/usr/bin/env bash
# tests/multimaster/run.sh — pg_idgen on an active-active group (make test-multimaster; a layer of
# make test on 16 and 18): three writable PostgreSQL 16+ nodes built by scripts/multimaster.sh,
# each publishing pt_ids and subscribing to the two others with origin = none, clients on every
# node inserting with every generator (tests/partition/load.py, one per node; every value each
# client received recorded): the snowflake id (DEFAULT snowflake_next(), worker ids 1-4 from
# pg_idgen.worker_id), a slotted segment tag (pt_ins, 12 slots, 4 per founding node; the column's
# DEFAULT), a strided one (pt_sel, nodes => 4), a keyed space in fleet mode (pt, nodes => 4, the
# same four keys written on every node). Then, the load going on: node 2 killed (kill -9 of its
# postmaster) and restarted, node 3 stopped for a few seconds and restarted (it catches up), a
# fourth node joining live (copy from node 1 only; three slots of pt_ins moved to it), node 2
# leaving (its slots drained to the others first).
# Asserted (tests/partition/check.py on the recorded values and each remaining node's rows): no
# snowflake id, segment value or keyed value handed out twice across the group, each node's keyed
# values of its residue (value mod 4 = its node index) and increasing per client and key, no
# apply conflict (no duplicate key / 23505 / conflict line in any node's log), every acknowledged
# row on every remaining node once replication caught up and the nodes' rows the same.
# multimaster.sh refuses PostgreSQL 15 (a pg_config that says 15).
# A control: two nodes each with a PLAIN keyed space (no fleet mode) hand out the same values, and
# the same check finds them.
# Reported, not asserted: throughput per node next to the same clients on one node without
# replication, the replication lag sampled under load, catch-up times.
# Worker ids (MM_WORKER_IDS): setting (default) gives node i pg_idgen.worker_id = i; lease runs the
# group with leased worker ids instead (multimaster.sh --lease: a registry instance beside the
# group, every node pg_idgen.lease_mode = auto), and then also asserts: each node holds a lease,
# no two nodes the same worker id, node 2 holds one again after its kill -9, node 4 one of its own
# when it joins, and every snowflake id a node's clients received carries that node's leased
# worker id (uid_decode). scripts/test-matrix.sh runs 16 with the setting, 18 with leases.
# Env: MM_KEEP=DIR keeps the recorded values and the server logs.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export PG=${PG:-18}
# shellcheck source=../integration/lib.bash
. "$ROOT/tests/integration/lib.bash" "$ROOT"
# the loader helpers (load_stop, progress, event, now, VENV) of the partition tests
# (its hosts' network namespaces are not used here: no scripts/netns.sh)
NETNS_NET=${NETNS_NET:-0}
# shellcheck source=../partition/lib.bash
. "$ROOT/tests/partition/lib.bash"

[ "$PG" -ge 16 ] || { log "SKIP: PostgreSQL $PG has no origin = none (active-active needs 16+)"; finish; }
MM_WORKER_IDS=${MM_WORKER_IDS:-setting}
case $MM_WORKER_IDS in setting|lease) ;; *) log "MM_WORKER_IDS must be setting or lease"; exit 2 ;; esac
MM=mmt$$
MMS=$ROOT/scripts/multimaster.sh
BASE=$(itport 28970)
mm() { "$MMS" "$1" --name "$MM" "${@:2}"; }
nq() { local n=$1; shift; "$MMS" psql "$n" --name "$MM" -At -c "$*"; }
LAG_PID=
mm_cleanup() {
    set +e
    [ -z "${OUT:-}" ] || touch "$OUT/stop" 2>/dev/null
    local p; for p in ${LOAD_PIDS[@]+"${LOAD_PIDS[@]}"} $LAG_PID; do kill "$p" 2>/dev/null; done
    if [ -n "${MM_KEEP:-}" ]; then
        mkdir -p "$MM_KEEP"; cp -r "$TMP"/. "$MM_KEEP"/ 2>/dev/null
        for c in $("$ROOT/scripts/fleet.sh" names --name "$MM" 2>/dev/null); do
            cp "$("$CLUSTER" pgdata "$c")/log/postgresql.log" "$MM_KEEP/$c.log" 2>/dev/null
        done
    fi
    if [ "$FAILED" -gt 0 ] || [ "${rc:-0}" -ne 0 ]; then
        for c in $("$ROOT/scripts/fleet.sh" names --name "$MM" 2>/dev/null); do
            echo "--- server log of $c (last 20 lines) ---"; "$CLUSTER" log "$c" 20 2>/dev/null | sed 's/^/    /'
        done
    fi
    mm destroy >/dev/null 2>&1
}
trap 'rc=$?; mm_cleanup; (exit $rc); cleanup' EXIT

load_start() {   # load_start NODE [load.py options]: clients of NODE, values into $OUT as NODE
    local n=$1; shift
    "$VENV/bin/python" "$ROOT/tests/partition/load.py" "host=127.0.0.1 port=$("$ROOT/scripts/fleet.sh" port --name "$MM" "$n") user=postgres dbname=postgres" \
        "$OUT" "node$n" "$@" >>"$OUT/load.node$n.log" 2>&1 &
    LOAD_PIDS+=($!)
}
got() { [ "$(progress "node$1" 1)" -ge "$2" ]; }   # got N COUNT: node N's clients have COUNT values
rate() { awk -v a="$1" -v b="$2" -v s="$3" 'BEGIN { printf "%.0f", (b - a) / s }'; }
# lag sampler: every second the largest replay_lag (s) and bytes behind of any subscriber of any
# node (psql straight to each node's port: the sampler must not load the machine it measures)
lag_sampler() {
    local i p
    for i in $(seq 1 600); do
        [ -e "$OUT/stop" ] && break
        for p in $(awk '$1 ~ /^node/ { print $3 }' "$RUN_FLEET"); do
            "$PSQL" -X -At -h 127.0.0.1 -p "$p" -U postgres -d postgres -F $'\t' -c "SELECT coalesce(max(extract(epoch FROM replay_lag)), 0), coalesce(max(pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)), 0) FROM pg_stat_replication" 2>/dev/null || true   # (a node down: no line)
        done >> "$OUT/lag.tsv"
        sleep 1
    done
}

# PostgreSQL 15 refused (no origin filter): a pg_config that says 15, the rest this major's
printf '#!/bin/sh\n[ "$1" = --version ] && { echo "PostgreSQL 15.20"; exit 0; }\nexec %s "$@"\n' "$PG_CONFIG" > "$TMP/pg_config15"
chmod +x "$TMP/pg_config15"
out=$(PG= PG_CONFIG=$TMP/pg_config15 "$MMS" start --name "${MM}x" 2>&1) && ko "multimaster.sh started a group on PostgreSQL 15" \
    || check_match "multimaster.sh refuses PostgreSQL 15" "$out" 'PostgreSQL 15: subscriptions have no origin filter'

T0=$SECONDS
KEYED_FLEET=0
LEASE_OPT=()
[ "$MM_WORKER_IDS" = setting ] || LEASE_OPT=(--lease --lease-ttl 6)
mm start --nodes 3 --base-port "$BASE" ${LEASE_OPT[@]+"${LEASE_OPT[@]}"} -- -c wal_retrieve_retry_interval=500ms >/dev/null \
    || { ko "multimaster.sh start"; finish; }
declare -A WID HELD WIDS   # node -> the worker id it holds now; every one it was seen holding; those in its ids
# leased N: node N holds a lease (state held); its worker id into WID[N] and HELD[N]
leased() {
    local w; w=$(nq "$1" "SELECT worker_id FROM snowflake_lease() WHERE state = 'held'")
    [ -n "$w" ] || return 1
    WID[$1]=$w; HELD[$1]+=" $w"
}
# check_leases WHAT NODE...: each NODE holds a lease, and no two nodes hold the same worker id
# (the nodes checked now and the worker ids last seen held by the others)
check_leases() {
    local what=$1 n; shift
    for n in "$@"; do wait_until 30 "$what: node $n holding a worker id lease" leased "$n" || return 0; done
    local who="nodes $*"; [ $# -gt 1 ] || who="node $1"
    check "$what: $who holding a lease, no two nodes the same worker id (${WID[*]})" \
        "$(printf '%s\n' "${WID[@]}" | sort -u | wc -l)" -eq "${#WID[@]}"
}
RUN_FLEET=$("$CLUSTER" rundir)/$MM.fleet
# the fourth node's initdb now, before the load (as a machine is prepared before it joins): join
# then starts it, the rest of the procedure under load
register_cluster "${MM}4"; "$CLUSTER" init "${MM}4" >/dev/null
[ "$(nq 1 "SELECT count(*) FROM pg_proc WHERE proname = 'keyed_create' AND 'nodes' = ANY(proargnames)")" = 1 ] && KEYED_FLEET=1
KEYED_OPT=(--keyed pt)
[ $KEYED_FLEET = 1 ] || { KEYED_OPT=(--keyed none); log "SKIP: keyed_create has no fleet mode (nodes => N) in this build: keyed values not written"; }
# schema and generators on node N (index N-1): owned slots of pt_ins, strided pt_sel, keyed pt
objects() {
    local n=$1 owned=$2 k=""
    [ $KEYED_FLEET = 0 ] || k=", keyed_create('pt', 100, 1000, nodes => 4, node_index => $((n - 1)))"
    nq "$n" "SET client_min_messages = warning; SELECT segment_create('pt_ins', 100, slots => 12, owned => '$owned'), segment_create('pt_sel', 100, nodes => 4, node_index => $((n - 1)))$k" >/dev/null
}
TABLE="CREATE TABLE IF NOT EXISTS pt_ids (id bigint PRIMARY KEY DEFAULT snowflake_next(), seg bigint NOT NULL UNIQUE DEFAULT segment_next('pt_ins'), client text, k int, kv bigint, at timestamptz DEFAULT clock_timestamp(), UNIQUE (k, kv))"
for n in 1 2 3; do
    objects "$n" "{$((4 * n - 4)),$((4 * n - 3)),$((4 * n - 2)),$((4 * n - 1))}"
    nq "$n" "$TABLE" >/dev/null
done
ok "three nodes, each subscribing to the two others with origin = none ($((SECONDS - T0)) s)"
if [ "$MM_WORKER_IDS" = lease ]; then
    check_leases "worker ids leased from the registry" 1 2 3
else
    for n in 1 2 3; do WID[$n]=$(nq "$n" "SHOW pg_idgen.worker_id"); HELD[$n]=${WID[$n]}; done
fi

# ---- the same clients on one node, nothing published yet (the reference figures)
OUT=$TMP/single; mkdir -p "$OUT"; : > "$OUT/events"
load_start 1 --inserters 2 --selectors 1 "${KEYED_OPT[@]}"
wait_until 30 "values from node 1 alone" got 1 20 || finish
a=$(progress node1 1); sleep 3; b=$(progress node1 1)
load_stop
SINGLE_RATE=$(rate "$a" "$b" 3)
nq 1 "TRUNCATE pt_ids" >/dev/null
mm publish pt_ids

# ---- the group under load
OUT=$TMP/mesh; mkdir -p "$OUT"; : > "$OUT/events"
event keyed_nodes 4; for n in 1 2 3 4; do event "keyed_index.node$n" $((n - 1)); done
for n in 1 2 3; do load_start "$n" --inserters 2 --selectors 1 "${KEYED_OPT[@]}"; done
lag_sampler & LAG_PID=$!
for n in 1 2 3; do wait_until 30 "values from node $n" got "$n" 20 || finish; done
a1=$(progress node1 1); a2=$(progress node2 1); a3=$(progress node3 1); sleep 3
r1=$(rate "$a1" "$(progress node1 1)" 3); r2=$(rate "$a2" "$(progress node2 1)" 3); r3=$(rate "$a3" "$(progress node3 1)" 3)
MESH_RATE="$r1/$r2/$r3 (together $((r1 + r2 + r3)))"
log "under load: node 1/2/3 $MESH_RATE values/s; one node alone $SINGLE_RATE values/s"

# node 2: kill -9 of its postmaster, restarted
n2=$(progress node2 1)
"$CLUSTER" crash "$("$ROOT/scripts/fleet.sh" cluster --name "$MM" 2)" 2>/dev/null
sleep 1
t=$SECONDS; mm start-node 2 || ko "restart of node 2 after kill -9"
wait_until 30 "node 2's clients getting values again" got 2 $((n2 + 20)) && ok "node 2 killed (kill -9) and restarted: its clients write again ($((SECONDS - t)) s)"
if [ "$MM_WORKER_IDS" = lease ]; then
    W2=${WID[2]}; unset 'WID[2]'
    check_leases "node 2 after its kill -9" 2
    # (the same worker id again or another: both are right, the registry fences either way)
    log "node 2 held worker id $W2 before its kill -9, ${WID[2]:-none} after"
fi

# node 3: stopped for 4 s while the others write, restarted, caught up
mm stop-node 3 fast
sleep 4
mm start-node 3 || ko "restart of node 3"
t=$SECONDS
CATCHUP3=$(mm sync --timeout 60) || ko "the group catching up after node 3's restart"
log "node 3 stopped 4 s, caught up (every slot of the group) $CATCHUP3 s after its restart"

# a fourth node joins live (the others keep writing), three slots of pt_ins moved to it
t=$SECONDS
NEW=$(mm join --from 1) || { ko "multimaster.sh join"; finish; }
JOIN_S=$((SECONDS - t))
check "the joining node is node 4" "$NEW" == node4
objects 4 '{}'
if [ "$MM_WORKER_IDS" = lease ]; then check_leases "node 4 joining" 4; else WID[4]=$(nq 4 "SHOW pg_idgen.worker_id"); HELD[4]=${WID[4]}; fi
"$ROOT/scripts/fleet.sh" move-slots --name "$MM" pt_ins 3 4 >"$OUT/moves" || ko "move-slots to node 4"
load_start 4 --inserters 2 --selectors 1 "${KEYED_OPT[@]}"
wait_until 30 "values from node 4" got 4 20 || finish
ok "node 4 joined under load in $JOIN_S s (copy from node 1 only) and writes; $(wc -l < "$OUT/moves") slots of pt_ins moved to it"

# node 2 leaves: its clients stop, its slots go to the others, then its subscriptions
touch "$OUT/stop.node2"
wait_until 20 "node 2's clients stopping" test -e "$OUT/values.node2.tsv" || true
"$ROOT/scripts/fleet.sh" drain-slots --name "$MM" pt_ins 2 >>"$OUT/moves" || ko "drain-slots of node 2"
mm leave 2 || ko "multimaster.sh leave 2"
check "node 2 left: no subscription to or from it, no slot of it" \
    "$(for n in 1 3 4; do nq "$n" "SELECT count(*) FROM pg_subscription WHERE subname ~ '_from_2\$'"; nq "$n" "SELECT count(*) FROM pg_replication_slots WHERE slot_name ~ '_2_from_'"; done | awk '{ s += $1 } END { print s }')" -eq 0
sleep 2
load_stop
kill "$LAG_PID" 2>/dev/null || true; wait "$LAG_PID" 2>/dev/null || true; LAG_PID=
t=$SECONDS
FINAL_SYNC=$(mm sync --timeout 90) || ko "the group catching up at the end"
for n in 1 3 4; do nq "$n" "COPY (SELECT id, seg, kv FROM pt_ids) TO STDOUT" > "$OUT/final.$n.tsv"; done
R=$("$VENV/bin/python" "$ROOT/tests/partition/check.py" "$OUT" "$OUT"/final.{1,3,4}.tsv 2>"$OUT/summary") || { cat "$OUT/summary"; ko "check.py failed"; }
RM=$R
get() { sed -n "s/^$1=//p" <<<"$R"; }
check "values recorded" "$(get values)" -gt 300
check "every node's clients got values (nodes 1-4)" "$(ls "$OUT"/values.node*.tsv | while read -r f; do [ -s "$f" ] && echo; done | wc -l)" -eq 4
check "no snowflake id handed out twice across the group" "$(get snowflake_twice)" -eq 0
check "no segment value (slotted pt_ins, strided pt_sel) handed out twice across the group" "$(get segment_twice)" -eq 0
if [ $KEYED_FLEET = 1 ]; then
    check "no keyed value handed out twice across the group (the same keys on every node)" "$(get keyed_twice)" -eq 0
    check "every node's keyed values of its residue (value mod 4 = node index)" "$(get keyed_wrong_residue)" -eq 0
    check "keyed values increasing per client and key" "$(get keyed_not_increasing)" -eq 0
fi
check "each client's snowflake ids increasing" "$(get client_ids_not_increasing)" -eq 0
# every snowflake id node N's clients received carries a worker id node N held (uid_decode on
# node 1): its setting, or a lease seen held by it (at the start, after its restart, at its join)
# or the registry's row for it at the end
wrong_wid=0
for n in 1 2 3 4; do
    held="${HELD[$n]:-}"
    [ "$MM_WORKER_IDS" = setting ] || held+=" $("$ROOT/scripts/fleet.sh" psql --name "$MM" agg -X -At -c "SELECT worker_id FROM pg_idgen_leases WHERE node_name = 'node$n'" | tr '\n' ' ')"
    held=$(tr ' ' '\n' <<<"$held" | grep . | sort -nu | paste -sd,)
    w=$(cut -f3 "$OUT/values.node$n.tsv" | "$ROOT/scripts/fleet.sh" psql --name "$MM" 1 -X -At -q \
        -c "CREATE TEMP TABLE pg_idgen_test_ids (id bigint)" -c "COPY pg_idgen_test_ids FROM STDIN" \
        -c "SELECT string_agg(w::text, ',' ORDER BY w) FROM (SELECT DISTINCT (uid_decode(id)).worker_id AS w FROM pg_idgen_test_ids) x")
    for x in ${w//,/ }; do
        [[ ",$held," == *",$x,"* ]] || { wrong_wid=$((wrong_wid + 1)); log "node $n's clients received ids of worker id $x; the node held $held"; }
    done
    WIDS[$n]="$w"
done
check "every snowflake id a node's clients received carries a worker id that node held ($MM_WORKER_IDS; nodes 1-4: ${WIDS[1]}/${WIDS[2]}/${WIDS[3]}/${WIDS[4]})" "$wrong_wid" -eq 0
check "no client saw a duplicate key (23505)" "$(get duplicate_key_errors)" -eq 0
check "every acknowledged row on every remaining node (1, 3, 4)" "$(get acked_missing)" -eq 0
check "the remaining nodes hold the same rows" "$(get finals_differ)" -eq 0
conflicts=$(for c in $("$ROOT/scripts/fleet.sh" names --name "$MM" | grep -v 'agg$'); do   # the nodes (not a registry)
    grep -E 'duplicate key|23505|conflict' "$("$CLUSTER" pgdata "$c")/log/postgresql.log" 2>/dev/null | sed "s#^#$c: #" || true
done)
check "no apply conflict in any node's log (duplicate key, 23505, conflict)" "$(grep -c . <<<"$conflicts" || true)" -eq 0
[ -z "$conflicts" ] || head -5 <<<"$conflicts"
LAG=$(awk -F'\t' '{ if ($1 > s) s = $1; if ($2 > b) b = $2 } END { printf "replay_lag %.1f ms, %d bytes behind (%d samples)", s * 1000, b, NR }' "$OUT/lag.tsv" 2>/dev/null)

# ---- control: a PLAIN keyed space on two nodes hands out the same values; the check sees them
OUT=$TMP/control; mkdir -p "$OUT"; : > "$OUT/events"
for n in 1 3; do nq "$n" "SELECT keyed_create('pt_plain', 100)" >/dev/null; done
for n in 1 3; do load_start "$n" --what keyed:pt_plain --inserters 0 --selectors 1; done
for n in 1 3; do wait_until 30 "control values from node $n" got "$n" 50 || true; done
load_stop
R=$("$VENV/bin/python" "$ROOT/tests/partition/check.py" "$OUT" 2>/dev/null) || ko "check.py (control) failed"
check "control: a plain keyed space on two masters hands out the same values, and the check finds them" "$(get keyed_twice)" -gt 0

log "figures: $(sed -n 's/^values=//p' <<<"$RM") values recorded in the group ($(sed -n 's/^error_codes=//p' <<<"$RM") client errors by SQLSTATE), none twice"
log "figures: throughput under load node 1/2/3 $MESH_RATE values/s (each 2 inserters + 1 selector) vs the same clients on one node without replication $SINGLE_RATE values/s"
log "figures: replication lag sampled under load: at most $LAG; node 3 stopped 4 s caught up in $CATCHUP3 s; node 4 joined in $JOIN_S s; final catch-up $FINAL_SYNC s; rows per remaining node $(sed -n 's/^final_rows=//p' <<<"$RM")"
log "figures: control (plain keyed space on nodes 1 and 3): $(get keyed_twice) values handed out twice"
log "figures: worker ids: $MM_WORKER_IDS (nodes 1-4 handed out ids of worker ids ${WIDS[1]}/${WIDS[2]}/${WIDS[3]}/${WIDS[4]})"
log "all: $((SECONDS - T0)) s"
finish
