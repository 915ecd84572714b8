# tests/citus/lib.bash — a Citus cluster of scripts/cluster.sh clusters on loopback, for
# tests/citus/run.sh and bench/citus.sh. Source it after tests/integration/lib.bash.
#   citus_node NAME PORT [postgres options]  start a node: shared_preload_libraries = 'citus,pg_idgen',
#                                            wal_level = logical (shard moves), every node's worker
#                                            id from its Citus group (pg_idgen.worker_id_source =
#                                            citus, unless the options say otherwise), and
#                                            CREATE EXTENSION citus in database postgres
#   citus_form COORD PORT                    citus_set_coordinator_host on COORD (its TCP port PORT)
#   citus_add COORD PORT                     citus_add_node('127.0.0.1', PORT) from COORD; prints the nodeid
#   cq NAME SQL...                           q with client_min_messages = warning
# CITUS_CONF: the options every node gets (an array; citus_node appends its own).

CITUS_CONF=(-c "shared_preload_libraries=citus,pg_idgen" -c pg_idgen.worker_id=-1
            -c pg_idgen.worker_id_source=citus
            -c wal_level=logical -c max_replication_slots=16 -c max_wal_senders=16
            -c max_worker_processes=24 -c max_connections=120
            -c citus.shard_replication_factor=1 -c citus.log_remote_commands=off
            -c citus.background_task_queue_interval=200ms)

# The citus extension must be installed into this major (scripts/citus.sh, cached per machine).
citus_install() {
    local t=$SECONDS
    "$ROOT/scripts/citus.sh" "$PG" >/dev/null || { log "FAIL: scripts/citus.sh $PG"; exit 1; }
    log "Citus 14.0.1 in PostgreSQL $PG ($((SECONDS - t)) s: scripts/citus.sh, built once per machine)"
}

cq() { local n=$1; shift; q "$n" "SET client_min_messages = warning" "$@"; }

citus_node() {
    local name=$1 port=$2; shift 2
    cluster_start "$name" "$port" "${CITUS_CONF[@]}" "$@" || { log "FAIL: $name did not start"; "$CLUSTER" log "$name" 30; exit 1; }
    cq "$name" "CREATE EXTENSION citus" >/dev/null
}

citus_form() { cq "$1" "SELECT citus_set_coordinator_host('127.0.0.1', $(itport "$2"))" >/dev/null; }

citus_add() { cq "$1" "SELECT citus_add_node('127.0.0.1', $(itport "$2"))" | tail -1; }
