#!/usr/bin/env bash
# tests/partition/run.sh — pg_idgen across real network partitions and clock skew (make
# test-partition): every host in its own network namespace (scripts/netns.sh: veth pairs into one
# bridge, nftables drops between hosts, both ways or one way), clients on both sides of each cut,
# every value they are handed recorded (tests/partition/load.py), then checked
# (tests/partition/check.py): no snowflake id, segment value or keyed value handed out twice, no
# acknowledged insert lost where the mode promises it.
#
# Scenarios (PARTITION_SCENARIOS, default the CI subset "leader-sync lease-isolated lease-answers-lost skew-sync skew-async";
# "all" runs every one, as make test-all does):
#   leader-sync, leader-async   a Patroni group (three hosts, each with PostgreSQL, Patroni 4.1.5
#       and an etcd member; ttl 20, loop_wait 1, retry_timeout 5; one worker id for the group) with
#       clients on every host; the leader's host is cut from every other host (from etcd's majority
#       and from its standbys) while its own clients keep calling it; healed once a new leader
#       hands out values; the old leader rejoins (pg_rewind). synchronous_mode true / false.
#   split-sync, split-async   the same group split into a majority {leader, a standby} and a
#       minority {the other standby; in synchronous mode the synchronous one}, etcd members on both
#       sides: the leader goes on (Patroni names the other standby synchronous), the minority never
#       leads; no value twice, every acknowledged insert kept; the longest stall reported.
#   lease-isolated, lease-renewals-lost, lease-answers-lost   two independent servers leasing
#       worker id 1 (lease_mode = fixed, lease_ttl 6, lease_margin 1) from a registry on a third
#       host, clients on both: the holder is cut from the registry only (both ways; its packets to
#       the registry only; the registry's packets to it only); the other server takes the id over.
#   skew-sync, skew-async, skew-async-covered, skew-lease   a primary and a streaming standby
#       whose clock runs 8 s behind the primary's (libfaketime; which side is faked: below),
#       layout of 200 ids/s so the primary's ids run ahead of its clock (max_drift_ms 3000); the
#       primary is cut off while its clients keep calling, stopped (fenced) 2 s later, the
#       standby promoted at once: with a synchronous standby; with an asynchronous one and the
#       default clock_skew_ms (250: the skew is beyond it; the standby's WAL receiver saw the
#       primary's clock 8 s ahead and the end-of-recovery floor adds that: asserted, 0 ids
#       twice); asynchronous with clock_skew_ms = 10000 (covering it on its own); and
#       skew-lease: asynchronous, the worker id leased (fixed) from a registry on a third host,
#       default clock_skew_ms (the registry's high-water mark covers the skew). Every skew
#       scenario asserts 0 ids twice, the promoted standby's ids above the old primary's, and
#       each client's ids increasing, and (but skew-lease on 15) that s's WAL receiver saw p's
#       clock 7.5-8 s ahead before the cut (pg_stat_wal_receiver).
#       Which side is skewed (PARTITION_SKEW_SIDE): "standby" (s 8 s behind, p real; the default
#       on 16+) or "primary" (p under libfaketime "+8s", s real; the default on 15): the same
#       relative skew. On PostgreSQL 15 the processes the postmaster forks in a signal handler
#       (reaper, sigusr1_handler: the WAL receiver, background workers such as pg_idgen's lease
#       worker and monitor, the WAL writer) are not faked by libfaketime 0.9.10: they, and the
#       postmaster's own log lines written there, run on the real clock, while the backends,
#       walsenders, startup process and checkpointer (forked in ServerLoop or PostmasterMain)
#       are faked. A skewed standby's WAL receiver then sees its primary's clock 0 ms ahead
#       (measured: -2 ms, -1 ms), a skew no real machine has; a skewed primary's walsenders are
#       faked, so the real standby's WAL receiver sees the 8 s (measured: 7998-8000 ms).
#       skew-lease stays on the standby side: a skewed primary's own lease worker (real clock)
#       bounds its ids at real + lease validity + max_drift_ms = real + 8 s, below the faked
#       backends' clock, so p refuses every id (measured on 15: 244 of 244 calls 55000 "at or
#       after the bound of its lease"). On 15 its standby's WAL receiver and lease worker run on
#       the real clock: the end of recovery adds 0 ms seen, and the registry's high-water mark
#       alone covers the skew.
#   clock-jump   one server under load, libfaketime: its clock 10 min ahead for a few seconds and
#       back, a restart while behind, then the clock past the jump's ids: nothing handed out while
#       behind (55000), nothing twice, each client's ids increasing.
#   registry-slots   four nodes leasing worker ids 1-4 serve a registry-owned segment tag (12
#       slots); the registry is cut from two of them while the first one's slots are drained and
#       one of the second's moved: no segment value twice across the fleet.
# Asserted per scenario: see each function. Reported: failover/takeover times, client errors,
# refusals, values per side.
# Env: PARTITION_SCENARIOS, PARTITION_SKEW_SIDE (primary|standby, above), NETNS_PREFIX /
# NETNS_NET (scripts/netns.sh), PARTITION_KEEP=DIR (keep the recorded values and every log).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export PG=${PG:-18}
# shellcheck source=../integration/lib.bash
. "$ROOT/tests/integration/lib.bash" "$ROOT"
# shellcheck source=../../scripts/netns.sh
. "$ROOT/scripts/netns.sh"
# shellcheck source=lib.bash
. "$ROOT/tests/partition/lib.bash"

