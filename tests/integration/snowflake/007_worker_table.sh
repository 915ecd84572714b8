#!/usr/bin/env bash
# snowflake/007_worker_table — worker ids from the extension's catalog table (the setting, else the table, else an error):
#  A. resolution GUC -> table -> error: with pg_idgen.worker_id = -1, snowflake_next() fails with
#     55000 "not configured"; set_worker_id(42) stores the id (ids decode to 42, snowflake_worker()
#     says 'table', confirmed, this cluster's system_identifier; 'setting' rows have confirmed NULL;
#     reading the stored id (first snowflake_next() of a session, snowflake_worker()) assigns no xid; the table is registered with
#     pg_extension_config_dump); an ordinary role generates with it but gets 42501 from
#     set_worker_id / clear_worker_id / writing the table; out-of-range ids -> 22023 (1023 is the
#     largest the default layout holds); clear_worker_id() -> 55000 again; ALTER DATABASE ... SET
#     pg_idgen.worker_id overrides the table ('setting') and RESET falls back to it.
#  B. one session that already generated sees, at its next statement, each change made elsewhere:
#     set_worker_id(43) from another session, a config reload setting the GUC (ALTER SYSTEM +
#     pg_reload_conf), the reload unsetting it, clear_worker_id(), set_worker_id(42). The session
#     and the test synchronise through files (psql \!), never through sleeps.
#  C. clone safety: pg_dump -Fc of the database (stored worker id 42) restored into a second
#     cluster (another system_identifier): snowflake_next() -> 55000 "was set on another cluster"
#     with a HINT naming set_worker_id, snowflake_worker() confirmed = false; after
#     set_worker_id(42) there it works (decodes to 42); the first cluster is unaffected.
#  D. logical shards on one instance: databases s11, s12, s13 with ALTER DATABASE ... SET
#     pg_idgen.worker_id = 11, 12, 13 and s14 with set_worker_id(14); 50,000 ids each, all four
#     at once: all distinct, each decodes to its database's worker id, increasing per database.
# integration: cross-version
set -euo pipefail
. "$(dirname "$0")/../lib.bash"

C1=it_wt1
C2=it_wt2
PGB=$PGBIN      # the selected PostgreSQL's programs (scripts/pgenv.bash, via lib.bash)

# worker NAME DB: "worker_id source confirmed" from snowflake_worker() ('-' for NULL)
worker() {
    qdb "$1" "$2" "SELECT coalesce(worker_id::text, '-') || ' ' || coalesce(source, '-') || ' ' || coalesce(confirmed::text, '-') FROM snowflake_worker()"
}
# decoded NAME DB N [SETUP SQL]: "<ids decoding to each worker>" as "w:count ..." for N fresh ids
decoded() {
    local name=$1 db=$2 n=$3; shift 3
    qdb "$name" "$db" "$@" "SELECT string_agg(w || ':' || c, ' ' ORDER BY w) FROM (SELECT u.worker_id AS w, count(*) AS c FROM (SELECT snowflake_next() AS id FROM generate_series(1, $n)) s, LATERAL uid_decode(s.id) u GROUP BY 1) t"
}
sysid() { q "$1" "SELECT system_identifier FROM pg_control_system()"; }

# ======================= A: resolution, privileges, range =======================
cluster_start "$C1" 28951 -c pg_idgen.worker_id=-1
q "$C1" "CREATE DATABASE a" "CREATE ROLE app LOGIN" >/dev/null
qdb "$C1" a "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" "GRANT USAGE ON SCHEMA public TO app" >/dev/null
SYS1=$(sysid "$C1")
check "A: SHOW pg_idgen.worker_id (started with -1)" "$(qdb "$C1" a "SHOW pg_idgen.worker_id")" == "-1"
PGDATABASE=a expect_sql_error "$C1" 55000 'worker id is not configured' "SELECT snowflake_next()"
check_match "A: unset: the error has a HINT" "$LAST_ERR" 'HINT: '
check "A: unset: snowflake_worker() rows with a source" \
    "$(qdb "$C1" a "SELECT count(*) FROM snowflake_worker() WHERE source IS NOT NULL")" -eq 0
check "A: pg_idgen_worker registered with pg_extension_config_dump" \
    "$(qdb "$C1" a "SELECT count(*) FROM pg_extension e, unnest(e.extconfig) c WHERE e.extname = 'pg_idgen' AND c = 'pg_idgen_worker'::regclass")" -eq 1

qdb "$C1" a "SELECT set_worker_id(42)" >/dev/null
check "A: set_worker_id(42): snowflake_worker()" "$(worker "$C1" a)" == "42 table true"
check "A: set_worker_id(42): system_identifier is this cluster's ($SYS1)" \
    "$(qdb "$C1" a "SELECT system_identifier FROM snowflake_worker()")" == "$SYS1"
