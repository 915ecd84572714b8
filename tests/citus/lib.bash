# tests/citus/lib.bash — a Citus cluster of scripts/cluster.sh clusters on loopback, for
# tests/citus/run.sh and bench/citus.sh, on a PostgreSQL with Citus installed that the user gives:
# CITUS_PG_CONFIG=<its pg_config>, the same major as PG (nothing in this project builds Citus).
# Source it first (it only defines), then:
#   citus_require                            without CITUS_PG_CONFIG: one line saying what to give,
#                                            exit 2 (before anything is built or started)
# then source tests/integration/lib.bash, and:
#   citus_use_given                          checks the given installation (the major PG, citus.control
#                                            and citus.so there), copies it into $TMP with pg_idgen
#                                            installed into the copy (scripts/private-install.sh: the
#                                            given installation is only read), and makes every program
#                                            and cluster of the script the copy's (PG_CONFIG)
#   citus_given_untouched                    prints how many files of the given installation changed
#                                            since citus_use_given (0: none written)
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

citus_require() {
    [ -n "${CITUS_PG_CONFIG:-}" ] && return 0
    echo "${TEST_NAME:-$0}: give CITUS_PG_CONFIG=<pg_config of a PostgreSQL ${PG:-} with Citus installed> (Citus is not built here; see docs/fleet.md, Citus)" >&2
    exit 2
}

CITUS_GIVEN_STAMP= CITUS_GIVEN_DIRS=()
citus_use_given() {
    local cfg=$CITUS_PG_CONFIG v copy t=$SECONDS
    [ -x "$cfg" ] || { log "FAIL: CITUS_PG_CONFIG=$cfg is not an executable pg_config"; exit 1; }
    v=$("$cfg" --version); v=${v#PostgreSQL }; v=${v%%.*}
    [ "$v" = "$PG" ] || { log "FAIL: CITUS_PG_CONFIG=$cfg is PostgreSQL $v, not $PG (give PG=$v, or a PostgreSQL $PG with Citus)"; exit 1; }
    local share lib
    share=$("$cfg" --sharedir) lib=$("$cfg" --pkglibdir)
    [ -f "$share/extension/citus.control" ] && [ -f "$lib/citus.so" ] \
        || { log "FAIL: Citus is not installed in $cfg's PostgreSQL $PG (no citus.control in $share/extension or citus.so in $lib)"; exit 1; }
    CITUS_VERSION=$(sed -nE "s/^default_version *= *'([^']+)'.*/\1/p" "$share/extension/citus.control")
    CITUS_GIVEN_DIRS=("$("$cfg" --bindir)" "$lib" "$share")
    CITUS_GIVEN_STAMP=$TMP/citus-given.stamp
    touch "$CITUS_GIVEN_STAMP"   # a file written after this has a later modification time
    copy=$("$ROOT/scripts/private-install.sh" "$cfg" "$TMP/citus-install") || { log "FAIL: scripts/private-install.sh $cfg"; exit 1; }
    export PG_CONFIG=$copy
    pgenv_resolve || exit 1
    log "Citus $CITUS_VERSION of $cfg (PostgreSQL $("$cfg" --version | sed 's/^PostgreSQL //')): a private copy with pg_idgen in $TMP/citus-install ($((SECONDS - t)) s)"
}

citus_given_untouched() {
    find "${CITUS_GIVEN_DIRS[@]}" -newer "$CITUS_GIVEN_STAMP" 2>/dev/null | wc -l
}

cq() { local n=$1; shift; q "$n" "SET client_min_messages = warning" "$@"; }

citus_node() {
    local name=$1 port=$2; shift 2
    cluster_start "$name" "$port" "${CITUS_CONF[@]}" "$@" || { log "FAIL: $name did not start"; "$CLUSTER" log "$name" 30; exit 1; }
    cq "$name" "CREATE EXTENSION citus" >/dev/null
}

citus_form() { cq "$1" "SELECT citus_set_coordinator_host('127.0.0.1', $(itport "$2"))" >/dev/null; }

citus_add() { cq "$1" "SELECT citus_add_node('127.0.0.1', $(itport "$2"))" | tail -1; }
