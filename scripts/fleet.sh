#!/usr/bin/env bash
# scripts/fleet.sh — a fleet of PostgreSQL 15 instances with pg_idgen on this machine:
# N id-generating nodes (worker ids W..W+N-1) plus one aggregator, each a scripts/cluster.sh
# cluster with its own port and data directory, everything on loopback (127.0.0.1 + unix sockets).
#
# Usage:
#   scripts/fleet.sh start [--nodes N] [--base-port P] [--name PREFIX] [--first-worker-id W]
#                          [--agg-worker-id A] [--db DB] [--lease [--lease-ttl S]]
#                          [-- postgres options...]
#       initdb on first use, then (re)start. Defaults: N=3, P=28870, PREFIX=fleet, W=1, DB=postgres.
#       Aggregator: cluster PREFIXagg on port P, pg_idgen.worker_id = A (default -1: unset, so it
#       cannot generate snowflake ids by mistake; it only stores, decodes and reads).
#       Node i (1..N): cluster PREFIXi on port P+i, pg_idgen.worker_id = W+i-1.
#       Every instance: shared_preload_libraries = pg_idgen (pgrx-config/postgresql.conf),
#       wal_level = logical, replication slots / WAL senders / logical replication workers
#       for 2 subscribing databases per node, and CREATE EXTENSION IF NOT EXISTS pg_idgen in DB.
#       --lease: worker ids are leased instead (docs/worker-ids.md, "Leased worker ids"): the aggregator's DB
#       is the registry, node i runs pg_idgen.lease_mode = auto with node name nodei, the range
#       W..W+N-1 and pg_idgen.lease_ttl = S seconds (default 10; lease_margin = S/5, at least 1);
#       `status` then shows the id each node holds.
#       Options after `--` go to every postgres (e.g. -- -c log_min_messages=info).
#       --no-agg: no aggregator (without --lease), e.g. for a mesh (scripts/multimaster.sh).
#   scripts/fleet.sh start-node [--name PREFIX] [start options] NODE   # (re)start one node alone,
#       with the settings start gives it (pass the same options: --lease, --lease-ttl, --db, -- ...)
#   scripts/fleet.sh add [--name PREFIX] [start options]   # one more node: the next number, the
#       next port and worker id after the fleet's highest (or leased), started alone; prints nodeN
#   scripts/fleet.sh stop     [--name PREFIX] [fast|smart|immediate]   # keeps the data
#   scripts/fleet.sh destroy  [--name PREFIX]                          # stop immediate + rm -rf
#   scripts/fleet.sh status   [--name PREFIX]         # one line per instance; exit 3 if any is down
#   scripts/fleet.sh psql     [--name PREFIX] NODE [psql args...]      # NODE: 1..N or agg
#   scripts/fleet.sh conninfo [--name PREFIX] NODE    # libpq string over TCP 127.0.0.1 (for
#                                                     # CREATE SUBSCRIPTION / postgres_fdw)
#   scripts/fleet.sh cluster  [--name PREFIX] NODE    # the scripts/cluster.sh name (cluster.sh log ...)
#   scripts/fleet.sh port     [--name PREFIX] NODE
#   scripts/fleet.sh names    [--name PREFIX]         # every cluster name of the fleet, agg first
#   scripts/fleet.sh move-slots  [--name PREFIX] TAG K TO   # stride slots (docs/segment-slots.md):
#       moves K slots of TAG to node TO, one at a time from the node that owns the most (ties: the
#       lowest node number), each by segment_slot_release on the giver and segment_slot_adopt
#       with the returned mark on TO; prints `slot S: node A -> node B above MARK` per slot
#   scripts/fleet.sh drain-slots [--name PREFIX] TAG FROM   # moves every slot of FROM to the other
#       nodes that own slots of TAG (a node with none has left, or gets slots by move-slots), each
#       to the one that owns the fewest (ties: the lowest node number)
#   scripts/fleet.sh registry-move-slots  [--name PREFIX] TAG K TO   # a fleet started with --lease
#       and a tag created with registry => true (docs/segment-slots.md): one registry operation,
#       segment_registry_rebalance on the aggregator (the registry), moves K slots of TAG to node
#       TO's worker id from the worker ids that have the most; then waits (at most 90 s) until
#       TO took them (each only after its owner stopped serving it, or its lease expired) and
#       prints `slot S: node A -> node B at chunk F` per slot (F: the chunk of the slot B
#       continues at, the old owner's ceiling)
#   scripts/fleet.sh registry-drain-slots [--name PREFIX] TAG FROM   # the same with
#       segment_registry_drain: every slot of node FROM to the other nodes with a live lease
#       that hold slots, each to the one that has the fewest (FROM may be down: its slots move
#       once its lease expired)
#
# Examples:
#   scripts/fleet.sh start --nodes 3 --base-port 28870
#   scripts/fleet.sh psql 2 -c 'select snowflake_next()'          # worker id 2
#   scripts/fleet.sh psql agg -c "select '$(scripts/fleet.sh conninfo 1)'"
#   scripts/fleet.sh stop
#
# The fleet's description is kept in <rundir>/PREFIX.fleet (rundir: `scripts/cluster.sh rundir`,
# PG_IDGEN_RUN_DIR overrides; PG_CONFIG picks the PostgreSQL installation), one line per
# instance: `role cluster port worker_id`. The server log of an instance is
# <rundir>/<cluster>/data/log/postgresql.log (`scripts/cluster.sh log <cluster>`).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CLUSTER=$ROOT/scripts/cluster.sh

