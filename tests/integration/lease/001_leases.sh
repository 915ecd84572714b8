#!/usr/bin/env bash
# lease/001_leases — worker ids leased from a registry, on loopback: a registry cluster (the
# pg_idgen extension in database postgres) and nodes with pg_idgen.lease_ttl = 6 s,
# pg_idgen.lease_margin = 1 s, ports 28983-28990 and 28998 (+ IT_PORT_OFFSET).
#  1. three nodes in auto mode (lease_range 0-9, node names n1-n3) get three distinct ids; the
#     registry has one row per node; snowflake_worker() says source 'lease'.
#  2. restarted (clean stop: the lease is released), each gets its id back (sticky).
#  3. two sessions per node generate 20,000 ids each at the same time: 0 duplicates, every id
#     decodes to its node's leased id. A session with another pg_idgen.worker_id is refused
#     (verified, not overridden).
#  4. a fourth node in fixed mode with node 2's id refuses (55000 naming node 2's host, port,
#     system identifier and since) and logs why; node 2 is killed (-9: no release); node 4
#     generates once node 2's lease has expired by the registry's clock (its row's since >=
#     node 2's lease_until). Node 2 restarted gets a fourth, different id.
#  5. the registry stops: node 1 keeps generating while its lease is valid (state 'registry
#     unreachable', valid_for_ms > 0), then refuses with 55000 "has run out and the registry cannot
#     be reached"; the registry starts again and node 1 generates again.
#  6. a streaming standby of node 1 holds no lease (state 'standby', 25006); a pg_basebackup copy
#     of node 1 promoted as an independent primary with the same settings refuses while node 1
#     holds the lease (55000 naming node 1's port) and logs why. Node 1's postmaster is killed
#     (-9) while a session generates: its orphaned lease worker does not release the lease; its
#     standby is promoted: it refuses until node 1's lease expired, then generates
#     above every id node 1 returned (its row's since >= node 1's lease_until); node 1 restarted
#     as a primary refuses (55000 naming the promoted node's port).
#  7. node 3 restarted with lease_ttl in postgresql.auto.conf, then a reload (SIGHUP) with
#     lease_ttl = 9 s: its next renewals are 9 s leases; its
#     lease worker terminated (pg_terminate_backend) releases the lease, is restarted by the
#     postmaster and holds the same id again.
#  8. split brain: the promoted node of 6 (now restarted with pg_idgen.registry from
#     postgresql.auto.conf) gets a streaming standby; a session generates on it while its
#     registry setting is pointed at a closed port (reload: cut off from the registry) and the
#     standby is promoted beside it. The cut-off node generates until its lease runs out, then
#     refuses (55000); the new primary generates only once that lease has expired, after the
#     cut-off node's last id (by time), and above every id of it.
#  9. a registry that stops answering (its processes SIGSTOPped: connections are accepted by the
#     kernel, nothing replies): node 3's worker gives up each operation after its bound ("no
#     answer within"), node 3 refuses once its lease ran out, and stops (fast) although its
#     release cannot be sent (the log says it expires by itself); the registry resumes (SIGCONT)
#     and node 3, restarted, gets its id back once the unreleased lease has expired.
# Pass/fail never depends on timing: every wait polls for a state, with a generous bound (90 s).
set -euo pipefail
. "$(dirname "$0")/../lib.bash"
. "$(dirname "$0")/../lease.bash"

R=it_lreg
N=(it_ln0 it_ln1 it_ln2 it_ln3)            # N[1..3]: auto nodes; N[0] unused
N4=it_ln4
CL=it_lclone
SB=it_lstby
RPORT=$(itport 28983)
P=(0 $(itport 28984) $(itport 28985) $(itport 28986))
TTL=6
MARGIN=1
REGINFO="host=127.0.0.1 port=$RPORT user=postgres dbname=postgres"
BASE=(-c pg_idgen.worker_id=-1 -c pg_idgen.lease_mode=auto -c "pg_idgen.registry=$REGINFO"
      -c pg_idgen.lease_margin=$MARGIN -c pg_idgen.lease_range=0-9)
LEASE=("${BASE[@]}" -c pg_idgen.lease_ttl=$TTL)