[ "$(id -u)" = 0 ] || { log "SKIP: network namespaces need root"; finish; }
command -v nft >/dev/null || { ko "nft not found (scripts/deps.sh --ha installs nftables)"; finish; }
SCEN=${PARTITION_SCENARIOS:-leader-sync lease-isolated lease-answers-lost skew-sync skew-async}
[ "$SCEN" != all ] || SCEN="leader-sync leader-async split-sync split-async lease-isolated lease-renewals-lost lease-answers-lost skew-sync skew-async skew-async-covered skew-lease clock-jump registry-slots"
LAYOUT='time=41,worker=10,sequence=1,unit_ms=10,epoch=2026-01-01'
# the skew scenarios' skewed side (see the header): primary on PostgreSQL 15, standby on 16+
SKEW_SIDE=${PARTITION_SKEW_SIDE:-}
[ -n "$SKEW_SIDE" ] || { if [ "$PG" -ge 16 ]; then SKEW_SIDE=standby; else SKEW_SIDE=primary; fi; }
case $SKEW_SIDE in primary|standby) ;; *) ko "PARTITION_SKEW_SIDE must be primary or standby, not $SKEW_SIDE"; finish ;; esac
FIGURES=""

part_cleanup() {
    set +e
    [ -z "${OUT:-}" ] || touch "$OUT/stop" 2>/dev/null
    local p; for p in ${LOAD_PIDS[@]+"${LOAD_PIDS[@]}"}; do kill "$p" 2>/dev/null; done
    if [ -n "${PARTITION_KEEP:-}" ]; then
        mkdir -p "$PARTITION_KEEP"
        (cd "$W" && find . \( -name '*.log' -o -name '*.tsv' -o -name events \) -exec cp --parents {} "$PARTITION_KEEP" \;) 2>/dev/null
        (cd "$TMP" && find . -maxdepth 2 \( -name '*.tsv' -o -name 'events' -o -name '*.log' \) -exec cp --parents {} "$PARTITION_KEEP" \;) 2>/dev/null
    fi
    netns_cleanup
}
trap 'rc=$?; part_cleanup; (exit $rc); cleanup' EXIT

# new_round NAME: an empty directory for one scenario's values ($OUT): a scenario run again in
# the same invocation (PARTITION_SCENARIOS="skew-async skew-async") must not find the last run's
# stop file, progress or values
new_round() {
    OUT=$TMP/$1; rm -rf "$OUT"; mkdir -p "$OUT"; chmod 777 "$OUT"; : > "$OUT/events"
}
reset_hosts() {
    netns_cleanup
    rm -rf "$W"; mkdir -p "$W"; chmod 755 "$W"
    netns_init
}
# run_check NAME [FINAL_TSV]: check.py's key=value lines into R; get KEY reads one
run_check() {
    R=$("$VENV/bin/python" "$ROOT/tests/partition/check.py" "$OUT" ${2:+"$2"} 2>"$OUT/summary") \
        || { cat "$OUT/summary"; ko "$1: check.py failed"; R=""; return 1; }
    sed "s#^#[$TEST_NAME] $1:#" "$OUT/summary"
}
get() { sed -n "s/^$1=//p" <<<"$R"; }
figure() { FIGURES+="$1"$'\n'; log "$1"; }
value_after() {   # value_after LOADER ADDR T: LOADER's last value came from ADDR after time T
    [ "$(progress "$1" 2)" = "$2" ] && awk -v a="$(progress "$1" 3)" -v b="$3" 'BEGIN { exit !(a > b) }'
}