die() { printf 'fleet.sh: %s\n' "$*" >&2; exit 1; }
note() { printf '[fleet] %s\n' "$*" >&2; }
usage() { sed -n '2,/^# Examples/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2; }

RUN_DIR=$("$CLUSTER" rundir)
PREFIX=fleet
NODES=3
BASE_PORT=28870
FIRST_WORKER=1
AGG_WORKER=-1
DB=${PGDATABASE:-postgres}
PG_OPTS=()
ARGS=()
LEASE=0
LEASE_TTL=10
NO_AGG=0

is_int() { [[ ${1:-} =~ ^-?[0-9]+$ ]]; }

parse() {
    while [ $# -gt 0 ]; do
        case $1 in
            --nodes)           NODES=${2:-}; shift 2 ;;
            --base-port)       BASE_PORT=${2:-}; shift 2 ;;
            --name)            PREFIX=${2:-}; shift 2 ;;
            --first-worker-id) FIRST_WORKER=${2:-}; shift 2 ;;
            --agg-worker-id)   AGG_WORKER=${2:-}; shift 2 ;;
            --db)              DB=${2:-}; shift 2 ;;
            --lease)           LEASE=1; shift ;;
            --no-agg)          NO_AGG=1; shift ;;
            --lease-ttl)       LEASE_TTL=${2:-}; shift 2 ;;
            --)                shift; PG_OPTS=("$@"); break ;;
            -h|--help)         usage ;;
            *)                 ARGS+=("$1"); shift ;;
        esac
    done
    [[ $PREFIX =~ ^[A-Za-z0-9_.-]+$ ]] || die "bad --name '$PREFIX'"
    is_int "$NODES" && [ "$NODES" -ge 1 ] && [ "$NODES" -le 64 ] || die "--nodes must be 1..64"
    is_int "$BASE_PORT" && [ "$BASE_PORT" -ge 1024 ] && [ $((BASE_PORT + NODES)) -le 65535 ] \
        || die "bad --base-port '$BASE_PORT'"
    is_int "$FIRST_WORKER" && [ "$FIRST_WORKER" -ge 0 ] || die "bad --first-worker-id '$FIRST_WORKER'"
    is_int "$AGG_WORKER" && [ "$AGG_WORKER" -ge -1 ] || die "bad --agg-worker-id '$AGG_WORKER'"
    is_int "$LEASE_TTL" && [ "$LEASE_TTL" -ge 2 ] || die "bad --lease-ttl '$LEASE_TTL'"
    return 0
}

