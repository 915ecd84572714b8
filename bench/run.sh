#!/usr/bin/env bash
# bench/run.sh — per-call cost and throughput of snowflake_next() and segment_next() next to
# nextval(), nextval() on a CACHE 1000 sequence and gen_random_uuid(); and of the public-id
# functions uid_mask() (FF1-AES-256, target <= 1 us per call) and uid_to_text() in the same run.
#
# Usage: bench/run.sh [--quick]        (make bench [PG=NN], or make bench BENCH_ARGS=--quick)
#   --quick       200,000 calls, 3 runs, 3 s pgbench runs (smoke test)
#   default       2,000,000 calls, 5 runs, 10 s pgbench runs
#   Env: PG=NN (15 default, 16, 17, 18) picks the PostgreSQL major; BENCH_PORT (default 28830),
#   BENCH_CALLS, BENCH_REPS, BENCH_SECONDS, BENCH_ROWS (part 4, default 1,000,000; --quick
#   200,000) override the above.
#
# The extension must be installed (`make install`, a --release build). The script
# recreates the throwaway cluster `bench` (.run/bench, pg_idgen preloaded,
# worker_id 1), prints one markdown report on stdout (progress goes to stderr)
# and stops the cluster on exit.
#
#   Part 0  floors (bench/floor.bash): snowflake_next(), snowflake_next_text() and uid_decode()
#           per call next to the cheapest built-in doing comparable work (clock_timestamp(),
#           clock_timestamp()::text, the same decode in SQL operators), by the backend's CPU time
#           (/proc/self/schedstat) and by wall time, best of 9 rounds of 1,000,000 calls, as ratios.
#   segment_next slotted: a tag of 64 stride slots of which the node owns 16 (default step 1000),
#   next to the plain tag.
#   Part 1  one backend: SELECT count(<expr>) FROM generate_series(1, N), timed in
#           a plpgsql function with clock_timestamp() deltas; runs are interleaved
#           across the expressions, the median is reported. ns/call = time / N,
#           overhead = ns/call - ns/call of the bare series, ratio = overhead /
#           overhead of nextval('bench_seq').
#   Part 2  pgbench -n -T S, -c 2 -j 2 and -c 4 -j 4, a script file per expression
#           `SELECT count(<expr>) FROM generate_series(1, 1000);` -> calls/s = tps * 1000.
#   Part 3  restart with -c pg_idgen.max_drift_ms=0 (no borrowing from the future):
#           pgbench -c 2 and -c 4 clients calling snowflake_next() as fast as they can,
#           aggregate ids/s as % of the default layout's ceiling of 4,096 ids per ms =
#           4,096,000 ids/s (the generator is saturated: demand is above the ceiling);
#           also N calls in one backend, which one backend cannot saturate.
#   Part 4  INSERT of BENCH_ROWS rows, the key a column DEFAULT, into a fresh table
#           (key PRIMARY KEY, v int): `INSERT INTO t (v) SELECT g FROM generate_series(1, N) g`,
#           timed like part 1, runs interleaved, median reported, with the primary key index
#           size (pg_relation_size) after the INSERT: GENERATED ALWAYS AS IDENTITY (baseline),
#           snowflake_next(), segment_next(), gen_random_uuid() and, on PostgreSQL 18 and later,
#           the built-in uuidv7(); ratios against identity and uuidv7().
#           PostgreSQL 18 also gets uuidv7() in parts 1 and 2.
#   Part 5  keyed sequences (bench/keyed.bash): keyed_next() of a plain, a fleet-mode and a
#           registry-mode space against UPDATE ... RETURNING on a counters table and nextval(),
#           per call in one backend and with pgbench -c 4 on 10 hot keys and 1,000,000 random
#           keys, default and synchronous_commit = off, next to a statement that calls nothing
#           (the round-trip ceiling); bound raises and registry round trips; the counters table's
#           size against the keyed spaces' persisted state; and the jump after a restart, per
#           key, of a Zipf load over 1,000,000 keys (percentiles). Part 5 alone runs with a fixed
#           worker id lease (pg_idgen.lease_mode = fixed) from a registry that is the bench
#           cluster's own second database: a restart before it, and 5d's restart drops it.
#   Part 7  many sessions (bench/sweep.bash, run after part 5, reported after it): pgbench at 1, 4,
#           16 and 64 clients (bounded runs, -T SWEEP_SECONDS: 2 s with --quick, else 5; SWEEP_REPS
#           interleaved rounds: 1 with --quick, else 3) of `INSERT INTO t (v) VALUES (1)` with the
#           key a DEFAULT: snowflake_next() against identity and uuidv7() (gen_random_uuid()
#           before 18), segment_next() and keyed_next() on one hot key against nextval();
#           synchronous_commit = off; throughput and p99 latency as ratios. BENCH_SWEEP=0 leaves
#           it out.
#   Part 6  with CITUS_PG_CONFIG=<pg_config of a PostgreSQL PG with Citus installed> (the user's;
#           nothing here builds Citus): distributed INSERT on a Citus coordinator and two workers
#           (bench/citus.sh, a private copy of that installation): snowflake_next() against
#           bigserial, identity, gen_random_uuid() and uuidv7(), single-row through the
#           coordinator and through the workers, and bulk; without it, or with BENCH_CITUS=0, left
#           out (said in the report).
set -euo pipefail

