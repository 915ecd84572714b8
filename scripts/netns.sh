#!/usr/bin/env bash
# scripts/netns.sh — real network partitions on one machine: one network namespace per host, each
# with a veth pair into one bridge, and nftables rules inside the namespaces that drop traffic
# between chosen hosts (both ways, or one way only). Used by tests/partition/ (sourced); every
# process of a test host runs inside its namespace, so a cut is a cut for PostgreSQL, Patroni,
# etcd, the lease worker and the clients alike.
#
# Sourced:   . scripts/netns.sh      then, in this order:
#   netns_init                      the bridge (no address: the root namespace reaches no host),
#                                   and the EXIT trap's cleanup must call netns_cleanup
#   netns_add HOST                  a namespace for HOST with the next address of the subnet
#                                   (10.231.$NETNS_NET.11, .12, ...), loopback up, and its own
#                                   nftables table `inet netns_cut` (chains in/out, policy accept)
#   netns_ip HOST                   its address
#   netns_exec HOST CMD...          CMD inside HOST's namespace (as the caller)
#   netns_pg HOST CMD...            CMD inside HOST's namespace as the postgres OS user
#   netns_daemon HOST PIDFILE LOG CMD...   CMD in the background (setsid, as postgres), its pid in
#                                   PIDFILE, stdout/stderr appended to LOG
#   netns_cut_oneway FROM TO        packets FROM -> TO are dropped (FROM's output, TO's input);
#                                   TO -> FROM still arrive
#   netns_cut A B                   both ways
#   netns_isolate HOST              HOST cut from every other host (loopback inside stays)
#   netns_split "A B" "C D E"       every host of the first group cut from every host of the second
#   netns_heal [HOST...]            drop every cut rule (of the HOSTs given, default all)
#   netns_rules HOST                the rules now in HOST's table (for logs)
#   netns_cleanup                   kill every process left in the namespaces (by pid, from
#                                   `ip netns pids`), delete the namespaces and the bridge
# Called as a program: scripts/netns.sh cleanup [PREFIX] removes what a killed run left behind
# (namespaces PREFIX-*, bridge PREFIXbr); scripts/netns.sh selftest runs a self-test.
#
# Env: NETNS_PREFIX (default pgidp: namespaces pgidp-HOST, bridge pgidpbr, veths pgidpvN),
#      NETNS_NET (default 60: the subnet 10.231.NET.0/24, hosts .11, .12, ...).
# Nothing is routed out of it: the
# namespaces have no default route and the bridge no address, so the hosts reach each other and
# their own loopback only. Needs root, iproute2 and nftables (scripts/deps.sh --partition).
# Every wait here is bounded; nothing sleeps without a bound.

NETNS_PREFIX=${NETNS_PREFIX:-pgidp}
NETNS_NET=${NETNS_NET:-60}
NETNS_HOSTS=()
declare -A NETNS_ADDR=()
NETNS_BRIDGE=${NETNS_PREFIX}br

_netns_die() { printf 'netns.sh: %s\n' "$*" >&2; return 1; }
netns_name() { echo "$NETNS_PREFIX-$1"; }

