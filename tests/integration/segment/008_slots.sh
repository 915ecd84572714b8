#!/usr/bin/env bash
# segment/008_slots: stride slots moved between nodes by explicit hand-over (no registry), while
# load runs, on a fleet of four nodes (scripts/fleet.sh). Tag 'o' with slots => 12 (unit 10):
# N1, N2, N3 own {0,3,6,9}, {1,4,7,10}, {2,5,8,11}, N4 none; one load client per node (many
# short transactions, each statement's values in order).
#  A. N4 joins: `fleet.sh move-slots o 3 4` moves 3 slots (the nodes with the most first) while
#     load runs; N4 serves them strictly above the marks.
#  B. stale mark: N4 releases a slot and is asked to adopt it again with the older mark (lower
#     than its own durable mark) -> 22023; a mark outside the slot -> 22023; the slot goes back
#     to N1 above N4's mark.
#  C. N2 leaves: `fleet.sh drain-slots o 2` moves its slots to the others while load runs; N2's
#     segment_next then fails (55000).
#  D. kill -9 of N3 while it serves: after the crash restart its slot set is the same;
#     `fleet.sh drain-slots o 3` moves them above the recovered marks while load runs.
#  E. pg_dump/pg_restore of N1's database keeps its slot set and marks.
#  F. over the whole run: 0 duplicates across all nodes; every value lies in a slot its node
#     owned at the time (between the marks of the hand-overs); values per slot increase on each
#     node.
#  G. a slotted tag created and used in one transaction; segment_drop removes its slots and
#     their sequences; DROP EXTENSION leaves no slot sequence behind.
set -euo pipefail
. "$(dirname "$0")/../lib.bash"

FLEET=$ROOT/scripts/fleet.sh
F=it_sl
BASE=$(itport 29050)   # the fleet: 29050 (agg), 29051-29054
RUN_DIR=$("$CLUSTER" rundir)
for c in ${F}agg ${F}1 ${F}2 ${F}3 ${F}4; do register_cluster "$c"; done
trap 'rc=$?; set +e; rm -f "$RUN_DIR/$F.fleet"; (exit $rc); cleanup' EXIT
"$FLEET" start --name "$F" --nodes 4 --base-port "$BASE" >"$TMP/fleet.out" 2>&1 \
    || { cat "$TMP/fleet.out"; exit 1; }
declare -A OWN=([1]='{0,3,6,9}' [2]='{1,4,7,10}' [3]='{2,5,8,11}' [4]='{}')
for n in 1 2 3 4; do
    q "$F$n" "SET client_min_messages = warning" \
        "SELECT segment_create('o', 10, slots => 12, owned => '${OWN[$n]}')" >/dev/null
done
owned() { q "$F$1" "SELECT coalesce(owned_slots::text, '{}') FROM segment_status WHERE tag = 'o'"; }
check "N1 owns slots 0,3,6,9" "$(owned 1)" == "{0,3,6,9}"
check "N4 owns none" "$(owned 4)" == "{}"
expect_sql_error ${F}4 55000 "owns no slot" "SELECT segment_next('o')"
expect_sql_error ${F}1 22023 "cannot be combined" "SELECT segment_create('x', 10, slots => 4, nodes => 2)"
expect_sql_error ${F}1 22023 "outside" "SELECT segment_create('x', 10, slots => 4, owned => '{4}')"
expect_sql_error ${F}1 0A000 "has stride slots" "SELECT segment_set('o', 100000)"

# ownership log, one line per (slot, node) interval: slot node lo [hi]; values v with
# lo < v <= hi (no hi: open)
HO="$TMP/handovers"; : >"$HO"
for n in 1 2 3; do
    for s in $(tr -d '{}' <<<"${OWN[$n]}" | tr ',' ' '); do echo "$s $n 0" >>"$HO"; done
done
# record SLOT FROM TO MARK
record() {
    awk -v s="$1" -v f="$2" -v m="$4" '$1 == s && $2 == f && NF == 3 { print $0, m; next } { print }' "$HO" >"$HO.new"
    mv "$HO.new" "$HO"
    echo "$1 $3 $4" >>"$HO"
    log "slot $1: node $2 -> node $3 above $4"
}
# fleet CMD ARGS: a fleet.sh slot command; records each 'slot S: node A -> node B above M' line
fleet() {
    local out line re='^slot ([0-9]+): node ([0-9]+) -> node ([0-9]+) above (-?[0-9]+)$'
    out=$("$FLEET" "$1" --name "$F" "${@:2}") || { ko "fleet.sh $*: $out"; return 1; }
    while read -r line; do
        [[ $line =~ $re ]] && record "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" "${BASH_REMATCH[3]}" "${BASH_REMATCH[4]}"
    done <<<"$out"
}