check "A: set_worker_id(42): rows in pg_idgen_worker" "$(qdb "$C1" a "SELECT count(*) FROM pg_idgen_worker")" -eq 1
log "A: pg_idgen_worker: $(qdb "$C1" a "SELECT to_jsonb(w) FROM pg_idgen_worker w")"
check "A: 1000 ids decode to worker 42" "$(decoded "$C1" a 1000)" == "42:1000"
# reading the stored id is a read: it must not assign a transaction id (xids are a finite resource,
# and a hot standby cannot assign one)
check "A: a session's first snowflake_next() / snowflake_worker() (table) assign no transaction id" \
    "$(qdb "$C1" a "BEGIN" "SELECT NULL FROM (SELECT snowflake_next()) s" "SELECT NULL FROM snowflake_worker()" "SELECT coalesce(pg_current_xact_id_if_assigned()::text, 'none')" "COMMIT" | grep -v '^$')" == none
check "A: an ordinary role generates with the stored id" "$(decoded "$C1" a 1000 "SET ROLE app")" == "42:1000"
PGDATABASE=a expect_sql_error "$C1" 42501 'permission denied for function set_worker_id' "SET ROLE app" "SELECT set_worker_id(1)"
PGDATABASE=a expect_sql_error "$C1" 42501 'permission denied for function clear_worker_id' "SET ROLE app" "SELECT clear_worker_id()"
PGDATABASE=a expect_sql_error "$C1" 42501 'permission denied for table pg_idgen_worker' "SET ROLE app" "DELETE FROM pg_idgen_worker"
for bad in 5000 1024 -1; do
    PGDATABASE=a expect_sql_error "$C1" 22023 '[Ww]orker' "SELECT set_worker_id($bad)"
done
check "A: after the refused calls: snowflake_worker()" "$(worker "$C1" a)" == "42 table true"
qdb "$C1" a "SELECT set_worker_id(1023)" >/dev/null
check "A: set_worker_id(1023) (largest for 10 worker bits): ids" "$(decoded "$C1" a 100)" == "1023:100"
qdb "$C1" a "SELECT clear_worker_id()" >/dev/null
check "A: clear_worker_id(): rows in pg_idgen_worker" "$(qdb "$C1" a "SELECT count(*) FROM pg_idgen_worker")" -eq 0
PGDATABASE=a expect_sql_error "$C1" 55000 'worker id is not configured' "SELECT snowflake_next()"
qdb "$C1" a "SELECT set_worker_id(42)" >/dev/null
q "$C1" "ALTER DATABASE a SET pg_idgen.worker_id = 9" >/dev/null
check "A: ALTER DATABASE a SET pg_idgen.worker_id = 9 overrides the table" "$(worker "$C1" a)" == "9 setting -"
check "A: ... ids decode to 9" "$(decoded "$C1" a 1000)" == "9:1000"
q "$C1" "ALTER DATABASE a RESET pg_idgen.worker_id" >/dev/null
check "A: ALTER DATABASE a RESET pg_idgen.worker_id: back to the table" "$(worker "$C1" a)" == "42 table true"
check "A: ... ids decode to 42" "$(decoded "$C1" a 1000)" == "42:1000"

# ======================= B: one session sees every change at its next statement ======
# -c pg_idgen.worker_id=-1 on the command line would outrank ALTER SYSTEM: restart with -1 in
# postgresql.auto.conf instead, so that a reload can set and unset the GUC.
q "$C1" "ALTER SYSTEM SET pg_idgen.worker_id = -1" >/dev/null
cluster_start "$C1" 28951
check "B: restarted with pg_idgen.worker_id = -1 from postgresql.auto.conf" "$(qdb "$C1" a "SHOW pg_idgen.worker_id")" == "-1"

