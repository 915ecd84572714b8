#!/usr/bin/env bash
# scripts/ha.sh — a highly available PostgreSQL 15 group with pg_idgen on this machine: one etcd
# member and three PostgreSQL nodes managed by Patroni, everything on loopback. The group has ONE
# worker id (pg_idgen.worker_id in Patroni's DCS configuration, so every node has it and whichever
# node leads generates with it); with --lease the id is leased (lease_mode = fixed) from a
# registry cluster OUTSIDE the group (scripts/cluster.sh cluster PREFIXreg).
#
# Usage:
#   scripts/ha.sh start [--name PREFIX] [--base-port P] [--worker-id W] [--sync]
#                       [--lease [--lease-ttl S]] [--ttl S] [-- name=value...]
#       etcd, the registry (--lease) and each node's Patroni are started when not running; the
#       first start bootstraps the group (initdb on the first node to take the leader key, the
#       others clone it with pg_basebackup), later starts reuse the data. Waits (bounded) until
#       a leader runs and every other node streams, then CREATE EXTENSION IF NOT EXISTS pg_idgen.
#       Defaults: PREFIX=ha, P=30400, W=1, asynchronous replication, Patroni ttl 20 s (its
#       minimum), loop_wait 1 s, retry_timeout 5 s.
#       Ports: etcd client P, peer P+1, registry P+2, node i (1..3) PostgreSQL P+10+i, Patroni
#       REST API P+20+i.
#       --sync: Patroni's synchronous_mode (one synchronous standby; a commit waits for it).
#       --lease: pg_idgen.lease_mode = fixed with pg_idgen.worker_id = W on every node, the
#       registry on port P+2, pg_idgen.lease_ttl = S (default 6), lease_margin = S/5 (at least 1).
#       name=value after `--`: more PostgreSQL parameters for every node (Patroni's DCS
#       configuration), e.g. -- pg_idgen.max_drift_ms=2000 'pg_idgen.layout=js53'.
#       Settings apply at the bootstrap of the group: destroy it to change them.
#   scripts/ha.sh stop [--name PREFIX]          # every Patroni (each stops its PostgreSQL), etcd,
#                                               # the registry; keeps the data
#   scripts/ha.sh destroy [--name PREFIX]       # kill everything of the group, rm -rf its data
#   scripts/ha.sh status [--name PREFIX]        # patronictl list; exit 3 unless a leader runs
#                                               # and every other node streams
#   scripts/ha.sh failover [--name PREFIX]      # the leader fails hard: kill -9 its Patroni and its
#                                               # postmaster, wait for another leader; prints
#                                               # "OLD NEW SECONDS". The old node stays down.
#   scripts/ha.sh expire-leader [--name PREFIX] # after a leader's Patroni died: delete its leader
#                                               # key in etcd now, as the key's TTL would (up to
#                                               # ttl seconds later); refused while the Patroni
#                                               # named in the key runs. Prints the node named.
#   scripts/ha.sh switchover [--name PREFIX] [NODE]   # patronictl switchover (to NODE, else to any
#                                               # healthy standby); prints "OLD NEW SECONDS"
#   scripts/ha.sh rejoin [--name PREFIX] NODE   # start NODE's Patroni again (it rewinds with
#                                               # pg_rewind when its timeline diverged) and wait
#                                               # until it streams from the leader
#   scripts/ha.sh leader [--name PREFIX]        # the leader's node name (node1..node3)
#   scripts/ha.sh dsn [--name PREFIX]           # libpq string naming all three nodes with
#                                               # target_session_attrs=read-write
#   scripts/ha.sh psql [--name PREFIX] [NODE] [psql args...]   # NODE default: the leader
#   scripts/ha.sh port|pid|patroni-pid [--name PREFIX] NODE   # PostgreSQL port, postmaster pid,
#                                               # Patroni pid
#   scripts/ha.sh patronictl [--name PREFIX] ARGS...          # patronictl with the group's config
#   scripts/ha.sh members [--name PREFIX]       # one line per node: name role state timeline
#
# Examples:
#   scripts/ha.sh start --sync
#   psql "$(scripts/ha.sh dsn)" -c 'select snowflake_next()'
#   scripts/ha.sh failover; scripts/ha.sh rejoin node1; scripts/ha.sh switchover node1
#   scripts/ha.sh stop
#
# Layout: <rundir>/PREFIX/ (rundir: `scripts/cluster.sh rundir`, PG_IDGEN_RUN_DIR overrides), owned
# by postgres (Patroni, etcd and PostgreSQL run as the postgres OS user): PREFIX.ha (the group's
# settings), etcd/ (data, etcd.log, pid), nodeI/ (patroni.yml, patroni.log, patroni.pid, data/ with
# the server log in data/log/postgresql.log, the unix socket). The registry is the scripts/cluster.sh
# cluster PREFIXreg. Patroni comes from $PG_IDGEN_PG_HOME/patroni/venv, etcd from Debian's
# etcd-server (`make deps`, or scripts/deps.sh --ha).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CLUSTER=$ROOT/scripts/cluster.sh
PG=${PG:-15}
[ "$PG" = 15 ] || { echo "ha.sh: PostgreSQL 15 only (PG=$PG)" >&2; exit 1; }
export PG
# shellcheck source=pgenv.bash
. "$ROOT/scripts/pgenv.bash"
# shellcheck source=patroni-yml.bash
. "$ROOT/scripts/patroni-yml.bash"
VENV=${PG_IDGEN_HA_VENV:-$PG_IDGEN_PG_HOME/patroni/venv}
ETCD=${ETCD:-/usr/bin/etcd}