# load NODE ROUND: 400 transactions of 100 values, in the background
LOADS=()
load() {
    local n=$1 r=$2 f="$TMP/load.$1.$2.sql"
    for i in $(seq 1 400); do
        echo "COPY (SELECT segment_next('o'), $n, $r, $i, g FROM generate_series(1, 100) g) TO STDOUT;"
    done >"$f"
    "$CLUSTER" psql "$F$n" -q -f "$f" >"$TMP/vals.$n.$r" 2>"$TMP/err.$n.$r" &
    BG_PIDS+=($!); LOADS+=($!)
}
wait_loads() { local p; for p in "${LOADS[@]}"; do wait "$p" || true; done; LOADS=(); }
# wait_rows NODE ROUND K: until that load has handed out at least K values (bounded)
wait_rows() {
    local f="$TMP/vals.$1.$2" i
    for i in $(seq 1 600); do
        [ "$(wc -l <"$f" 2>/dev/null || echo 0)" -ge "$3" ] && return 0
        sleep 0.05
    done
    ko "load $1.$2 did not reach $3 values"
}

# ---- A ----
for n in 1 2 3; do load $n 1; done
wait_rows 1 1 2000; wait_rows 2 1 2000; wait_rows 3 1 2000
fleet move-slots o 3 4
load 4 1
wait_loads
# one from each of N1, N2, N3 (4 slots each; ties: the lowest node number), each its highest
check "A: N4 owns slots 9,10,11" "$(owned 4)" == "{9,10,11}"
check "A: N1 serves 0,3,6" "$(owned 1)" == "{0,3,6}"
check "A: three hand-overs" "$(awk 'NF == 4' "$HO" | wc -l)" -eq 3

# ---- B ----
m1=$(awk '$1 == 9 && $2 == 1 { print $4 }' "$HO")
m2=$(q ${F}4 "SELECT segment_slot_release('o', 9)")
check "B: N4's mark of slot 9 is above N1's" "$m2" -gt "$m1"
expect_sql_error ${F}4 22023 "cannot adopt slot 9.*may have been handed out" "SELECT segment_slot_adopt('o', 9, $m1)"
check "B: after the refused adopt N4 does not own slot 9" \
    "$(q ${F}4 "SELECT owned FROM segment_slot_status WHERE tag = 'o' AND slot = 9")" == "f"
expect_sql_error ${F}1 22023 "is not a value of slot 9" "SELECT segment_slot_adopt('o', 9, $((m2 + 1)))"
first=$(q ${F}1 "SELECT segment_slot_adopt('o', 9, $m2)")
record 9 4 1 "$m2"
check "B: N1 continues slot 9 above N4's mark" "$first" -gt "$m2"

# ---- C ----
for n in 1 2 3 4; do load $n 2; done
wait_rows 2 2 3000
fleet drain-slots o 2
wait_loads
check "C: N2 owns no slot" "$(owned 2)" == "{}"
expect_sql_error ${F}2 55000 "owns no slot" "SELECT segment_next('o')"
check "C: the 12 slots are owned once by N1, N3, N4" \
    "$(for n in 1 3 4; do q "$F$n" "SELECT slot FROM segment_slot_status WHERE tag = 'o' AND owned"; done | sort -n | tr '\n' ' ')" \
    == "0 1 2 3 4 5 6 7 8 9 10 11 "

# ---- D ----
load 3 3
wait_rows 3 3 5000
before=$(owned 3)
"$CLUSTER" crash ${F}3 >/dev/null 2>&1
wait_loads
"$CLUSTER" start ${F}3 "$("$FLEET" port --name "$F" 3)" >/dev/null 2>&1
check "D: N3's slot set after kill -9 and restart" "$(owned 3)" == "$before"
load 4 3; load 1 3
fleet drain-slots o 3
wait_loads
check "D: N1 and N4 own six slots each, the 12 slots once" \
    "$(owned 1 | tr -cd ',' | wc -c)|$(owned 4 | tr -cd ',' | wc -c)|$(for n in 1 4; do q "$F$n" "SELECT slot FROM segment_slot_status WHERE tag = 'o' AND owned"; done | sort -un | wc -l)" \
    == "5|5|12"

