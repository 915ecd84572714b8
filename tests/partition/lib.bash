# tests/partition/lib.bash — hosts of the partition tests (sourced by tests/partition/run.sh after
# tests/integration/lib.bash and scripts/netns.sh). Every host is a network namespace
# (scripts/netns.sh); everything of a host runs in it as the postgres OS user, its files under
# $W/HOST. PostgreSQL listens on port 5432 of its host's address (each namespace has its own
# ports), with trust for the test subnet.
#   host_add HOST                   the namespace and $W/HOST
#   pg_init HOST [conf line...]     initdb, pg_idgen preloaded, the lines appended to postgresql.conf
#   pg_standby_init HOST PRIMARY [conf line...]   pg_basebackup -R over the test network
#   pg_start HOST [OFFSET_FILE]     pg_ctl start (with libfaketime reading OFFSET_FILE when given)
#   pg_stop HOST [MODE]             pg_ctl stop (default immediate)
#   pq HOST SQL...                  psql -At on HOST's own server (loopback: works across any cut)
#   etcd_start HOST "H1 H2 H3"      an etcd member of the cluster of those hosts
#   patroni_start HOST "H1 H2 H3" SYNC PARAM...   Patroni (its yml written on first use)
#   members FROM                    "name role state timeline" of every member, as FROM sees them
#   load_start HOST NAME DSN [load.py options]    tests/partition/load.py in HOST's namespace
#   dsn_of H...                     a libpq string naming the hosts, target_session_attrs=read-write

# shellcheck source=../../scripts/patroni-yml.bash
. "$ROOT/scripts/patroni-yml.bash"
W=$TMP/hosts
mkdir -p "$W"; chmod 755 "$W"
VENV=${PG_IDGEN_HA_VENV:-$PG_IDGEN_PG_HOME/patroni/venv}
[ -x "$VENV/bin/patroni" ] || VENV=/var/cache/pg_idgen/patroni/venv
ETCD=${ETCD:-/usr/bin/etcd}
FAKETIME_LIB=${FAKETIME_LIB:-/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1}
SUBNET=10.231.$NETNS_NET.0/24
LOAD_PIDS=()

host_add() {
    netns_add "$1" || return 1
    mkdir -p "$W/$1"; chown postgres:postgres "$W/$1"; chmod 755 "$W/$1"
}
pg_conf() {   # the settings every server of the tests shares
    cat <<EOF
listen_addresses = '*'
port = 5432
unix_socket_directories = '$W/$1'
shared_preload_libraries = 'pg_idgen'
max_connections = 60
wal_level = replica
max_wal_senders = 5
wal_log_hints = on
hot_standby = on
logging_collector = on
log_directory = 'log'
log_filename = 'postgresql.log'
log_min_messages = warning
lc_messages = 'C'
timezone = 'UTC'
log_timezone = 'UTC'
shared_buffers = 32MB
EOF
}
pg_init() {
    local h=$1 l; shift
    netns_pg "$h" "$PGBIN/initdb" -D "$W/$h/data" -A trust -U postgres --locale=C.UTF-8 -E UTF8 >/dev/null || return 1
    { pg_conf "$h"; for l in "$@"; do echo "$l"; done; } >> "$W/$h/data/postgresql.conf"
    printf 'host all all %s trust\nhost replication all %s trust\n' "$SUBNET" "$SUBNET" >> "$W/$h/data/pg_hba.conf"
}
pg_standby_init() {
    local h=$1 p=$2 l; shift 2
    netns_pg "$h" "$PGBIN/pg_basebackup" -h "$(netns_ip "$p")" -p 5432 -U postgres -D "$W/$h/data" -R -X stream -c fast || return 1
    { echo "unix_socket_directories = '$W/$h'"; for l in "$@"; do echo "$l"; done; } >> "$W/$h/data/postgresql.conf"
}
pg_start() {
    local h=$1 ft=${2:-} envs=()
    if [ -n "$ft" ]; then
        envs=(LD_PRELOAD="$FAKETIME_LIB" FAKETIME_TIMESTAMP_FILE="$ft" FAKETIME_NO_CACHE=1
              FAKETIME_DONT_FAKE_MONOTONIC=1 FAKETIME_DISABLE_SHM=1)
    fi
    netns_pg "$h" env ${envs[@]+"${envs[@]}"} "$PGBIN/pg_ctl" -D "$W/$h/data" -l "$W/$h/startup.log" -w -t 60 start >/dev/null \
        || { tail -5 "$W/$h/startup.log" "$W/$h/data/log/postgresql.log" 2>/dev/null; return 1; }
}
pg_stop() { netns_pg "$1" "$PGBIN/pg_ctl" -D "$W/$1/data" -m "${2:-immediate}" -w -t 60 stop >/dev/null 2>&1 || true; }
pq() {
    local h=$1 a=() s; shift
    for s in "$@"; do a+=(-c "$s"); done
    netns_pg "$h" "$PGBIN/psql" -X -h 127.0.0.1 -p 5432 -U postgres -d postgres -At -v ON_ERROR_STOP=1 "${a[@]}"
}
server_log() { tail -"${2:-20}" "$W/$1/data/log/postgresql.log" 2>/dev/null | sed "s/^/    $1: /"; }

