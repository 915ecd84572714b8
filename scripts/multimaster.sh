#!/usr/bin/env bash
# scripts/multimaster.sh — an active-active group of PostgreSQL 16+ instances with pg_idgen on this
# machine: N writable nodes on loopback, each publishing its application tables and subscribing to
# every other node with origin = none (PostgreSQL's own logical replication, no add-on); the recipe
# of docs/active-active.md. The instances are a scripts/fleet.sh fleet without aggregator (with
# --lease the aggregator is the worker id registry), so every fleet.sh command works on the group
# too (fleet.sh move-slots/drain-slots --name PREFIX for the stride slots of a segment tag).
#
# Usage:
#   scripts/multimaster.sh start [--nodes N] [--base-port P] [--name PREFIX] [--first-worker-id W]
#                                [--db DB] [--lease [--lease-ttl S]] [--tables T1,T2] [-- postgres options...]
#       N nodes (default 3; PREFIX=mm, P=28970, W=1, DB=postgres): node i on port P+i with
#       pg_idgen.worker_id = W+i-1 (or leased, see fleet.sh --lease), wal_level = logical; on each
#       node the publication PREFIX_pub (FOR TABLE the --tables, or empty: see publish) and one
#       subscription PREFIX_<i>_from_<j> per other node j: origin = none, copy_data = false (the
#       founding nodes start empty or with the same data). Idempotent: a second start restarts
#       the instances and adds what is missing. The options are kept for start-node and join.
#   scripts/multimaster.sh publish [--name PREFIX] TABLE...   # add tables (created beforehand on
#       every node: DDL does not replicate) to every node's publication, then REFRESH PUBLICATION
#       WITH (copy_data = false) on every subscription
#   scripts/multimaster.sh join [--name PREFIX] [--from K]   # a new node joins the live group
#       (every other node keeps writing): the published tables' schema from node K (default the
#       first node), its publication, every other node subscribing to it, and its own
#       subscriptions: the initial data copied from node K ONLY (copy_data = true), the others
#       copy_data = false, each started exactly where node K's copy left that node's changes
#       (docs/active-active.md, "A node joins"). Prints the new node's name (nodeN).
#   scripts/multimaster.sh leave [--name PREFIX] NODE   # NODE leaves: waits until its changes
#       reached the others, drops every subscription to and from it (and their slots), stops it
#       (its data is kept until destroy; it is listed as leftN)
#   scripts/multimaster.sh sync [--name PREFIX] [--timeout S]   # waits (default at most 60 s)
#       until every subscription confirmed every publisher's WAL position taken at the call;
#       prints the seconds it took; exit 1 on timeout
#   scripts/multimaster.sh lag [--name PREFIX]   # per slot: publisher, subscriber, bytes behind
#   scripts/multimaster.sh status [--name PREFIX]  # fleet.sh status, then each subscription's state
#   scripts/multimaster.sh start-node [--name PREFIX] NODE   # (re)start one node with its settings
#                                                           # (after a stop or a crash)
#   scripts/multimaster.sh stop-node [--name PREFIX] NODE [fast|immediate]
#   scripts/multimaster.sh psql [--name PREFIX] NODE|all [psql args...]   # all: each node in turn
#   scripts/multimaster.sh stop [--name PREFIX] [fast|smart|immediate]    # every node, data kept
#   scripts/multimaster.sh destroy [--name PREFIX]
#
# PostgreSQL 15 is refused: its subscriptions have no origin filter, so each node would send the
# rows it received back to where they came from (endless loops, duplicate key errors).
# Examples:
#   scripts/multimaster.sh start --nodes 3
#   scripts/multimaster.sh psql all -c 'CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_next(), v text)'
#   scripts/multimaster.sh publish t
#   scripts/multimaster.sh psql 2 -c "INSERT INTO t (v) VALUES ('from node 2')"
#   scripts/multimaster.sh sync && scripts/multimaster.sh psql all -At -c 'SELECT count(*) FROM t'
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CLUSTER=$ROOT/scripts/cluster.sh
FLEET=$ROOT/scripts/fleet.sh