# node_start NAME PORT NODE_NAME [more options]
node_start() { local name=$1 port=$2 node=$3; shift 3; cluster_start "$name" "$port" "${LEASE[@]}" -c "pg_idgen.node_name=$node" "$@"; }
# wait_for DESC CMD...: polls CMD (exit 0) every 0.2 s, at most 90 s; a check either way
generates() { q "$1" "SELECT snowflake_next()" >/dev/null 2>&1; }
regq() { q "$R" "$@"; }
log_has() { grep -qE "$2" "$("$CLUSTER" pgdata "$1")/log/postgresql.log"; }

# ---- 0. the registry ----
cluster_start "$R" 28983 -c pg_idgen.worker_id=-1
q "$R" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
check "0: registry: pg_idgen_leases exists and is empty" "$(regq "SELECT count(*) FROM pg_idgen_leases")" -eq 0

# ---- 1. three nodes, automatic ids ----
for k in 1 2 3; do
    node_start "${N[$k]}" "$((28983 + k))" "n$k"
    q "${N[$k]}" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
done
for k in 1 2 3; do wait_for "1: node $k holds a lease" state_is "${N[$k]}" held; done
declare -a ID
for k in 1 2 3; do ID[$k]=$(lease "${N[$k]}" worker_id); done
log "1: leased ids: n1=${ID[1]} n2=${ID[2]} n3=${ID[3]}"
check "1: three distinct ids" "$(printf '%s\n' "${ID[1]}" "${ID[2]}" "${ID[3]}" | sort -u | grep -c '^[0-9]')" -eq 3
check "1: registry: one held row per node" \
    "$(regq "SELECT count(*) FROM pg_idgen_leases WHERE released_at IS NULL AND lease_until > now() AND node_name IN ('n1','n2','n3')")" -eq 3
check "1: registry row of n2 names its port and worker id" \
    "$(regq "SELECT worker_id || ' ' || port FROM pg_idgen_leases WHERE node_name = 'n2'")" == "${ID[2]} ${P[2]}"
check "1: snowflake_worker(): id and source 'lease'" \
    "$(q "${N[1]}" "SELECT worker_id || ' ' || source || ' ' || (lease LIKE 'held (auto mode, valid %')::text FROM snowflake_worker()")" == "${ID[1]} lease true"
check "1: an id of n1 decodes to its leased worker id" \
    "$(q "${N[1]}" "SELECT worker_id FROM uid_decode(snowflake_next())")" == "${ID[1]}"

# ---- 2. restarts keep the ids ----
for k in 1 2 3; do "$CLUSTER" stop "${N[$k]}" fast 2>/dev/null; done
check "2: clean stops released the three leases" "$(regq "SELECT count(*) FROM pg_idgen_leases WHERE released_at IS NOT NULL")" -eq 3
for k in 3 2 1; do node_start "${N[$k]}" "$((28983 + k))" "n$k"; done   # in reverse order
for k in 1 2 3; do wait_for "2: node $k holds a lease again" state_is "${N[$k]}" held; done
for k in 1 2 3; do check "2: node $k got its id back" "$(lease "${N[$k]}" worker_id)" == "${ID[$k]}"; done

# ---- 3. concurrent generation ----
pids=()
for k in 1 2 3; do
    for s in 1 2; do
        q "${N[$k]}" "COPY (SELECT $k, snowflake_next() FROM generate_series(1, 20000)) TO STDOUT" >"$TMP/gen.$k.$s" &
        pids+=($!)
    done
done
rc=0; for p in "${pids[@]}"; do wait "$p" || rc=1; done
check "3: six generating sessions succeeded" "$rc" -eq 0
regq "CREATE TABLE ids (node int, id bigint)" >/dev/null
cat "$TMP"/gen.* | regq "COPY ids FROM STDIN" >/dev/null
read -r n nd <<<"$(regq "SELECT count(*), count(DISTINCT id) FROM ids" | tr '|' ' ')"
check "3: 120,000 ids" "$n" -eq 120000
check "3: 0 duplicates" "$nd" -eq 120000
check "3: every id decodes to its node's leased id" \
    "$(regq "SELECT count(*) FROM ids, uid_decode(id) u WHERE u.worker_id <> CASE node WHEN 1 THEN ${ID[1]} WHEN 2 THEN ${ID[2]} ELSE ${ID[3]} END")" -eq 0
other=$(( (ID[3] + 5) % 10 ))
expect_sql_error "${N[3]}" 55000 "worker id $other is not leased by this node: its lease is for worker id ${ID[3]}" \
    "SET pg_idgen.worker_id = $other" "SELECT snowflake_next()"