# ---------------------------------------------------------------------------------------------
# leader-sync / leader-async: the Patroni leader cut off with its clients
PATRONI_UP=0
patroni_group() {   # three hosts, etcd + Patroni on each; the group healthy, tables created
    reset_hosts
    local h hosts="n1 n2 n3" t=$SECONDS
    for h in $hosts; do host_add "$h"; done
    for h in $hosts; do etcd_start "$h" "$hosts"; done
    wait_until 30 "etcd healthy" etcd_healthy n1 || return 1
    patroni_start n1 "$hosts" true pg_idgen.worker_id=1 pg_idgen.max_drift_ms=3000 "pg_idgen.layout=$LAYOUT"
    leader_n1() { [ "$(leader_seen_by n1)" = n1 ]; }
    wait_until 90 "n1 bootstrapping the group" leader_n1 || { tail -20 "$W/n1/patroni.log"; return 1; }
    for h in n2 n3; do patroni_start "$h" "$hosts" true; done
    wait_until 120 "every member streaming" healthy n1 || { members n1; return 1; }
    pq n1 "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
        "SELECT segment_create('pt_ins'), segment_create('pt_sel'), keyed_create('pt', 100)" \
        "CREATE TABLE pt_ids (id bigint PRIMARY KEY DEFAULT snowflake_next(), seg bigint NOT NULL DEFAULT segment_next('pt_ins'), client text, k int, kv bigint, at timestamptz DEFAULT clock_timestamp())" >/dev/null
    ok "Patroni group: leader n1, n2 and n3 streaming ($((SECONDS - t)) s)"
    PATRONI_UP=1 LEASE_UP=0
}
# healthy FROM: one leader running, the two others streaming on its timeline (as FROM sees it)
healthy() {
    local m; m=$(members "$1" 2>/dev/null) || return 1
    [ "$(awk '$2 == "leader" && $3 == "running"' <<<"$m" | wc -l)" = 1 ] || return 1
    [ "$(awk '$2 != "leader" && $3 == "streaming"' <<<"$m" | wc -l)" = 2 ] || return 1
    local tl; tl=$(awk '$2 == "leader" { print $4 }' <<<"$m")
    [ "$(awk -v t="$tl" '$4 == t' <<<"$m" | wc -l)" = 3 ]
}
sync_named() { members "$1" 2>/dev/null | grep -q ' sync_standby streaming '; }

scenario_leader() {   # scenario_leader sync|async
    local mode=$1 name=leader-$1 old new t0 other h
    [ $PATRONI_UP = 1 ] || patroni_group || { ko "$name: the Patroni group did not start"; return; }
    old=$(leader_seen_by n1); [ -n "$old" ] || old=$(leader_seen_by n2)
    other=$( for h in n1 n2 n3; do [ "$h" = "$old" ] || { echo "$h"; break; }; done )
    local want=true; [ "$mode" = sync ] || want=false
    patronictl "$other" edit-config --force -s "synchronous_mode=$want" pt >/dev/null 2>&1 || true
    if [ "$mode" = sync ]; then
        wait_until 60 "Patroni naming a synchronous standby" sync_named "$other" || return
    else
        nosync() { [ -z "$(pq "$old" 'SHOW synchronous_standby_names' 2>/dev/null)" ]; }
        wait_until 60 "synchronous_standby_names empty" nosync || return
    fi
    new_round "$name"
    for h in n1 n2 n3; do load_start "$h" "$h" "$(dsn_of "$h" $(printf '%s\n' n1 n2 n3 | grep -v "^$h\$"))" --inserters 2 --selectors 1; done
    wait_until 60 "the clients of $old getting values from it" value_after "$old" "$(netns_ip "$old")" 0 || return
    sleep 1   # values from every side before the cut (a state, not a pass/fail condition)
    t0=$(now); netns_isolate "$old"
    event cut "$t0"; event old "$(netns_ip "$old")"; event old_host "$old"
    log "$name: $old (leader) cut from n1..n3 but itself, its clients still calling it"
    newleader() { local h; for h in n1 n2 n3; do [ "$h" = "$old" ] && continue; new=$(leader_seen_by "$h"); [ -n "$new" ] && [ "$new" != "$old" ] && return 0; done; return 1; }
    wait_until 90 "a new leader on the majority side" newleader || { members "$other"; return; }
    event new_seen "$(now)"; event new "$(netns_ip "$new")"
    local far; far=$( for h in n1 n2 n3; do [ "$h" = "$old" ] || [ "$h" = "$new" ] || echo "$h"; done )
    wait_until 60 "values from the new leader $new" value_after "$far" "$(netns_ip "$new")" "$t0" || true
    sleep 2
    event heal "$(now)"; netns_heal
    log "$name: healed; $new leads"
    wait_until 120 "$old rejoining as a streaming standby" healthy "$new" || members "$new"
    load_stop
    pq "$new" "COPY (SELECT id, seg, kv FROM pt_ids) TO STDOUT" > "$OUT/final.tsv"
    run_check "$name" "$OUT/final.tsv" || return
    check "$name: values recorded on both sides" "$(get values)" -gt 300
    check "$name: no snowflake id handed out twice" "$(get snowflake_twice)" -eq 0
    check "$name: no duplicate key (23505)" "$(get duplicate_key_errors)" -eq 0
    check "$name: the new leader's ids above every id of the old one" "$(get new_ids_at_or_below_old)" -eq 0
    if [ "$mode" = sync ]; then
        check "$name: no segment value handed out twice" "$(get segment_twice)" -eq 0
        check "$name: no keyed value handed out twice" "$(get keyed_twice)" -eq 0
        check "$name: every acknowledged insert on the final leader" "$(get acked_missing)" -eq 0
    fi
    figure "$name: the old leader's clients got $(get old_side_values_after_cut) values from it after the cut ($(get old_side_inserts_after_cut) inserts), the last $(get old_side_last_after_cut_s) s after it; its last answer to any client received $(get old_last_after_cut_s) s after the cut ($(get overlap_values) received after the new leader's first); new leader seen $(get new_seen_after_cut_s) s, its first value $(get new_first_after_cut_s) s; $(get values) values ($(get per_server)); twice: snowflake $(get snowflake_twice), segment $(get segment_twice), keyed $(get keyed_twice); acknowledged inserts missing $(get acked_missing); client errors $(get error_codes)"
}