die() { printf 'ha.sh: %s\n' "$*" >&2; exit 1; }
note() { printf '[ha] %s\n' "$*" >&2; }
usage() { sed -n '2,/^# Examples/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2; }

as_pg() { if [ "$(id -un)" = postgres ]; then "$@"; elif [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else sudo -n -u postgres -- "$@"; fi; }

RUN_DIR=$("$CLUSTER" rundir)
PREFIX=ha
BASE_PORT=30400
WORKER=1
SYNC=0
LEASE=0
LEASE_TTL=6
TTL=20
NODES=3
PARAMS=()
ARGS=()
is_int() { [[ ${1:-} =~ ^[0-9]+$ ]]; }

parse() {
    while [ $# -gt 0 ]; do
        case $1 in
            --name)      PREFIX=${2:-}; shift 2 ;;
            --base-port) BASE_PORT=${2:-}; shift 2 ;;
            --worker-id) WORKER=${2:-}; shift 2 ;;
            --sync)      SYNC=1; shift ;;
            --async)     SYNC=0; shift ;;
            --lease)     LEASE=1; shift ;;
            --lease-ttl) LEASE_TTL=${2:-}; shift 2 ;;
            --ttl)       TTL=${2:-}; shift 2 ;;
            --)          shift; PARAMS=("$@"); break ;;
            -h|--help)   usage ;;
            *)           ARGS+=("$1"); shift ;;
        esac
    done
    [[ $PREFIX =~ ^[A-Za-z0-9_-]+$ ]] || die "bad --name '$PREFIX'"
    is_int "$BASE_PORT" && [ "$BASE_PORT" -ge 1024 ] && [ "$BASE_PORT" -le 65500 ] || die "bad --base-port '$BASE_PORT'"
    is_int "$WORKER" || die "bad --worker-id '$WORKER'"
    is_int "$LEASE_TTL" && [ "$LEASE_TTL" -ge 2 ] || die "bad --lease-ttl '$LEASE_TTL'"
    is_int "$TTL" && [ "$TTL" -ge 20 ] || die "bad --ttl '$TTL' (Patroni's minimum is 20)"
    local p; for p in ${PARAMS[@]+"${PARAMS[@]}"}; do [[ $p =~ ^[a-z_.]+=.*$ ]] || die "bad parameter '$p' (name=value)"; done
    return 0
}

