# bench/keyed.bash — part 5 of bench/run.sh (sourced by it, same cluster, same run): keyed
# sequences against what PostgreSQL users do instead, a counters table
# (`UPDATE counters SET n = n + 1 WHERE key = $1 RETURNING n`), and against nextval().
#   5a  one backend, calls in one statement: a PL/pgSQL loop of UPDATE ... RETURNING (one
#       statement per call is all a counters table allows) on 10 hot keys and on distinct keys,
#       vs the same loop of keyed_next, vs `SELECT count(keyed_next('bench_k', k)) FROM
#       generate_series(1, N)` and nextval the same way. Median of REPS runs.
#   5b  pgbench -c 4 -j 4 -T SECS, one call per transaction: UPDATE ... RETURNING, keyed_next,
#       nextval and segment_next (the round-trip ceiling), on 10 hot keys and on 1,000,000
#       uniformly random keys, with the default settings and with synchronous_commit = off; and
#       `SELECT :k + 1` (a statement that calls nothing): the ceiling, what a function of zero cost
#       would reach through the same client round trips, so the ratio it gives over the UPDATE is
#       the most any function can show on this machine.
#   5c  size: the counters table (1,000,000 rows) before and after 5b's increments, vs the keyed
#       space's persisted state (its row, its 1,024 bound rows and its backing sequence).
#   5d  the jump after a restart: N calls of keyed_next on keys drawn from a Zipf law (s = 1) over
#       1,000,000 keys (floor(exp(u * ln 10^6)), u uniform), the last value of each key recorded,
#       then a restart, then each key's next value: the values skipped per key, in percentiles,
#       next to the least a space-wide bound (0.4.0: every key continued above the space's
#       busiest key, its bound rounded up to the step) would have skipped.
#   Three modes of keyed spaces side by side in 5a and 5b, all step 10,000 and sections of 1,000:
#   'bench_k' plain (per-section bounds), 'bench_f' fleet mode (nodes => 3, node_index => 1: values
#   counter * 3 + 1) and 'bench_r' registry mode (registry => true: each bound raise also raises
#   the bucket's mark in the lease registry, one registry round trip). For the registry mode part 5
#   restarts the cluster with a fixed lease of worker id 1 (pg_idgen.lease_mode = fixed) from a
#   registry that is the bench cluster's own second database, bench_registry (role bench_node, over
#   the unix socket); parts 1-4 run before, without it, and 5d's restart drops it again. Every row
#   of 5a and 5b runs with the lease worker up. The registry's function pg_idgen_keyed_marks is
#   counted there (track_functions = pl on that database only): its calls are the round trips.
# Uses run.sh's q, log, group, sqlq, CL, CLUSTER, PGBIN, PGB_DIR, SOCK, PORT, DB, N, REPS, SECS.

KEYED_REGDB=bench_registry
KEYED_REGROLE=bench_node

# keyed_registry_setup: the registry database and its node role in the bench cluster, then a
# restart with the lease worker (fixed worker id 1) using it; waits until the lease is held.
keyed_registry_setup() {
    log "part 5: registry database $KEYED_REGDB, restart with pg_idgen.lease_mode = fixed"
    "$CL" psql "$CLUSTER" -q >/dev/null <<SQL
SET client_min_messages = warning;
CREATE DATABASE $KEYED_REGDB;
CREATE ROLE $KEYED_REGROLE LOGIN;
ALTER DATABASE $KEYED_REGDB SET track_functions = 'pl';
SQL
    PGDATABASE=$KEYED_REGDB "$CL" psql "$CLUSTER" -q >/dev/null <<SQL
SET client_min_messages = warning;
CREATE EXTENSION pg_idgen;
GRANT EXECUTE ON FUNCTION
  pg_idgen_lease_claim(int, int, int, text, text, text, int, bigint, float8, bool, float8, bigint, int, bigint, bigint),
  pg_idgen_lease_release(int, bigint, bigint), pg_idgen_slot_rows(int, bigint), pg_idgen_slot_take(text, int, int, bigint),
  pg_idgen_slot_raise(text, int, int, bigint, bigint), pg_idgen_slot_release(text, int, int, bigint, bigint),
  pg_idgen_keyed_marks(text, oid, text, int[], bigint[]) TO $KEYED_REGROLE;
INSERT INTO pg_idgen_registry_nodes (role_name, first_worker, last_worker) VALUES ('$KEYED_REGROLE', 1, 1);
SQL
    "$CL" restart "$CLUSTER" "${KEYED_LEASE_OPTS[@]}" >/dev/null
    local i st=
    for i in $(seq 1 300); do
        st=$(q -c "SELECT state FROM snowflake_lease()" 2>/dev/null || true)
        [ "$st" = held ] && return 0
        sleep 0.1
    done
    echo "part 5: the lease worker did not get its lease from $KEYED_REGDB (state: ${st:-none})" >&2
    q -c "SELECT * FROM snowflake_lease()" >&2 || true
    exit 1
}

