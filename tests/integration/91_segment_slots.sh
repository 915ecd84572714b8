#!/usr/bin/env bash
# 91_segment_slots: stride slots moved between nodes by explicit hand-over (no registry), while
# load runs. Tag 'o' with slots => 12 (unit 10): N1, N2, N3 own {0,3,6,9}, {1,4,7,10},
# {2,5,8,11}; one load client per node (many short transactions, each statement's values in
# order).
#  A. N4 joins with no slot; 3 slots (one from each) are released and adopted by N4 while load
#     runs; N4 serves them strictly above the marks.
#  B. stale mark: N4 releases slot 0 and is asked to adopt it again with the older mark (lower
#     than its own durable mark) -> 22023; slot 0 goes back to N1 above N4's mark.
#  C. N2 leaves: its slots are released and adopted by the others while load runs.
#  D. kill -9 of N3 while it serves: after the crash restart its slot set is the same, its slots
#     move to N4 above the recovered marks.
#  E. pg_dump/pg_restore of N1's database keeps its slot set and marks.
#  F. over the whole run: 0 duplicates across all nodes; every value lies in a slot its node
#     owned at the time (between the marks of the hand-overs); values per slot increase on each
#     node.
set -euo pipefail
. "$(dirname "$0")/lib.bash"

NODES=(it_sl1 it_sl2 it_sl3 it_sl4)
declare -A OWN=([1]='{0,3,6,9}' [2]='{1,4,7,10}' [3]='{2,5,8,11}' [4]='{}')
for n in 1 2 3 4; do
    cluster_start "it_sl$n" $((28990 + n))
    q "it_sl$n" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
        "SELECT segment_create('o', 10, slots => 12, owned => '${OWN[$n]}')" >/dev/null
done
check "N1 owns slots 0,3,6,9" "$(q it_sl1 "SELECT owned_slots FROM segment_status WHERE tag = 'o'")" == "{0,3,6,9}"
check "N4 owns none" "$(q it_sl4 "SELECT coalesce(owned_slots::text, 'none') FROM segment_status WHERE tag = 'o'")" == "none"
expect_sql_error it_sl4 55000 "owns no slot" "SELECT segment_next('o')"
expect_sql_error it_sl1 22023 "cannot be combined" "SELECT segment_create('x', 10, slots => 4, nodes => 2)"
expect_sql_error it_sl1 22023 "outside" "SELECT segment_create('x', 10, slots => 4, owned => '{4}')"
expect_sql_error it_sl1 0A000 "has stride slots" "SELECT segment_set('o', 100000)"

# ownership log: slot, node, lo (values > lo), hi (values <= hi; empty = open)
HO="$TMP/handovers"; : >"$HO"
for n in 1 2 3; do
    for s in $(tr -d '{}' <<<"${OWN[$n]}" | tr ',' ' '); do echo "$s $n 0" >>"$HO"; done
done
# move SLOT FROM TO: release on FROM, adopt on TO with the mark
move() {
    local s=$1 from=$2 to=$3 mark
    mark=$(q "it_sl$from" "SELECT segment_slot_release('o', $s)")
    q "it_sl$to" "SELECT segment_slot_adopt('o', $s, $mark)" >/dev/null
    # close FROM's interval of slot s at mark, open TO's
    awk -v s="$s" -v f="$from" -v m="$mark" '$1 == s && $2 == f && NF == 3 { print $0, m; next } { print }' "$HO" >"$HO.new"
    mv "$HO.new" "$HO"
    echo "$s $to $mark" >>"$HO"
    log "slot $s: node $from -> node $to above $mark"
}

# load NODE ROUND: 400 transactions of 100 values, in the background
load() {
    local n=$1 r=$2 f="$TMP/load.$1.$2.sql"
    for i in $(seq 1 400); do
        echo "COPY (SELECT segment_next('o'), $n, $r, $i, g FROM generate_series(1, 100) g) TO STDOUT;"
    done >"$f"
    "$CLUSTER" psql "it_sl$n" -q -f "$f" >"$TMP/vals.$n.$r" 2>"$TMP/err.$n.$r" &
    BG_PIDS+=($!); LOADS+=($!)
}
wait_loads() { local p; for p in "${LOADS[@]}"; do wait "$p" || true; done; LOADS=(); }
# waits until node N's round R has handed out at least K rows
wait_rows() {
    local f="$TMP/vals.$1.$2" i
    for i in $(seq 1 600); do
        [ "$(wc -l <"$f" 2>/dev/null || echo 0)" -ge "$3" ] && return 0
        sleep 0.05
    done
    return 1
}

# ---- A ----
LOADS=()
for n in 1 2 3; do load $n 1; done
wait_rows 1 1 2000 && wait_rows 2 1 2000 && wait_rows 3 1 2000
move 0 1 4
move 1 2 4
move 2 3 4
load 4 1
wait_loads
check "A: N4 owns slots 0,1,2" "$(q it_sl4 "SELECT owned_slots FROM segment_status WHERE tag = 'o'")" == "{0,1,2}"
check "A: N1 serves 3,6,9" "$(q it_sl1 "SELECT owned_slots FROM segment_status WHERE tag = 'o'")" == "{3,6,9}"