# ---------------------------------------------------------------------------
# Expressions to measure: "label|SQL expression|one-time setup SQL (optional)".
# The FIRST entry is the baseline; the entry labelled REF_LABEL is the ratio's
# denominator (REF2_LABEL: a second ratio column). Add more generators here.
EXPRS=(
    "bare series|g|"
    "nextval|nextval('bench_seq')|CREATE SEQUENCE bench_seq"
    "nextval CACHE 1000|nextval('bench_seq_cache')|CREATE SEQUENCE bench_seq_cache CACHE 1000"
    "gen_random_uuid|gen_random_uuid()|"
    "snowflake_next|snowflake_next()|"
    "segment_next|segment_next('bench')|SELECT segment_create('bench')"
    "segment_next slotted|segment_next('bench_slots')|SELECT segment_create('bench_slots', slots => 64, owned => ARRAY(SELECT generate_series(0, 15)))"
    "uid_mask|uid_mask(g, 'bench')|SELECT uid_mask_key_create('bench')"
    "uid_to_text|uid_to_text(g::bigint << 32)|"
)
# the built-in uuidv7() exists from PostgreSQL 18 on (PG comes from scripts/pgenv.bash below)
INSERT_KEYS=(
    "identity|bigint GENERATED ALWAYS AS IDENTITY"
    "snowflake_next|bigint DEFAULT snowflake_next()"
    "segment_next|bigint DEFAULT segment_next('bench_ins')"
    "gen_random_uuid|uuid DEFAULT gen_random_uuid()"
)
REF_LABEL=nextval
REF2_LABEL="nextval CACHE 1000"
LAYOUT_CEILING=4096000          # ids/s of the default layout (12-bit sequence per ms)
# ---------------------------------------------------------------------------

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
export PATH="$HOME/.cargo/bin:$PATH"
. "$ROOT/scripts/pgenv.bash"          # PG=NN / PG_CONFIG: PGBIN, PSQL, ...
if [ "$PG" -ge 18 ]; then
    EXPRS+=("uuidv7|uuidv7()|")
    INSERT_KEYS+=("uuidv7|uuid DEFAULT uuidv7()")
fi
CL=$ROOT/scripts/cluster.sh
CLUSTER=bench
PORT=${BENCH_PORT:-28830}
DB=bench

QUICK=0
case ${1:-} in
    --quick) QUICK=1 ;;
    "") ;;
    *) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
