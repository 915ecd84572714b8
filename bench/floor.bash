# bench/floor.bash — part 0 of bench/run.sh (sourced by it, same cluster, same run): each hot
# function's cost per call next to its floor, the cheapest built-in doing comparable work, as a
# ratio, so that a regression shows as a ratio whatever the machine's speed:
#   snowflake_next()       vs clock_timestamp()          (one clock read and a function call)
#   snowflake_next_text()  vs clock_timestamp()::text    (a clock read, as text)
#   uid_decode(id)         vs the same decode of the default layout in SQL operators, building the
#                             same five-field row: ROW(to_timestamp(...), ..., NULL, NULL)
# Each is FLOOR_CALLS calls (default 1,000,000; --quick 200,000) as `SELECT count(<expr>), ...
# (8 times) FROM <source>` over FLOOR_CALLS / 8 rows: generate_series for the first two pairs, a
# table of snowflake ids for uid_decode, with work_mem large enough that the series stays in
# memory. The same statement of the bare column (`count(g)` / `count(id)`, 8 times) is
# subtracted, so ns/call is the expression's own cost (with its function call and the count's
# transition); eight calls per row make the row's own cost (a tuplestore read, 5 ns a call
# instead of 100 with one call per row) small beside the calls measured. Two measures per run,
# both per call:
#   CPU   the backend's own CPU time (/proc/self/schedstat, read by pg_read_file before and
#         after): what other processes on a shared machine do not inflate
#   wall  clock_timestamp() before and after
# FLOOR_ROUNDS rounds (default 9, --quick 3), the expressions interleaved in each round; the best
# (least) of the rounds is reported, the least disturbed. Before each run of a snowflake
# expression the generator's lead over the clock is waited out (snowflake_stats().lead_ms <= 0),
# so that no call waits for the clock: a million ids take 244 ms of the default layout's time.
# Uses run.sh's q, log, group, sqlq, N, QUICK.

FLOOR_CALLS=${FLOOR_CALLS:-$([ "$QUICK" = 1 ] && echo 200000 || echo 1000000)}
FLOOR_ROUNDS=${FLOOR_ROUNDS:-$([ "$QUICK" = 1 ] && echo 3 || echo 9)}

# "label|source|expression|floor label (empty: a floor or a baseline)"; a source's first entry
# (expression g or id) is its baseline
FLOOR_EXPRS=(
    "bare series|series|g|"
    "clock_timestamp()|series|clock_timestamp()|"
    "snowflake_next()|series|snowflake_next()|clock_timestamp()"
    "clock_timestamp()::text|series|clock_timestamp()::text|"
    "snowflake_next_text()|series|snowflake_next_text()|clock_timestamp()::text"
    "bare ids|ids|id|"
    "decode in SQL|ids|ROW(to_timestamp(((id >> 22) + 1288834974657)::float8 / 1000), ((id >> 12) & 1023)::int4, (id & 4095)::int4, NULL::int4, NULL::int4)|"
    "uid_decode(id)|ids|uid_decode(id)|decode in SQL"
)

floor_measure() {
    log "part 0: floors, ${#FLOOR_EXPRS[@]} expressions x $FLOOR_ROUNDS rounds x $FLOOR_CALLS calls, one backend, CPU and wall time"
    local sql e label src expr flr from i r rows=$((FLOOR_CALLS / 8)) list
    sql="SET client_min_messages = warning;
SET work_mem = '256MB';
CREATE TABLE bench_floor (label text, ord int, rep int, cpu_ns float8, wall_ns float8);
CREATE TABLE bench_floor_ids AS SELECT snowflake_next() AS id FROM generate_series(1, $rows);
VACUUM ANALYZE bench_floor_ids;
CREATE FUNCTION bench_cpu(q text, OUT cpu_ns float8, OUT wall_ns float8) LANGUAGE plpgsql AS \$f\$
DECLARE c0 bigint; t0 timestamptz;
BEGIN
    -- the kernel adds a running task's CPU time to schedstat at a timer tick or when the task
    -- is switched out: a 1 ms sleep before each reading makes it exact (not a tick's 4 ms off)
    PERFORM pg_sleep(0.001);
    c0 := split_part(pg_read_file('/proc/self/schedstat'), ' ', 1)::bigint;
    t0 := clock_timestamp();
    EXECUTE q;
    wall_ns := extract(epoch FROM clock_timestamp() - t0) * 1e9;
    PERFORM pg_sleep(0.001);
    cpu_ns := split_part(pg_read_file('/proc/self/schedstat'), ' ', 1)::bigint - c0;
END \$f\$;
-- waits (bounded) until the generator's logical clock is not ahead of the system clock
CREATE FUNCTION bench_settle() RETURNS void LANGUAGE plpgsql AS \$f\$
BEGIN
    FOR i IN 1 .. 500 LOOP
        EXIT WHEN coalesce((SELECT lead_ms FROM snowflake_stats() WHERE worker_id = 1), 0) <= 0;
        PERFORM pg_sleep(0.01);
    END LOOP;
END \$f\$;"
    # round 0 is a warm-up (not counted)
    for r in $(seq 0 "$FLOOR_ROUNDS"); do
        for i in "${!FLOOR_EXPRS[@]}"; do
            IFS='|' read -r label src expr flr <<<"${FLOOR_EXPRS[$i]}"
            if [ "$src" = series ]; then from="generate_series(1, $rows) g"; else from="bench_floor_ids"; fi
            list="count($expr)"; for _ in 2 3 4 5 6 7 8; do list+=", count($expr)"; done
            case $expr in *snowflake*) sql+=$'\n'"SELECT bench_settle();" ;; esac
            sql+=$'\n'"INSERT INTO bench_floor SELECT '$(sqlq "$label")', $i, $r, cpu_ns, wall_ns FROM bench_cpu('$(sqlq "SELECT $list FROM $from")');"
        done
    done
    sql+=$'\n'"DELETE FROM bench_floor WHERE rep = 0;"
    q >/dev/null <<<"$sql"
}

