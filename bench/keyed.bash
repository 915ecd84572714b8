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
# Uses run.sh's q, log, group, PGBIN, SOCK, PORT, DB, N, REPS, SECS.

keyed_measure() {
    log "part 5: keyed sequences vs UPDATE ... RETURNING on a counters table vs nextval"
    q >/dev/null <<SQL
SET client_min_messages = warning;
SELECT keyed_create('bench_k', step => 10000, section_size => 1000);
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
    # 5b
    local f k keys sc
    declare -gA KTPS
    for keys in 10 1000000; do
        echo "\\set k random(1, $keys)" >"$PGB_DIR/k_update_$keys.sql"
        echo "UPDATE counters SET n = n + 1 WHERE key = :k RETURNING n;" >>"$PGB_DIR/k_update_$keys.sql"
        echo "\\set k random(1, $keys)" >"$PGB_DIR/k_keyed_$keys.sql"
        echo "SELECT keyed_next('bench_k', :k);" >>"$PGB_DIR/k_keyed_$keys.sql"
    done
    echo "SELECT nextval('bench_seq');" >"$PGB_DIR/k_nextval.sql"
    echo "SELECT segment_next('bench');" >"$PGB_DIR/k_segment.sql"
    printf '%s\n' "\\set k random(1, 10)" "SELECT :k::bigint + 1;" >"$PGB_DIR/k_const.sql"
    for sc in on off; do
        for f in k_update_10 k_keyed_10 k_update_1000000 k_keyed_1000000 k_nextval k_segment k_const; do
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
    "$CL" restart "$CLUSTER" -c pg_idgen.worker_id=1 >/dev/null
    for _ in $(seq 1 100); do q -c "SELECT 1" >/dev/null 2>&1 && break; sleep 0.1; done
    q >/dev/null <<SQL
CREATE TABLE bench_zjump AS
SELECT k, keyed_next('bench_z', k) - last - 1 AS skipped,
       (SELECT (max(last) + 999) / 1000 * 1000 FROM bench_zipf) - last AS skipped_space_bound
FROM bench_zipf;
SQL
}

keyed_report() {
    echo
    echo "**Keyed sequences** (\`keyed_next(space, key)\`, step 10,000, section 1,000) against a counters table (\`UPDATE counters SET n = n + 1 WHERE key = \$1 RETURNING n\`, 1,000,000 rows) and \`nextval()\`"
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
             WHEN 3 THEN '\`SELECT count(keyed_next(''bench_k'', g % 10 + 1)) FROM generate_series(1, N)\`'
             WHEN 4 THEN '\`SELECT count(nextval(''bench_seq'')) FROM generate_series(1, N)\`'
             ELSE 'bare \`generate_series\` (baseline)' END,
    to_char(m.ns, 'FM9999990.0'), to_char(u.ns / m.ns, 'FM99990.0') || '×')
  FROM med m, u ORDER BY CASE m.ord WHEN 6 THEN 1.5 ELSE m.ord END);
SQL
    echo
    echo "Throughput, pgbench \`-c 4 -j 4 -T $SECS\`, one call per transaction (tps):"
    echo
    echo "| statement | 10 hot keys, default | 10 hot keys, sync commit off | 1M random keys, default | 1M random keys, sync commit off |"
    echo "|---|---:|---:|---:|---:|"
    local t
    t() { printf "%.0f" "${KTPS[$1,$2]}" | group; }
    echo "| \`UPDATE … RETURNING\` | $(t on k_update_10) | $(t off k_update_10) | $(t on k_update_1000000) | $(t off k_update_1000000) |"
    echo "| \`keyed_next\` | $(t on k_keyed_10) | $(t off k_keyed_10) | $(t on k_keyed_1000000) | $(t off k_keyed_1000000) |"
    awk -v a="${KTPS[on,k_keyed_10]}" -v b="${KTPS[on,k_update_10]}" -v c="${KTPS[off,k_keyed_10]}" -v d="${KTPS[off,k_update_10]}" \
        -v e="${KTPS[on,k_keyed_1000000]}" -v f="${KTPS[on,k_update_1000000]}" -v g="${KTPS[off,k_keyed_1000000]}" -v h="${KTPS[off,k_update_1000000]}" \
        'BEGIN { printf "| keyed_next / UPDATE | %.1f× | %.1f× | %.1f× | %.1f× |\n", a / b, c / d, e / f, g / h }'
    echo "| \`nextval('bench_seq')\` (no key) | $(t on k_nextval) | $(t off k_nextval) | | |"
    echo "| \`segment_next('bench')\` | $(t on k_segment) | $(t off k_segment) | | |"
    echo "| \`SELECT :k + 1\` (calls nothing: the round-trip ceiling) | $(t on k_const) | $(t off k_const) | | |"
    awk -v a="${KTPS[on,k_const]}" -v b="${KTPS[on,k_update_10]}" -v c="${KTPS[off,k_const]}" -v d="${KTPS[off,k_update_10]}" \
        -v e="${KTPS[on,k_update_1000000]}" -v f="${KTPS[off,k_update_1000000]}" \
        'BEGIN { printf "| ceiling / UPDATE (the most any function can show here) | %.1f× | %.1f× | %.1f× | %.1f× |\n", a / b, c / d, a / e, c / f }'
    echo
    echo "Size: the counters table (1,000,000 rows, with its index) was $(awk -v b="$KEYED_SIZE0" 'BEGIN { printf "%.1f", b / 1048576 }') MB; after $(echo "$KEYED_INCREMENTS" | group) increments (autovacuum on) it is $(awk -v b="$KEYED_SIZE1" 'BEGIN { printf "%.1f", b / 1048576 }') MB. The keyed space's persisted state is one row ($KEYED_STATE_ROW bytes), 1,024 bound rows (one per bucket of sections) and its backing sequence: $(echo "$KEYED_STATE" | group) bytes with the spaces and bounds tables and their indexes, whatever the number of keys or calls; its bounds were raised $KEYED_RAISES times."
    echo
    awk -v a="${KTPS[on,k_keyed_10]}" -v b="${KTPS[on,k_update_10]}" -v c="${KTPS[off,k_keyed_10]}" -v d="${KTPS[off,k_update_10]}" \
        -v e="${KTPS[on,k_keyed_1000000]}" -v f="${KTPS[on,k_update_1000000]}" -v g="${KTPS[off,k_const]}" \
        'BEGIN { printf "Targets: one call per transaction on 10 hot keys, %.1f× the UPDATE with default settings (target ≥ 10×: %s), %.1f× with synchronous_commit = off (≥ 2.5×: %s; a statement that calls nothing makes %.1f× in the same run, so no function can do more here); on 1,000,000 random keys %.1f× (≥ 10×: %s).", a / b, (a >= 10 * b ? "met" : "missed"), c / d, (c >= 2.5 * d ? "met" : "missed"), g / d, e / f, (e >= 10 * f ? "met" : "missed") }'
    q <<SQL
WITH med AS (SELECT ord, percentile_cont(0.5) WITHIN GROUP (ORDER BY ns) AS ns FROM bench_result WHERE part = 5 GROUP BY ord)
SELECT format(' Per call in one statement, %s× faster than the UPDATE on distinct keys (its cheapest case; target ≥ 15×: %s), %s× on 10 hot keys.',
              to_char(u.ns / k.ns, 'FM99990.0'), CASE WHEN u.ns >= 15 * k.ns THEN 'met' ELSE 'missed' END,
              to_char(h.ns / k.ns, 'FM99990.0'))
FROM med u, med k, med h WHERE u.ord = 6 AND k.ord = 3 AND h.ord = 1;
SQL
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