if [ $QUICK = 1 ]; then N=200000; REPS=3; SECS=3; ROWS=200000; else N=2000000; REPS=5; SECS=10; ROWS=1000000; fi
N=${BENCH_CALLS:-$N}; REPS=${BENCH_REPS:-$REPS}; SECS=${BENCH_SECONDS:-$SECS}; ROWS=${BENCH_ROWS:-$ROWS}

log() { printf '[bench] %s\n' "$*" >&2; }

[ -f "$("$PG_CONFIG" --sharedir)/extension/pg_idgen.control" ] \
    || { echo "pg_idgen is not installed; run: make install" >&2; exit 1; }

cleanup() { "$CL" stop "$CLUSTER" fast >/dev/null 2>&1 || true; }
trap cleanup EXIT

"$CL" destroy "$CLUSTER" >/dev/null 2>&1 || true
"$CL" start "$CLUSTER" "$PORT" -c pg_idgen.worker_id=1
SOCK=$("$CL" sockdir "$CLUSTER")

q()  { PGDATABASE=$DB "$CL" psql "$CLUSTER" -At "$@"; }
"$CL" psql "$CLUSTER" -c "CREATE DATABASE $DB"

labels=(); exprs=()
setup_sql="SET client_min_messages = warning;
CREATE EXTENSION pg_idgen;
CREATE FUNCTION bench_ns(q text) RETURNS float8 LANGUAGE plpgsql AS \$f\$
DECLARE t0 timestamptz;
BEGIN
    t0 := clock_timestamp();
    EXECUTE q;
    RETURN extract(epoch FROM clock_timestamp() - t0) * 1e9;
END \$f\$;
CREATE TABLE bench_result (part int, label text, ord int, rep int, ns float8);"
for e in "${EXPRS[@]}"; do
    IFS='|' read -r label expr setup <<<"$e"
    labels+=("$label"); exprs+=("$expr")
    [ -z "$setup" ] || setup_sql+=$'\n'"$setup;"
done
q -c "$setup_sql" >/dev/null

# tps (pgbench, 1000 calls per transaction) -> calls/s with thousands separators
group() { sed -e ':a' -e 's/\B[0-9]\{3\}\>/,&/' -e 'ta'; }
calls_per_s() { awk -v t="$1" 'BEGIN { printf "%.0f", t * 1000 }' | group; }
NG=$(echo "$N" | group)
sqlq() { printf "%s" "${1//\'/\'\'}"; }      # quote for a '...' SQL literal
stmt() { echo "SELECT count($1) FROM generate_series(1, $2) g"; }

# ---------------------------------------------------------------- part 0
. "$ROOT/bench/floor.bash"
floor_measure

# ---------------------------------------------------------------- part 1
log "part 1: ${#EXPRS[@]} expressions x $REPS runs x $N calls, one backend"
sql="SET client_min_messages = warning;"
# warm-up: one run of each expression (caches, catalog, first-use allocation)
for i in "${!labels[@]}"; do
    sql+=$'\n'"SELECT bench_ns('$(sqlq "$(stmt "${exprs[$i]}" "$N")")');"
done
for r in $(seq 1 "$REPS"); do
    for i in "${!labels[@]}"; do
        sql+=$'\n'"INSERT INTO bench_result VALUES (1, '$(sqlq "${labels[$i]}")', $i, $r, bench_ns('$(sqlq "$(stmt "${exprs[$i]}" "$N")")'));"
    done
done
q -c "$sql" >/dev/null