GDIR() { echo "$RUN_DIR/$PREFIX"; }
HA_FILE() { echo "$RUN_DIR/$PREFIX/$PREFIX.ha"; }
need_group() { [ -f "$(HA_FILE)" ] || die "no group '$PREFIX' (no $(HA_FILE)); run: ha.sh start --name $PREFIX"; }
# the stored settings of the group (written by the first start)
load() {
    need_group
    # shellcheck disable=SC1090
    . "$(HA_FILE)"
}
node_dir() { echo "$(GDIR)/$1"; }
node_index() { [[ ${1:-} =~ ^node([1-9])$ ]] && [ "${BASH_REMATCH[1]}" -le "$NODES" ] || die "no node '${1:-}' (node1..node$NODES)"; echo "${BASH_REMATCH[1]}"; }
pg_port() { echo $((BASE_PORT + 10 + $(node_index "$1"))); }
rest_port() { echo $((BASE_PORT + 20 + $(node_index "$1"))); }
REG_NAME() { echo "${PREFIX}reg"; }
alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }
patroni_pid() { local f; f=$(node_dir "$1")/patroni.pid; [ -f "$f" ] && cat "$f"; }
postmaster_pid() { local f; f=$(node_dir "$1")/data/postmaster.pid; [ -f "$f" ] && head -1 "$f"; }
etcd_pid() { local f; f=$(GDIR)/etcd/pid; [ -f "$f" ] && cat "$f"; }
ctl() { "$VENV/bin/patronictl" -c "$(node_dir node1)/patroni.yml" "$@"; }

# members: "name role state timeline lag" per node, from the first REST API that answers
members() {
    local i out
    for i in $(seq 1 "$NODES"); do
        out=$(curl -sf --max-time 2 "http://127.0.0.1:$((BASE_PORT + 20 + i))/cluster" 2>/dev/null) || continue
        jq -r '.members[] | "\(.name) \(.role) \(.state) \(.timeline // "-") \(.lag // 0)"' <<<"$out" | sort
        return 0
    done
    return 1
}
leader() { members 2>/dev/null | awk '$2 == "leader" && $3 == "running" { print $1; exit }'; }
# healthy: a leader runs and every other node streams from it (timeline of the leader)
healthy() {
    local m; m=$(members 2>/dev/null) || return 1
    [ "$(awk '$2 == "leader" && $3 == "running"' <<<"$m" | wc -l)" = 1 ] || return 1
    [ "$(awk '$2 != "leader" && $3 == "streaming"' <<<"$m" | wc -l)" = $((NODES - 1)) ] || return 1
    local tl; tl=$(awk '$2 == "leader" { print $4 }' <<<"$m")
    [ "$(awk -v t="$tl" '$4 == t' <<<"$m" | wc -l)" = "$NODES" ]
}
# wait_for SECONDS DESCRIPTION COMMAND...: polls COMMAND every 0.2 s
wait_for() {
    local limit=$1 what=$2; shift 2
    local end=$((SECONDS + limit))
    until "$@"; do
        [ $SECONDS -lt $end ] || { note "timeout after ${limit}s waiting for: $what"; return 1; }
        sleep 0.2
    done
}

start_etcd() {
    local d; d=$(GDIR)/etcd
    if alive "$(etcd_pid)"; then return 0; fi
    as_pg mkdir -p "$d"; as_pg chmod 700 "$d"
    note "etcd on 127.0.0.1:$BASE_PORT (peer $((BASE_PORT + 1))), data $d/data"
    as_pg setsid sh -c "echo \$\$ > '$d/pid'; exec '$ETCD' --name ${PREFIX}-etcd --data-dir '$d/data' \
        --listen-client-urls http://127.0.0.1:$BASE_PORT --advertise-client-urls http://127.0.0.1:$BASE_PORT \
        --listen-peer-urls http://127.0.0.1:$((BASE_PORT + 1)) --initial-advertise-peer-urls http://127.0.0.1:$((BASE_PORT + 1)) \
        --initial-cluster ${PREFIX}-etcd=http://127.0.0.1:$((BASE_PORT + 1)) --initial-cluster-state new \
        --enable-v2=false >>'$d/etcd.log' 2>&1" </dev/null >/dev/null 2>&1 &
    wait_for 30 "etcd health" sh -c "curl -sf --max-time 1 http://127.0.0.1:$BASE_PORT/health | grep -q true" \
        || { tail -20 "$d/etcd.log" >&2; die "etcd did not start"; }
}

start_registry() {
    local reg; reg=$(REG_NAME)
    if ! "$CLUSTER" status "$reg" >/dev/null 2>&1; then
        note "registry: cluster $reg on port $((BASE_PORT + 2))"
        "$CLUSTER" start "$reg" $((BASE_PORT + 2)) -c pg_idgen.worker_id=-1 2>/dev/null \
            || { "$CLUSTER" log "$reg" 20 >&2 || true; die "could not start the registry $reg"; }
    fi
    "$CLUSTER" psql "$reg" -c "SET client_min_messages = warning" -c "CREATE EXTENSION IF NOT EXISTS pg_idgen"
}