keyed_measure() {
    KEYED_LEASE_OPTS=(-c pg_idgen.worker_id=1 -c pg_idgen.lease_mode=fixed -c pg_idgen.node_name=bench
                      -c "pg_idgen.registry=host=$SOCK port=$PORT user=$KEYED_REGROLE dbname=$KEYED_REGDB connect_timeout=3")
    keyed_registry_setup
    log "part 5: keyed sequences (plain, fleet, registry) vs UPDATE ... RETURNING on a counters table vs nextval"
    q >/dev/null <<SQL
SET client_min_messages = warning;
SELECT keyed_create('bench_k', step => 10000, section_size => 1000);
SELECT keyed_create('bench_f', step => 10000, section_size => 1000, nodes => 3, node_index => 1);
SELECT keyed_create('bench_r', step => 10000, section_size => 1000, registry => true);
CREATE TABLE counters (key bigint PRIMARY KEY, n bigint NOT NULL DEFAULT 0);
INSERT INTO counters (key) SELECT g FROM generate_series(1, 1000000) g;
VACUUM ANALYZE counters;
CREATE FUNCTION bench_update_loop(calls int, keys int) RETURNS bigint LANGUAGE plpgsql AS \$f\$
DECLARE v bigint; s bigint := 0;
BEGIN
    FOR i IN 1 .. calls LOOP
        UPDATE counters SET n = n + 1 WHERE key = (i::bigint * 7919) % keys + 1 RETURNING n INTO v;
        s := s + v;
    END LOOP;
    RETURN s;
END \$f\$;
CREATE FUNCTION bench_keyed_loop(calls int) RETURNS bigint LANGUAGE plpgsql AS \$f\$
DECLARE v bigint; s bigint := 0;
BEGIN
    FOR i IN 1 .. calls LOOP
        v := keyed_next('bench_k', i % 10 + 1);
        s := s + v;
    END LOOP;
    RETURN s;
END \$f\$;
SQL
    KEYED_SIZE0=$(q -c "SELECT pg_total_relation_size('counters')")
    # 5a: the UPDATE loop is slow (a heap update and a dead tuple per call): N / 10 calls for it
    # on distinct keys and for the keyed loop, N for the statement forms; per-call figures are
    # comparable. On 10 hot keys in one transaction every UPDATE walks the chain of versions the
    # earlier ones left (none can be pruned before the transaction ends): 2,000 calls only.
    local nu=$((N / 10)) nh=2000 sql r
    KEYED_NU=$nu; KEYED_NH=$nh
    sql="SET client_min_messages = warning;"
    for r in 0 $(seq 1 "$REPS"); do
        for e in "1|update loop hot|SELECT bench_update_loop($nh, 10)|$nh" \
                 "6|update loop distinct|SELECT bench_update_loop($nu, 1000000)|$nu" \
                 "2|keyed loop|SELECT bench_keyed_loop($nu)|$nu" \
                 "3|keyed statement|SELECT count(keyed_next('bench_k', g % 10 + 1)) FROM generate_series(1, $N) g|$N" \
                 "7|fleet statement|SELECT count(keyed_next('bench_f', g % 10 + 1)) FROM generate_series(1, $N) g|$N" \
                 "8|registry statement|SELECT count(keyed_next('bench_r', g % 10 + 1)) FROM generate_series(1, $N) g|$N" \
                 "4|nextval statement|SELECT count(nextval('bench_seq')) FROM generate_series(1, $N) g|$N" \
                 "5|bare statement|SELECT count(g) FROM generate_series(1, $N) g|$N"; do
            IFS='|' read -r ord label stmt calls <<<"$e"
            if [ "$r" -eq 0 ]; then
                sql+=$'\n'"SELECT bench_ns('$(sqlq "$stmt")');"
            else
                sql+=$'\n'"INSERT INTO bench_result VALUES (5, '$label', $ord, $r, bench_ns('$(sqlq "$stmt")') / $calls);"
            fi
        done
    done
    q -c "$sql" >/dev/null
    KEYED_R_RAISES_A=$(q -c "SELECT raises FROM keyed_status WHERE space = 'bench_r'")
    # 5b
    local f k keys sc
    declare -gA KTPS
    for keys in 10 1000000; do
        echo "\\set k random(1, $keys)" >"$PGB_DIR/k_update_$keys.sql"
        echo "UPDATE counters SET n = n + 1 WHERE key = :k RETURNING n;" >>"$PGB_DIR/k_update_$keys.sql"
        echo "\\set k random(1, $keys)" >"$PGB_DIR/k_keyed_$keys.sql"
        echo "SELECT keyed_next('bench_k', :k);" >>"$PGB_DIR/k_keyed_$keys.sql"
        printf '%s\n' "\\set k random(1, $keys)" "SELECT keyed_next('bench_f', :k);" >"$PGB_DIR/k_fleet_$keys.sql"
        printf '%s\n' "\\set k random(1, $keys)" "SELECT keyed_next('bench_r', :k);" >"$PGB_DIR/k_reg_$keys.sql"
    done
    echo "SELECT nextval('bench_seq');" >"$PGB_DIR/k_nextval.sql"
    echo "SELECT segment_next('bench');" >"$PGB_DIR/k_segment.sql"
    printf '%s\n' "\\set k random(1, 10)" "SELECT :k::bigint + 1;" >"$PGB_DIR/k_const.sql"
    for sc in on off; do
        for f in k_update_10 k_keyed_10 k_fleet_10 k_reg_10 k_update_1000000 k_keyed_1000000 k_fleet_1000000 \
                 k_reg_1000000 k_nextval k_segment k_const; do
            log "part 5: pgbench -c 4 -j 4 -T $SECS, synchronous_commit = $sc: $f"
            out=$(PGOPTIONS="-c synchronous_commit=$sc" "$PGBIN/pgbench" -n -h "$SOCK" -p "$PORT" -U postgres \
                  -c 4 -j 4 -T "$SECS" -f "$PGB_DIR/$f.sql" "$DB" 2>&1) || { echo "$out" >&2; exit 1; }
            KTPS[$sc,$f]=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)$/\1/p' <<<"$out")
            [ -n "${KTPS[$sc,$f]}" ] || { echo "$out" >&2; exit 1; }
        done
    done
    # 5c
    KEYED_INCREMENTS=$(q -c "SELECT sum(n) FROM counters")
    KEYED_SIZE1=$(q -c "SELECT pg_total_relation_size('counters')")
    KEYED_STATE=$(q -c "SELECT pg_total_relation_size('pg_idgen_keyed_spaces') + pg_total_relation_size('pg_idgen_keyed_bounds') + (SELECT sum(pg_relation_size(seq)) FROM pg_idgen_keyed_spaces)")
    KEYED_STATE_ROW=$(q -c "SELECT pg_column_size(s.*) FROM pg_idgen_keyed_spaces s WHERE space = 'bench_k'")
    KEYED_RAISES=$(q -c "SELECT raises FROM keyed_status WHERE space = 'bench_k'")
    KEYED_F_RAISES=$(q -c "SELECT raises FROM keyed_status WHERE space = 'bench_f'")
    KEYED_R_RAISES=$(q -c "SELECT raises FROM keyed_status WHERE space = 'bench_r'")
    KEYED_R_MARKS=$(PGDATABASE=$KEYED_REGDB "$CL" psql "$CLUSTER" -At -c "SELECT count(*) FROM pg_idgen_keyed_marks WHERE space = 'bench_r'")
    # 5d
    log "part 5: the jump after a restart, $N calls on a Zipf law over 1,000,000 keys"
    q >/dev/null <<SQL