# ---- E ----
SOCK=$("$CLUSTER" sockdir ${F}1); PORT=$("$CLUSTER" port ${F}1)
"$PGBIN/pg_dump" -h "$SOCK" -p "$PORT" -U postgres -Fc -f "$TMP/db.dump" postgres
q ${F}1 "CREATE DATABASE restored" >/dev/null
"$PGBIN/pg_restore" -h "$SOCK" -p "$PORT" -U postgres -d restored "$TMP/db.dump"
S="SELECT string_agg(slot || ':' || owned || ':' || coalesce(persisted_mark, -1), ',' ORDER BY slot) FROM segment_slot_status WHERE tag = 'o'"
orig=$(q ${F}1 "$S")
check "E: the restored database has N1's slots and marks" "$(qdb ${F}1 restored "$S")" == "$orig"
rv=$(qdb ${F}1 restored "SELECT segment_next('o')")
rs=$(( (rv - 1) / 10 % 12 ))
dumped_mark=$(tr ',' '\n' <<<"$orig" | awk -F: -v s="$rs" '$1 == s && $2 == "true" { print $3 }')
log "restored: first value $rv in slot $rs, dumped mark of the slot '$dumped_mark'"
check "E: the restored database continues in an owned slot above its dumped mark" \
    "$([ -n "$dumped_mark" ] && [ "$rv" -gt "$dumped_mark" ] && echo yes || echo "no: $rv slot $rs mark '$dumped_mark'")" == yes

# ---- F ----
q ${F}1 "CREATE TABLE v (v bigint, node int, round int, tx int, g int)" \
    "CREATE TABLE ho (slot int, node int, lo bigint, hi bigint)" >/dev/null
cat "$TMP"/vals.* | q ${F}1 "COPY v FROM STDIN" >/dev/null
awk '{ print $1 "\t" $2 "\t" $3 "\t" (NF == 4 ? $4 : "\\N") }' "$HO" | q ${F}1 "COPY ho FROM STDIN" >/dev/null
read -r cnt dist <<<"$(q ${F}1 "SELECT count(*), count(DISTINCT v) FROM v" | tr '|' ' ')"
check "F: values handed out over the run" "$cnt" -gt 100000
check "F: 0 duplicates across the four nodes" "$((cnt - dist))" -eq 0
check "F: every value lies in a slot its node owned then (between the hand-over marks)" \
    "$(q ${F}1 "SELECT count(*) FROM v WHERE NOT EXISTS (SELECT FROM ho WHERE ho.slot = ((v.v - 1) / 10) % 12
         AND ho.node = v.node AND v.v > ho.lo AND (ho.hi IS NULL OR v.v <= ho.hi))")" -eq 0
check "F: values per slot increase on each node" \
    "$(q ${F}1 "SELECT count(*) FROM (SELECT v, lag(v) OVER (PARTITION BY node, round, ((v - 1) / 10) % 12 ORDER BY tx, g) AS p FROM v) x WHERE p >= v")" -eq 0
check "F: every slot was served" "$(q ${F}1 "SELECT count(DISTINCT ((v - 1) / 10) % 12) FROM v")" -eq 12

# ---- G: a slotted tag created and used in one transaction, dropped; DROP EXTENSION leaves no
# slot sequence behind ----
nseq() { q ${F}2 "SELECT count(*) FROM pg_class WHERE relname LIKE 'pg\_idgen\_seg\_%' AND relkind = 'S'"; }
seqs_before=$(nseq)
check "G: values of a slotted tag created in the same transaction (4 slots, unit 5, 2 owned)" \
    "$(q ${F}2 "BEGIN" "SELECT segment_create('tx', 5, slots => 4, owned => '{1,3}')" \
        "SELECT string_agg(segment_next('tx')::text, ',') FROM generate_series(1, 12)" "COMMIT" | sed -n 2p)" \
    == "6,7,8,9,10,16,17,18,19,20,26,27"
q ${F}2 "SELECT segment_drop('tx')" >/dev/null
check "G: segment_drop of a slotted tag drops its slots and their sequences" \
    "$(q ${F}2 "SELECT count(*) FROM pg_idgen_segment_slots WHERE tag = 'tx'")|$(nseq)" == "0|$seqs_before"
q ${F}2 "DROP EXTENSION pg_idgen" >/dev/null
check "G: DROP EXTENSION drops the slot sequences with the tags" \
    "$(q ${F}2 "SELECT count(*) FROM pg_class WHERE relname LIKE 'pg\_idgen\_seg\_%'")" -eq 0
finish