SY=$TMP/sync; mkdir -p "$SY"
waitfile_sh() { echo "\\! i=0; while [ ! -e $SY/$1 ] && [ \$i -lt 1200 ]; do sleep 0.05; i=\$((i+1)); done"; }
waitfile() { local i; for i in $(seq 1 1200); do [ -e "$SY/$1" ] && return 0; sleep 0.05; done; ko "B: timed out waiting for $1"; return 1; }
# the psql session: 'tag worker' lines on stdout, errors (verbose) on stderr
PGDATABASE=a "$CLUSTER" psql "$C1" -At -v ON_ERROR_STOP=0 \
    -c '\set VERBOSITY verbose' \
    -c "SELECT 's1 ' || u.worker_id FROM uid_decode(snowflake_next()) u" \
    -c "\\! touch $SY/r1" -c "$(waitfile_sh g1)" \
    -c "SELECT 's2 ' || u.worker_id FROM uid_decode(snowflake_next()) u" \
    -c "\\! touch $SY/r2" -c "$(waitfile_sh g2)" \
    -c "SELECT 's3 ' || u.worker_id || ' ' || w.source FROM uid_decode(snowflake_next()) u, snowflake_worker() w" \
    -c "\\! touch $SY/r3" -c "$(waitfile_sh g3)" \
    -c "SELECT 's4 ' || u.worker_id || ' ' || w.source FROM uid_decode(snowflake_next()) u, snowflake_worker() w" \
    -c "\\! touch $SY/r4" -c "$(waitfile_sh g4)" \
    -c "SELECT 's5 ' || u.worker_id FROM uid_decode(snowflake_next()) u" \
    -c "\\! touch $SY/r5" -c "$(waitfile_sh g5)" \
    -c "SELECT 's6 ' || u.worker_id || ' ' || w.source FROM uid_decode(snowflake_next()) u, snowflake_worker() w" \
    >"$TMP/session.out" 2>"$TMP/session.err" &
sp=$!; BG_PIDS+=("$sp")
# the reload reached every backend once a new session shows the new value (the postmaster
# re-reads the file, then signals its children; a new backend inherits its settings)
await_guc() { local i; for i in $(seq 1 200); do [ "$(qdb "$C1" a "SHOW pg_idgen.worker_id")" = "$1" ] && return 0; sleep 0.05; done; ko "B: reload to $1 not seen"; }
waitfile r1; qdb "$C1" a "SELECT set_worker_id(43)" >/dev/null; touch "$SY/g1"
waitfile r2; q "$C1" "ALTER SYSTEM SET pg_idgen.worker_id = 77" "SELECT pg_reload_conf()" >/dev/null; await_guc 77; touch "$SY/g2"
waitfile r3; q "$C1" "ALTER SYSTEM SET pg_idgen.worker_id = -1" "SELECT pg_reload_conf()" >/dev/null; await_guc -1; touch "$SY/g3"
waitfile r4; qdb "$C1" a "SELECT clear_worker_id()" >/dev/null; touch "$SY/g4"
waitfile r5; qdb "$C1" a "SELECT set_worker_id(42)" >/dev/null; touch "$SY/g5"
wait "$sp" || true
line() { grep -m1 "^$1 " "$TMP/session.out" || echo "(none)"; }
check "B: the session's first ids (table: 42)" "$(line s1)" == "s1 42"
check "B: after set_worker_id(43) in another session" "$(line s2)" == "s2 43"
check "B: after ALTER SYSTEM SET pg_idgen.worker_id = 77 + pg_reload_conf()" "$(line s3)" == "s3 77 setting"
check "B: after the reload back to -1: the table again" "$(line s4)" == "s4 43 table"
check "B: after clear_worker_id() in another session: no id" "$(line s5)" == "(none)"
check_match "B: ... the statement failed with 55000 'not configured'" "$(grep -m1 'ERROR:' "$TMP/session.err" || true)" 'ERROR:  55000: .*worker id is not configured'
check "B: after set_worker_id(42) in another session" "$(line s6)" == "s6 42 table"
[ -s "$TMP/session.err" ] && log "B: session stderr: $(tr '\n' ' ' <"$TMP/session.err" | head -c 400)"