SET client_min_messages = warning;
SELECT keyed_create('bench_z', step => 1000, section_size => 1000);
CREATE TABLE bench_zipf AS
SELECT k, max(v) AS last FROM (
    SELECT k, keyed_next('bench_z', k) AS v
    FROM (SELECT least(1000000, floor(exp(random() * ln(1000000))))::bigint AS k
          FROM generate_series(1, $N)) s
) t GROUP BY k;
SQL
    # back to the settings of parts 1-4 (no lease worker)
    "$CL" restart "$CLUSTER" -c pg_idgen.worker_id=1 >/dev/null
    for _ in $(seq 1 100); do q -c "SELECT 1" >/dev/null 2>&1 && break; sleep 0.1; done
    # the registry's calls of pg_idgen_keyed_marks during part 5 (its statistics are flushed at
    # the latest when the lease worker's session ends, at the restart above): every claim and
    # every batch of raises of 'bench_r' is one call, one round trip
    KEYED_R_CALLS=$(PGDATABASE=$KEYED_REGDB "$CL" psql "$CLUSTER" -At -c "SELECT coalesce(sum(calls), 0) FROM pg_stat_user_functions WHERE funcname = 'pg_idgen_keyed_marks'")
    q >/dev/null <<SQL
CREATE TABLE bench_zjump AS
SELECT k, keyed_next('bench_z', k) - last - 1 AS skipped,
       (SELECT (max(last) + 999) / 1000 * 1000 FROM bench_zipf) - last AS skipped_space_bound