# ---- 4. a fixed node with node 2's id ----
node_start "$N4" 28987 n4 -c pg_idgen.lease_mode=fixed -c "pg_idgen.worker_id=${ID[2]}"
q "$N4" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
wait_for "4: node 4 (fixed ${ID[2]}) sees the id held by another node" state_is "$N4" "held by another node"
SYS2=$(regq "SELECT system_identifier FROM pg_idgen_leases WHERE worker_id = ${ID[2]}")
expect_sql_error "$N4" 55000 "worker id ${ID[2]} is leased by node \"n2\" \\(host [^,]+, port ${P[2]}, system identifier $SYS2\\) since [0-9-]+ [0-9:.]+" \
    "SELECT snowflake_next()"
if log_has "$N4" "WARNING: .*pg_idgen lease: held by another node: worker id ${ID[2]} is leased by node \"n2\""; then
    ok "4: node 4's log says why it refuses"; else ko "4: node 4's log does not say why it refuses"; fi
check "4: node 4 counted the conflict and the refusal" "$(lease "$N4" "(conflicts > 0 AND refusals > 0)::text")" == true
L2=$(regq "SELECT lease_until FROM pg_idgen_leases WHERE worker_id = ${ID[2]}")   # a lower bound
"$CLUSTER" crash "${N[2]}" 2>/dev/null
row=$(regq "SELECT node_name || '|' || (released_at IS NULL)::text || '|' || lease_until FROM pg_idgen_leases WHERE worker_id = ${ID[2]}")
IFS='|' read -r who notrel lu <<<"$row"
if [ "$who" = n2 ]; then   # else node 4 has it already, which the check below judges with the bound
    check "4: the kill did not release node 2's lease" "$notrel" == true
    L2=$lu
fi
log "4: node 2 killed; its lease runs until $L2 (registry clock)"
wait_for "4: node 4 generates once node 2's lease has expired" generates "$N4"
check "4: registry: node 4 took the id only after node 2's lease ended" \
    "$(regq "SELECT node_name || ' ' || (since >= '$L2'::timestamptz)::text FROM pg_idgen_leases WHERE worker_id = ${ID[2]}")" == "n4 true"
check "4: node 4's ids decode to ${ID[2]}" "$(q "$N4" "SELECT worker_id FROM uid_decode(snowflake_next())")" == "${ID[2]}"
node_start "${N[2]}" 28985 n2
wait_for "4: node 2 restarted holds a lease" state_is "${N[2]}" held
new2=$(lease "${N[2]}" worker_id)
check "4: node 2 got another id than before and than the other nodes ($new2)" \
    "$(printf '%s\n' "${ID[1]}" "${ID[2]}" "${ID[3]}" "$new2" | sort -u | grep -c '^[0-9]')" -eq 4
"$CLUSTER" stop "$N4" fast 2>/dev/null

# ---- 5. the registry goes away and comes back ----
"$CLUSTER" stop "$R" fast 2>/dev/null
unreach_valid() { [ "$(lease "${N[1]}" "(state = 'registry unreachable' AND valid_for_ms > 0)::text")" = true ]; }
if wait_for "5: node 1 notices the registry is gone while its lease is still valid" unreach_valid; then
    if generates "${N[1]}"; then ok "5: node 1 generates while the registry is unreachable and the lease valid"
    else ko "5: node 1 refused while its lease was valid: $(q "${N[1]}" "SELECT snowflake_next()" 2>&1 | head -c 300)"; fi
fi
not_generates() { ! generates "$1"; }
wait_for "5: node 1 refuses once its lease ran out" not_generates "${N[1]}"
expect_sql_error "${N[1]}" 55000 "the lease of worker id ${ID[1]} has run out and the registry cannot be reached" "SELECT snowflake_next()"
check "5: node 1 counted registry failures" "$(lease "${N[1]}" "(failures > 0)::text")" == true
cluster_start "$R" 28983 -c pg_idgen.worker_id=-1
wait_for "5: node 1 generates again once the registry is back" generates "${N[1]}"
check "5: node 1 still has its id" "$(lease "${N[1]}" worker_id)" == "${ID[1]}"