FLEET_FILE() { echo "$RUN_DIR/$PREFIX.fleet"; }

need_fleet() { [ -f "$(FLEET_FILE)" ] || die "no fleet '$PREFIX' (no $(FLEET_FILE)); run: fleet.sh start --name $PREFIX"; }

# lookup NODE FIELD: FIELD 2 = cluster, 3 = port, 4 = worker id
lookup() {
    need_fleet
    local node=$1 field=$2 v
    v=$(awk -v r="$node" -v f="$field" '$1 == r || $1 == "node" r { print $f; exit }' "$(FLEET_FILE)")
    [ -n "$v" ] || die "fleet '$PREFIX' has no node '$node' (nodes: $(awk '{print $1}' "$(FLEET_FILE)" | tr '\n' ' '))"
    echo "$v"
}

# the postgres settings every instance of the fleet gets (for N nodes)
common_opts() {
    local n=$1
    # room for two subscribing databases per node on the aggregator (or, in a mesh, a subscription
    # to every other node), each subscription using one apply worker and up to
    # max_sync_workers_per_subscription (2) table sync workers
    local slots=$((4 * n + 10)) lrw=$((6 * n + 4))
    COMMON=(-c wal_level=logical
            -c "max_replication_slots=$slots" -c "max_wal_senders=$slots"
            -c "max_logical_replication_workers=$lrw"
            -c "max_worker_processes=$((lrw + 10))"
            -c max_connections=100)
}

# start_instance ROLE NAME PORT WID N: start (initdb on first use) one instance of the fleet,
# with the settings of its role; N: the number of nodes (the lease range is W..W+N-1)
start_instance() {
    local role=$1 name=$2 port=$3 wid=$4 n=$5 own
    common_opts "$n"
    own=(-c "pg_idgen.worker_id=$wid")
    if [ "$wid" = lease ]; then   # the aggregator (first line) is up: it is the registry
        local margin=$(( LEASE_TTL / 5 > 1 ? LEASE_TTL / 5 : 1 ))
        own=(-c pg_idgen.worker_id=-1 -c pg_idgen.lease_mode=auto
             -c "pg_idgen.registry=host=127.0.0.1 port=$BASE_PORT user=postgres dbname=$DB"
             -c "pg_idgen.node_name=$role" -c "pg_idgen.lease_range=$FIRST_WORKER-$((FIRST_WORKER + n - 1))"
             -c "pg_idgen.lease_ttl=$LEASE_TTL" -c "pg_idgen.lease_margin=$margin")
        note "$role: cluster $name, port $port, worker id leased from the aggregator (auto)"
    else
        note "$role: cluster $name, port $port, pg_idgen.worker_id = $wid"
    fi
    "$CLUSTER" start "$name" "$port" "${COMMON[@]}" "${own[@]}" \
        ${PG_OPTS[@]+"${PG_OPTS[@]}"} 2>/dev/null \
        || { "$CLUSTER" log "$name" 20 >&2 || true; die "could not start $name"; }
    if [ "$DB" != postgres ]; then
        "$CLUSTER" psql "$name" -At -c "SELECT 1 FROM pg_database WHERE datname = '$DB'" | grep -q 1 \
            || "$CLUSTER" psql "$name" -c "CREATE DATABASE \"$DB\""
    fi
    PGDATABASE=$DB "$CLUSTER" psql "$name" -c "SET client_min_messages = warning" \
        -c "CREATE EXTENSION IF NOT EXISTS pg_idgen"
}

# wait_lease NAME ROLE: wait (at most 30 s) until the instance holds its lease
wait_lease() {
    local i st=
    for i in $(seq 1 150); do
        st=$(PGDATABASE=$DB "$CLUSTER" psql "$1" -At -c "SELECT state FROM snowflake_lease()" 2>/dev/null || true)
        [ "$st" = held ] && break
        sleep 0.2
    done
    [ "$st" = held ] || note "$2: no lease yet (state: ${st:-?}); see $CLUSTER log $1"
}