etcd_start() {
    local h=$1 hosts=$2 x cluster=""
    for x in $hosts; do cluster+="${cluster:+,}$x=http://$(netns_ip "$x"):2380"; done
    local ip; ip=$(netns_ip "$h")
    netns_daemon "$h" "$W/$h/etcd.pid" "$W/$h/etcd.log" "$ETCD" --name "$h" --data-dir "$W/$h/etcd" \
        --listen-client-urls "http://$ip:2379,http://127.0.0.1:2379" --advertise-client-urls "http://$ip:2379" \
        --listen-peer-urls "http://$ip:2380" --initial-advertise-peer-urls "http://$ip:2380" \
        --initial-cluster "$cluster" --initial-cluster-state new --enable-v2=false \
        --heartbeat-interval 100 --election-timeout 1000
}
etcd_healthy() { netns_exec "$1" curl -sf --max-time 1 http://127.0.0.1:2379/health | grep -q '"true"'; }

patroni_yml_of() {   # patroni_yml_of HOST "H1 H2 H3" SYNC PARAM...: scripts/patroni-yml.bash
    local h=$1 hosts=$2 sync=$3; shift 3
    local ip x etcd="" args=() p
    ip=$(netns_ip "$h")
    for x in $hosts; do etcd+="${etcd:+,}$(netns_ip "$x"):2379"; done
    for p in "$@"; do args+=("param=${p%%=*}: '${p#*=}'"); done
    patroni_yml scope=pt namespace=/pg_idgen_partition/ name="$h" rest_listen=0.0.0.0:8008 \
        rest_connect="$ip:8008" etcd="$etcd" ttl=20 sync="$sync" pg_listen=0.0.0.0:5432 \
        pg_connect="$ip:5432" data_dir="$W/$h/data" pgpass="$W/$h/pgpass" socket_dir="$W/$h" \
        hba="$SUBNET" ${args[@]+"${args[@]}"}
}
patroni_start() {
    local h=$1 hosts=$2 sync=$3; shift 3
    [ -f "$W/$h/patroni.yml" ] || patroni_yml_of "$h" "$hosts" "$sync" "$@" | runuser -u postgres -- sh -c "cat > '$W/$h/patroni.yml'"
    netns_daemon "$h" "$W/$h/patroni.pid" "$W/$h/patroni.log" "$VENV/bin/patroni" "$W/$h/patroni.yml"
}
patronictl() { local h=$1; shift; netns_pg "$h" "$VENV/bin/patronictl" -c "$W/$h/patroni.yml" "$@"; }
members() {
    local out
    out=$(netns_exec "$1" curl -sf --max-time 2 http://127.0.0.1:8008/cluster 2>/dev/null) || return 1
    jq -r '.members[] | "\(.name) \(.role) \(.state) \(.timeline // "-")"' <<<"$out" | sort
}
leader_seen_by() { members "$1" 2>/dev/null | awk '$2 == "leader" && $3 == "running" { print $1; exit }'; }

dsn_of() {
    local h hosts="" ports=""
    for h in "$@"; do hosts+="${hosts:+,}$(netns_ip "$h")"; ports+="${ports:+,}5432"; done
    # keepalives and tcp_user_timeout: a client whose server is cut off while it waits for an
    # answer gives the connection up after a few seconds instead of TCP's minutes of retransmissions
    echo "host=$hosts port=$ports user=postgres dbname=postgres target_session_attrs=read-write keepalives_idle=1 keepalives_interval=1 keepalives_count=3 tcp_user_timeout=4000"
}
load_start() {   # load_start HOST NAME DSN [options]: clients in HOST's namespace writing to $OUT
    local h=$1 name=$2 dsn=$3; shift 3
    netns_exec "$h" "$VENV/bin/python" "$ROOT/tests/partition/load.py" "$dsn" "$OUT" "$name" "$@" \
        >>"$OUT/load.$name.log" 2>&1 &
    LOAD_PIDS+=($!)
}
load_stop() {   # bounded: a loader still running 40 s after the stop is killed (a failure)
    touch "$OUT/stop"
    local p rc=0 end=$((SECONDS + 40))
    for p in ${LOAD_PIDS[@]+"${LOAD_PIDS[@]}"}; do
        while kill -0 "$p" 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 0.2; done
        kill -0 "$p" 2>/dev/null && { kill -KILL "$p"; ko "a loader did not stop within 40 s"; }
        wait "$p" || rc=$?
    done
    LOAD_PIDS=()
    [ $rc -eq 0 ] || { ko "load.py exited with $rc"; cat "$OUT"/load.*.log | tail -5; }
}
# progress NAME FIELD: 1 values, 2 last server address, 3 time of the last value
progress() { cut -d' ' -f"$2" "$OUT/progress.$1" 2>/dev/null || echo 0; }
values_from() {   # values_from NAME ADDR N: the loader NAME got values, the last one from ADDR, N in all
    [ "$(progress "$1" 2)" = "$2" ] && [ "$(progress "$1" 1)" -ge "$3" ]
}
now() { date +%s.%N; }
event() { echo "$1=$2" >> "$OUT/events"; }