# ---- B ----
m1=$(grep -E '^0 1 0 ' "$HO" | awk '{print $4}')
m2=$(q it_sl4 "SELECT segment_slot_release('o', 0)")
check "B: N4's mark of slot 0 is above N1's" "$m2" -gt "$m1"
expect_sql_error it_sl4 22023 "cannot adopt slot 0.*may have been handed out" "SELECT segment_slot_adopt('o', 0, $m1)"
check "B: after the refused adopt N4 does not own slot 0" \
    "$(q it_sl4 "SELECT owned FROM segment_slot_status WHERE tag = 'o' AND slot = 0")" == "f"
awk -v m="$m2" '$1 == 0 && $2 == 4 && NF == 3 { print $0, m; next } { print }' "$HO" >"$HO.new"; mv "$HO.new" "$HO"
first=$(q it_sl1 "SELECT segment_slot_adopt('o', 0, $m2)")
echo "0 1 $m2" >>"$HO"
check "B: N1 continues slot 0 above N4's mark" "$first" -gt "$m2"

# ---- C ----
for n in 1 2 3 4; do load $n 2; done
wait_rows 2 2 3000
for s in 4 7 10; do move $s 2 $(( s == 4 ? 1 : s == 7 ? 3 : 4 )); done
wait_loads
check "C: N2 owns no slot" "$(q it_sl2 "SELECT count(*) FROM segment_slot_status WHERE tag = 'o' AND owned")" -eq 0
check_match "C: N2's load stopped with 'owns no slot'" "$(cat "$TMP/err.2.2")" "owns no slot"

# ---- D ----
load 3 3
wait_rows 3 3 5000
before=$(q it_sl3 "SELECT owned_slots FROM segment_status WHERE tag = 'o'")
"$CLUSTER" crash it_sl3 >/dev/null 2>&1
wait_loads
"$CLUSTER" start it_sl3 "$(itport 28993)" >/dev/null 2>&1
check "D: N3's slot set after kill -9 and restart" "$(q it_sl3 "SELECT owned_slots FROM segment_status WHERE tag = 'o'")" == "$before"
for s in $(tr -d '{}' <<<"$before" | tr ',' ' '); do move "$s" 3 4; done
load 4 3; load 1 3
wait_loads
check "D: N4 owns seven slots, N1 the other five" \
    "$(q it_sl4 "SELECT owned_slots FROM segment_status WHERE tag = 'o'")|$(q it_sl1 "SELECT owned_slots FROM segment_status WHERE tag = 'o'")" \
    == "{1,2,5,7,8,10,11}|{0,3,4,6,9}"

# ---- E ----
SOCK=$("$CLUSTER" sockdir it_sl1); PORT=$("$CLUSTER" port it_sl1)
"$PGBIN/pg_dump" -h "$SOCK" -p "$PORT" -U postgres -Fc -f "$TMP/db.dump" postgres
q it_sl1 "CREATE DATABASE restored" >/dev/null
"$PGBIN/pg_restore" -h "$SOCK" -p "$PORT" -U postgres -d restored "$TMP/db.dump"
S="SELECT string_agg(slot || ':' || owned || ':' || coalesce(persisted_mark, -1), ',' ORDER BY slot) FROM segment_slot_status WHERE tag = 'o'"
orig=$(q it_sl1 "$S")
check "E: the restored database has N1's slots and marks" "$(qdb it_sl1 restored "$S")" == "$orig"
rv=$(qdb it_sl1 restored "SELECT segment_next('o')")
check "E: the restored database continues above the marks" \
    "$(qdb it_sl1 restored "SELECT count(*) FROM segment_slot_status WHERE tag = 'o' AND slot = (($rv - 1) / 10) % 12 AND owned")" -eq 1

# ---- F ----
q it_sl1 "CREATE TABLE v (v bigint, node int, round int, tx int, g int)" \
    "CREATE TABLE ho (slot int, node int, lo bigint, hi bigint)" >/dev/null
cat "$TMP"/vals.* | q it_sl1 "COPY v FROM STDIN" >/dev/null
awk '{ print $1 "\t" $2 "\t" $3 "\t" (NF == 4 ? $4 : "\\N") }' "$HO" | q it_sl1 "COPY ho FROM STDIN" >/dev/null
read -r cnt dist <<<"$(q it_sl1 "SELECT count(*), count(DISTINCT v) FROM v" | tr '|' ' ')"
check "F: values handed out over the run" "$cnt" -gt 100000
check "F: 0 duplicates across the four nodes" "$((cnt - dist))" -eq 0
check "F: every value lies in a slot its node owned then (between the hand-over marks)" \
    "$(q it_sl1 "SELECT count(*) FROM v WHERE NOT EXISTS (SELECT FROM ho WHERE ho.slot = ((v.v - 1) / 10) % 12
         AND ho.node = v.node AND v.v > ho.lo AND (ho.hi IS NULL OR v.v <= ho.hi))")" -eq 0
check "F: values per slot increase on each node" \
    "$(q it_sl1 "SELECT count(*) FROM (SELECT v, lag(v) OVER (PARTITION BY node, round, ((v - 1) / 10) % 12 ORDER BY tx, g) AS p FROM v) x WHERE p >= v")" -eq 0
check "F: every slot was served" "$(q it_sl1 "SELECT count(DISTINCT ((v - 1) / 10) % 12) FROM v")" -eq 12
finish
