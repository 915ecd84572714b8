#!/usr/bin/env bash
# layouts/001_change — the persisted generator state records its layout: a server
# restarted with another pg_idgen.layout refuses to generate (55000) until a superuser confirms
# with snowflake_accept_layout(); a clean restart with the same layout continues without a jump
# (the exact last time is persisted at shutdown), and ids keep increasing across all of it.
. "$(dirname "$0")/../lib.bash"

cluster_start lc 28947
q lc "CREATE EXTENSION pg_idgen" >/dev/null
before=$(q lc "SELECT max(snowflake_next()) FROM generate_series(1, 20000)")
state=$("$CLUSTER" pgdata lc)/pg_idgen/snowflake.state
check_match "the state file records the default layout" "$(cat "$state")" "layout time=41,worker=10,sequence=12,unit_ms=1,epoch=1767225600000"

# Clean restart, same layout: continues above, and not a whole reservation window ahead.
"$CLUSTER" stop lc fast >/dev/null
check_match "clean shutdown persisted the exact last time" "$(cat "$state")" "^pg_idgen snowflake state 2"
cluster_start lc 28947 -c pg_idgen.reserve_ms=600000
after=$(q lc "SELECT snowflake_next()")
check "clean restart: first id above the last one before" "$after" -gt "$before"
lead=$(q lc "SELECT lead_ms FROM snowflake_stats() WHERE worker_id = 1")
check "clean restart: the generator is not a reservation window (600 s) ahead" "$lead" -lt 60000

# Restart with another layout: refused until confirmed.
q lc "CREATE TABLE byday (id bigint, ts timestamptz)" "CREATE INDEX byday_at ON byday ((snowflake_at(ts)))" >/dev/null
"$CLUSTER" stop lc fast >/dev/null
cluster_start lc 28947 -c pg_idgen.layout=twitter
expect_sql_error lc 55000 'pg_idgen.layout changed: the persisted generator state was made with layout "time=41,worker=10,sequence=12,unit_ms=1,epoch=1767225600000' \
    "SELECT snowflake_next()"
check "uid_decode still works while generation is refused (same widths: worker 1)" "$(q lc "SELECT worker_id FROM uid_decode($after)")" -eq 1
q lc "CREATE ROLE app LOGIN" >/dev/null
expect_sql_error lc 42501 "permission denied" "SET ROLE app; SELECT snowflake_accept_layout()"
accepted=$("$CLUSTER" psql lc -At -c "SELECT snowflake_accept_layout()" 2>&1)
check "a superuser confirms the new layout" "$(tail -1 <<<"$accepted")" == "t"
check_match "the confirmation names the index computed with the old layout" "$accepted" 'WARNING: .*index (public\.)?byday_at.*REINDEX'
q lc "DROP TABLE byday" >/dev/null
check "confirming twice reports nothing left to confirm" "$(q lc "SELECT snowflake_accept_layout()")" == "f"
tw=$(q lc "SELECT snowflake_next()")
check "after confirmation ids are generated with the twitter layout (larger: older epoch)" "$tw" -gt "$after"
check_match "the state file now records the twitter layout" "$(cat "$state")" "epoch=1288834974657"

# Back to the default layout: refused again until confirmed.
"$CLUSTER" stop lc fast >/dev/null
cluster_start lc 28947
expect_sql_error lc 55000 "pg_idgen.layout changed" "SELECT snowflake_next()"
check "snowflake_accept_layout() reports the change" "$(q lc "SELECT snowflake_accept_layout()")" == "t"
check "generation resumes" "$(q lc "SELECT snowflake_next() > $after")" == "t"

finish
