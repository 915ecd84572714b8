#!/usr/bin/env bash
# fleet/001_shards: one fleet of PostgreSQL nodes (scripts/fleet.sh): three shards with worker ids 1-3 and
# an aggregator, all on loopback, ports 28961 (aggregator) and 28962-28964 (+ IT_PORT_OFFSET).
#  A. Fan-in with native logical replication: each shard publishes `orders` (id bigint PRIMARY KEY
#     DEFAULT snowflake_next()) and `invoices` (no bigint PRIMARY KEY DEFAULT segment_next('inv'),
#     tag created with nodes => 3, node_index => shard-1); the aggregator subscribes to all three
#     over 127.0.0.1 into a plain `orders`/`invoices` (database postgres) and into an `orders`
#     PARTITION BY HASH (id) with 8 partitions (database fanp). Each shard inserts concurrently:
#     3 clients x 20,000 orders (INSERT ... SELECT batches, multi-row VALUES, single-row INSERTs)
#     and 2 clients x 5,000 invoices. After catch-up: counts are the sums, ids distinct, the
#     per-shard id sets identical (md5), uid_decode(id).worker_id = the writing shard for every
#     row, invoice numbers in the writing shard's stride, no apply/sync errors, no ERROR (duplicate
#     key, conflict) in the aggregator's log.
#  B. Time windows: per shard a burst of 6,000 rows between t1 and t2 (clock_timestamp() at ms
#     precision, taken while the shard's generator is idle, so no earlier or later id can fall in
#     [t1, t2)). id >= snowflake_at(t1) AND id < snowflake_at(t2) returns exactly the burst: on the
#     shard, on both replicated tables, and through postgres_fdw foreign tables on the aggregator.
#  C. Low rate: 1,500 rows per shard, one per ~10 ms (pg_sleep(0.01)): each shard's id % 8 buckets
#     and the aggregator's 8 hash partitions hold the mean +-50 %.
# The invoices part needs segment_create(); without it that part is skipped with a SKIP line.
# The postgres_fdw checks of B need contrib (postgres_fdw): on an installation without it
# (the PostgreSQL 16 and 17 wheels, PG_HAS_CONTRIB=0) they are skipped with a SKIP line.
set -euo pipefail
. "$(dirname "$0")/../lib.bash"

FLEET=$ROOT/scripts/fleet.sh
F=it_fleet
AGG=${F}agg
SHARDS=(1 2 3)
BASE=$(itport 28961)
RUN_DIR=$("$CLUSTER" rundir)

# the fleet's clusters are destroyed by lib.bash's trap; its description file goes too
for c in "$AGG" "${F}1" "${F}2" "${F}3"; do register_cluster "$c"; done
trap 'rc=$?; set +e; rm -f "$RUN_DIR/$F.fleet"; (exit $rc); cleanup' EXIT

S() { echo "${F}$1"; }                     # cluster name of shard k
secs() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

t0=$(date +%s.%N)
"$FLEET" start --name "$F" --nodes 3 --base-port "$BASE" >"$TMP/fleet.out" 2>&1 \
    || { cat "$TMP/fleet.out"; exit 1; }
log "fleet up in $(secs "$t0") s: $(grep -c running "$TMP/fleet.out") instances running (ports $BASE-$((BASE + 3)))"
grep -E '^(agg|node)' "$TMP/fleet.out" | sed "s|^|[$TEST_NAME]   |" || true

for k in "${SHARDS[@]}"; do
    check "shard $k: SHOW pg_idgen.worker_id" "$(q "$(S "$k")" "SHOW pg_idgen.worker_id")" -eq "$k"
    check "shard $k: SHOW wal_level" "$(q "$(S "$k")" "SHOW wal_level")" == logical
done

SEG=1
if [ "$(q "$(S 1)" "SELECT count(*) FROM pg_proc WHERE proname = 'segment_create'")" = 0 ]; then
    SEG=0
    log "SKIP: segment_create() does not exist in this build of pg_idgen (segment sequences not merged yet): the invoices part (DEFAULT segment_next('inv'), nodes => 3) is skipped"
fi