# ---------------------------------------------------------------- part 2
PGB_DIR=$(mktemp -d)
trap 'cleanup; rm -rf "$PGB_DIR"' EXIT
declare -A TPS
for c in 2 4; do
    for i in "${!labels[@]}"; do
        [ "$i" -eq 0 ] && continue                       # skip the bare baseline
        f=$PGB_DIR/expr$i.sql
        echo "$(stmt "${exprs[$i]}" 1000);" > "$f"
        log "part 2: pgbench -c $c -j $c -T $SECS: ${labels[$i]}"
        out=$("$PGBIN/pgbench" -n -h "$SOCK" -p "$PORT" -U postgres -c "$c" -j "$c" -T "$SECS" -f "$f" "$DB" 2>&1) \
            || { echo "$out" >&2; exit 1; }
        tps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)$/\1/p' <<<"$out")
        [ -n "$tps" ] || { echo "$out" >&2; echo "cannot parse pgbench output" >&2; exit 1; }
        TPS[$c,$i]=$tps
    done
done

# ---------------------------------------------------------------- part 3
log "part 3: restart with pg_idgen.max_drift_ms=0, $REPS x $N snowflake_next() calls"
"$CL" restart "$CLUSTER" -c pg_idgen.worker_id=1 -c pg_idgen.max_drift_ms=0
# Part 1 ran ahead of the wall clock (borrowing up to max_drift_ms) and the
# restarted generator resumes from its durable high-water mark, so with
# max_drift_ms=0 it refuses ids until the real clock has caught up: wait for that.
for i in $(seq 1 600); do
    q -c "SELECT snowflake_next()" >/dev/null 2>&1 && break
    [ "$i" -lt 600 ] || { q -c "SELECT snowflake_next()"; exit 1; }
    sleep 0.1
done
sf=$(stmt "snowflake_next()" "$N")
sql="SELECT bench_ns('$(sqlq "$sf")');"      # warm-up run, not counted
for r in $(seq 1 "$REPS"); do
    sql+=$'\n'"INSERT INTO bench_result VALUES (3, 'snowflake_next', 0, $r, bench_ns('$(sqlq "$sf")'));"
done
q -c "$sql" >/dev/null
sfi=$(for i in "${!labels[@]}"; do [ "${exprs[$i]}" = "snowflake_next()" ] && echo "$i"; done; true)
declare -A DRIFT0
for c in 2 4; do
    log "part 3: pgbench -c $c -j $c -T $SECS: snowflake_next() with max_drift_ms=0"
    out=$("$PGBIN/pgbench" -n -h "$SOCK" -p "$PORT" -U postgres -c "$c" -j "$c" -T "$SECS" -f "$PGB_DIR/expr$sfi.sql" "$DB" 2>&1) \
        || { echo "$out" >&2; exit 1; }
    DRIFT0[$c]=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)$/\1/p' <<<"$out")
done
stats0=$(q -c "SELECT format('%s exhaustions, %s waits, lead %s ms', exhaustions, waits, lead_ms) FROM snowflake_stats() WHERE worker_id = 1")
drift=$(q -c "SELECT current_setting('pg_idgen.max_drift_ms', true)")     # part 3's, before part 4's restart

# ---------------------------------------------------------------- part 4
log "part 4: restart with the default max_drift_ms; INSERT of $ROWS rows with the key as DEFAULT, ${#INSERT_KEYS[@]} keys x $REPS runs"
"$CL" restart "$CLUSTER" -c pg_idgen.worker_id=1
for i in $(seq 1 600); do
    q -c "SELECT snowflake_next()" >/dev/null 2>&1 && break
    [ "$i" -lt 600 ] || { q -c "SELECT snowflake_next()"; exit 1; }
    sleep 0.1
done
ROWSG=$(echo "$ROWS" | group)
ikeys=(); itypes=()
for e in "${INSERT_KEYS[@]}"; do IFS='|' read -r label coldef <<<"$e"; ikeys+=("$label"); itypes+=("$coldef"); done
sql="SET client_min_messages = warning;
SELECT segment_create('bench_ins');
CREATE TABLE bench_index (label text, ord int, rep int, bytes bigint);"
# run 0 is a warm-up (not counted); every run gets a fresh table and a checkpoint first, so no
# earlier run's dirty buffers are written during a timed one
for r in $(seq 0 "$REPS"); do
    for i in "${!ikeys[@]}"; do
        sql+="