die() { printf 'multimaster.sh: %s\n' "$*" >&2; exit 1; }
note() { printf '[multimaster] %s\n' "$*" >&2; }
usage() { sed -n '2,/^# Examples/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2; }

# the PostgreSQL programs resolved once for every cluster.sh call below (scripts/pgenv.bash)
# shellcheck source=pgenv.bash
. "$ROOT/scripts/pgenv.bash"
RUN_DIR=$("$CLUSTER" rundir)
PREFIX=mm
DB=${PGDATABASE:-postgres}
TABLES=
FROM=
TIMEOUT=60
FLEET_ARGS=()   # options handed to fleet.sh start (and, kept, to start-node and add)
ARGS=()

while [ $# -gt 0 ]; do
    case $1 in
        --name)     PREFIX=${2:-}; shift 2 ;;
        --db)       DB=${2:-}; FLEET_ARGS+=(--db "$DB"); shift 2 ;;
        --tables)   TABLES=${2:-}; shift 2 ;;
        --from)     FROM=${2:-}; shift 2 ;;
        --timeout)  TIMEOUT=${2:-}; shift 2 ;;
        --nodes|--base-port|--first-worker-id|--lease-ttl) FLEET_ARGS+=("$1" "${2:-}"); shift 2 ;;
        --lease)    FLEET_ARGS+=(--lease); shift ;;
        --)         FLEET_ARGS+=("$@"); break ;;
        -h|--help)  usage ;;
        *)          ARGS+=("$1"); shift ;;
    esac
done
[[ $PREFIX =~ ^[a-z0-9_]+$ ]] || die "--name must be lower-case letters, digits and _ (it names publications and subscriptions)"
[[ $TIMEOUT =~ ^[0-9]+$ ]] || die "bad --timeout"
set -- ${ARGS[@]+"${ARGS[@]}"}
FLEET_FILE=$RUN_DIR/$PREFIX.fleet
ARGS_FILE=$RUN_DIR/$PREFIX.mesh-args   # the start options, one per line
PUB=${PREFIX}_pub