# ======================= C: clone safety through pg_dump / pg_restore ==============
cluster_start "$C2" 28952 -c pg_idgen.worker_id=-1
SYS2=$(sysid "$C2")
log "C: system_identifier: $C1 $SYS1, $C2 $SYS2"
check "C: the two clusters have different system identifiers" "$SYS1" != "$SYS2"
check "C: source database stores 42 on $C1" "$(worker "$C1" a)" == "42 table true"
dump=$TMP/a.dump
touch "$dump"; chown postgres "$dump"
runuser -u postgres -- "$PGB/pg_dump" -h "$("$CLUSTER" sockdir "$C1")" -p "$("$CLUSTER" port "$C1")" -U postgres -Fc -f "$dump" a
q "$C2" "CREATE DATABASE a" "CREATE ROLE app LOGIN" >/dev/null   # roles are cluster-wide: not in the dump
runuser -u postgres -- "$PGB/pg_restore" -h "$("$CLUSTER" sockdir "$C2")" -p "$("$CLUSTER" port "$C2")" -U postgres -d a "$dump"
check "C: restored pg_idgen_worker rows" "$(qdb "$C2" a "SELECT count(*) FROM pg_idgen_worker")" -eq 1
PGDATABASE=a expect_sql_error "$C2" 55000 'was set on another cluster' "SELECT snowflake_next()"
check_match "C: the error's HINT names set_worker_id()" "$(grep -m1 'HINT:' <<<"$LAST_ERR" || true)" 'HINT: .*set_worker_id'
check "C: snowflake_worker() on the clone" "$(worker "$C2" a)" == "42 table false"
check "C: ... system_identifier is the one the row was made on ($C1)" "$(qdb "$C2" a "SELECT system_identifier FROM snowflake_worker()")" == "$SYS1"
log "C: snowflake_worker() on the clone: $(qdb "$C2" a "SELECT row(w.*) FROM snowflake_worker() w")"
PGDATABASE=a expect_sql_error "$C2" 55000 'was set on another cluster' "SET ROLE app" "SELECT snowflake_next()"
PGDATABASE=a expect_sql_error "$C2" 55000 'was set on another cluster' "SELECT snowflake_next()"
qdb "$C2" a "SELECT set_worker_id(42)" >/dev/null
check "C: after set_worker_id(42) on $C2: snowflake_worker()" "$(worker "$C2" a)" == "42 table true"
check "C: ... system_identifier is $C2's" "$(qdb "$C2" a "SELECT system_identifier FROM snowflake_worker()")" == "$SYS2"
check "C: ... 1000 ids decode to 42" "$(decoded "$C2" a 1000)" == "42:1000"
check "C: $C1 still generates (42, confirmed)" "$(worker "$C1" a) $(decoded "$C1" a 1000)" == "42 table true 42:1000"
"$CLUSTER" stop "$C2" 2>/dev/null

# ======================= D: logical shards on one instance ==========================
N=50000
for w in 11 12 13 14; do
    q "$C1" "CREATE DATABASE s$w" >/dev/null
    [ $w -le 13 ] && q "$C1" "ALTER DATABASE s$w SET pg_idgen.worker_id = $w" >/dev/null
    qdb "$C1" "s$w" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
    [ $w -eq 14 ] && qdb "$C1" s14 "SELECT set_worker_id(14)" >/dev/null
done
for w in 11 12 13; do check "D: s$w: snowflake_worker()" "$(worker "$C1" "s$w")" == "$w setting -"; done
check "D: s14: snowflake_worker()" "$(worker "$C1" s14)" == "14 table true"
s=$(date +%s.%N)
pids=()
for w in 11 12 13 14; do
    PGDATABASE=s$w "$CLUSTER" psql "$C1" -c \
        "COPY (SELECT snowflake_next(), 's$w', $w, g FROM generate_series(1, $N) g) TO STDOUT" >"$TMP/ids.s$w" &
    pids+=($!); BG_PIDS+=($!)
done
rc=0; for p in "${pids[@]}"; do wait "$p" || rc=1; done
check "D: the four clients succeeded" "$rc" -eq 0
log "D: 4 databases x $N ids at once: $(awk -v a="$s" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}') s"
qdb "$C1" a "CREATE TABLE shard_ids (id bigint, db text, w int, g int)" >/dev/null
cat "$TMP"/ids.s* | qdb "$C1" a "COPY shard_ids FROM STDIN" >/dev/null
read -r cnt dist <<<"$(qdb "$C1" a "SELECT count(*), count(DISTINCT id) FROM shard_ids" | tr '|' ' ')"
check "D: ids returned" "$cnt" -eq $((4 * N))
check "D: distinct ids over the four databases" "$dist" -eq $((4 * N))
check "D: per database: ids decoding to its worker id" \
    "$(qdb "$C1" a "SELECT string_agg(db || ':' || n || '/' || c, ' ' ORDER BY db) FROM (SELECT db, count(*) FILTER (WHERE u.worker_id = s.w) n, count(*) c FROM shard_ids s, LATERAL uid_decode(s.id) u GROUP BY db) t")" \
    == "s11:$N/$N s12:$N/$N s13:$N/$N s14:$N/$N"
bad=$(qdb "$C1" a "SELECT count(*) FROM (SELECT id, lag(id) OVER (PARTITION BY db ORDER BY g) AS prev FROM shard_ids) s WHERE prev IS NOT NULL AND NOT id > prev")
check "D: ids not increasing within a database's call order" "$bad" -eq 0
qdb "$C1" a "SELECT 'D: stats: worker ' || worker_id || ' ids_issued=' || ids_issued || ' exhaustions=' || exhaustions || ' waits=' || waits FROM snowflake_stats() ORDER BY worker_id" | sed "s|^|[$TEST_NAME] |"

finish