# the YAML of one node (Patroni's config file, scripts/patroni-yml.bash); bootstrap.dcs is read
# once, at the bootstrap
write_yml() {
    local node=$1 i; i=$(node_index "$1")
    local d; d=$(node_dir "$node")
    local margin=$(( LEASE_TTL / 5 > 1 ? LEASE_TTL / 5 : 1 ))
    local sync=false; [ "$SYNC" = 1 ] && sync=true
    local args=("param=pg_idgen.worker_id: $WORKER") p
    if [ "$LEASE" = 1 ]; then
        args+=("param=pg_idgen.lease_mode: fixed"
               "param=pg_idgen.registry: 'host=127.0.0.1 port=$((BASE_PORT + 2)) user=postgres dbname=postgres connect_timeout=2'"
               "param=pg_idgen.lease_ttl: $LEASE_TTL" "param=pg_idgen.lease_margin: $margin"
               "node_param=pg_idgen.node_name: $node")
    fi
    for p in ${PARAMS[@]+"${PARAMS[@]}"}; do args+=("param=${p%%=*}: '${p#*=}'"); done
    as_pg mkdir -p "$d"; as_pg chmod 700 "$d"
    { echo "# written by scripts/ha.sh"
      patroni_yml scope="$PREFIX" namespace=/pg_idgen/ name="$node" \
          rest_listen="127.0.0.1:$((BASE_PORT + 20 + i))" rest_connect="127.0.0.1:$((BASE_PORT + 20 + i))" \
          etcd="127.0.0.1:$BASE_PORT" ttl="$TTL" sync=$sync \
          pg_listen="127.0.0.1:$((BASE_PORT + 10 + i))" pg_connect="127.0.0.1:$((BASE_PORT + 10 + i))" \
          data_dir="$d/data" pgpass="$d/pgpass" socket_dir="$d" "${args[@]}"
    } | as_pg sh -c "cat > '$d/patroni.yml'"
}

start_node() {
    local node=$1 d; d=$(node_dir "$1")
    if alive "$(patroni_pid "$node")"; then return 0; fi
    [ -f "$d/patroni.yml" ] || write_yml "$node"
    note "$node: Patroni (REST $(rest_port "$node")), PostgreSQL on port $(pg_port "$node")"
    as_pg setsid sh -c "echo \$\$ > '$d/patroni.pid'; exec '$VENV/bin/patroni' '$d/patroni.yml' >>'$d/patroni.log' 2>&1" </dev/null >/dev/null 2>&1 &
}

cmd_start() {
    [ -x "$VENV/bin/patroni" ] || die "no Patroni in $VENV (make deps, or scripts/deps.sh --ha)"
    [ -x "$ETCD" ] || die "no etcd at $ETCD (make deps, or scripts/deps.sh --ha)"
    mkdir -p "$RUN_DIR"; chmod 755 "$RUN_DIR"
    if [ -f "$(HA_FILE)" ]; then
        local want_base=$BASE_PORT; load
        [ "$want_base" = "$BASE_PORT" ] || note "group '$PREFIX' exists: its settings are kept (base port $BASE_PORT)"
    else
        mkdir -p "$(GDIR)"; chown postgres:postgres "$(GDIR)"; chmod 755 "$(GDIR)"
        { echo "BASE_PORT=$BASE_PORT"; echo "WORKER=$WORKER"; echo "SYNC=$SYNC"; echo "LEASE=$LEASE"
          echo "LEASE_TTL=$LEASE_TTL"; echo "TTL=$TTL"; echo "NODES=$NODES"
          printf 'PARAMS=('; local p; for p in ${PARAMS[@]+"${PARAMS[@]}"}; do printf '%q ' "$p"; done; echo ')'
        } | as_pg sh -c "cat > '$(HA_FILE)'"
    fi
    start_etcd
    [ "$LEASE" = 1 ] && start_registry
    local i
    # the first node alone, so that it bootstraps the group (the others would wait for it anyway)
    start_node node1
    wait_for 90 "a leader" sh -c "[ -n \"\$('$0' leader --name '$PREFIX')\" ]" \
        || { tail -30 "$(node_dir node1)/patroni.log" >&2; die "no leader"; }
    for i in $(seq 2 "$NODES"); do start_node "node$i"; done
    wait_for 120 "every node streaming" healthy || { members >&2 || true; die "the group is not healthy"; }
    local l; l=$(leader)
    "$0" psql --name "$PREFIX" "$l" -c "SET client_min_messages = warning" -c "CREATE EXTENSION IF NOT EXISTS pg_idgen"
    cmd_status
}