# ---------------------------------------------------------------------------------------------
# split-sync / split-async: a majority/minority split of the group, etcd members on both sides;
# the minority is a standby alone (in synchronous mode the synchronous one): the leader keeps
# etcd's majority and goes on, the minority cannot elect itself
scenario_split() {   # scenario_split sync|async
    local mode=$1 name=split-$1 leader minor other t0 h
    [ $PATRONI_UP = 1 ] || patroni_group || { ko "$name: the Patroni group did not start"; return; }
    leader=$(leader_seen_by n1); [ -n "$leader" ] || leader=$(leader_seen_by n2)
    local want=true; [ "$mode" = sync ] || want=false
    patronictl "$leader" edit-config --force -s "synchronous_mode=$want" pt >/dev/null 2>&1 || true
    if [ "$mode" = sync ]; then
        wait_until 60 "Patroni naming a synchronous standby" sync_named "$leader" || return
        minor=$(members "$leader" | awk '$2 == "sync_standby" { print $1; exit }')
    else
        nosync() { [ -z "$(pq "$leader" 'SHOW synchronous_standby_names' 2>/dev/null)" ]; }
        wait_until 60 "synchronous_standby_names empty" nosync || return
        minor=$(members "$leader" | awk '$2 != "leader" { print $1; exit }')
    fi
    other=$( for h in n1 n2 n3; do [ "$h" = "$leader" ] || [ "$h" = "$minor" ] || echo "$h"; done )
    new_round "$name"
    for h in n1 n2 n3; do load_start "$h" "$h" "$(dsn_of "$h" $(printf '%s\n' n1 n2 n3 | grep -v "^$h\$"))" --inserters 2 --selectors 1; done
    wait_until 60 "the clients getting values from $leader" value_after "$other" "$(netns_ip "$leader")" 0 || return
    sleep 1
    t0=$(now); netns_split "$leader $other" "$minor"
    event cut "$t0"
    log "$name: {$leader (leader), $other} | {$minor$([ "$mode" = async ] || echo ', the synchronous standby')}"
    if [ "$mode" = sync ]; then
        other_sync() { members "$leader" 2>/dev/null | grep -q "^$other sync_standby streaming "; }
        wait_until 60 "Patroni naming $other the synchronous standby" other_sync || members "$leader"
    fi
    wait_until 60 "values from $leader after the split" value_after "$other" "$(netns_ip "$leader")" "$(awk -v t="$t0" 'BEGIN { printf "%.3f", t + 3 }')" || true
    # the minority side: its Patroni cannot take the leader key (no etcd quorum on its side)
    local end=$((SECONDS + 25)) minor_led=0
    while [ $SECONDS -lt $end ]; do [ "$(leader_seen_by "$minor")" = "$minor" ] && minor_led=1; sleep 1; done
    check "$name: the minority ($minor) never became leader" "$minor_led" -eq 0
    check "$name: $leader still leads" "$(leader_seen_by "$leader")" == "$leader"
    event heal "$(now)"; netns_heal
    wait_until 120 "$minor streaming again" healthy "$leader" || members "$leader"
    load_stop
    pq "$leader" "COPY (SELECT id, seg, kv FROM pt_ids) TO STDOUT" > "$OUT/final.tsv"
    run_check "$name" "$OUT/final.tsv" || return
    check "$name: values recorded" "$(get values)" -gt 300
    check "$name: no snowflake id handed out twice" "$(get snowflake_twice)" -eq 0
    check "$name: no segment value handed out twice" "$(get segment_twice)" -eq 0
    check "$name: no keyed value handed out twice" "$(get keyed_twice)" -eq 0
    check "$name: every acknowledged insert on the leader (no failover)" "$(get acked_missing)" -eq 0
    check "$name: each client's ids increasing" "$(get client_ids_not_increasing)" -eq 0
    figure "$name: the leader went on; the longest time without a value after the split $(get longest_stall_after_cut_s) s; $(get values) values ($(get per_server)); twice: snowflake $(get snowflake_twice), segment $(get segment_twice), keyed $(get keyed_twice); acknowledged inserts missing $(get acked_missing); client errors $(get error_codes)"
}