cmd_start() {
    mkdir -p "$RUN_DIR"
    local n=$NODES
    local f; f=$(FLEET_FILE)
    {
        [ "$NO_AGG" = 1 ] && [ "$LEASE" = 0 ] || echo "agg ${PREFIX}agg $BASE_PORT $AGG_WORKER"
        local i
        for i in $(seq 1 "$n"); do
            if [ "$LEASE" = 1 ]; then echo "node$i ${PREFIX}$i $((BASE_PORT + i)) lease"
            else echo "node$i ${PREFIX}$i $((BASE_PORT + i)) $((FIRST_WORKER + i - 1))"; fi
        done
    } > "$f.tmp"
    mv -f "$f.tmp" "$f"
    local role name port wid
    while read -r role name port wid; do start_instance "$role" "$name" "$port" "$wid" "$n"; done < "$f"
    if [ "$LEASE" = 1 ]; then   # wait until every node holds its lease
        while read -r role name port wid; do
            [ "$wid" = lease ] && wait_lease "$name" "$role"
        done < "$f"
    fi
    cmd_status
}

# start-node NODE: (re)start one instance with the settings `start` gave it (the same options)
cmd_start_node() {
    local role name port wid
    read -r role name port wid < <(awk -v r="$1" '$1 == r || $1 == "node" r' "$(FLEET_FILE)")
    [ -n "${name:-}" ] || die "fleet '$PREFIX' has no node '$1'"
    start_instance "$role" "$name" "$port" "$wid" "$(node_count)"
    [ "$wid" != lease ] || wait_lease "$name" "$role"
}

# add: one more node, N+1 (next port, next worker id, or leased), started alone
cmd_add() {
    need_fleet
    local n port wid
    n=$(( $(node_count) + 1 ))
    [ "$n" -le 64 ] || die "at most 64 nodes"
    # the next port and worker id after the highest of the fleet
    port=$(awk '{ if ($3 > m) m = $3 } END { print m + 1 }' "$(FLEET_FILE)")
    wid=$(awk '$4 ~ /^[0-9]+$/ && $1 != "agg" { if ($4 + 1 > m) m = $4 + 1 } END { print m + 0 }' "$(FLEET_FILE)")
    [ "$port" -le 65535 ] || die "no port left"
    if grep -q ' lease$' "$(FLEET_FILE)"; then wid=lease; fi
    echo "node$n ${PREFIX}$n $port $wid" >> "$(FLEET_FILE)"
    cmd_start_node "node$n"
    echo "node$n"
}

cmd_stop() {
    need_fleet
    local mode=${1:-fast} role name rest
    while read -r role name rest; do "$CLUSTER" stop "$name" "$mode"; done < "$(FLEET_FILE)"
}

cmd_destroy() {
    [ -f "$(FLEET_FILE)" ] || { note "no fleet '$PREFIX'"; return 0; }
    local role name rest
    while read -r role name rest; do "$CLUSTER" destroy "$name" || true; done < "$(FLEET_FILE)"
    rm -f "$(FLEET_FILE)"
}

cmd_status() {
    need_fleet
    local role name port wid rc=0 st
    while read -r role name port wid; do
        if "$CLUSTER" status "$name" >/dev/null 2>&1; then st=running; else st=stopped; rc=3; fi
        if [ "$wid" = lease ]; then   # the id it holds, and the lease's state
            wid="$(PGDATABASE=$DB "$CLUSTER" psql "$name" -At -c "SELECT coalesce(worker_id::text, '-') || ' (lease ' || state || ')' FROM snowflake_lease()" 2>/dev/null || echo '- (lease)')"
        fi
        printf '%-6s %-16s port %-5s worker_id %-4s %s\n' "$role" "$name" "$port" "$wid" "$st"
    done < "$(FLEET_FILE)"
    return $rc
}