# ---- schema: shards ----
COLS="node int NOT NULL, client int NOT NULL, phase text NOT NULL, n int NOT NULL"
for k in "${SHARDS[@]}"; do
    sql=("SET client_min_messages = warning"
         "CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_next(), $COLS, ts timestamptz NOT NULL DEFAULT clock_timestamp())"
         "CREATE PUBLICATION fleet_orders FOR TABLE orders")
    if [ $SEG = 1 ]; then
        sql+=("SELECT segment_create('inv', nodes => 3, node_index => $((k - 1)))"
              "CREATE TABLE invoices (no bigint PRIMARY KEY DEFAULT segment_next('inv'), $COLS)"
              "CREATE PUBLICATION fleet_all FOR TABLE orders, invoices")
    else
        sql+=("CREATE PUBLICATION fleet_all FOR TABLE orders")
    fi
    q "$(S "$k")" "${sql[@]}" >/dev/null
done

# ---- schema: aggregator (database postgres: plain tables + postgres_fdw; database fanp: hash) ----
AGG_COLS="node int NOT NULL, client int NOT NULL, phase text NOT NULL, n int NOT NULL"
q "$AGG" "SET client_min_messages = warning" \
    "CREATE TABLE orders (id bigint PRIMARY KEY, $AGG_COLS, ts timestamptz NOT NULL)" \
    "CREATE TABLE invoices (no bigint PRIMARY KEY, $AGG_COLS)" \
    "CREATE DATABASE fanp" >/dev/null
hash_parts=()
for r in 0 1 2 3 4 5 6 7; do hash_parts+=("CREATE TABLE orders_p$r PARTITION OF orders FOR VALUES WITH (MODULUS 8, REMAINDER $r)"); done
qdb "$AGG" fanp "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
    "CREATE TABLE orders (id bigint PRIMARY KEY, $AGG_COLS, ts timestamptz NOT NULL) PARTITION BY HASH (id)" \
    "${hash_parts[@]}" >/dev/null
FDW=$PG_HAS_CONTRIB
[ "$FDW" = 1 ] || log "SKIP: PostgreSQL $PG here has no contrib (postgres_fdw): the postgres_fdw checks of B are skipped"
fdw=("SET client_min_messages = warning" "CREATE EXTENSION postgres_fdw")
for k in "${SHARDS[@]}"; do
    conn=$("$FLEET" conninfo --name "$F" "$k")
    check_match "shard $k: connection string is TCP on loopback" "$conn" "^host=127\.0\.0\.1 port=$((BASE + k)) "
    q "$AGG" "CREATE SUBSCRIPTION fleet_sub_$k CONNECTION '$conn' PUBLICATION fleet_all" >/dev/null 2>"$TMP/sub.err" \
        || { cat "$TMP/sub.err"; exit 1; }
    qdb "$AGG" fanp "CREATE SUBSCRIPTION fanp_sub_$k CONNECTION '$conn' PUBLICATION fleet_orders" >/dev/null 2>"$TMP/sub.err" \
        || { cat "$TMP/sub.err"; exit 1; }
    fdw+=("CREATE SERVER shard$k FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '127.0.0.1', port '$((BASE + k))', dbname 'postgres', extensions 'pg_idgen')"
          "CREATE USER MAPPING FOR CURRENT_USER SERVER shard$k OPTIONS (user 'postgres')"
          "CREATE SCHEMA shard$k"
          "IMPORT FOREIGN SCHEMA public LIMIT TO (orders) FROM SERVER shard$k INTO shard$k")
done
fdw+=("CREATE VIEW fleet_orders AS SELECT * FROM shard1.orders UNION ALL SELECT * FROM shard2.orders UNION ALL SELECT * FROM shard3.orders")
[ "$FDW" = 0 ] || q "$AGG" "${fdw[@]}" >/dev/null

# every subscribed table past its initial sync (state r), with a generous timeout
deadline=$((SECONDS + 300))
while :; do
    notready=$(( $(q "$AGG" "SELECT count(*) FROM pg_subscription_rel WHERE srsubstate <> 'r'") \
               + $(qdb "$AGG" fanp "SELECT count(*) FROM pg_subscription_rel WHERE srsubstate <> 'r'") ))
    nrel=$(( $(q "$AGG" "SELECT count(*) FROM pg_subscription_rel") + $(qdb "$AGG" fanp "SELECT count(*) FROM pg_subscription_rel") ))
    [ "$notready" = 0 ] && break
    [ $SECONDS -lt $deadline ] || break
    sleep 0.5
done
check "subscriptions: tables not yet synchronized (of $nrel)" "$notready" -eq 0
check "subscriptions: subscribed tables (3 shards x (orders$([ $SEG = 1 ] && echo ', invoices') + orders in fanp))" "$nrel" -eq $((3 * (SEG + 2)))