# ---------------------------------------------------------------------------------------------
# lease-*: the holder of a leased worker id cut from the registry only
LEASE_UP=0
lease_hosts() {
    reset_hosts
    local h
    for h in reg a b; do host_add "$h"; done
    pg_init reg && pg_start reg || return 1
    pq reg "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
    for h in a b; do
        pg_init "$h" "pg_idgen.lease_mode = fixed" "pg_idgen.worker_id = 1" "pg_idgen.node_name = '$h'" \
            "pg_idgen.registry = 'host=$(netns_ip reg) port=5432 user=postgres dbname=postgres connect_timeout=2'" \
            "pg_idgen.lease_ttl = 6" "pg_idgen.lease_margin = 1" "pg_idgen.layout = '$LAYOUT'" "pg_idgen.max_drift_ms = 3000" || return 1
    done
    pg_start a || return 1
    holds() { [ "$(pq "$1" "SELECT state FROM snowflake_lease()" 2>/dev/null)" = held ]; }
    pq a "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
    wait_until 30 "a holding worker id 1" holds a || return 1
    pg_start b || return 1
    pq b "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
    refused() { [ "$(pq "$1" "SELECT state FROM snowflake_lease()" 2>/dev/null)" = "held by another node" ]; }
    wait_until 30 "b refused (a holds the id)" refused b || return 1
    ok "lease hosts: a holds worker id 1 from the registry on host reg, b refused"
    HOLDER=a TAKER=b LEASE_UP=1
}
scenario_lease() {   # scenario_lease isolated|renewals-lost|answers-lost
    local kind=$1 name=lease-$1 t0
    [ $LEASE_UP = 1 ] || lease_hosts || { ko "$name: the lease hosts did not start"; return; }
    local H=$HOLDER T=$TAKER
    new_round "$name"
    load_start "$H" "$H" "$(dsn_of "$H")" --what snowflake --inserters 0 --selectors 3
    load_start "$T" "$T" "$(dsn_of "$T")" --what snowflake --inserters 0 --selectors 3
    wait_until 30 "values from the holder $H" value_after "$H" "$(netns_ip "$H")" 0 || return
    sleep 1
    t0=$(now)
    case $kind in
        isolated)      netns_cut "$H" reg ;;
        renewals-lost) netns_cut_oneway "$H" reg ;;
        answers-lost)  netns_cut_oneway reg "$H" ;;
    esac
    event cut "$t0"; event old "$(netns_ip "$H")"; event new "$(netns_ip "$T")"
    log "$name: $H cut from the registry ($(netns_rules "$H"))"
    wait_until 60 "$T taking worker id 1 over" value_after "$T" "$(netns_ip "$T")" "$t0" || true
    event new_seen "$(now)"
    sleep 1
    netns_heal; event heal "$(now)"
    refused() { [ "$(pq "$1" "SELECT state FROM snowflake_lease()" 2>/dev/null)" = "held by another node" ]; }
    wait_until 30 "$H refused once healed ($T holds the id)" refused "$H" || pq "$H" "SELECT state, detail FROM snowflake_lease()"
    load_stop
    run_check "$name" || return
    check "$name: values on both sides" "$(get new_values)" -gt 0
    check "$name: no snowflake id handed out twice" "$(get snowflake_twice)" -eq 0
    check "$name: the taker's ids above every id of the holder" "$(get new_ids_at_or_below_old)" -eq 0
    check "$name: the holder stopped before the taker began" "$(get overlap_values)" -eq 0
    check "$name: each client's ids increasing" "$(get client_ids_not_increasing)" -eq 0
    figure "$name: holder's last id $(get old_last_after_cut_s) s after the cut, taker's first $(get new_first_after_cut_s) s; $(get values) values ($(get per_server)); twice $(get snowflake_twice); refusals (55000) $(get refusals); client errors $(get error_codes)"
    HOLDER=$T TAKER=$H
}

