#!/usr/bin/env bash
# snowflake/003_balance: low-rate ids (one every ~3 ms, so each lands in a new millisecond) and id % 8
# sharding. With the default pg_idgen.sequence_start (vibrate) and with random, every bucket
# of id % 8 holds the mean ±50 %; with zero, every low-rate id has sequence 0, so id % 8 = 0
# for all of them — why the default matters.
set -euo pipefail
. "$(dirname "$0")/../lib.bash"

C=it_bal
cluster_start "$C" 28943
q "$C" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
      "CREATE TABLE b (mode text, n int, id bigint)" >/dev/null

# gen MODE N [SET ...]: N ids, one every 3 ms, in one session
gen() {
    local mode=$1 n=$2 set=${3:-}
    local s; s=$(date +%s.%N)
    q "$C" ${set:+"$set"} "DO \$\$ BEGIN FOR i IN 1..$n LOOP
        INSERT INTO b VALUES ('$mode', i, snowflake_next()); PERFORM pg_sleep(0.003); END LOOP; END \$\$" >/dev/null
    log "$mode: $n ids at low rate in $(awk -v a="$s" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s (setting: $(q "$C" ${set:+"$set"} "SHOW pg_idgen.sequence_start"))"
}

# buckets MODE: prints "b0 b1 ... b7"
buckets() {
    q "$C" "SELECT string_agg(coalesce(c, 0)::text, ' ' ORDER BY k) FROM generate_series(0, 7) k
            LEFT JOIN (SELECT id % 8 AS m, count(*) AS c FROM b WHERE mode = '$1' GROUP BY 1) x ON x.m = k"
}

# balanced MODE N: every bucket within mean ±50 %
balanced() {
    local mode=$1 n=$2 mean lo hi k=0 c
    mean=$((n / 8)); lo=$((mean / 2)); hi=$((mean * 3 / 2))
    local bs; bs=$(buckets "$mode")
    log "$mode: id % 8 buckets: $bs (mean $mean, allowed $lo..$hi)"
    for c in $bs; do
        if [ "$c" -lt "$lo" ] || [ "$c" -gt "$hi" ]; then ko "$mode: bucket $k holds $c ids, outside $lo..$hi"; return; fi
        k=$((k + 1))
    done
    ok "$mode: all 8 buckets of id % 8 within mean $mean ±50 % ($bs)"
}

# every id also has to be distinct and increasing in call order
ordered() {
    local mode=$1 n=$2 bad cnt
    read -r cnt bad <<<"$(q "$C" "SELECT count(DISTINCT id), count(*) FILTER (WHERE prev IS NOT NULL AND NOT id > prev) FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM b WHERE mode = '$mode') s" | tr '|' ' ')"
    check "$mode: distinct ids" "$cnt" -eq "$n"
    check "$mode: ids not increasing in call order" "$bad" -eq 0
}

N=4000
gen vibrate $N
balanced vibrate $N
ordered vibrate $N

NZ=1000
gen zero $NZ "SET pg_idgen.sequence_start = zero"
bs=$(buckets zero)
log "zero: id % 8 buckets: $bs"
nz=$(q "$C" "SELECT count(*) FROM b WHERE mode = 'zero' AND id % 8 = 0")
check "zero: low-rate ids with id % 8 = 0 (all of them land in bucket 0)" "$nz" -eq "$NZ"
ordered zero $NZ

NR=2000
gen random $NR "SET pg_idgen.sequence_start = random"
balanced random $NR
ordered random $NR

finish