# ---- 6. clone, failover, old primary ----
standby_start "$SB" "${N[1]}" 28989 "${LEASE[@]}" -c pg_idgen.node_name=n1
wait_for "6: the standby says 'standby'" state_is "$SB" standby
expect_sql_error "$SB" 25006 'during recovery' "SELECT snowflake_next()"
standby_start "$CL" "${N[1]}" 28988 "${LEASE[@]}" -c pg_idgen.node_name=n1
"$CLUSTER" promote "$CL" 2>/dev/null
check "6: the copy runs as an independent primary" "$(q "$CL" "SELECT pg_is_in_recovery()")" == f
SYS1=$(regq "SELECT system_identifier FROM pg_idgen_leases WHERE worker_id = ${ID[1]}")
check "6: the copy has node 1's system identifier" "$(q "$CL" "SELECT system_identifier FROM pg_control_system()")" == "$SYS1"
wait_for "6: the copy sees the id held by another node" state_is "$CL" "held by another node"
expect_sql_error "$CL" 55000 "worker id ${ID[1]} is leased by node \"n1\" \\(host [^,]+, port ${P[1]}, system identifier $SYS1\\)" "SELECT snowflake_next()"
if log_has "$CL" "pg_idgen lease: held by another node: worker id ${ID[1]} is leased by node \"n1\""; then
    ok "6: the copy's log says why it refuses"; else ko "6: the copy's log does not say why it refuses"; fi
"$CLUSTER" destroy "$CL" >/dev/null 2>&1

# node 1 generates (one session, batches of 1000) and is killed meanwhile
rm -f "$TMP/stop"
{
    while [ ! -e "$TMP/stop" ]; do
        echo "COPY (SELECT snowflake_next() FROM generate_series(1, 1000)) TO STDOUT;"
        sleep 0.05
    done
} 2>/dev/null | "$CLUSTER" psql "${N[1]}" >"$TMP/old.ids" 2>"$TMP/old.err" &
gp=$!; BG_PIDS+=("$gp")
for i in $(seq 1 400); do [ "$(wc -l <"$TMP/old.ids")" -ge 3000 ] && break; sleep 0.05; done
# kill -9 of the postmaster alone: its children (the lease worker, the generating backend) are
# orphaned and exit when they notice; the lease worker must not release the lease then
pm=$(head -1 "$("$CLUSTER" pgdata "${N[1]}")/postmaster.pid")
kids=$(pgrep -P "$pm" || true)
kill -KILL "$pm"
touch "$TMP/stop"; wait "$gp" 2>/dev/null || true
gone() { local k; for k in $kids; do kill -0 "$k" 2>/dev/null && return 1; done; return 0; }
wait_for "6: every process of node 1 exited after its postmaster was killed" gone
check "6: node 1's lease was not released (orphaned backends could generate until they noticed)" \
    "$(regq "SELECT node_name || ' ' || (released_at IS NULL)::text FROM pg_idgen_leases WHERE worker_id = ${ID[1]}")" == "n1 true"
L1=$(regq "SELECT lease_until FROM pg_idgen_leases WHERE worker_id = ${ID[1]}")
M=$(sort -n "$TMP/old.ids" | tail -1)
log "6: node 1 killed after returning $(wc -l <"$TMP/old.ids") ids (max $M); its lease runs until $L1"
check "6: node 1 returned ids before it was killed" "$(wc -l <"$TMP/old.ids")" -ge 1000
"$CLUSTER" promote "$SB" 2>/dev/null
check "6: the standby is promoted" "$(q "$SB" "SELECT pg_is_in_recovery()")" == f
wait_for "6: the promoted standby generates once node 1's lease has expired" generates "$SB"
check "6: registry: the promoted standby took the id after node 1's lease ended" \
    "$(regq "SELECT port || ' ' || (since >= '$L1'::timestamptz)::text FROM pg_idgen_leases WHERE worker_id = ${ID[1]}")" == "$(itport 28989) true"
q "$SB" "COPY (SELECT snowflake_next() FROM generate_series(1, 10000)) TO STDOUT" >"$TMP/new.ids"
regq "CREATE TABLE old_ids (id bigint)" "CREATE TABLE new_ids (id bigint)" >/dev/null
regq "COPY old_ids FROM STDIN" <"$TMP/old.ids" >/dev/null
regq "COPY new_ids FROM STDIN" <"$TMP/new.ids" >/dev/null
check "6: promoted: 10,000 distinct ids" "$(regq "SELECT count(DISTINCT id) FROM new_ids")" -eq 10000
check "6: promoted: every id above node 1's largest ($M)" "$(regq "SELECT count(*) FROM new_ids WHERE id <= $M")" -eq 0
check "6: promoted: ids decode to node 1's worker id" \
    "$(regq "SELECT count(*) FROM new_ids, uid_decode(id) u WHERE u.worker_id <> ${ID[1]}")" -eq 0