netns_init() {
    command -v nft >/dev/null || _netns_die "nft not found (apt-get install nftables; scripts/deps.sh --partition)" || return 1
    [ ${#NETNS_PREFIX} -le 10 ] || _netns_die "NETNS_PREFIX too long (interface names: 15 characters)" || return 1
    # what an earlier run that was killed (SIGKILL: no trap) left behind under this prefix
    netns_cleanup_prefix "$NETNS_PREFIX" 2>/dev/null || true
    ip link add "$NETNS_BRIDGE" type bridge || return 1
    ip link set "$NETNS_BRIDGE" up
}

netns_add() {
    local host=$1 ns idx veth
    ns=$(netns_name "$host")
    idx=$(( ${#NETNS_HOSTS[@]} + 11 ))
    veth=${NETNS_PREFIX}v$idx
    ip netns add "$ns" || return 1
    NETNS_HOSTS+=("$host")
    NETNS_ADDR[$host]=10.231.$NETNS_NET.$idx
    ip link add "$veth" type veth peer name "${veth}p" || return 1
    ip link set "${veth}p" netns "$ns"
    ip link set "$veth" master "$NETNS_BRIDGE" up
    ip netns exec "$ns" ip link set lo up
    ip netns exec "$ns" ip link set "${veth}p" name eth0
    ip netns exec "$ns" ip addr add "${NETNS_ADDR[$host]}/24" dev eth0
    ip netns exec "$ns" ip link set eth0 up
    ip netns exec "$ns" nft -f - <<EOF
table inet netns_cut {
    chain in { type filter hook input priority 0; policy accept; }
    chain out { type filter hook output priority 0; policy accept; }
}
EOF
}

netns_ip() { echo "${NETNS_ADDR[$1]:?no host $1}"; }
netns_exec() { local h=$1; shift; ip netns exec "$(netns_name "$h")" "$@"; }
netns_pg() { local h=$1; shift; ip netns exec "$(netns_name "$h")" runuser -u postgres -- "$@"; }
netns_daemon() {
    local h=$1 pidfile=$2 log=$3; shift 3
    # the pid file is written by the shell that then execs CMD: the pid is CMD's own
    ip netns exec "$(netns_name "$h")" runuser -u postgres -- setsid sh -c 'echo $$ > "$0"; exec "$@"' "$pidfile" "$@" \
        </dev/null >>"$log" 2>&1 &
}

netns_cut_oneway() {
    local from=$1 to=$2
    netns_exec "$from" nft add rule inet netns_cut out ip daddr "$(netns_ip "$to")" drop
    netns_exec "$to" nft add rule inet netns_cut in ip saddr "$(netns_ip "$from")" drop
}
netns_cut() { netns_cut_oneway "$1" "$2"; netns_cut_oneway "$2" "$1"; }
netns_isolate() {
    local h
    for h in "${NETNS_HOSTS[@]}"; do [ "$h" = "$1" ] || netns_cut "$1" "$h"; done
}
netns_split() {
    local a b
    for a in $1; do for b in $2; do netns_cut "$a" "$b"; done; done
}
netns_heal() {
    local h hosts=("$@")
    [ ${#hosts[@]} -gt 0 ] || hosts=("${NETNS_HOSTS[@]}")
    for h in "${hosts[@]}"; do
        netns_exec "$h" nft flush chain inet netns_cut in
        netns_exec "$h" nft flush chain inet netns_cut out
    done
}
netns_rules() { netns_exec "$1" nft list table inet netns_cut | grep -E 'drop' | sed 's/^[[:space:]]*//' | tr '\n' ';'; }

# netns_cleanup_prefix PREFIX: every namespace PREFIX-*, its processes, and the bridge PREFIXbr
netns_cleanup_prefix() {
    local prefix=$1 ns pids i v
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$prefix-" || true); do
        # the processes still in the namespace (ours: only this test starts processes there)
        for i in 1 2 3 4 5 6 7 8 9 10; do
            pids=$(ip netns pids "$ns" 2>/dev/null || true)
            [ -n "$pids" ] || break
            # shellcheck disable=SC2086
            kill -KILL $pids 2>/dev/null || true
            sleep 0.2
        done
        ip netns del "$ns" 2>/dev/null || true
    done
    # the root ends of the veth pairs (deleting one end deletes the pair: a namespace the kernel
    # is still tearing down, sockets closing in it, can keep the other end for a while)
    for v in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E "^${prefix}v[0-9]+\$" || true); do
        ip link del "$v" 2>/dev/null || true
    done
    ip link del "${prefix}br" 2>/dev/null || true
}
netns_cleanup() {
    netns_cleanup_prefix "$NETNS_PREFIX"
    NETNS_HOSTS=()
    NETNS_ADDR=()
}

# a self-test: three hosts, a TCP echo across each kind of cut (bounded: 1 s per attempt)
_netns_selftest() {
    set -u
    trap netns_cleanup EXIT
    netns_init && netns_add a && netns_add b && netns_add c
    netns_daemon b /tmp/netns-selftest.pid /dev/null python3 -c '
import socket; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("0.0.0.0", 7007)); s.listen(8)
while True:
    c, _ = s.accept(); c.sendall(b"pong"); c.close()'
    reach() { netns_exec "$1" python3 -c "import socket,sys; s=socket.create_connection(('$(netns_ip "$2")', 7007), timeout=1); sys.exit(0 if s.recv(4)==b'pong' else 1)" 2>/dev/null; }
    local i fails=0
    for i in $(seq 1 25); do reach a b && break; sleep 0.2; done
    t() { if [ "$2" = "$3" ]; then echo "ok   $1"; else echo "FAIL $1 (got $2, want $3)"; fails=$((fails + 1)); fi; }
    r() { if reach "$1" "$2"; then echo yes; else echo no; fi; }
    t "a reaches b" "$(r a b)" yes
    netns_isolate b;          t "b isolated: a cannot reach b" "$(r a b)" no; t "c cannot reach b" "$(r c b)" no
    netns_heal;               t "healed: a reaches b" "$(r a b)" yes
    netns_cut_oneway a b;     t "a -> b cut: a cannot reach b" "$(r a b)" no; t "c still reaches b" "$(r c b)" yes
    netns_heal; netns_cut_oneway b a; t "b -> a cut: a cannot reach b (answers lost)" "$(r a b)" no
    netns_heal; netns_split "a" "b c"; t "split {a} {b c}: a cannot reach b" "$(r a b)" no; t "c reaches b" "$(r c b)" yes
    [ $fails -eq 0 ]
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    case ${1:-} in
        cleanup)  netns_cleanup_prefix "${2:-$NETNS_PREFIX}" ;;
        selftest) _netns_selftest ;;
        *) sed -n '2,/^# Every wait/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    esac
fi