cmd_stop() {
    load
    local i pid
    for i in $(seq 1 "$NODES"); do
        pid=$(patroni_pid "node$i" || true)
        if alive "$pid"; then note "node$i: stopping Patroni (pid $pid) and its PostgreSQL"; kill -TERM "$pid"; fi
    done
    for i in $(seq 1 "$NODES"); do
        pid=$(patroni_pid "node$i" || true)
        wait_for 60 "node$i's Patroni to exit" sh -c "! kill -0 '$pid' 2>/dev/null" || kill -KILL "$pid" 2>/dev/null || true
    done
    pid=$(etcd_pid || true)
    if alive "$pid"; then note "stopping etcd"; kill -TERM "$pid"; wait_for 20 "etcd to exit" sh -c "! kill -0 '$pid' 2>/dev/null" || true; fi
    [ "$LEASE" = 1 ] && "$CLUSTER" stop "$(REG_NAME)" fast || true
}

cmd_destroy() {
    [ -f "$(HA_FILE)" ] || { [ -d "$(GDIR)" ] || { note "no group '$PREFIX'"; return 0; }; }
    local i pid
    for i in $(seq 1 "$NODES"); do
        pid=$(patroni_pid "node$i" || true); alive "$pid" && kill -KILL "$pid" 2>/dev/null || true
        pid=$(postmaster_pid "node$i" || true); alive "$pid" && kill -KILL "$pid" 2>/dev/null || true
    done
    pid=$(etcd_pid || true); alive "$pid" && kill -KILL "$pid" 2>/dev/null || true
    # the postmasters' children exit when they see the postmaster gone; wait for the data dirs
    for i in $(seq 1 "$NODES"); do
        local d; d=$(node_dir "node$i")/data
        [ -d "$d" ] && wait_for 20 "node$i's processes to exit" sh -c "! fuser -s '$d' 2>/dev/null" || true
    done
    "$CLUSTER" destroy "$(REG_NAME)" >/dev/null 2>&1 || true
    rm -rf "$(GDIR)"
    note "destroyed group $PREFIX"
}

cmd_status() {
    load
    if alive "$(etcd_pid)"; then echo "etcd: running (127.0.0.1:$BASE_PORT)"; else echo "etcd: stopped"; fi
    [ "$LEASE" = 1 ] && { "$CLUSTER" status "$(REG_NAME)" || true; }
    ctl list 2>/dev/null || true
    healthy || return 3
}

# kill -9 the leader's Patroni and postmaster (its children exit on their own), wait for a new
# leader; prints "OLD NEW SECONDS"
cmd_failover() {
    load
    local old; old=$(leader); [ -n "$old" ] || die "no leader to fail"
    local ppid mpid; ppid=$(patroni_pid "$old"); mpid=$(postmaster_pid "$old")
    local t0; t0=$(date +%s.%N)
    note "failover: kill -9 $old's Patroni ($ppid) and postmaster ($mpid)"
    kill -KILL "$ppid" "$mpid" 2>/dev/null || true
    local new=""
    new_leader() { new=$(leader); [ -n "$new" ] && [ "$new" != "$old" ]; }
    wait_for $((TTL * 4)) "a new leader" new_leader || die "no new leader after killing $old"
    echo "$old $new $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')"
}