node_start "${N[1]}" 28984 n1
check "6: the old primary runs as a primary again" "$(q "${N[1]}" "SELECT pg_is_in_recovery()")" == f
wait_for "6: the old primary sees the id held by another node" state_is "${N[1]}" "held by another node"
expect_sql_error "${N[1]}" 55000 "worker id ${ID[1]} is leased by node \"n1\" \\(host [^,]+, port $(itport 28989), system identifier $SYS1\\)" "SELECT snowflake_next()"
check "6: the promoted standby still generates" "$(q "$SB" "SELECT worker_id FROM uid_decode(snowflake_next())")" == "${ID[1]}"

# ---- 7. reload, restarted worker ----
# restarted with lease_ttl from postgresql.auto.conf (a -c option would override ALTER SYSTEM)
ttl_is() { [ "$(regq "SELECT extract(epoch FROM lease_until - renewed_at)::int FROM pg_idgen_leases WHERE worker_id = ${ID[3]}")" = "$1" ]; }
q "${N[3]}" "ALTER SYSTEM SET pg_idgen.lease_ttl = $TTL" >/dev/null
cluster_start "${N[3]}" 28986 "${BASE[@]}" -c pg_idgen.node_name=n3
wait_for "7: node 3 restarted holds a lease" state_is "${N[3]}" held
check "7: node 3 kept its id" "$(lease "${N[3]}" worker_id)" == "${ID[3]}"
check "7: its leases last lease_ttl = $TTL s" "$(ttl_is $TTL && echo yes || echo no)" == yes
q "${N[3]}" "ALTER SYSTEM SET pg_idgen.lease_ttl = 9" "SELECT pg_reload_conf()" >/dev/null
wait_for "7: after a reload, node 3 renews with lease_ttl = 9 s (the worker reloads on SIGHUP)" ttl_is 9
check "7: node 3's lease worker is one process" \
    "$(q "${N[3]}" "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_idgen lease'")" -eq 1
wpid=$(q "${N[3]}" "SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_idgen lease'")
q "${N[3]}" "SELECT pg_terminate_backend($wpid)" >/dev/null
released() { [ "$(regq "SELECT (released_at IS NOT NULL)::text FROM pg_idgen_leases WHERE worker_id = ${ID[3]}")" = true ]; }
new_worker() { local p; p=$(q "${N[3]}" "SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_idgen lease'"); [ -n "$p" ] && [ "$p" != "$wpid" ]; }
wait_for "7: the terminated lease worker released the lease" released
wait_for "7: the postmaster restarted the lease worker" new_worker
wait_for "7: node 3 holds a lease again" state_is "${N[3]}" held
check "7: node 3 has the same id" "$(q "${N[3]}" "SELECT worker_id FROM uid_decode(snowflake_next())")" == "${ID[3]}"
check "7: the old primary logged the refusal once, not at every renewal of the holder" \
    "$(grep -c 'WARNING:  pg_idgen lease: held by another node' "$("$CLUSTER" pgdata "${N[1]}")/log/postgresql.log")" -eq 1

# ---- 8. split brain: the holder cut off from the registry, its standby promoted beside it ----
"$CLUSTER" stop "${N[1]}" fast 2>/dev/null    # the old primary of 6 would compete for the id
NOREG=(-c pg_idgen.worker_id=-1 -c pg_idgen.lease_mode=auto -c pg_idgen.lease_ttl=$TTL
       -c pg_idgen.lease_margin=$MARGIN -c pg_idgen.lease_range=0-9 -c pg_idgen.node_name=n1)
q "$SB" "ALTER SYSTEM SET pg_idgen.registry = '$REGINFO'" >/dev/null
cluster_start "$SB" 28989 "${NOREG[@]}"
wait_for "8: the holder, restarted with the registry from postgresql.auto.conf, holds the lease" state_is "$SB" held
SB2=it_lstby2
standby_start "$SB2" "$SB" 28990 "${LEASE[@]}" -c pg_idgen.node_name=n1
wait_for "8: its standby says 'standby'" state_is "$SB2" standby
{
    while true; do echo "COPY (SELECT snowflake_next() FROM generate_series(1, 200)) TO STDOUT;"; sleep 0.02; done
} 2>/dev/null | "$CLUSTER" psql "$SB" >"$TMP/cut.ids" 2>"$TMP/cut.err" &
gp=$!; BG_PIDS+=("$gp")
for i in $(seq 1 400); do [ "$(wc -l <"$TMP/cut.ids")" -ge 1000 ] && break; sleep 0.05; done
q "$SB" "ALTER SYSTEM SET pg_idgen.registry = 'host=127.0.0.1 port=$(itport 28998) user=postgres dbname=postgres'" \
    "SELECT pg_reload_conf()" >/dev/null