DROP TABLE IF EXISTS bench_ins_$i;
CREATE TABLE bench_ins_$i (id ${itypes[$i]} PRIMARY KEY, v int);
CHECKPOINT;"
        ins="INSERT INTO bench_ins_$i (v) SELECT g FROM generate_series(1, $ROWS) g"
        if [ "$r" -eq 0 ]; then
            sql+="
SELECT bench_ns('$(sqlq "$ins")');"
        else
            sql+="
INSERT INTO bench_result VALUES (4, '$(sqlq "${ikeys[$i]}")', $i, $r, bench_ns('$(sqlq "$ins")'));
INSERT INTO bench_index VALUES ('$(sqlq "${ikeys[$i]}")', $i, $r, pg_relation_size('bench_ins_${i}_pkey'));"
        fi
    done
done
# one statement per transaction (psql reading a script), not one -c string
q >/dev/null <<<"$sql"
for i in "${!ikeys[@]}"; do
    n=$(q -c "SELECT count(DISTINCT id) FROM bench_ins_$i")
    [ "$n" = "$ROWS" ] || { echo "part 4: ${ikeys[$i]}: $n distinct keys, expected $ROWS" >&2; exit 1; }
done
for i in "${!ikeys[@]}"; do q -c "DROP TABLE bench_ins_$i"; done
HAS_UUIDV7=0; [ "$PG" -ge 18 ] && HAS_UUIDV7=1

# ---------------------------------------------------------------- part 5
. "$ROOT/bench/keyed.bash"
keyed_measure

# ---------------------------------------------------------------- part 7
. "$ROOT/bench/sweep.bash"
[ "${BENCH_SWEEP:-1}" = 0 ] || sweep_measure

# ---------------------------------------------------------------- report
pgver=$(q -c "SELECT current_setting('server_version')")
extver=$(q -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_idgen'")
model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)

echo "### pg_idgen benchmark"
echo
echo "- machine: $(nproc) CPUs, ${model:-unknown CPU}, Linux $(uname -r)"
echo "- PostgreSQL $pgver, pg_idgen $extver (release build), fsync on, shared_buffers 128MB"
echo "- $(date -u +%Y-%m-%d) · $NG calls per run · median of $REPS runs$([ $QUICK = 1 ] && echo ' · --quick')"
floor_report
echo
echo "**Per-call cost, one backend** (\`SELECT count(<expr>) FROM generate_series(1, $N)\`)"
echo
q <<SQL
WITH med AS (
    SELECT label, ord, percentile_cont(0.5) WITHIN GROUP (ORDER BY ns) / $N AS ns_call
    FROM bench_result WHERE part = 1 GROUP BY label, ord
), base AS (SELECT ns_call FROM med WHERE ord = 0),
   ref  AS (SELECT m.ns_call - b.ns_call AS ov FROM med m, base b WHERE m.label = '$(sqlq "$REF_LABEL")'),
   ref2 AS (SELECT m.ns_call - b.ns_call AS ov FROM med m, base b WHERE m.label = '$(sqlq "$REF2_LABEL")')