floor_report() {
    local vals="" i label src expr flr
    for i in "${!FLOOR_EXPRS[@]}"; do
        IFS='|' read -r label src expr flr <<<"${FLOOR_EXPRS[$i]}"
        vals+="$([ -n "$vals" ] && echo ,)('$(sqlq "$label")', '$src', '$(sqlq "$flr")', $i)"
    done
    echo
    echo "**Floors** ($(echo "$FLOOR_CALLS" | group) calls, \`SELECT count(<expr>), ...\` 8 times over $(echo "$((FLOOR_CALLS / 8))" | group) rows, one backend, best of $FLOOR_ROUNDS rounds; ns/call less the bare \`count\` of the same rows; CPU = the backend's own CPU time from /proc/self/schedstat; ratio = function / floor, the floor being the cheapest built-in doing comparable work)"
    echo
    q <<SQL
WITH best AS (
    SELECT label, min(cpu_ns) / $FLOOR_CALLS AS cpu, min(wall_ns) / $FLOOR_CALLS AS wall
    FROM bench_floor GROUP BY label
), e(label, src, flr, ord) AS (VALUES $vals),
   base AS (SELECT e.src, b.cpu, b.wall FROM e JOIN best b USING (label) WHERE e.label LIKE 'bare %'),
   net AS (SELECT e.label, e.flr, e.ord, b.cpu - s.cpu AS cpu, b.wall - s.wall AS wall
           FROM e JOIN best b USING (label) JOIN base s USING (src))
SELECT '| function | floor | CPU ns/call | floor CPU ns/call | CPU ratio | wall ns/call | floor wall ns/call | wall ratio |'
UNION ALL SELECT '|---|---|---:|---:|---:|---:|---:|---:|'
UNION ALL (
SELECT format('| \`%s\` | %s | %s | %s | %s | %s | %s | %s |',
              f.label, CASE WHEN f.flr = 'decode in SQL' THEN 'the same decode in SQL operators, as a ROW' ELSE '\`' || f.flr || '\`' END,
              to_char(f.cpu, 'FM999990.0'), to_char(g.cpu, 'FM999990.0'),
              CASE WHEN g.cpu > 0 THEN to_char(f.cpu / g.cpu, 'FM990.00') || '×' ELSE '—' END,
              to_char(f.wall, 'FM999990.0'), to_char(g.wall, 'FM999990.0'),
              CASE WHEN g.wall > 0 THEN to_char(f.wall / g.wall, 'FM990.00') || '×' ELSE '—' END)
FROM net f JOIN net g ON g.label = f.flr
ORDER BY f.ord);
SQL
    q <<SQL
WITH best AS (SELECT label, min(cpu_ns) AS cpu, min(wall_ns) AS wall FROM bench_floor GROUP BY label)
SELECT format('Target: snowflake_next() within 1.5× of one clock read: %s by CPU time (%s), %s by wall time.',
              coalesce(to_char((s.cpu - b.cpu) / nullif(greatest(c.cpu - b.cpu, 0), 0), 'FM990.00') || '×', '—'),
              CASE WHEN s.cpu - b.cpu <= 1.5 * (c.cpu - b.cpu) THEN 'met' ELSE 'missed' END,
              coalesce(to_char((s.wall - b.wall) / nullif(greatest(c.wall - b.wall, 0), 0), 'FM990.00') || '×', '—'))
FROM best s, best c, best b
WHERE s.label = 'snowflake_next()' AND c.label = 'clock_timestamp()' AND b.label = 'bare series';
SQL
}
