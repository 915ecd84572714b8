# scripts/patroni-yml.bash — the Patroni configuration file of one pg_idgen node, shared by
# scripts/ha.sh (a group on loopback) and tests/partition/lib.bash (a group of network
# namespaces). Sourced; defines one function and runs nothing.
#
#   patroni_yml KEY=VALUE...    prints the YAML. Keys (all required but the last three):
#     scope namespace name        Patroni's scope, DCS namespace and member name
#     rest_listen rest_connect    its REST API: listen and connect addresses (host:port)
#     etcd                        etcd3 hosts (host:port[,host:port...])
#     ttl sync                    bootstrap.dcs ttl (s) and synchronous_mode (true|false)
#     pg_listen pg_connect        PostgreSQL's listen and connect addresses (host:port)
#     data_dir pgpass socket_dir  PostgreSQL's data directory, Patroni's pgpass, the socket directory
#     param='name: value'         (repeatable) one more PostgreSQL parameter of the group (DCS):
#                                 pg_idgen settings, the caller's extras; value as YAML; written
#                                 after the defaults, so a name given again replaces its default
#     node_param='name: value'    (repeatable) one more parameter of this node only
#     hba=CIDR                    (repeatable) trust all and replication connections from CIDR too
# loop_wait 1 and retry_timeout 5 for every group: the partition test's results (and the
# docs' rule loop_wait + 2 × retry_timeout ≤ ttl) rest on them.
patroni_yml() {
    local scope="" namespace="" name="" rest_listen="" rest_connect="" etcd="" ttl="" sync=""
    local pg_listen="" pg_connect="" data_dir="" pgpass="" socket_dir=""
    local params="" node_params="" hba="" kv k
    for kv in "$@"; do
        k=${kv%%=*}
        case $k in
            scope|namespace|name|rest_listen|rest_connect|etcd|ttl|sync|pg_listen|pg_connect|data_dir|pgpass|socket_dir)
                printf -v "$k" '%s' "${kv#*=}" ;;
            param) params+="        ${kv#*=}"$'\n' ;;
            node_param) node_params+="    ${kv#*=}"$'\n' ;;
            hba) hba+="    - host all all ${kv#*=} trust"$'\n'"    - host replication all ${kv#*=} trust"$'\n' ;;
            *) echo "patroni_yml: unknown key '$k'" >&2; return 2 ;;
        esac
    done
    for k in scope namespace name rest_listen rest_connect etcd ttl sync pg_listen pg_connect data_dir pgpass socket_dir; do
        [ -n "${!k}" ] || { echo "patroni_yml: $k= missing" >&2; return 2; }
    done
    local pg_hba="    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
$hba"
    cat <<EOF
scope: $scope
namespace: $namespace
name: $name
log:
  level: INFO
restapi:
  listen: $rest_listen
  connect_address: $rest_connect
etcd3:
  hosts: $etcd
bootstrap:
  dcs:
    ttl: $ttl
    loop_wait: 1
    retry_timeout: 5
    maximum_lag_on_failover: 16777216
    synchronous_mode: $sync
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        shared_preload_libraries: pg_idgen
        wal_level: replica
        wal_log_hints: 'on'
        hot_standby: 'on'
        max_connections: 60
        max_wal_senders: 10
        max_replication_slots: 10
        max_worker_processes: 8
        wal_keep_size: 256MB
        shared_buffers: 64MB
        logging_collector: 'on'
        log_directory: log
        log_filename: postgresql.log
        log_file_mode: '0644'
        log_line_prefix: '%m [%p] %q%u@%d '
        log_min_messages: warning
        lc_messages: C
        timezone: UTC
        log_timezone: UTC
${params}  initdb:
    - encoding: UTF8
    - locale: C.UTF-8
    - auth: trust
  pg_hba:
${pg_hba}postgresql:
  listen: $pg_listen
  connect_address: $pg_connect
  data_dir: $data_dir
  bin_dir: $PGBIN
  pgpass: $pgpass
  use_unix_socket: true
  authentication:
    superuser:
      username: postgres
      password: postgres
    replication:
      username: replicator
      password: replicator
  parameters:
    unix_socket_directories: '$socket_dir'
${node_params}  pg_hba:
EOF
    printf '%s' "$pg_hba"
}