SELECT '| expression | ns/call | overhead ns/call | overhead vs ${REF_LABEL} | overhead vs ${REF2_LABEL} |'
UNION ALL SELECT '|---|---:|---:|---:|---:|'
UNION ALL (
SELECT format('| %s | %s | %s | %s | %s |',
              CASE WHEN m.ord = 0 THEN 'bare generate_series (baseline)' ELSE '\`' || e.expr || '\`' END,
              to_char(m.ns_call, 'FM999990.0'),
              CASE WHEN m.ord = 0 THEN '—' ELSE to_char(m.ns_call - b.ns_call, 'FM999990.0') END,
              CASE WHEN m.ord = 0 OR r.ov IS NULL OR r.ov <= 0 THEN '—'
                   ELSE to_char((m.ns_call - b.ns_call) / r.ov, 'FM99990.00') || '×' END,
              CASE WHEN m.ord = 0 OR r2.ov IS NULL OR r2.ov <= 0 THEN '—'
                   ELSE to_char((m.ns_call - b.ns_call) / r2.ov, 'FM99990.00') || '×' END)
FROM med m CROSS JOIN base b LEFT JOIN ref r ON true LEFT JOIN ref2 r2 ON true
JOIN (VALUES $(for i in "${!exprs[@]}"; do printf "%s(%d, '%s')" "$([ "$i" -gt 0 ] && echo ,)" "$i" "$(sqlq "${exprs[$i]}")"; done)) e(ord, expr) ON e.ord = m.ord
ORDER BY m.ord);
SQL
echo
echo "**Aggregate throughput, pgbench** (\`-n -T $SECS\`, each transaction \`SELECT count(<expr>) FROM generate_series(1, 1000)\`)"
echo
echo "| expression | calls/s, -c 2 -j 2 | calls/s, -c 4 -j 4 |"
echo "|---|---:|---:|"
for i in "${!labels[@]}"; do
    [ "$i" -eq 0 ] && continue
    printf '| `%s` | %s | %s |\n' "${exprs[$i]}" \
        "$(calls_per_s "${TPS[2,$i]}")" "$(calls_per_s "${TPS[4,$i]}")"
done
echo
echo "**No running ahead of the clock** (\`pg_idgen.max_drift_ms = ${drift:-0}\`: a millisecond's 4,096 ids exhausted, calls wait for the next one)"
echo
echo "| load | ids/s | % of layout ceiling (4,096,000 ids/s) |"
echo "|---|---:|---:|"
for c in 2 4; do
    awk -v t="${DRIFT0[$c]}" -v c="$c" -v ceil="$LAYOUT_CEILING" \
        'BEGIN { printf "| pgbench -c %d -j %d | %.0f | %.1f %% |\n", c, c, t * 1000, 100 * t * 1000 / ceil }'
done
q <<SQL
SELECT format('| one backend, $NG calls (median of $REPS; cannot saturate) | %s | %s %% |',
              to_char($N / (med / 1e9), 'FM999999999990'),
              to_char(100.0 * ($N / (med / 1e9)) / $LAYOUT_CEILING, 'FM990.0'))
FROM (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ns) AS med
      FROM bench_result WHERE part = 3) s;
SQL
echo
echo "Generator statistics after part 3: $stats0."
echo
echo "**INSERT of $ROWSG rows, the key a column DEFAULT** (\`CREATE TABLE t (id <key> PRIMARY KEY, v int)\`, \`INSERT INTO t (v) SELECT g FROM generate_series(1, $ROWS) g\`, median of $REPS runs, fresh table and CHECKPOINT before each)"
echo
q <<SQL
WITH med AS (
    SELECT label, ord, percentile_cont(0.5) WITHIN GROUP (ORDER BY ns) / 1e9 AS s
    FROM bench_result WHERE part = 4 GROUP BY label, ord
), idx AS (
    SELECT label, percentile_cont(0.5) WITHIN GROUP (ORDER BY bytes) AS bytes FROM bench_index GROUP BY label
), ref AS (SELECT m.s, i.bytes FROM med m JOIN idx i USING (label) WHERE label = 'identity'),
   v7  AS (SELECT m.s, i.bytes FROM med m JOIN idx i USING (label) WHERE label = 'uuidv7')