# ---- client scripts ----
# gen_sql FILE STYLE TABLE NODE CLIENT PHASE ROWS : STYLE batch (INSERT ... SELECT, 1,000 rows a
# statement), values (multi-row VALUES, 100 rows a statement) or single (one row a statement,
# 100 statements a transaction)
gen_sql() {
    awk -v style="$2" -v t="$3" -v k="$4" -v c="$5" -v p="$6" -v n="$7" 'BEGIN {
        head = sprintf("INSERT INTO %s (node, client, phase, n)", t)
        if (style == "batch") {
            for (s = 1; s <= n; s += 1000) { e = s + 999; if (e > n) e = n
                printf "%s SELECT %d, %d, '\''%s'\'', g FROM generate_series(%d, %d) g;\n", head, k, c, p, s, e }
        } else if (style == "values") {
            for (s = 1; s <= n; s += 100) { printf "%s VALUES ", head
                for (i = s; i < s + 100 && i <= n; i++) printf "%s(%d, %d, '\''%s'\'', %d)", (i > s ? ", " : ""), k, c, p, i
                print ";" }
        } else {
            for (i = 1; i <= n; i++) {
                if (i % 100 == 1) print "BEGIN;"
                printf "%s VALUES (%d, %d, '\''%s'\'', %d);\n", head, k, c, p, i
                if (i % 100 == 0 || i == n) print "COMMIT;" }
        }
    }' > "$1"
}