# ---------------------------------------------------------------------------------------------
# skew-*: a standby whose clock is 8 s behind promoted after its primary was cut off
scenario_skew() {   # scenario_skew sync|async|async-covered
    local kind=$1 name=skew-$1 t0 skewms=250
    [ "$kind" != async-covered ] || skewms=10000
    reset_hosts; LEASE_UP=0; PATRONI_UP=0
    host_add p; host_add s
    local conf=("pg_idgen.worker_id = 1" "pg_idgen.layout = '$LAYOUT'" "pg_idgen.max_drift_ms = 3000" "pg_idgen.clock_skew_ms = $skewms")
    local sconf=("synchronous_standby_names = ''")
    if [ "$kind" = lease ]; then   # the worker id leased from a registry on a third host
        host_add reg; pg_init reg && pg_start reg || return
        pq reg "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
        conf+=("pg_idgen.lease_mode = fixed" "pg_idgen.node_name = 'p'" "pg_idgen.lease_ttl = 6" "pg_idgen.lease_margin = 1"
               "pg_idgen.registry = 'host=$(netns_ip reg) port=5432 user=postgres dbname=postgres connect_timeout=2'")
        sconf+=("pg_idgen.node_name = 's'")
    fi
    # Which clock is skewed (SKEW_SIDE): "standby", s's 8 s behind (libfaketime "-8s", p real), or
    # "primary", p's 8 s ahead ("+8s", s real): the same relative skew. skew-lease stays on the
    # standby side unless PARTITION_SKEW_SIDE says otherwise: on PostgreSQL 15 p's own lease worker
    # is not faked (see the header), and its bound of p's ids (its clock + lease validity +
    # max_drift_ms: real + 8 s) lies at p's faked clock, so p would refuse every id.
    local side=$SKEW_SIDE; [ "$kind" != lease ] || side=${PARTITION_SKEW_SIDE:-standby}
    pg_init p "${conf[@]}" || return
    if [ "$side" = primary ]; then
        echo "+8s" > "$W/p/faketime"; chmod 644 "$W/p/faketime"
        pg_start p "$W/p/faketime" || return
    else
        pg_start p || return
    fi
    pq p "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
        "SELECT segment_create('pt_ins'), segment_create('pt_sel'), keyed_create('pt', 100)" \
        "CREATE TABLE pt_ids (id bigint PRIMARY KEY DEFAULT snowflake_next(), seg bigint NOT NULL DEFAULT segment_next('pt_ins'), client text, k int, kv bigint, at timestamptz DEFAULT clock_timestamp())" >/dev/null
    pg_standby_init s p "${sconf[@]}" || return
    if [ "$side" = standby ]; then
        echo "-8s" > "$W/s/faketime"; chmod 644 "$W/s/faketime"
        pg_start s "$W/s/faketime" || return
    else
        pg_start s || return
    fi
    streaming() { [ "$(pq p "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'")" = 1 ]; }
    wait_until 30 "s streaming from p" streaming || return
    if [ "$kind" = sync ]; then
        pq p "ALTER SYSTEM SET synchronous_standby_names = '*'" "SELECT pg_reload_conf()" >/dev/null
        is_sync() { [ "$(pq p "SELECT sync_state FROM pg_stat_replication")" = sync ]; }
        wait_until 30 "s the synchronous standby of p" is_sync || return
    fi
    log "$name: the $side's clock skewed; s's clock: $(pq s "SELECT to_char(clock_timestamp(), 'HH24:MI:SS')"), p's: $(pq p "SELECT to_char(clock_timestamp(), 'HH24:MI:SS')")"
    new_round "$name"
    load_start p p "$(dsn_of p)" --inserters 2 --selectors 2
    wait_until 30 "values from p" value_after p "$(netns_ip p)" 0 || return
    sleep 3   # p's ids run ahead of its clock (more calls than 200 ids/s)
    # the skew as s's WAL receiver sees it: the send time of p's walsender's last message less
    # its arrival by s's WAL receiver's clock (what the end of recovery adds to the floor)
    local rcv; rcv=$(pq s "SELECT round(extract(epoch FROM last_msg_send_time - last_msg_receipt_time) * 1000) FROM pg_stat_wal_receiver")
    log "$name: s's WAL receiver sees p's clock ${rcv:-?} ms ahead (pg_stat_wal_receiver)"
    if [ "$kind" != lease ] || [ "$PG" -ge 16 ]; then
        # on 15 a standby-side skew does not reach the WAL receiver (0 ms): skew-lease does
        # not rest on it (the registry's high-water mark covers the skew)
        check "$name: s's WAL receiver sees p's clock 7.5-8 s ahead before the cut" "${rcv:-0}" -ge 7500
        check "$name: ... and not more than it is" "${rcv:-0}" -le 8100
    fi
    t0=$(now); netns_isolate p; event cut "$t0"; event old "$(netns_ip p)"; event new "$(netns_ip s)"
    sleep 2
    pg_stop p immediate
    log "$name: p cut off, stopped 2 s later (fenced); s promoted"
    netns_pg s "$PGBIN/pg_ctl" -D "$W/s/data" -w -t 60 promote >/dev/null || { ko "$name: promote failed"; return; }
    event new_seen "$(now)"
    load_start s s "$(dsn_of s)" --inserters 2 --selectors 2
    wait_until 90 "values from the promoted s" value_after s "$(netns_ip s)" "$t0" || true
    local end=$((SECONDS + 5)); while [ $SECONDS -lt $end ]; do sleep 0.5; done
    load_stop
    pq s "COPY (SELECT id, seg, kv FROM pt_ids) TO STDOUT" > "$OUT/final.tsv"
    run_check "$name" "$OUT/final.tsv" || return
    log "$name: $(grep -m1 'end of recovery: snowflake' "$W/s/data/log/postgresql.log" | sed 's/.*LOG: *//' | cut -c1-300)"
    check "$name: no snowflake id handed out twice" "$(get snowflake_twice)" -eq 0
    check "$name: the promoted standby's ids above every id of the old primary" "$(get new_ids_at_or_below_old)" -eq 0
    check "$name: the promoted standby handed out values" "$(get new_values)" -gt 0
    check "$name: each client's ids increasing" "$(get client_ids_not_increasing)" -eq 0
    if [ "$kind" = async ]; then
        # the floor came from the primary's clock as s's WAL receiver saw it (8 s ahead, less the
        # messages' delay), not from clock_skew_ms (250)
        local seen; seen=$(grep -m1 -o "[0-9]* ms the old primary's clock was ahead of this one" "$W/s/data/log/postgresql.log" | cut -d' ' -f1 || true)
        check "$name: the end of recovery counted the old primary's clock 7.5-8 s ahead" "${seen:-0}" -ge 7500
        check "$name: ... and not more than it was" "${seen:-0}" -le 8100
    fi
    if [ "$kind" = sync ]; then
        check "$name: no segment value handed out twice" "$(get segment_twice)" -eq 0
        check "$name: no keyed value handed out twice" "$(get keyed_twice)" -eq 0
        check "$name: every acknowledged insert on the promoted standby" "$(get acked_missing)" -eq 0
    fi
    figure "$name: p's last value $(get old_last_after_cut_s) s after the cut, s's first $(get new_first_after_cut_s) s (promoted at $(get new_seen_after_cut_s) s); $(get new_refusals_before_first) refusals (55000) by s before its first value; $(get values) values ($(get per_server)); twice: snowflake $(get snowflake_twice), segment $(get segment_twice), keyed $(get keyed_twice); s's ids at or below p's: $(get new_ids_at_or_below_old); acknowledged inserts missing $(get acked_missing); client errors $(get error_codes)"
}

# ---------------------------------------------------------------------------------------------
# registry-slots: four nodes leasing worker ids 1-4 serve a registry-owned segment tag (12 slots);
# the registry is cut from half the fleet (a, b) and, meanwhile, a's slots are drained to the
# others and one of b's moved to c
scenario_registry_slots() {
    local name=registry-slots t0 h i=0 fleet="a b c d"
    reset_hosts; LEASE_UP=0; PATRONI_UP=0
    host_add reg; for h in $fleet; do host_add "$h"; done
    pg_init reg && pg_start reg || return
    pq reg "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
    for h in $fleet; do
        i=$((i + 1))
        pg_init "$h" "pg_idgen.lease_mode = fixed" "pg_idgen.worker_id = $i" "pg_idgen.node_name = '$h'" \
            "pg_idgen.registry = 'host=$(netns_ip reg) port=5432 user=postgres dbname=postgres connect_timeout=2'" \
            "pg_idgen.lease_ttl = 6" "pg_idgen.lease_margin = 1" || return
        pg_start "$h" || return
        pq "$h" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
    done
    holds() { [ "$(pq "$1" "SELECT state FROM snowflake_lease()" 2>/dev/null)" = held ]; }
    for h in $fleet; do wait_until 30 "$h holding its worker id" holds "$h" || return; done
    for h in $fleet; do pq "$h" "SELECT segment_create('rs', 10, slots => 12, registry => true)" >/dev/null || { ko "$name: segment_create on $h"; return; }; done
    pq reg "SELECT segment_registry_assign('rs', 12, ARRAY[1, 2, 3, 4])" >/dev/null || { ko "$name: segment_registry_assign"; return; }
    serves() { pq "$1" "SELECT segment_next('rs')" >/dev/null 2>&1; }
    for h in $fleet; do wait_until 30 "$h serving its slots" serves "$h" || return; done
    new_round "$name"
    for h in $fleet; do load_start "$h" "$h" "$(dsn_of "$h")" --what segment:rs --inserters 0 --selectors 2; done
    for h in $fleet; do wait_until 30 "values from $h" value_after "$h" "$(netns_ip "$h")" 0 || return; done
    sleep 1
    t0=$(now); netns_split "reg" "a b"; event cut "$t0"
    local drained moved
    drained=$(pq reg "SELECT string_agg(slot || '->' || to_worker, ' ') FROM segment_registry_drain('rs', 1)")
    moved=$(pq reg "SELECT slot FROM pg_idgen_segment_owners WHERE tag = 'rs' AND owner = 2 AND state = 'held' ORDER BY slot LIMIT 1")
    moved="$moved: $(pq reg "SELECT segment_registry_move('rs', $moved, 3)")"
    log "$name: registry cut from a and b; a's slots drained ($drained), b's slot $moved to c (worker 3)"
    # the moves to c and d complete once a's and b's leases ran out by the registry's clock (a
    # slot drained to b waits for b, cut off too, until the heal)
    taken() { [ "$(pq reg "SELECT count(*) FROM pg_idgen_segment_owners WHERE tag = 'rs' AND state <> 'held' AND move_to IN (3, 4)")" = 0 ]; }
    wait_until 60 "the slots moved to c and d held by them" taken || pq reg "SELECT slot, owner, state, move_to FROM pg_idgen_segment_owners WHERE tag = 'rs' ORDER BY slot"
    local t_taken; t_taken=$(now)
    local end=$((SECONDS + 3)); while [ $SECONDS -lt $end ]; do sleep 0.5; done
    netns_heal; event heal "$(now)"
    for h in a b; do wait_until 30 "$h holding its worker id again" holds "$h" || true; done
    settled() { [ "$(pq reg "SELECT count(*) FROM pg_idgen_segment_owners WHERE tag = 'rs' AND (owner = 1 OR state <> 'held')")" = 0 ]; }
    wait_until 30 "every slot held, none by a" settled || pq reg "SELECT slot, owner, state, move_to FROM pg_idgen_segment_owners WHERE tag = 'rs' ORDER BY slot"
    end=$((SECONDS + 3)); while [ $SECONDS -lt $end ]; do sleep 0.5; done
    load_stop
    run_check "$name" || return
    local a_after
    a_after=$(cat "$OUT"/values.a.tsv | awk -F'\t' -v c="$t0" '$8 >= c' | wc -l)
    check "$name: no segment value handed out twice across the fleet" "$(get segment_twice)" -eq 0
    check "$name: no snowflake id handed out twice" "$(get snowflake_twice)" -eq 0
    check "$name: a, cut off and drained, stopped serving (55000)" "$(get refusals)" -gt 0
    check "$name: every node's clients got values" "$(awk -F, '{print NF}' <<<"$(get per_server)")" -eq 4
    figure "$name: $(get values) values ($(get per_server)); the moved slots held by their new owners $(awk -v a="$t_taken" -v b="$t0" 'BEGIN { printf "%.1f", a - b }') s after the cut; a's values after the cut $a_after; twice: segment $(get segment_twice), snowflake $(get snowflake_twice); client errors $(get error_codes)"
}

# ---------------------------------------------------------------------------------------------
# clock-jump: one server under load whose clock jumps 10 min ahead for 3 s and back, then is
# restarted while behind, then its clock passes the ids of the jump
scenario_clock_jump() {
    local name=clock-jump t_back t_fwd n_behind
    reset_hosts; LEASE_UP=0; PATRONI_UP=0
    host_add j
    pg_init j "pg_idgen.worker_id = 1" "pg_idgen.layout = '$LAYOUT'" "pg_idgen.max_drift_ms = 3000" || return
    echo "+0" > "$W/j/faketime"; chmod 644 "$W/j/faketime"
    pg_start j "$W/j/faketime" || return
    pq j "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
        "SELECT segment_create('pt_ins'), segment_create('pt_sel'), keyed_create('pt', 100)" \
        "CREATE TABLE pt_ids (id bigint PRIMARY KEY DEFAULT snowflake_next(), seg bigint NOT NULL DEFAULT segment_next('pt_ins'), client text, k int, kv bigint, at timestamptz DEFAULT clock_timestamp())" >/dev/null
    new_round "$name"
    load_start j j "$(dsn_of j)" --inserters 2 --selectors 1
    wait_until 30 "values from j" value_after j "$(netns_ip j)" 0 || return
    sleep 1
    event cut "$(now)"; echo "+600s" > "$W/j/faketime"
    wait_until 30 "values with the clock 10 min ahead" value_after j "$(netns_ip j)" "$(awk -v t="$(now)" 'BEGIN { printf "%.3f", t + 1 }')" || true
    echo "+0" > "$W/j/faketime"; t_back=$(now); event back "$t_back"
    sleep 4
    pg_stop j fast; pg_start j "$W/j/faketime" || return   # a restart while the clock is behind its ids
    sleep 3
    echo "+605s" > "$W/j/faketime"; t_fwd=$(now); event forward "$t_fwd"
    wait_until 30 "values once the clock passed the ids of the jump" value_after j "$(netns_ip j)" "$t_fwd" || true
    load_stop
    run_check "$name" || return
    # values received from 0.5 s after the jump back until the clock passed the jump's ids
    n_behind=$(cat "$OUT"/values.*.tsv | awk -F'\t' -v a="$t_back" -v b="$t_fwd" '$8 > a + 0.5 && $8 < b' | wc -l)
    check "$name: no snowflake id handed out twice" "$(get snowflake_twice)" -eq 0
    check "$name: no segment value handed out twice" "$(get segment_twice)" -eq 0
    check "$name: no keyed value handed out twice" "$(get keyed_twice)" -eq 0
    check "$name: each client's ids increasing across the jumps and the restart" "$(get client_ids_not_increasing)" -eq 0
    check "$name: nothing handed out while the clock was behind the ids (refused instead)" "$n_behind" -eq 0
    check "$name: refusals (55000) while behind" "$(get refusals)" -gt 0
    figure "$name: $(get values) values; twice: snowflake $(get snowflake_twice), segment $(get segment_twice), keyed $(get keyed_twice); values while behind $n_behind; client errors $(get error_codes)"
}

T0=$SECONDS
for sc in $SCEN; do
    ts=$SECONDS
    case $sc in
        leader-sync|leader-async) scenario_leader "${sc#leader-}" ;;
        split-sync|split-async) scenario_split "${sc#split-}" ;;
        lease-*) [ $PATRONI_UP = 0 ] || { PATRONI_UP=0; }; scenario_lease "${sc#lease-}" ;;
        skew-*) scenario_skew "${sc#skew-}" ;;
        clock-jump) scenario_clock_jump ;;
        registry-slots) scenario_registry_slots ;;
        *) ko "unknown scenario $sc" ;;
    esac
    log "$sc: $((SECONDS - ts)) s"
done
log "figures:"; printf '%s' "$FIGURES" | sed "s#^#[$TEST_NAME]   #"
log "all scenarios: $((SECONDS - T0)) s"
finish