SELECT '| key (column DEFAULT) | INSERT, s | vs identity | vs uuidv7() | primary key index, MB | index vs uuidv7() |'
UNION ALL SELECT '|---|---:|---:|---:|---:|---:|'
UNION ALL (
SELECT format('| %s | %s | %s | %s | %s | %s |',
              CASE WHEN m.label = 'identity' THEN '\`GENERATED ALWAYS AS IDENTITY\`' ELSE '\`' || e.coldef || '\`' END,
              to_char(m.s, 'FM990.00'),
              to_char(m.s / r.s, 'FM990.00') || '×',
              CASE WHEN v.s IS NULL THEN '—' ELSE to_char(m.s / v.s, 'FM990.00') || '×' END,
              to_char(i.bytes / 1048576.0, 'FM99990.0'),
              CASE WHEN v.bytes IS NULL THEN '—' ELSE to_char(i.bytes / v.bytes, 'FM990.00') || '×' END)
FROM med m JOIN idx i USING (label) CROSS JOIN ref r LEFT JOIN v7 v ON true
JOIN (VALUES $(for i in "${!ikeys[@]}"; do printf "%s(%d, '%s')" "$([ "$i" -gt 0 ] && echo ,)" "$i" "$(sqlq "${itypes[$i]#* DEFAULT }")"; done)) e(ord, coldef) ON e.ord = m.ord
ORDER BY m.ord);
SQL
if [ $HAS_UUIDV7 = 1 ]; then
    echo
    q <<SQL
WITH med AS (
    SELECT label, percentile_cont(0.5) WITHIN GROUP (ORDER BY ns) AS ns FROM bench_result WHERE part = 4 GROUP BY label
), idx AS (
    SELECT label, percentile_cont(0.5) WITHIN GROUP (ORDER BY bytes) AS bytes FROM bench_index GROUP BY label
)
SELECT format('Targets: snowflake_next() INSERT %s× identity (target ≤ 1.0×: %s), %s× uuidv7() (≤ 0.5×: %s); index %s× uuidv7()''s (≤ 0.75×: %s).',
              to_char(s.ns / i.ns, 'FM990.00'), CASE WHEN s.ns <= i.ns THEN 'met' ELSE 'missed' END,
              to_char(s.ns / v.ns, 'FM990.00'), CASE WHEN s.ns <= 0.5 * v.ns THEN 'met' ELSE 'missed' END,
              to_char(sx.bytes / vx.bytes, 'FM990.00'), CASE WHEN sx.bytes <= 0.75 * vx.bytes THEN 'met' ELSE 'missed' END)
FROM med s, med i, med v, idx sx, idx vx
WHERE s.label = 'snowflake_next' AND i.label = 'identity' AND v.label = 'uuidv7'
  AND sx.label = 'snowflake_next' AND vx.label = 'uuidv7';
SQL
fi
keyed_report
[ "${BENCH_SWEEP:-1}" = 0 ] || sweep_report
# ---------------------------------------------------------------- part 6 (PostgreSQL 16+)
# Citus: its own clusters (bench/citus.sh), on the installation the user gives
citus_major=$([ -x "${CITUS_PG_CONFIG:-}" ] && "$CITUS_PG_CONFIG" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/' || true)
if [ "${BENCH_CITUS:-1}" = 1 ] && [ -n "${CITUS_PG_CONFIG:-}" ] && [ "$citus_major" = "$PG" ]; then
    log "part 6: distributed INSERT on Citus (bench/citus.sh, $CITUS_PG_CONFIG)"
    BENCH_SECONDS=$SECS BENCH_ROWS=$((ROWS / 5)) "$ROOT/bench/citus.sh" $([ $QUICK = 1 ] && echo --quick)
elif [ "${BENCH_CITUS:-1}" = 1 ]; then
    why="no CITUS_PG_CONFIG"
    [ -z "${CITUS_PG_CONFIG:-}" ] || why="CITUS_PG_CONFIG=$CITUS_PG_CONFIG is not PostgreSQL $PG"
    log "part 6 (distributed INSERT on Citus) skipped: $why"
    printf '\n### Distributed INSERT on Citus\n\nSkipped: %s (give the pg_config of a PostgreSQL %s with Citus installed).\n' "$why" "$PG"
fi
log "done"
