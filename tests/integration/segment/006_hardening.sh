#!/usr/bin/env bash
# segment/006_hardening: segment_set never moves a tag backwards and never lets a value be handed
# out twice; a stale snapshot cannot break a tag for the whole instance.
#  A. repeated sets (up, down, equal, right after a set) across a clean restart and an
#     immediate stop: refused when they would go back, values after each event above all before.
#  B. segment_set racing three clients calling segment_next: every value handed out is distinct.
#  C. a REPEATABLE READ session whose snapshot predates segment_drop + segment_create uses the
#     tag: it gets a value of the new tag (or a clean error), and every other backend keeps
#     working (no "could not open relation with OID").
#  D. a refill failing because the sequence reached its maximum: the values left are served.
set -euo pipefail
. "$(dirname "$0")/../lib.bash"

C=it_seg_hard
cluster_start "$C" 28976
q "$C" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
      "SELECT segment_create('fw', 10, 0)" "CREATE TABLE seen (v bigint)" >/dev/null
take() { q "$C" "INSERT INTO seen SELECT segment_next('$1') FROM generate_series(1, $2) RETURNING v" | sort -n | tail -1; }
hwm() { q "$C" "SELECT persisted_hwm FROM segment_status WHERE tag = '$1'"; }

# ---- A ----
top=$(take fw 25)
check "A: 25 values, 0 .. 24 (chunks of 10 from 0)" "$top" -eq 24
check "A: set up to 1000" "$(q "$C" "SELECT segment_set('fw', 1000)")" -eq 1000
check "A: hwm right after the set" "$(hwm fw)" -eq 999
expect_sql_error "$C" 22023 "forward" "SELECT segment_set('fw', 2)"
expect_sql_error "$C" 22023 "forward" "SELECT segment_set('fw', 999)"
check "A: equal set right after a set (nothing at or above it handed out)" "$(q "$C" "SELECT segment_set('fw', 1000)")" -eq 1000
check "A: next after the set" "$(take fw 1)" -eq 1000
expect_sql_error "$C" 22023 "forward" "SELECT segment_set('fw', 1000)"
"$CLUSTER" restart "$C" >/dev/null
expect_sql_error "$C" 22023 "forward" "SELECT segment_set('fw', 1005)"
after=$(take fw 1)
check "A: after a clean restart, above everything before" "$after" -gt 1000
check "A: set after restart" "$(q "$C" "SELECT segment_set('fw', 5000)")" -eq 5000
"$CLUSTER" stop "$C" immediate >/dev/null
"$CLUSTER" start "$C" "$(itport 28976)" >/dev/null
expect_sql_error "$C" 22023 "forward" "SELECT segment_set('fw', 4999)"
check "A: after an immediate stop, above the set" "$(take fw 1)" -ge 5000
check "A: no value handed out twice" "$(q "$C" "SELECT count(*) - count(DISTINCT v) FROM seen")" -eq 0

# ---- B ----
q "$C" "TRUNCATE seen" >/dev/null
for i in 1 2 3; do
    ( for r in $(seq 1 40); do
          "$CLUSTER" psql "$C" -q -c "INSERT INTO seen SELECT segment_next('fw') FROM generate_series(1, 500)" >/dev/null 2>&1 || true
      done ) &
    BG_PIDS+=($!)
done
sets=0
refused=0
for r in $(seq 1 30); do
    target=$(( $(q "$C" "SELECT coalesce(persisted_hwm, 0) FROM segment_status WHERE tag = 'fw'") + 1 + RANDOM % 7 ))
    if q "$C" "SELECT segment_set('fw', $target)" >/dev/null 2>&1; then sets=$((sets + 1)); else refused=$((refused + 1)); fi
    # now and then a set that must be refused (below what was handed out)
    if q "$C" "SELECT segment_set('fw', 2000)" >/dev/null 2>&1; then check "B: a set below the hwm is refused" 1 -eq 0; fi
    sleep 0.1
done
wait "${BG_PIDS[@]}" 2>/dev/null || true
BG_PIDS=()
n=$(q "$C" "SELECT count(*) FROM seen")
log "B: $n values by 3 clients, $sets sets applied, $refused raced and refused"
check "B: the clients got values" "$n" -gt 1000
check "B: sets were applied while clients ran" "$sets" -gt 0
check "B: no value handed out twice while racing segment_set" "$(q "$C" "SELECT count(*) - count(DISTINCT v) FROM seen")" -eq 0

# ---- C ----
q "$C" "SELECT segment_create('stale', 10)" "SELECT segment_next('stale')" >/dev/null
mkfifo "$TMP/a.in"
"$CLUSTER" psql "$C" -At <"$TMP/a.in" >"$TMP/a.out" 2>&1 &
BG_PIDS+=($!)
exec 3>"$TMP/a.in"
echo "BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT 'snap', count(*) FROM pg_class;" >&3
for i in $(seq 1 100); do grep -q '^snap' "$TMP/a.out" 2>/dev/null && break; sleep 0.05; done
q "$C" "SELECT segment_drop('stale')" "SELECT segment_create('stale', 10, 500)" >/dev/null
echo "SELECT 'stale_value', segment_next('stale'); COMMIT;" >&3
exec 3>&-
wait "${BG_PIDS[@]}" 2>/dev/null || true
BG_PIDS=()
a_says=$(grep -E 'stale_value|ERROR' "$TMP/a.out" || true)
log "C: the REPEATABLE READ session says: $a_says"
check_match "C: the stale session got a value of the new tag or a clean error" "$a_says" '^stale_value\|5[0-9][0-9]$|ERROR:  .*(dropped|re-created|does not exist)'
other=$(q "$C" "SELECT segment_next('stale')" 2>&1 || true)
check_match "C: another backend afterwards uses the new tag" "$other" '^5[0-9][0-9]$'
other=$("$CLUSTER" psql "$C" -At -c "SELECT segment_next('stale')" 2>&1 || true)
check_match "C: a new session too" "$other" '^5[0-9][0-9]$'

# ---- D ----
q "$C" "SELECT segment_create('edge', 100, 9223372036854775000)" >/dev/null
got=$(q "$C" "SELECT count(*) FROM (SELECT segment_next('edge') FROM generate_series(1, 800)) s")
check "D: every value of the last whole chunks below the maximum is served" "$got" -eq 800
expect_sql_error "$C" 2200H "" "SELECT segment_next('edge')"
expect_sql_error "$C" 2200H "" "SELECT segment_next('edge')"
finish