# PostgreSQL 16 or later (origin = none)
need_origin_filter() {
    local v; v=$("$("$CLUSTER" pgconfig)" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
    [ "$v" -ge 16 ] || die "PostgreSQL $v: subscriptions have no origin filter (origin = none is PostgreSQL 16+), so each node would send back every row it received from the others; an active-active group needs PostgreSQL 16 or later (PG=16, 17 or 18)"
}
need_group() { [ -f "$FLEET_FILE" ] && [ -f "$ARGS_FILE" ] || die "no group '$PREFIX'; run: multimaster.sh start --name $PREFIX"; }
saved_args() { mapfile -t SAVED < "$ARGS_FILE"; }
fleet() { "$FLEET" "$1" --name "$PREFIX" "${@:2}"; }
# the nodes in the group (not the aggregator, not those that left): "nodeN cluster port"
members() { awk '$1 ~ /^node[0-9]+$/ { print $1, $2, $3 }' "$FLEET_FILE"; }
num() { echo "${1#node}"; }
# q NODE SQL: one statement on NODE (1..N or nodeN), unaligned
q() { PGOPTIONS=${PGOPTIONS:--c client_min_messages=warning} PGDATABASE=$DB "$CLUSTER" psql "$(cluster_of "$1")" -At -c "$2"; }
cluster_of() { awk -v r="$1" '$1 == r || $1 == "node" r || $1 == "left" r { print $2; exit }' "$FLEET_FILE"; }
conninfo() { echo "host=127.0.0.1 port=$(awk -v r="$1" '$1 == r || $1 == "node" r { print $3; exit }' "$FLEET_FILE") user=postgres dbname=$DB"; }
sub_name() { echo "${PREFIX}_$(num "$1")_from_$(num "$2")"; }   # on $1, from $2
lit() { printf "'%s'" "${1//\'/\'\'}"; }

ensure_pub() {   # ensure_pub NODE
    [ "$(q "$1" "SELECT count(*) FROM pg_publication WHERE pubname = '$PUB'")" = 1 ] && return 0
    local t=
    [ -z "$TABLES" ] || t=" FOR TABLE $TABLES"
    q "$1" "CREATE PUBLICATION $PUB$t" >/dev/null
}
# subscribe ON FROM COPY [ENABLED]: the subscription of ON to FROM's publication, origin = none
subscribe() {
    local s; s=$(sub_name "$1" "$2")
    [ "$(q "$1" "SELECT count(*) FROM pg_subscription WHERE subname = '$s'")" = 0 ] || return 0
    # (copy_data = true with origin = none warns that the copy may hold rows of other origins:
    # expected for a joining node, see cmd_join)
    PGOPTIONS="-c client_min_messages=error" q "$1" "CREATE SUBSCRIPTION $s CONNECTION $(lit "$(conninfo "$2")") PUBLICATION $PUB WITH (origin = none, copy_data = $3, enabled = ${4:-true})" >/dev/null
}

cmd_start() {
    need_origin_filter
    mkdir -p "$RUN_DIR"
    [[ " ${FLEET_ARGS[*]-} " == *" --base-port "* ]] || FLEET_ARGS=(--base-port 28970 ${FLEET_ARGS[@]+"${FLEET_ARGS[@]}"})
    printf '%s\n' "${FLEET_ARGS[@]}" > "$ARGS_FILE"
    "$FLEET" start --name "$PREFIX" --no-agg ${FLEET_ARGS[@]+"${FLEET_ARGS[@]}"} >/dev/null
    local a b
    for a in $(members | awk '{ print $1 }'); do ensure_pub "$a"; done
    for a in $(members | awk '{ print $1 }'); do
        for b in $(members | awk '{ print $1 }'); do
            [ "$a" = "$b" ] || subscribe "$a" "$b" false
        done
    done
    cmd_status
}

cmd_publish() {
    need_group
    [ $# -gt 0 ] || usage
    local n t s
    for n in $(members | awk '{ print $1 }'); do
        for t in "$@"; do
            [ "$(q "$n" "SELECT count(*) FROM pg_publication_tables WHERE pubname = '$PUB' AND format('%I.%I', schemaname, tablename)::regclass = $(lit "$t")::regclass")" = 1 ] \
                || q "$n" "ALTER PUBLICATION $PUB ADD TABLE $t" >/dev/null
        done
    done
    for n in $(members | awk '{ print $1 }'); do
        for s in $(q "$n" "SELECT subname FROM pg_subscription WHERE subname LIKE '${PREFIX}\\_%\\_from\\_%'"); do
            q "$n" "ALTER SUBSCRIPTION $s REFRESH PUBLICATION WITH (copy_data = false)" >/dev/null
        done
    done
}

# wait_for DESC SECONDS COMMAND...: poll every 0.2 s
wait_for() {
    local desc=$1 secs=$2 i; shift 2
    for i in $(seq 1 $((secs * 5))); do "$@" && return 0; sleep 0.2; done
    die "timeout after $secs s: $desc"
}

# caught_up: every logical slot of the group confirmed the LSN its publisher had at the call
# (TARGETS: lines "node slot lsn")
caught_up() {
    local n s l
    while read -r n s l; do
        [ -n "$n" ] || continue
        [ "$(q "$n" "SELECT coalesce(bool_and(confirmed_flush_lsn >= '$l'), false) FROM pg_replication_slots WHERE slot_name = '$s'")" = t ] || return 1
    done <<<"$TARGETS"
}
targets() {   # every slot of the group's subscriptions with its publisher's current WAL position
    local n
    TARGETS=$(for n in $(members | awk '{ print $1 }'); do
        q "$n" "SELECT '$n', slot_name, pg_current_wal_lsn() FROM pg_replication_slots WHERE slot_type = 'logical' AND slot_name LIKE '${PREFIX}\\_%\\_from\\_%'" | tr '|' ' '
    done)
}
cmd_sync() {
    need_group
    local t0=$SECONDS
    targets
    wait_for "subscriptions catching up (multimaster.sh lag --name $PREFIX)" "$TIMEOUT" caught_up
    echo "$((SECONDS - t0))"
}
cmd_lag() {
    need_group
    local n
    for n in $(members | awk '{ print $1 }'); do
        q "$n" "SELECT '$n', slot_name, active, pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn) FROM pg_replication_slots WHERE slot_type = 'logical' AND slot_name LIKE '${PREFIX}\\_%\\_from\\_%' ORDER BY slot_name" \
            | awk -F'|' '{ printf "%-7s slot %-20s active %s  %s bytes behind\n", $1, $2, $3, $4 }'
    done
}

cmd_status() {
    need_group
    local rc=0 n
    "$FLEET" status --name "$PREFIX" || true   # (a node that left is stopped: not a failure)
    for n in $(members | awk '{ print $1 }'); do
        "$CLUSTER" status "$(cluster_of "$n")" >/dev/null 2>&1 || { rc=3; continue; }
        q "$n" "SELECT s.subname, s.subenabled, coalesce(w.pid::text, '-'), coalesce(w.latest_end_lsn::text, '-') FROM pg_subscription s LEFT JOIN pg_stat_subscription w ON w.subid = s.oid AND w.relid IS NULL ORDER BY 1" \
            | awk -F'|' -v n="$n" '{ printf "  %-6s %-20s enabled %s  apply pid %-7s received up to %s\n", n, $1, $2, $3, $4 }'
    done
    return $rc
}

# apply_stopped NODE SUB: the subscription's apply worker has exited
apply_stopped() { [ "$(q "$1" "SELECT count(*) FROM pg_stat_subscription w JOIN pg_subscription s ON s.oid = w.subid WHERE s.subname = '$2' AND w.pid IS NOT NULL")" = 0 ]; }
synced() { [ "$(q "$1" "SELECT count(*) FROM pg_subscription_rel r JOIN pg_subscription s ON s.oid = r.srsubid WHERE s.subname = '$2' AND r.srsubstate <> 'r'")" = 0 ]; }
slot_applied() {   # slot_applied PUBLISHER SLOT LSN: the slot's subscriber confirmed LSN
    [ "$(q "$1" "SELECT coalesce(bool_and(confirmed_flush_lsn >= '$3'), false) FROM pg_replication_slots WHERE slot_name = '$2'")" = t ]
}

# join: see docs/active-active.md, "A node joins (copy_data from one node only)"
cmd_join() {
    need_origin_filter
    need_group; saved_args
    local src new others o s tables r_lsn
    src=${FROM:-$(members | awk 'NR == 1 { print $1 }')}
    [[ $src == node* ]] || src=node$src
    members | grep -q "^$src " || die "no node '$src' in group '$PREFIX'"
    others=$(members | awk '{ print $1 }' | grep -vx "$src" || true)
    tables=$(q "$src" "SELECT string_agg(format('%I.%I', schemaname, tablename), ' ') FROM pg_publication_tables WHERE pubname = '$PUB'")
    new=$("$FLEET" add --name "$PREFIX" ${SAVED[@]+"${SAVED[@]}"} 2>/dev/null | tail -1)
    [[ $new =~ ^node[0-9]+$ ]] || die "could not add a node"
    note "$new joins; initial data from $src"
    # 1. the schema of the published tables, the publication
    if [ -n "$tables" ]; then
        local targs=() t
        for t in $tables; do targs+=(-t "$t"); done
        PGDATABASE=$DB "$("$CLUSTER" pgbin)/pg_dump" -h 127.0.0.1 -p "$(awk -v r="$src" '$1 == r { print $3 }' "$FLEET_FILE")" \
            -U postgres -d "$DB" --schema-only --no-publications --no-subscriptions "${targs[@]}" \
            | PGDATABASE=$DB "$CLUSTER" psql "$(cluster_of "$new")" -q >/dev/null
        TABLES=${tables// /,}
    fi
    ensure_pub "$new"
    # 2. every node subscribes to the new one (it has written nothing yet)
    for o in $src $others; do subscribe "$o" "$new" false; done
    # 3. the new node's subscriptions to the others, disabled: their slots mark where each starts
    declare -A L
    for o in $others; do
        subscribe "$new" "$o" false false
        s=$(sub_name "$new" "$o")
        L[$o]=$(q "$o" "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = '$s'")
        # 4. the source applied every change of o up to that point
        wait_for "$src applying $o's changes up to ${L[$o]}" "$TIMEOUT" slot_applied "$o" "$(sub_name "$src" "$o")" "${L[$o]}"
    done
    # 5. the source pauses applying the others' changes (its own writes go on)
    for o in $others; do
        s=$(sub_name "$src" "$o")
        q "$src" "ALTER SUBSCRIPTION $s DISABLE" >/dev/null
        wait_for "$s stopping" "$TIMEOUT" apply_stopped "$src" "$s"
    done
    # 6. the copy from the source alone (origin = none, copy_data = true: it copies the rows the
    #    source received from the others too, up to exactly where it paused)
    s=$(sub_name "$new" "$src")
    subscribe "$new" "$src" true
    wait_for "the initial copy from $src" "$((TIMEOUT * 5))" synced "$new" "$s"
    # 7. the new node starts each other subscription where the source's copy left it, then the
    #    source resumes
    for o in $others; do
        s=$(sub_name "$new" "$o")
        r_lsn=$(q "$src" "SELECT pg_replication_origin_progress('pg_' || oid, true) FROM pg_subscription WHERE subname = '$(sub_name "$src" "$o")'")
        q "$new" "SELECT pg_replication_origin_advance('pg_' || oid, '$r_lsn') FROM pg_subscription WHERE subname = '$s'" >/dev/null
        q "$new" "ALTER SUBSCRIPTION $s ENABLE" >/dev/null
        q "$src" "ALTER SUBSCRIPTION $(sub_name "$src" "$o") ENABLE" >/dev/null
        note "$new: changes of $o from $r_lsn on (the copy from $src holds those before)"
    done
    echo "$new"
}

# leave NODE: its writes reach the others first, then every subscription to and from it goes
cmd_leave() {
    need_group
    local gone=${1:-}; [ -n "$gone" ] || usage
    [[ $gone == node* ]] || gone=node$gone
    members | grep -q "^$gone " || die "no node '$gone' in group '$PREFIX'"
    local o s
    if "$CLUSTER" status "$(cluster_of "$gone")" >/dev/null 2>&1; then
        # its slots caught up with its last write (its clients must have stopped)
        targets; TARGETS=$(awk -v g="$gone" '$1 == g' <<<"$TARGETS")
        wait_for "the changes of $gone reaching the others" "$TIMEOUT" caught_up
        for o in $(members | awk '{ print $1 }' | grep -vx "$gone"); do
            q "$gone" "DROP SUBSCRIPTION IF EXISTS $(sub_name "$gone" "$o")" >/dev/null
        done
    fi
    for o in $(members | awk '{ print $1 }' | grep -vx "$gone"); do
        s=$(sub_name "$o" "$gone")
        if "$CLUSTER" status "$(cluster_of "$gone")" >/dev/null 2>&1; then
            q "$o" "DROP SUBSCRIPTION IF EXISTS $s" >/dev/null
        else   # the node is down: detach the slot name, drop the subscription, and its slots on o
            q "$o" "ALTER SUBSCRIPTION $s DISABLE" >/dev/null 2>&1 || true
            q "$o" "ALTER SUBSCRIPTION $s SET (slot_name = NONE)" >/dev/null 2>&1 || true
            q "$o" "DROP SUBSCRIPTION IF EXISTS $s" >/dev/null
            q "$o" "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = '$(sub_name "$gone" "$o")'" >/dev/null
        fi
    done
    "$CLUSTER" stop "$(cluster_of "$gone")" fast
    sed -i "s/^$gone /left$(num "$gone") /" "$FLEET_FILE"
    note "$gone left the group (listed as left$(num "$gone"); multimaster.sh destroy removes its data)"
}

cmd=${1:-}; [ $# -gt 0 ] && shift
case $cmd in
    start)      [ $# -eq 0 ] || usage; cmd_start ;;
    publish)    cmd_publish "$@" ;;
    join)       [ $# -eq 0 ] || usage; cmd_join ;;
    leave)      [ $# -eq 1 ] || usage; cmd_leave "$1" ;;
    sync)       cmd_sync ;;
    lag)        cmd_lag ;;
    status)     cmd_status ;;
    start-node) [ $# -eq 1 ] || usage; need_group; saved_args
                "$FLEET" start-node "$1" --name "$PREFIX" ${SAVED[@]+"${SAVED[@]}"} >/dev/null ;;
    stop-node)  [ $# -ge 1 ] || usage; need_group; "$CLUSTER" stop "$(cluster_of "$1")" "${2:-fast}" ;;
    psql)       [ $# -ge 1 ] || usage; need_group
                if [ "$1" = all ]; then
                    shift
                    for n in $(members | awk '{ print $1 }'); do
                        PGDATABASE=$DB "$CLUSTER" psql "$(cluster_of "$n")" "$@" || exit $?
                    done
                else
                    c=$(cluster_of "$1"); [ -n "$c" ] || die "no node '$1'"; shift
                    PGDATABASE=$DB exec "$CLUSTER" psql "$c" "$@"
                fi ;;
    stop)       need_group; fleet stop "$@" ;;
    destroy)    [ -f "$FLEET_FILE" ] && fleet destroy; rm -f "$ARGS_FILE" ;;
    *)          usage ;;
esac