# run_all FILE... : every file as a psql client at once (file name: <shard>.<anything>.sql)
run_all() {
    local pids=() f p rc=0
    for f in "$@"; do
        "$CLUSTER" psql "$(S "$(basename "$f" | cut -d. -f1)")" -f "$f" >/dev/null 2>"$f.err" &
        pids+=($!); BG_PIDS+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || rc=1; done
    if [ $rc != 0 ]; then cat "$TMP"/*.err >&2; echo "a client failed" >&2; return 1; fi
}

# counts_by_node CLUSTER DB TABLE [WHERE] : "1:n1 2:n2 3:n3"
counts_by_node() {
    qdb "$1" "$2" "SELECT string_agg(k || ':' || coalesce(c, 0), ' ' ORDER BY k) FROM generate_series(1, 3) k
                   LEFT JOIN (SELECT node, count(*) AS c FROM $3 ${4:+WHERE $4} GROUP BY node) x ON x.node = k"
}
shard_counts() {
    local k; for k in "${SHARDS[@]}"; do qdb "$(S "$k")" postgres "SELECT '$k:' || count(*) FROM $1"; done | paste -sd' '
}

# wait_caught_up DB TABLE : the aggregator's per-shard counts equal the shards' (timeout 600 s)
wait_caught_up() {
    local db=$1 t=$2 want got s=$SECONDS deadline=$((SECONDS + 600))
    want=$(shard_counts "$t")
    while :; do
        got=$(counts_by_node "$AGG" "$db" "$t")
        [ "$got" = "$want" ] && break
        if [ $SECONDS -ge $deadline ]; then ko "$db.$t caught up within 600 s: aggregator has $got, shards $want"; return 1; fi
        sleep 0.5
    done
    log "$db.$t caught up ($got) after $((SECONDS - s)) s of polling"
}

# wait_idle K : the generator of shard K behind the wall clock (lead_ms < 0), so that the next id
# has the time of its call and no id issued so far has the current millisecond or a later one
wait_idle() {
    local k=$1 lead deadline=$((SECONDS + 60))
    while :; do
        lead=$(q "$(S "$k")" "SELECT coalesce(max(lead_ms), -1) FROM snowflake_stats() WHERE worker_id = $k")
        [ "$lead" -lt 0 ] && return 0
        [ $SECONDS -lt $deadline ] || { echo "shard $k: generator still $lead ms ahead of the clock after 60 s" >&2; return 1; }
        sleep 0.05
    done
}

# ======================= A: concurrent load, fan-in =======================
NA=20000
NI=5000
files=()
for k in "${SHARDS[@]}"; do
    gen_sql "$TMP/$k.o1.sql" batch  orders "$k" 1 load $NA
    gen_sql "$TMP/$k.o2.sql" values orders "$k" 2 load $NA
    gen_sql "$TMP/$k.o3.sql" single orders "$k" 3 load $NA
    files+=("$TMP/$k.o1.sql" "$TMP/$k.o2.sql" "$TMP/$k.o3.sql")
    if [ $SEG = 1 ]; then
        gen_sql "$TMP/$k.i1.sql" batch  invoices "$k" 1 load $NI
        gen_sql "$TMP/$k.i2.sql" single invoices "$k" 2 load $NI
        files+=("$TMP/$k.i1.sql" "$TMP/$k.i2.sql")
    fi
done
s=$(date +%s.%N)
run_all "${files[@]}"
el=$(secs "$s")
log "A: ${#files[@]} clients on 3 shards at once: 3 x 3 x $NA orders$([ $SEG = 1 ] && echo " + 3 x 2 x $NI invoices") in $el s"

EXP_O=$((3 * NA))
for k in "${SHARDS[@]}"; do
    read -r n nw <<<"$(q "$(S "$k")" "SELECT count(*), count(*) FILTER (WHERE u.worker_id = $k) FROM orders o, LATERAL uid_decode(o.id) u" | tr '|' ' ')"
    check "A: shard $k orders" "$n" -eq $EXP_O
    check "A: shard $k orders decoding to worker $k" "$nw" -eq $EXP_O
done

wait_caught_up postgres orders
wait_caught_up fanp orders
[ $SEG = 1 ] && wait_caught_up postgres invoices

for db in postgres fanp; do
    read -r n d <<<"$(qdb "$AGG" $db "SELECT count(*), count(DISTINCT id) FROM orders" | tr '|' ' ')"
    check "A: $db.orders on the aggregator: rows = sum of the shards" "$n" -eq $((3 * EXP_O))
    check "A: $db.orders on the aggregator: distinct ids" "$d" -eq $((3 * EXP_O))
    bad=$(qdb "$AGG" $db "SELECT count(*) FROM orders o, LATERAL uid_decode(o.id) u WHERE u.worker_id <> o.node")
    check "A: $db.orders rows whose uid_decode(id).worker_id is not the shard that wrote them" "$bad" -eq 0
    log "A: $db.orders by decoded worker id: $(qdb "$AGG" $db "SELECT string_agg(w || ':' || c, ' ' ORDER BY w) FROM (SELECT u.worker_id AS w, count(*) AS c FROM orders o, LATERAL uid_decode(o.id) u GROUP BY 1) x")"
    for k in "${SHARDS[@]}"; do
        a=$(qdb "$AGG" $db "SELECT md5(string_agg(id::text, ',' ORDER BY id)) FROM orders WHERE node = $k")
        b=$(q "$(S "$k")" "SELECT md5(string_agg(id::text, ',' ORDER BY id)) FROM orders")
        check "A: $db.orders ids of shard $k identical to the shard's (md5)" "$a" == "$b"
    done
done
log "A: fanp hash partitions (rows): $(qdb "$AGG" fanp "SELECT string_agg(c::text, ' ' ORDER BY p) FROM (SELECT tableoid::regclass::text AS p, count(*) AS c FROM orders GROUP BY 1) x")"
np=$(qdb "$AGG" fanp "SELECT count(DISTINCT tableoid) FROM orders")
check "A: fanp.orders hash partitions holding rows" "$np" -eq 8
log "A: id ranges per shard: $(q "$AGG" "SELECT string_agg(node || ': ' || mi || ' .. ' || ma, ', ' ORDER BY node) FROM (SELECT node, min(id) mi, max(id) ma FROM orders GROUP BY node) x")"

if [ $SEG = 1 ]; then
    EXP_I=$((2 * NI))
    read -r n d <<<"$(q "$AGG" "SELECT count(*), count(DISTINCT no) FROM invoices" | tr '|' ' ')"
    check "A: invoices on the aggregator: rows = sum of the shards" "$n" -eq $((3 * EXP_I))
    check "A: invoices on the aggregator: distinct numbers" "$d" -eq $((3 * EXP_I))
    # default step 1000, start 1: node_index k-1 owns the chunks [1 + (3j + k-1)*1000, +1000)
    bad=$(q "$AGG" "SELECT count(*) FROM invoices WHERE ((no - 1) / 1000) % 3 <> node - 1")
    check "A: invoices outside the writing shard's stride (((no - 1) / 1000) % 3 = node_index)" "$bad" -eq 0
    for k in "${SHARDS[@]}"; do
        a=$(q "$AGG" "SELECT md5(string_agg(no::text, ',' ORDER BY no)) FROM invoices WHERE node = $k")
        b=$(q "$(S "$k")" "SELECT md5(string_agg(no::text, ',' ORDER BY no)) FROM invoices")
        check "A: invoices of shard $k identical to the shard's (md5)" "$a" == "$b"
    done
    log "A: invoice numbers per shard: $(q "$AGG" "SELECT string_agg(node || ': ' || n || ' in ' || mi || ' .. ' || ma, ', ' ORDER BY node) FROM (SELECT node, count(*) n, min(no) mi, max(no) ma FROM invoices GROUP BY node) x")"
else
    log "SKIP: A: invoices (segment_next) fan-in not run: segment_create() missing"
fi

# ======================= B: time windows =======================
NW=2000                     # rows per client; 3 clients per window
declare -A T1 T2
for k in "${SHARDS[@]}"; do wait_idle "$k"; done
for k in "${SHARDS[@]}"; do
    wait_idle "$k"
    T1[$k]=$(q "$(S "$k")" "SELECT date_trunc('milliseconds', clock_timestamp())")
    gen_sql "$TMP/$k.w1.sql" batch  orders "$k" 1 "win$k" $NW
    gen_sql "$TMP/$k.w2.sql" values orders "$k" 2 "win$k" $NW
    gen_sql "$TMP/$k.w3.sql" single orders "$k" 3 "win$k" $NW
    s=$(date +%s.%N)
    run_all "$TMP/$k.w1.sql" "$TMP/$k.w2.sql" "$TMP/$k.w3.sql"
    el=$(secs "$s")
    wait_idle "$k"
    T2[$k]=$(q "$(S "$k")" "SELECT date_trunc('milliseconds', clock_timestamp())")
    log "B: window $k: [${T1[$k]}, ${T2[$k]}) on shard $k, $((3 * NW)) rows by 3 clients in $el s"
done

# ======================= C: low rate =======================
NL=1500
s=$(date +%s.%N)
pids=()
for k in "${SHARDS[@]}"; do
    q "$(S "$k")" "DO \$\$ BEGIN FOR i IN 1..$NL LOOP
        INSERT INTO orders (node, client, phase, n) VALUES ($k, 0, 'low', i); PERFORM pg_sleep(0.01); END LOOP; END \$\$" >/dev/null &
    pids+=($!); BG_PIDS+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
log "C: 3 shards x $NL rows at one per ~10 ms in $(secs "$s") s"

wait_caught_up postgres orders
wait_caught_up fanp orders

# ---- B checks ----
WIN=$((3 * NW))
for k in "${SHARDS[@]}"; do
    t1=${T1[$k]} t2=${T2[$k]}
    rng="id >= snowflake_at('$t1') AND id < snowflake_at('$t2')"
    # on the shard: the id range, the decoded time and the burst are the same rows
    read -r nr nd nb nx <<<"$(q "$(S "$k")" "SELECT count(*) FILTER (WHERE $rng),
            count(*) FILTER (WHERE u.ts >= '$t1' AND u.ts < '$t2'),
            count(*) FILTER (WHERE phase = 'win$k'),
            count(*) FILTER (WHERE ($rng) <> (phase = 'win$k'))
          FROM orders o, LATERAL uid_decode(o.id) u" | tr '|' ' ')"
    check "B: window $k: shard rows in the snowflake_at() id range" "$nr" -eq $WIN
    check "B: window $k: shard rows whose uid_decode(id).ts is in the window" "$nd" -eq $WIN
    check "B: window $k: shard rows of the burst" "$nb" -eq $WIN
    check "B: window $k: shard rows in the id range xor of the burst" "$nx" -eq 0
    ref=$(q "$(S "$k")" "SELECT md5(string_agg(id::text, ',' ORDER BY id)) FROM orders WHERE phase = 'win$k'")
    for db in postgres fanp; do
        read -r n nk h <<<"$(qdb "$AGG" $db "SELECT count(*), count(*) FILTER (WHERE node = $k AND phase = 'win$k'),
                md5(string_agg(id::text, ',' ORDER BY id)) FROM orders WHERE $rng" | tr '|' ' ')"
        check "B: window $k: $db.orders (replicated$([ $db = fanp ] && echo ', hash-partitioned')) rows in the id range" "$n" -eq $WIN
        check "B: window $k: $db.orders rows in the id range that are shard $k's burst" "$nk" -eq $WIN
        check "B: window $k: $db.orders ids in the range identical to the burst (md5)" "$h" == "$ref"
    done
    [ "$FDW" = 1 ] || continue
    read -r n h <<<"$(q "$AGG" "SELECT count(*), md5(string_agg(id::text, ',' ORDER BY id)) FROM shard$k.orders WHERE $rng" | tr '|' ' ')"
    check "B: window $k: postgres_fdw shard$k.orders rows in the id range" "$n" -eq $WIN
    check "B: window $k: postgres_fdw shard$k.orders ids identical to the burst (md5)" "$h" == "$ref"
    read -r n nk <<<"$(q "$AGG" "SELECT count(*), count(*) FILTER (WHERE node = $k) FROM fleet_orders WHERE $rng" | tr '|' ' ')"
    check "B: window $k: postgres_fdw view over the 3 shards: rows in the id range" "$n" -eq $WIN
    check "B: window $k: postgres_fdw view over the 3 shards: rows of shard $k" "$nk" -eq $WIN
done
# the three windows together, from the first t1 to the last t2
rng="id >= snowflake_at('${T1[1]}') AND id < snowflake_at('${T2[3]}')"
for db in postgres fanp; do
    got=$(counts_by_node "$AGG" $db orders "$rng")
    check "B: $db.orders in [t1 of window 1, t2 of window 3) by shard" "$got" == "1:$WIN 2:$WIN 3:$WIN"
done
if [ "$FDW" = 1 ]; then
got=$(q "$AGG" "SELECT string_agg(k || ':' || coalesce(c, 0), ' ' ORDER BY k) FROM generate_series(1, 3) k
                LEFT JOIN (SELECT node, count(*) AS c FROM fleet_orders WHERE $rng GROUP BY node) x ON x.node = k")
check "B: postgres_fdw view in [t1 of window 1, t2 of window 3) by shard" "$got" == "1:$WIN 2:$WIN 3:$WIN"
remote=$(q "$AGG" "EXPLAIN (VERBOSE, COSTS OFF) SELECT count(*) FROM shard1.orders WHERE id >= snowflake_at('${T1[1]}') AND id < snowflake_at('${T2[1]}')" | grep -m1 'Remote SQL' || true)
check_match "B: postgres_fdw ships the id range to the shard" "$remote" "WHERE .*id >= [0-9]+.*id < [0-9]+"
log "B: $(sed 's/^ *//' <<<"$remote")"
fi

# ---- C checks ----
# within_50 DESC "c0 c1 ... c7" TOTAL
within_50() {
    local desc=$1 bs=$2 n=$3 mean lo hi c bad=""
    mean=$((n / 8)); lo=$((mean / 2)); hi=$((mean * 3 / 2))
    for c in $bs; do { [ "$c" -lt "$lo" ] || [ "$c" -gt "$hi" ]; } && bad+=" $c"; done
    local cnt; cnt=$(wc -w <<<"$bs")
    if [ "$cnt" = 8 ] && [ -z "$bad" ]; then ok "$desc: 8 buckets within mean $mean +-50 % ($bs)"
    else ko "$desc: buckets ($bs) not all within $lo..$hi (mean $mean; outside:${bad:- missing buckets})"; fi
}
mod8() {
    qdb "$1" "$2" "SELECT string_agg(coalesce(c, 0)::text, ' ' ORDER BY m) FROM generate_series(0, 7) m
                   LEFT JOIN (SELECT id % 8 AS r, count(*) AS c FROM orders WHERE phase = 'low' GROUP BY 1) x ON x.r = m"
}
for k in "${SHARDS[@]}"; do
    read -r n nw <<<"$(q "$(S "$k")" "SELECT count(*), count(*) FILTER (WHERE u.worker_id = $k) FROM orders o, LATERAL uid_decode(o.id) u WHERE phase = 'low'" | tr '|' ' ')"
    check "C: shard $k low-rate rows decoding to worker $k" "$nw" -eq $NL
    within_50 "C: shard $k low-rate ids, id % 8" "$(mod8 "$(S "$k")" postgres)" $NL
done
within_50 "C: aggregator low-rate ids of the 3 shards, id % 8" "$(mod8 "$AGG" postgres)" $((3 * NL))
parts=$(qdb "$AGG" fanp "SELECT string_agg(coalesce(c, 0)::text, ' ' ORDER BY r) FROM generate_series(0, 7) r
          LEFT JOIN (SELECT tableoid::regclass::text AS p, count(*) AS c FROM orders WHERE phase = 'low' GROUP BY 1) x ON x.p = 'orders_p' || r")
within_50 "C: aggregator low-rate rows over the 8 hash partitions" "$parts" $((3 * NL))
TOTAL=$((3 * (EXP_O + WIN + NL)))
parts=$(qdb "$AGG" fanp "SELECT string_agg(coalesce(c, 0)::text, ' ' ORDER BY r) FROM generate_series(0, 7) r
          LEFT JOIN (SELECT tableoid::regclass::text AS p, count(*) AS c FROM orders GROUP BY 1) x ON x.p = 'orders_p' || r")
within_50 "C: aggregator all rows over the 8 hash partitions" "$parts" $TOTAL
q "$AGG" "SELECT 'C: sequence field of the low-rate ids: ' || count(DISTINCT u.sequence) || ' distinct values, ' || min(u.sequence) || ' .. ' || max(u.sequence) || ', ' || count(*) FILTER (WHERE u.sequence = 0) || ' of ' || count(*) || ' are 0' FROM orders o, LATERAL uid_decode(o.id) u WHERE phase = 'low'" | sed "s|^|[$TEST_NAME] |"

# ======================= totals and errors =======================
for db in postgres fanp; do
    read -r n d <<<"$(qdb "$AGG" $db "SELECT count(*), count(DISTINCT id) FROM orders" | tr '|' ' ')"
    check "end: $db.orders rows (3 x ($EXP_O + $WIN + $NL))" "$n" -eq $TOTAL
    check "end: $db.orders distinct ids" "$d" -eq $TOTAL
    bad=$(qdb "$AGG" $db "SELECT count(*) FROM orders o, LATERAL uid_decode(o.id) u WHERE u.worker_id <> o.node")
    check "end: $db.orders rows not attributed by uid_decode to the shard that wrote them" "$bad" -eq 0
    # (both views are cluster-wide: one row per subscription of any database)
    sp=$([ $db = fanp ] && echo fanp_sub || echo fleet_sub)
    read -r ns ae se <<<"$(qdb "$AGG" $db "SELECT count(*), coalesce(sum(apply_error_count), -1), coalesce(sum($SYNC_ERRORS), -1) FROM pg_stat_subscription_stats s WHERE subname LIKE '${sp}_%'" | tr '|' ' ')"
    check "end: $db: subscriptions ${sp}_1..3" "$ns" -eq 3
    check "end: $db: pg_stat_subscription_stats.apply_error_count (sum over ${sp}_1..3)" "$ae" -eq 0
    check "end: $db: pg_stat_subscription_stats' synchronization errors (sum over ${sp}_1..3)" "$se" -eq 0
    nw=$(qdb "$AGG" $db "SELECT count(*) FROM pg_stat_subscription WHERE subname LIKE '${sp}_%' AND pid IS NOT NULL AND relid IS NULL")
    check "end: $db: apply workers running for ${sp}_1..3" "$nw" -eq 3
done
for c in "$AGG" "$(S 1)" "$(S 2)" "$(S 3)"; do
    lf=$("$CLUSTER" pgdata "$c")/log/postgresql.log
    errs=$(grep -ciE 'duplicate key|conflict|ERROR:|PANIC' "$lf" || true)
    check "end: $c: log lines with ERROR / duplicate key / conflict" "$errs" -eq 0
    [ "$errs" = 0 ] || grep -iE 'duplicate key|conflict|ERROR:|PANIC' "$lf" | head -5 | sed "s/^/    /"
done
q "$AGG" "SELECT 'end: subscriptions (postgres): ' || string_agg(subname || ' received_lsn=' || received_lsn, ', ' ORDER BY subname) FROM pg_stat_subscription WHERE relid IS NULL" | sed "s|^|[$TEST_NAME] |"
for k in "${SHARDS[@]}"; do
    q "$(S "$k")" "SELECT 'end: shard $k: ids_issued=' || ids_issued || ' exhaustions=' || exhaustions || ' waits=' || waits || ' steps_back=' || steps_back FROM snowflake_stats() WHERE worker_id = $k" | sed "s|^|[$TEST_NAME] |"
done

"$FLEET" stop --name "$F" >/dev/null 2>&1
st=$("$FLEET" status --name "$F" 2>/dev/null || true)
check "end: fleet.sh stop: instances still running" "$(grep -c ' running$' <<<"$st" || true)" -eq 0

finish