FROM bench_zipf;
SQL
}

keyed_report() {
    echo
    echo "**Keyed sequences** (\`keyed_next(space, key)\`, step 10,000, sections of 1,000; three spaces: plain \`bench_k\`, fleet mode \`bench_f\` (\`nodes => 3, node_index => 1\`) and registry mode \`bench_r\` (\`registry => true\`, the registry the bench cluster's own database $KEYED_REGDB, lease_mode = fixed during part 5)) against a counters table (\`UPDATE counters SET n = n + 1 WHERE key = \$1 RETURNING n\`, 1,000,000 rows) and \`nextval()\`"
    echo
    echo "Per call, one backend, in one statement (median of $REPS runs; the UPDATE loop on 10 hot keys makes $(echo "$KEYED_NH" | group) calls, the other loops $(echo "$KEYED_NU" | group), the SELECTs $NG; keyed_next on 10 hot keys):"
    echo
    q <<SQL
WITH med AS (SELECT label, ord, percentile_cont(0.5) WITHIN GROUP (ORDER BY ns) AS ns
             FROM bench_result WHERE part = 5 GROUP BY label, ord),
     u AS (SELECT ns FROM med WHERE ord = 6)
SELECT '| form | ns/call | UPDATE loop (distinct keys) / this |'
UNION ALL SELECT '|---|---:|---:|'
UNION ALL (SELECT format('| %s | %s | %s |',
    CASE ord WHEN 1 THEN 'PL/pgSQL loop of \`UPDATE … RETURNING\`, 10 hot keys in one transaction'
             WHEN 6 THEN 'PL/pgSQL loop of \`UPDATE … RETURNING\`, distinct keys of 1,000,000'
             WHEN 2 THEN 'PL/pgSQL loop of \`keyed_next\`'
             WHEN 3 THEN '\`SELECT count(keyed_next(''bench_k'', g % 10 + 1)) FROM generate_series(1, N)\` (plain)'
             WHEN 7 THEN '\`SELECT count(keyed_next(''bench_f'', g % 10 + 1)) FROM generate_series(1, N)\` (fleet mode)'
             WHEN 8 THEN '\`SELECT count(keyed_next(''bench_r'', g % 10 + 1)) FROM generate_series(1, N)\` (registry mode)'
             WHEN 4 THEN '\`SELECT count(nextval(''bench_seq'')) FROM generate_series(1, N)\`'
             ELSE 'bare \`generate_series\` (baseline)' END,
    to_char(m.ns, 'FM9999990.0'), to_char(u.ns / m.ns, 'FM99990.0') || '×')
  FROM med m, u ORDER BY CASE m.ord WHEN 6 THEN 1.5 WHEN 7 THEN 3.1 WHEN 8 THEN 3.2 ELSE m.ord END);
SQL
    echo
    echo "Throughput, pgbench \`-c 4 -j 4 -T $SECS\`, one call per transaction (tps):"
    echo
    echo "| statement | 10 hot keys, default | 10 hot keys, sync commit off | 1M random keys, default | 1M random keys, sync commit off |"
    echo "|---|---:|---:|---:|---:|"
    local t r m
    t() { printf "%.0f" "${KTPS[$1,$2]}" | group; }
    # r NUM_PREFIX DEN_PREFIX: the four ratios NUM / DEN, "x.y×"
    r() {
        awk -v a="${KTPS[on,${1}_10]}" -v b="${KTPS[on,${2}_10]}" -v c="${KTPS[off,${1}_10]}" -v d="${KTPS[off,${2}_10]}" \
            -v e="${KTPS[on,${1}_1000000]}" -v f="${KTPS[on,${2}_1000000]}" -v g="${KTPS[off,${1}_1000000]}" -v h="${KTPS[off,${2}_1000000]}" \
            'BEGIN { printf "%.1f× | %.1f× | %.1f× | %.1f×", a / b, c / d, e / f, g / h }'
    }
    echo "| \`UPDATE … RETURNING\` | $(t on k_update_10) | $(t off k_update_10) | $(t on k_update_1000000) | $(t off k_update_1000000) |"
    for m in "k_keyed|plain" "k_fleet|fleet mode" "k_reg|registry mode"; do
        echo "| \`keyed_next\`, ${m#*|} | $(t on ${m%|*}_10) | $(t off ${m%|*}_10) | $(t on ${m%|*}_1000000) | $(t off ${m%|*}_1000000) |"
    done
    for m in "k_keyed|plain" "k_fleet|fleet mode" "k_reg|registry mode"; do
        echo "| keyed_next ${m#*|} / UPDATE | $(r ${m%|*} k_update) |"
    done
    echo "| \`nextval('bench_seq')\` (no key) | $(t on k_nextval) | $(t off k_nextval) | | |"
    echo "| \`segment_next('bench')\` | $(t on k_segment) | $(t off k_segment) | | |"
    echo "| \`SELECT :k + 1\` (calls nothing: the round-trip ceiling) | $(t on k_const) | $(t off k_const) | | |"
    awk -v a="${KTPS[on,k_const]}" -v b="${KTPS[on,k_update_10]}" -v c="${KTPS[off,k_const]}" -v d="${KTPS[off,k_update_10]}" \
        -v e="${KTPS[on,k_update_1000000]}" -v f="${KTPS[off,k_update_1000000]}" \
        'BEGIN { printf "| ceiling / UPDATE (the most any function can show here) | %.1f× | %.1f× | %.1f× | %.1f× |\n", a / b, c / d, a / e, c / f }'
    awk -v a="${KTPS[on,k_keyed_10]}" -v b="${KTPS[on,k_const]}" -v c="${KTPS[off,k_keyed_10]}" -v d="${KTPS[off,k_const]}" \
        -v e="${KTPS[on,k_keyed_1000000]}" -v f="${KTPS[off,k_keyed_1000000]}" \
        'BEGIN { printf "| keyed_next plain / ceiling | %.0f %% | %.0f %% | %.0f %% | %.0f %% |\n", 100 * a / b, 100 * c / d, 100 * e / b, 100 * f / d }'
    echo
    echo "Size: the counters table (1,000,000 rows, with its index) was $(awk -v b="$KEYED_SIZE0" 'BEGIN { printf "%.1f", b / 1048576 }') MB; after $(echo "$KEYED_INCREMENTS" | group) increments (autovacuum on) it is $(awk -v b="$KEYED_SIZE1" 'BEGIN { printf "%.1f", b / 1048576 }') MB. Each keyed space's persisted state is one row ($KEYED_STATE_ROW bytes), 1,024 bound rows (one per bucket of sections) and its backing sequence: $(echo "$KEYED_STATE" | group) bytes for the three spaces with the spaces and bounds tables and their indexes, whatever the number of keys or calls. Bound raises in part 5: plain $KEYED_RAISES, fleet mode $KEYED_F_RAISES, registry mode $KEYED_R_RAISES ($KEYED_R_RAISES_A of them in the one-statement runs); the registry's \`pg_idgen_keyed_marks\` was called $KEYED_R_CALLS times (registry round trips: the raises, batched per space when several backends raise at once, and the claim of the space's entry at its first use), and holds $KEYED_R_MARKS marks of \`bench_r\` (one per bucket used)."
    echo
    # targets: per mode
    for m in "k_keyed|plain|3" "k_fleet|fleet mode|7" "k_reg|registry mode|8"; do
        IFS='|' read -r f lbl ord <<<"$m"
        awk -v a="${KTPS[on,${f}_10]}" -v b="${KTPS[on,k_update_10]}" -v c="${KTPS[off,${f}_10]}" -v d="${KTPS[off,k_update_10]}" \
            -v e="${KTPS[on,${f}_1000000]}" -v f="${KTPS[on,k_update_1000000]}" -v g="${KTPS[off,k_const]}" -v l="$lbl" \
            'BEGIN { printf "Targets, %s: one call per transaction on 10 hot keys, %.1f× the UPDATE with default settings (≥ 10×: %s), %.1f× with synchronous_commit = off (≥ 2.5×: %s; a statement that calls nothing makes %.1f× in the same run, so no function can do more here); on 1,000,000 random keys %.1f× (≥ 10×: %s).", l, a / b, (a >= 10 * b ? "met" : "missed"), c / d, (c >= 2.5 * d ? "met" : "missed"), g / d, e / f, (e >= 10 * f ? "met" : "missed") }'
        q <<SQL
WITH med AS (SELECT ord, percentile_cont(0.5) WITHIN GROUP (ORDER BY ns) AS ns FROM bench_result WHERE part = 5 GROUP BY ord)
SELECT format(' Per call in one statement, %s× faster than the UPDATE on distinct keys (its cheapest case; ≥ 15×: %s), %s× on 10 hot keys.',
              to_char(u.ns / k.ns, 'FM99990.0'), CASE WHEN u.ns >= 15 * k.ns THEN 'met' ELSE 'missed' END,
              to_char(h.ns / k.ns, 'FM99990.0'))
FROM med u, med k, med h WHERE u.ord = 6 AND k.ord = $ord AND h.ord = 1;
SQL
        echo
    done
    echo
    echo "**The jump after a restart** ($NG calls of \`keyed_next\` on a Zipf law, s = 1, over 1,000,000 keys; step 1,000, sections of 1,000 keys; then a restart and each key's next value): values skipped per key"
    echo
    q <<SQL
WITH p AS (SELECT unnest(ARRAY[0.5, 0.9, 0.99, 0.999, 1.0]) AS f)
SELECT '| percentile of keys | per section (skipped) | one bound per space (0.4.0: at least) |'
UNION ALL SELECT '|---|---:|---:|'
UNION ALL (SELECT format('| %s | %s | %s |',
    CASE WHEN f = 1 THEN 'max' ELSE 'p' || rtrim(rtrim((f * 100)::text, '0'), '.') END,
    (SELECT to_char(percentile_disc(f) WITHIN GROUP (ORDER BY skipped), 'FM999,999,999,990') FROM bench_zjump),
    (SELECT to_char(percentile_disc(f) WITHIN GROUP (ORDER BY skipped_space_bound), 'FM999,999,999,990') FROM bench_zjump))
  FROM p ORDER BY f);
SQL
    q <<SQL
SELECT format('%s keys; a key skips at most its bucket''s (its section''s, for up to 1,024 sections) busiest value plus a step above its own last value: %s keys skipped fewer than 1,000 values, %s with one bound per space.',
              to_char(count(*), 'FM999,999,990'),
              to_char(count(*) FILTER (WHERE skipped < 1000), 'FM999,999,990'),
              to_char(count(*) FILTER (WHERE skipped_space_bound < 1000), 'FM999,999,990'))
FROM bench_zjump;
SQL
}