# the leader key of the group in etcd (Patroni's etcd3 layout: NAMESPACE SCOPE /leader), through
# etcd's JSON gateway (keys and values base64)
leader_key_b64() { printf '/pg_idgen/%s/leader' "$PREFIX" | base64 -w0; }
cmd_expire_leader() {
    load
    local url="http://127.0.0.1:$BASE_PORT/v3/kv" key kv holder rev done
    key=$(leader_key_b64)
    kv=$(curl -sf --max-time 5 -X POST "$url/range" -d "{\"key\": \"$key\"}") \
        || die "etcd on port $BASE_PORT did not answer"
    holder=$(jq -r '.kvs[0].value // empty' <<<"$kv" | base64 -d)
    rev=$(jq -r '.kvs[0].mod_revision // empty' <<<"$kv")
    [ -n "$holder" ] || die "no leader key in etcd"
    node_index "$holder" >/dev/null
    ! alive "$(patroni_pid "$holder")" || die "$holder's Patroni runs: its key does not expire"
    # deleted only if it is still the key read above (not one a new leader took meanwhile)
    done=$(curl -sf --max-time 5 -X POST "$url/txn" -d "{
        \"compare\": [{\"key\": \"$key\", \"target\": \"MOD\", \"result\": \"EQUAL\", \"mod_revision\": \"$rev\"}],
        \"success\": [{\"request_delete_range\": {\"key\": \"$key\"}}]}" | jq -r '.succeeded // false') \
        || die "etcd on port $BASE_PORT did not answer the delete"
    [ "$done" = true ] || die "the leader key changed since it was read (a new leader holds it)"
    note "expire-leader: the leader key of $holder deleted (its Patroni is dead)"
    echo "$holder"
}

cmd_switchover() {
    load
    local old; old=$(leader); [ -n "$old" ] || die "no leader"
    local cand=${1:-}
    local args=(switchover --leader "$old" --force "$PREFIX")
    [ -n "$cand" ] && args=(switchover --leader "$old" --candidate "$cand" --force "$PREFIX")
    local t0; t0=$(date +%s.%N)
    note "switchover from $old${cand:+ to $cand}"
    ctl "${args[@]}" >&2
    local new=""
    new_leader() { new=$(leader); [ -n "$new" ] && [ "$new" != "$old" ]; }
    wait_for $((TTL * 4)) "a new leader" new_leader || die "no new leader after the switchover"
    echo "$old $new $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')"
}

cmd_rejoin() {
    load
    local node=$1; node_index "$node" >/dev/null
    local pid; pid=$(postmaster_pid "$node" || true)
    # a killed postmaster's backends exit when they notice; Patroni needs the data dir free
    [ -n "$pid" ] && ! alive "$pid" && wait_for 20 "$node's old processes to exit" \
        sh -c "! fuser -s '$(node_dir "$node")/data' 2>/dev/null" || true
    start_node "$node"
    streams() { members 2>/dev/null | awk -v n="$node" '$1 == n && $3 == "streaming" { f = 1 } END { exit !f }'; }
    wait_for 120 "$node streaming" streams || { tail -20 "$(node_dir "$node")/patroni.log" >&2; die "$node did not rejoin"; }
    wait_for 120 "every node streaming" healthy || die "the group is not healthy after $node rejoined"
}

cmd=${1:-}; [ $# -gt 0 ] && shift
parse "$@"
set -- ${ARGS[@]+"${ARGS[@]}"}
case $cmd in
    start)      [ $# -eq 0 ] || usage; cmd_start ;;
    stop)       cmd_stop ;;
    destroy)    cmd_destroy ;;
    status)     cmd_status ;;
    failover)   cmd_failover ;;
    switchover) cmd_switchover "$@" ;;
    expire-leader) cmd_expire_leader ;;
    rejoin)     [ $# -eq 1 ] || usage; cmd_rejoin "$1" ;;
    leader)     load; leader ;;
    members)    load; members ;;
    dsn)        load; echo "host=127.0.0.1,127.0.0.1,127.0.0.1 port=$((BASE_PORT + 11)),$((BASE_PORT + 12)),$((BASE_PORT + 13)) user=postgres dbname=postgres target_session_attrs=read-write connect_timeout=2" ;;
    port)       load; [ $# -eq 1 ] || usage; pg_port "$1" ;;
    pid)        load; [ $# -eq 1 ] || usage; postmaster_pid "$1" ;;
    patroni-pid) load; [ $# -eq 1 ] || usage; patroni_pid "$1" ;;
    patronictl) load; ctl "$@" ;;
    psql)       load
                node=${1:-}; if [[ $node =~ ^node[0-9]$ ]]; then shift; else node=$(leader); [ -n "$node" ] || die "no leader"; fi
                exec "$PSQL" -X -q -v ON_ERROR_STOP=1 -h "$(node_dir "$node")" -p "$(pg_port "$node")" -U postgres -d "${PGDATABASE:-postgres}" "$@" ;;
    *)          usage ;;
esac