wait_for "8: the cut-off holder notices" state_is "$SB" "registry unreachable"
LC=$(regq "SELECT lease_until FROM pg_idgen_leases WHERE worker_id = ${ID[1]}")   # its last renewal
"$CLUSTER" promote "$SB2" 2>/dev/null
check "8: the standby is promoted beside the cut-off holder" "$(q "$SB2" "SELECT pg_is_in_recovery()")" == f
wait_for "8: the new primary generates once the cut-off holder's lease has expired" generates "$SB2"
rc=0; wait "$gp" 2>/dev/null || rc=$?
check_match "8: the cut-off holder's session ended with 55000 'has run out'" "$(cat "$TMP/cut.err")" \
    "ERROR: +pg_idgen cannot generate: the lease of worker id ${ID[1]} has run out and the registry cannot be reached"
CM=$(sort -n "$TMP/cut.ids" | tail -1)
log "8: the cut-off holder returned $(wc -l <"$TMP/cut.ids") ids (max $CM at $(regq "SELECT ts FROM uid_decode($CM)")); its lease ran until $LC"
check "8: registry: the new primary took the id after the cut-off holder's lease ended" \
    "$(regq "SELECT port || ' ' || (since >= '$LC'::timestamptz)::text FROM pg_idgen_leases WHERE worker_id = ${ID[1]}")" == "$(itport 28990) true"
check "8: the cut-off holder's last id is older than the new primary's lease" \
    "$(regq "SELECT (u.ts < l.since)::text FROM uid_decode($CM) u, pg_idgen_leases l WHERE l.worker_id = ${ID[1]}")" == true
q "$SB2" "COPY (SELECT snowflake_next() FROM generate_series(1, 10000)) TO STDOUT" >"$TMP/new2.ids"
regq "CREATE TABLE cut_ids (id bigint)" "CREATE TABLE new2_ids (id bigint)" >/dev/null
regq "COPY cut_ids FROM STDIN" <"$TMP/cut.ids" >/dev/null
regq "COPY new2_ids FROM STDIN" <"$TMP/new2.ids" >/dev/null
check "8: the new primary's ids are all above the cut-off holder's" "$(regq "SELECT count(*) FROM new2_ids WHERE id <= $CM")" -eq 0
check "8: no id in common" "$(regq "SELECT count(*) FROM new2_ids JOIN cut_ids USING (id)")" -eq 0
check "8: the cut-off holder's ids are distinct" "$(regq "SELECT count(*) - count(DISTINCT id) FROM cut_ids")" -eq 0

# ---- 9. a registry that hangs ----
rpm=$(head -1 "$("$CLUSTER" pgdata "$R")/postmaster.pid")
rkids=$(pgrep -P "$rpm" || true)
thaw() { kill -CONT "$rpm" $rkids 2>/dev/null || true; }
trap 'rc=$?; thaw; (exit $rc); cleanup' EXIT
kill -STOP "$rpm" $rkids
wait_for "9: node 3's worker gives up on the hanging registry after its bound" detail_matches "${N[3]}" 'no answer within [0-9]+ ms'
wait_for "9: node 3 refuses once its lease ran out" not_generates "${N[3]}"
if "$CLUSTER" stop "${N[3]}" fast 2>/dev/null; then ok "9: node 3 stops while the registry hangs"; else ko "9: node 3 did not stop"; fi
if log_has "${N[3]}" "could not release worker id ${ID[3]}; it expires by itself"; then
    ok "9: node 3's log says its lease expires by itself"; else ko "9: node 3's log does not say its lease expires by itself"; fi
thaw
check "9: the registry answers again" "$(regq "SELECT 1")" == 1
node_start "${N[3]}" 28986 n3
wait_for "9: node 3 restarted gets its id back once the unreleased lease expired" state_is "${N[3]}" held
check "9: node 3 has its id" "$(q "${N[3]}" "SELECT worker_id FROM uid_decode(snowflake_next())")" == "${ID[3]}"

finish