# owned_count NODE TAG: how many slots of TAG node NODE serves
owned_count() {
    PGDATABASE=$DB "$CLUSTER" psql "$(lookup "$1" 2)" -At \
        -c "SELECT count(*) FROM segment_slot_status WHERE tag = '$2' AND owned"
}
# move_slot TAG SLOT FROM TO
move_slot() {
    local mark
    # the tag is letters, digits and _ (checked), slot and mark are numbers
    is_int "$2" || die "bad slot '$2'"
    mark=$(PGDATABASE=$DB "$CLUSTER" psql "$(lookup "$3" 2)" -At \
        -c "SELECT segment_slot_release('$1', $2)") && is_int "$mark" || die "release of slot $2 on node $3 failed"
    PGDATABASE=$DB "$CLUSTER" psql "$(lookup "$4" 2)" -At \
        -c "SELECT segment_slot_adopt('$1', $2, $mark)" >/dev/null \
        || die "adopt of slot $2 on node $4 above $mark failed (slot $2 is released on node $3: adopt it by hand with that mark)"
    echo "slot $2: node $3 -> node $4 above $mark"
}
node_count() { awk '$1 ~ /^(node|left)[0-9]+$/' "$(FLEET_FILE)" | wc -l; }
node_numbers() { awk '$1 ~ /^node[0-9]+$/ { sub("node", "", $1); print $1 }' "$(FLEET_FILE)"; }
cmd_move_slots() {
    local tag=$1 k=$2 to=$3 i n c best bestc slot
    [[ $tag =~ ^[A-Za-z0-9_]{1,63}$ ]] || die "tag must be letters, digits and _"
    is_int "$k" && [ "$k" -ge 0 ] || die "K must be a number"
    lookup "$to" 2 >/dev/null
    for i in $(seq 1 "$k"); do
        best=; bestc=0
        for n in $(node_numbers); do
            [ "$n" = "$to" ] && continue
            c=$(owned_count "$n" "$tag")
            if [ "$c" -gt "$bestc" ]; then best=$n; bestc=$c; fi
        done
        [ -n "$best" ] || die "no other node owns a slot of $tag"
        slot=$(PGDATABASE=$DB "$CLUSTER" psql "$(lookup "$best" 2)" -At \
            -c "SELECT max(slot) FROM segment_slot_status WHERE tag = '$tag' AND owned")
        move_slot "$tag" "$slot" "$best" "$to"
    done
}
cmd_drain_slots() {
    local tag=$1 from=$2 n c best bestc slot
    [[ $tag =~ ^[A-Za-z0-9_]{1,63}$ ]] || die "tag must be letters, digits and _"
    lookup "$from" 2 >/dev/null
    for slot in $(PGDATABASE=$DB "$CLUSTER" psql "$(lookup "$from" 2)" -At \
            -c "SELECT slot FROM segment_slot_status WHERE tag = '$tag' AND owned ORDER BY slot"); do
        best=; bestc=
        for n in $(node_numbers); do
            [ "$n" = "$from" ] && continue
            c=$(owned_count "$n" "$tag")
            [ "$c" -gt 0 ] || continue
            if [ -z "$bestc" ] || [ "$c" -lt "$bestc" ]; then best=$n; bestc=$c; fi
        done
        [ -n "$best" ] || die "no other node to take the slots"
        move_slot "$tag" "$slot" "$from" "$best"
    done
}

# registry-owned slots: the aggregator's DB is the registry; node i leases as node name nodei
agg_q() { PGDATABASE=$DB "$CLUSTER" psql "$(lookup agg 2)" -At -c "$1"; }
worker_of() {
    local w
    w=$(agg_q "SELECT worker_id FROM pg_idgen_leases WHERE node_name = 'node$1' ORDER BY since DESC LIMIT 1")
    is_int "$w" || die "node $1 has no worker id lease in the registry"
    echo "$w"
}
node_of() { agg_q "SELECT coalesce(substr(max(node_name), 5), '?') FROM pg_idgen_leases WHERE worker_id = $1"; }
# registry_wait TAG MOVES: MOVES lines `slot from to` (worker ids); waits until each slot is held
# by its target, then prints one line per slot
registry_wait() {
    local tag=$1 moves=$2 i left slot from to floor
    for i in $(seq 1 450); do
        left=$(agg_q "SELECT count(*) FROM pg_idgen_segment_owners WHERE tag = '$tag' AND state <> 'held'")
        [ "$left" = 0 ] && break
        sleep 0.2
    done
    [ "$left" = 0 ] || die "$left slots of $tag still moving after 90 s (see pg_idgen_segment_owners on the aggregator)"
    while read -r slot from to; do
        [ -n "$slot" ] || continue
        floor=$(agg_q "SELECT floor FROM pg_idgen_segment_owners WHERE tag = '$tag' AND slot = $slot AND owner = $to")
        is_int "$floor" || die "slot $slot of $tag was not taken by worker id $to"
        echo "slot $slot: node $(node_of "$from") -> node $(node_of "$to") at chunk $floor"
    done <<<"$moves"
}
cmd_registry_move_slots() {
    local tag=$1 k=$2 to w moves
    [[ $tag =~ ^[A-Za-z0-9_]{1,63}$ ]] || die "tag must be letters, digits and _"
    is_int "$k" && [ "$k" -ge 0 ] || die "K must be a number"
    w=$(worker_of "$3")
    moves=$(agg_q "SELECT slot || ' ' || from_worker || ' ' || $w FROM segment_registry_rebalance('$tag', $w, $k)") \
        || die "segment_registry_rebalance failed"
    registry_wait "$tag" "$moves"
}
cmd_registry_drain_slots() {
    local tag=$1 w moves
    [[ $tag =~ ^[A-Za-z0-9_]{1,63}$ ]] || die "tag must be letters, digits and _"
    w=$(worker_of "$2")
    moves=$(agg_q "SELECT slot || ' ' || $w || ' ' || to_worker FROM segment_registry_drain('$tag', $w)") \
        || die "segment_registry_drain failed"
    registry_wait "$tag" "$moves"
}

cmd=${1:-}; [ $# -gt 0 ] && shift
parse "$@"
set -- ${ARGS[@]+"${ARGS[@]}"}
case $cmd in
    start)    [ $# -eq 0 ] || usage; cmd_start ;;
    start-node) [ $# -eq 1 ] || usage; need_fleet; cmd_start_node "$1" ;;
    add)      [ $# -eq 0 ] || usage; cmd_add ;;
    stop)     cmd_stop "$@" ;;
    destroy)  cmd_destroy ;;
    status)   cmd_status ;;
    psql)     [ $# -ge 1 ] || usage; c=$(lookup "$1" 2); shift
              PGDATABASE=$DB exec "$CLUSTER" psql "$c" ${PG_OPTS[@]+"${PG_OPTS[@]}"} "$@" ;;
    conninfo) [ $# -eq 1 ] || usage
              echo "host=127.0.0.1 port=$(lookup "$1" 3) user=postgres dbname=$DB" ;;
    cluster)  [ $# -eq 1 ] || usage; lookup "$1" 2 ;;
    port)     [ $# -eq 1 ] || usage; lookup "$1" 3 ;;
    names)    need_fleet; awk '{ print $2 }' "$(FLEET_FILE)" ;;
    move-slots)  [ $# -eq 3 ] || usage; cmd_move_slots "$@" ;;
    drain-slots) [ $# -eq 2 ] || usage; cmd_drain_slots "$@" ;;
    registry-move-slots)  [ $# -eq 3 ] || usage; cmd_registry_move_slots "$@" ;;
    registry-drain-slots) [ $# -eq 2 ] || usage; cmd_registry_drain_slots "$@" ;;
    *)        usage ;;
esac
