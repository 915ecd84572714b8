#!/usr/bin/env bash
# replication/001_local_tables — what must not replicate, enforced on a real subscription. Node A
# publishes FOR ALL TABLES (its pg_idgen tables included: the WARNING says so); node B subscribes
# with copy_data. Proves:
#  1. the initial copy brings A's application rows and none of A's pg_idgen rows: B keeps its worker
#     id, its mask key, and has none of A's layouts, segment tags, keyed spaces or bounds; no
#     23505 in the table synchronization (both nodes have a worker row and a mask key "mk" v1);
#  2. streamed changes: an UPDATE (set_worker_id on A), INSERTs (a layout, a keyed space: 1,025
#     rows in one transaction, one WARNING for its bounds) and a DELETE (a layout both nodes
#     registered) of pg_idgen's tables do not reach B, the application rows of the same
#     transactions do; B's log names each skipped table;
#  3. control: with B's guard trigger on pg_idgen_worker disabled, A's next set_worker_id overwrites
#     B's worker id (what the guard prevents);
#  4. a TRUNCATE of a pg_idgen table on A is refused there (55000: a publication sends it); from a
#     publisher without that guard it stops B's subscription (0A000, nothing lost) and ALTER
#     SUBSCRIPTION ... SKIP at the finish LSN the error names lets it continue; rows naming
#     backing sequences B lacks (a plain and a slotted tag, a keyed space) are skipped like any
#     other, no 42P01, the application rows of the same transactions applied;
#  5. publisher side: a publication naming a pg_idgen table is refused (22023); a role that is not
#     superuser, with CREATE on the database, publishes its own table without a WARNING;
#  6. the shape of the group: on 15 a node that publishes and subscribes is warned (no origin =
#     none); on 16+ origin = any on a publishing node is warned about loops, origin = none with a
#     plain segment tag about colliding values, and a pg_create_subscription role's CREATE
#     SUBSCRIPTION passes the event trigger;
#  7. pg_dump/pg_restore: the guards and the event trigger are not dumped, CREATE EXTENSION makes
#     them again (every table guarded, enabled replica), the publications restored, a pg_idgen
#     table added to a restored publication refused;
#  8. CREATE EXTENSION in a database that already has a FOR ALL TABLES publication warns.
# integration: cross-version
set -euo pipefail
. "$(dirname "$0")/../lib.bash"

A=repl_a
B=repl_b
cluster_start "$A" 29190 -c wal_level=logical -c pg_idgen.worker_id=-1
cluster_start "$B" 29191 -c wal_level=logical -c pg_idgen.worker_id=-1 -c wal_retrieve_retry_interval=200ms \
    -c log_error_verbosity=verbose
CONN_A="host=127.0.0.1 port=$(itport 29190) user=postgres dbname=postgres"
BLOG=$("$CLUSTER" pgdata "$B")/log/postgresql.log
V=$(q "$A" "SHOW server_version_num")

# ---- both nodes: the extension, own worker ids, a mask key each (different bytes, same name),
# the layout "lay_s" registered on each as the docs say; the application table
for n in "$A" "$B"; do
    w=1; [ "$n" = "$B" ] && w=2
    q "$n" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" "SELECT set_worker_id($w)" \
        "SELECT uid_mask_key_create('mk')" \
        "SELECT uid_layout_register('lay_s', '2024-01-01', 41, 10, 12)" \
        "CREATE TABLE app (id bigint PRIMARY KEY, v text NOT NULL)" >/dev/null
done
# A's own state B must never take. Rows of pg_idgen_segments, _segment_slots and _keyed_spaces name
# their node's backing sequence (regclass, sent as text): the subscriber converts the text before
# any trigger runs, so the name must exist there (part 4 shows what happens when it does not).
# Nodes set up alike have the same names: B has a tag and two keyed spaces of its own.
q "$A" "SELECT uid_layout_register('lay_a', '2024-01-01', 41, 10, 12)" "SELECT segment_create('tag_a')" \
    "SELECT keyed_create('ks_a')" "INSERT INTO app VALUES (1, 'before')" >/dev/null
q "$B" "SELECT segment_create('tag_b')" "SELECT keyed_create('ks_x')" "SELECT keyed_create('ks_y')" >/dev/null
check "the tags' backing sequences have the same name on A and B" \
    "$(q "$A" "SELECT seq FROM pg_idgen_segments")" == "$(q "$B" "SELECT seq FROM pg_idgen_segments")"
fp() { q "$1" "SELECT fingerprint FROM uid_mask_keys WHERE name = 'mk' AND version = 1"; }
FP_A=$(fp "$A")
FP_B=$(fp "$B")
check "the two nodes' mask keys differ (made on each)" "$FP_A" != "$FP_B"

out=$(q "$A" "CREATE PUBLICATION pall FOR ALL TABLES" 2>&1)
check_match "A: CREATE PUBLICATION FOR ALL TABLES warns, naming pg_idgen's tables" "$out" \
    'WARNING: +publication "pall" carries pg_idgen.s tables \(FOR ALL TABLES\): .*"pg_idgen_worker"'
check_match "A: ... and the segment slots and keyed bounds" "$out" '"pg_idgen_keyed_bounds".*"pg_idgen_segment_slots"'

# ---- 1. the initial copy
q "$B" "CREATE SUBSCRIPTION sub CONNECTION '$CONN_A' PUBLICATION pall" >/dev/null 2>"$TMP/sub.err" \
    || { cat "$TMP/sub.err"; exit 1; }
synced() { [ "$(q "$B" "SELECT count(*) FILTER (WHERE srsubstate <> 'r') = 0 AND count(*) > 10 FROM pg_subscription_rel")" = t ]; }
wait_until 60 "B: every published table synchronized (app and pg_idgen's)" synced
check "B: app row 1 copied" "$(q "$B" "SELECT v FROM app WHERE id = 1")" == before
check "B: its worker id is its own (2)" "$(q "$B" "SELECT worker_id FROM pg_idgen_worker")" -eq 2
check "B: its mask key is its own" "$(fp "$B")" == "$FP_B"
check "B: none of A's layouts, tags, keyed spaces, bounds (lay_a, tag_a, ks_a)" \
    "$(q "$B" "SELECT (SELECT count(*) FROM pg_idgen_layouts WHERE name = 'lay_a') + (SELECT count(*) FROM pg_idgen_segments WHERE tag = 'tag_a') + (SELECT count(*) FROM pg_idgen_keyed_spaces WHERE space = 'ks_a') + (SELECT count(*) FROM pg_idgen_keyed_bounds WHERE space = 'ks_a')")" -eq 0
check "B: its own tag and keyed spaces and their 2,048 bounds kept" \
    "$(q "$B" "SELECT (SELECT count(*) FROM pg_idgen_segments WHERE tag = 'tag_b') || '/' || (SELECT count(*) FROM pg_idgen_keyed_spaces) || '/' || (SELECT count(*) FROM pg_idgen_keyed_bounds)")" == "1/2/2048"
check "B: no synchronization error (pg_stat_subscription_stats: sync_error_count, on 19+ of tables and of sequences)" \
    "$(q "$B" "SELECT $SYNC_ERRORS FROM pg_stat_subscription_stats s WHERE subname = 'sub'")" -eq 0
check "B's log: no duplicate key (23505) during the copy" "$(grep -c 'duplicate key' "$BLOG" || true)" -eq 0
check_match "B's log: the copy of pg_idgen_worker skipped with a WARNING" "$(cat "$BLOG")" \
    'WARNING: +(01000: )?skipped an INSERT of pg_idgen.s table "pg_idgen_worker" applied from another node'

# ---- 2. streamed changes
q "$A" "SELECT set_worker_id(5)" >/dev/null                                    # UPDATE
q "$A" "BEGIN" "SELECT keyed_create('ks_b')" "INSERT INTO app VALUES (2, 'with ks_b')" "COMMIT" >/dev/null  # 1,025 INSERTs + app
q "$A" "SELECT uid_layout_register('lay_b', '2024-01-01', 41, 10, 12)" >/dev/null # INSERT
q "$A" "BEGIN" "SELECT uid_layout_drop('lay_s')" "INSERT INTO app VALUES (3, 'after')" "COMMIT" >/dev/null    # DELETE + app
arrived() { [ "$(q "$B" "SELECT count(*) FROM app WHERE id = $1")" = 1 ]; }
wait_until 30 "B: app row 3 applied" arrived 3
check "B: app row 2, in the transaction of keyed_create, applied" "$(q "$B" "SELECT v FROM app WHERE id = 2")" == "with ks_b"
check "B: worker id still 2 after A's set_worker_id(5) (UPDATE skipped)" "$(q "$B" "SELECT worker_id FROM pg_idgen_worker")" -eq 2
check "B: snowflake ids carry worker id 2" "$(q "$B" "SELECT (uid_decode(snowflake_next())).worker_id")" -eq 2
check "B: no keyed space or bound of A (1,025 INSERTs skipped)" \
    "$(q "$B" "SELECT (SELECT count(*) FROM pg_idgen_keyed_spaces WHERE space LIKE 'ks\_%' AND space NOT IN ('ks_x', 'ks_y')) + (SELECT count(*) FROM pg_idgen_keyed_bounds WHERE space NOT IN ('ks_x', 'ks_y'))")" -eq 0
check "B: layout lay_b not taken (INSERT skipped)" "$(q "$B" "SELECT count(*) FROM pg_idgen_layouts WHERE name = 'lay_b'")" -eq 0
check "B: layout lay_s kept although A dropped its own (DELETE skipped)" "$(q "$B" "SELECT count(*) FROM pg_idgen_layouts WHERE name = 'lay_s'")" -eq 1
check "A: lay_s is gone there" "$(q "$A" "SELECT count(*) FROM pg_idgen_layouts WHERE name = 'lay_s'")" -eq 0
check_match "B's log: the UPDATE of pg_idgen_worker skipped" "$(cat "$BLOG")" 'skipped an UPDATE of pg_idgen.s table "pg_idgen_worker"'
check_match "B's log: the DELETE of pg_idgen_layouts skipped" "$(cat "$BLOG")" 'skipped a DELETE of pg_idgen.s table "pg_idgen_layouts"'
check "B's log: one WARNING for the 1,024 bounds of ks_b (the copy's and the stream's: 2 in all)" \
    "$(grep -c 'skipped an INSERT of pg_idgen.s table "pg_idgen_keyed_bounds"' "$BLOG")" -eq 2
check "B: apply errors (pg_stat_subscription_stats.apply_error_count)" \
    "$(q "$B" "SELECT apply_error_count FROM pg_stat_subscription_stats WHERE subname = 'sub'")" -eq 0

# ---- 3. control: without the guard, A's worker row overwrites B's
q "$B" "ALTER TABLE pg_idgen_worker DISABLE TRIGGER pg_idgen_replica_guard" >/dev/null
q "$A" "BEGIN" "SELECT set_worker_id(7)" "INSERT INTO app VALUES (4, 'control')" "COMMIT" >/dev/null
wait_until 30 "B: app row 4 applied" arrived 4
check "control: B's guard disabled, A's set_worker_id(7) overwrote B's worker id" \
    "$(q "$B" "SELECT worker_id FROM pg_idgen_worker")" -eq 7
q "$B" "ALTER TABLE pg_idgen_worker ENABLE REPLICA TRIGGER pg_idgen_replica_guard" "SELECT set_worker_id(2)" >/dev/null

# ---- 4. a TRUNCATE of a pg_idgen table: refused on the publisher while a publication sends it
# (55000); from a publisher without that guard (disabled here) it stops the subscription until
# skipped
expect_sql_error "$A" 55000 'cannot truncate pg_idgen.s table "pg_idgen_layouts": publication "pall" publishes its TRUNCATE' \
    "TRUNCATE pg_idgen_layouts"
check "A: the layouts kept (lay_a, lay_b)" "$(q "$A" "SELECT string_agg(name, ',' ORDER BY name) FROM pg_idgen_layouts")" == "lay_a,lay_b"
q "$A" "ALTER TABLE pg_idgen_layouts DISABLE TRIGGER pg_idgen_publish_truncate_guard" "TRUNCATE pg_idgen_layouts" \
    "ALTER TABLE pg_idgen_layouts ENABLE TRIGGER pg_idgen_publish_truncate_guard" >/dev/null
q "$A" "INSERT INTO app VALUES (5, 'after truncate')" >/dev/null
# skip_at LSN: B skips the transaction that finished at LSN, then ENABLE (the subscription is
# enabled already: this only wakes the launcher at commit). An apply worker that fails within
# milliseconds of its start can leave the launcher asleep for its 180 s naptime (seen on 16.2:
# the launcher, waiting for the worker to attach, sees it gone and does not schedule a retry), and
# SKIP alone does not wake it.
skip_at() { q "$B" "ALTER SUBSCRIPTION sub SKIP (lsn = '$1')" "ALTER SUBSCRIPTION sub ENABLE" >/dev/null; }
truncate_refused() { grep -q "pg_idgen's table \"pg_idgen_layouts\" takes no TRUNCATE from another node" "$BLOG"; }
wait_until 30 "B's log: the TRUNCATE refused" truncate_refused
check_match "B's log: the refusal has SQLSTATE 0A000 and the finish LSN" \
    "$(grep -A6 'takes no TRUNCATE' "$BLOG" | head -7 | tr '\n' ' ')" 'ERROR: +0A000: .*finished at [0-9A-F]+/[0-9A-F]+'
check "B: app row 5 (after the TRUNCATE) not applied while stopped" "$(q "$B" "SELECT count(*) FROM app WHERE id = 5")" -eq 0
check "B: layout lay_s still there" "$(q "$B" "SELECT count(*) FROM pg_idgen_layouts WHERE name = 'lay_s'")" -eq 1
lsn=$(grep -A6 'takes no TRUNCATE' "$BLOG" | grep -oE 'finished at [0-9A-F]+/[0-9A-F]+' | head -1 | awk '{print $3}')
skip_at "$lsn"
wait_until 30 "B: app row 5 applied after SKIP" arrived 5
check "B: layout lay_s kept through the skipped TRUNCATE" "$(q "$B" "SELECT count(*) FROM pg_idgen_layouts WHERE name = 'lay_s'")" -eq 1
check "B: worker id 2" "$(q "$B" "SELECT worker_id FROM pg_idgen_worker")" -eq 2

# ---- 4b. rows naming backing sequences the subscriber does not have (a plain tag, a slotted
# tag, a keyed space made on A only, whose sequences' numbers B has not used): their columns are
# of type pg_idgen_regclass, which an apply worker reads as 0 where the name does not exist, so
# the guard skips the rows like any other and the subscription keeps applying (before 0.6.0 the
# conversion failed with 42P01 before any trigger ran and stopped it for every table)
apply_errors() { q "$B" "SELECT apply_error_count FROM pg_stat_subscription_stats WHERE subname = 'sub'"; }
errors_before=$(apply_errors)
q "$A" "SELECT segment_create('seq_pad_1')" "SELECT segment_create('seq_pad_2')" "SELECT segment_create('seq_pad_3')" \
    "SELECT keyed_create('ks_pad_1')" "SELECT keyed_create('ks_pad_2')" "SELECT keyed_create('ks_pad_3')" >/dev/null
q "$A" "BEGIN" "SELECT segment_create('tag_new', start => 1000)" "INSERT INTO app VALUES (6, 'with tag_new')" "COMMIT" >/dev/null
q "$A" "BEGIN" "SELECT segment_create('slot_new', step => 10, slots => 4, owned => ARRAY[0, 2])" \
    "SELECT keyed_create('ks_new')" "INSERT INTO app VALUES (7, 'with slot_new and ks_new')" "COMMIT" >/dev/null
newseq=$(q "$A" "SELECT seq FROM pg_idgen_segments WHERE tag = 'tag_new'")
check "A: tag_new's backing sequence ($newseq) does not exist on B" \
    "$(q "$B" "SELECT to_regclass('$newseq') IS NULL")" == t
check "A: none of slot_new's and ks_new's sequences exist on B" \
    "$(q "$B" "SELECT count(*) FROM unnest(ARRAY[$(q "$A" "SELECT string_agg(quote_literal(seq::text), ',') FROM (SELECT seq FROM pg_idgen_segment_slots WHERE tag = 'slot_new' UNION ALL SELECT seq FROM pg_idgen_keyed_spaces WHERE space = 'ks_new') x")]) n WHERE to_regclass(n) IS NOT NULL")" -eq 0
wait_until 30 "B: app row 7 applied (after the transactions making tag_new, slot_new, ks_new)" arrived 7
check "B: app row 6 (same transaction as tag_new) applied" "$(q "$B" "SELECT v FROM app WHERE id = 6")" == "with tag_new"
check "B: no tag_new, slot_new, ks_new, nor their slots or bounds (skipped)" \
    "$(q "$B" "SELECT (SELECT count(*) FROM pg_idgen_segments WHERE tag IN ('tag_new', 'slot_new')) + (SELECT count(*) FROM pg_idgen_segment_slots WHERE tag = 'slot_new') + (SELECT count(*) FROM pg_idgen_keyed_spaces WHERE space = 'ks_new') + (SELECT count(*) FROM pg_idgen_keyed_bounds WHERE space = 'ks_new')")" -eq 0
check "B: no apply error while A made them" "$(apply_errors)" -eq "$errors_before"
check "B's log: no 42P01 (relation ... does not exist)" "$(grep -cE 'relation "[^"]*" does not exist' "$BLOG" || true)" -eq 0
check_match "B's log: the rows of pg_idgen_segments skipped with a WARNING" "$(cat "$BLOG")" \
    'skipped an INSERT of pg_idgen.s table "pg_idgen_segments" applied from another node'
check_match "B's log: ... and of pg_idgen_segment_slots" "$(cat "$BLOG")" \
    'skipped an INSERT of pg_idgen.s table "pg_idgen_segment_slots" applied from another node'
check "B: its own tag and segment_next work (tag_b)" "$(q "$B" "SELECT segment_next('tag_b') > 0")" == t

# ---- 5. publisher side
expect_sql_error "$A" 22023 "cannot add pg_idgen's table \"pg_idgen_worker\" to publication \"pw\"" \
    "CREATE PUBLICATION pw FOR TABLE app, pg_idgen_worker"
check "A: the refused publication does not exist" "$(q "$A" "SELECT count(*) FROM pg_publication WHERE pubname = 'pw'")" -eq 0
q "$A" "CREATE ROLE alice LOGIN" "GRANT CREATE ON DATABASE postgres TO alice" "GRANT CREATE ON SCHEMA public TO alice" >/dev/null
out=$(q "$A" "SET ROLE alice" "CREATE TABLE alice_t (id int PRIMARY KEY)" "CREATE PUBLICATION palice FOR TABLE alice_t" 2>&1)
check "A: a role with CREATE on the database publishes its table, no message" "$out" == ""
check "A: ... the publication exists" "$(q "$A" "SELECT count(*) FROM pg_publication_tables WHERE pubname = 'palice'")" -eq 1

# ---- 6. the shape of the group, per major
q "$B" "SET client_min_messages = warning" "SELECT segment_create('plain_b')" >/dev/null
out=$(q "$B" "CREATE PUBLICATION pb FOR TABLE app" 2>&1)
if [ "$V" -lt 160000 ]; then
    check_match "15, B publishes and subscribes: WARNING at CREATE PUBLICATION" "$out" \
        'WARNING: +this PostgreSQL 15 database publishes and subscribes'
    out=$(q "$B" "ALTER SUBSCRIPTION sub DISABLE" "ALTER SUBSCRIPTION sub ENABLE" 2>&1)
    check_match "15, ALTER SUBSCRIPTION on a node that publishes: WARNING (active-active needs 16)" "$out" \
        'WARNING: +subscription "sub": this PostgreSQL 15 database also publishes \("pb"\).*'
else
    check "16+, CREATE PUBLICATION on a subscriber: no message" "$out" == ""
    out=$(q "$B" "ALTER SUBSCRIPTION sub DISABLE" 2>&1)
    check_match "16+, origin = any on a node that publishes: WARNING about loops" "$out" \
        'WARNING: +subscription "sub" has origin = any and this database also publishes \("pb"\)'
    out=$(q "$B" "ALTER SUBSCRIPTION sub SET (origin = none)" 2>&1)
    check_match "16+, origin = none with a plain segment tag: WARNING naming it" "$out" \
        'WARNING: +this database replicates active-active .*"sub".* segment tag "plain_b"'
    check "16+, ... and no loop warning" "$(grep -c loop <<<"$out" || true)" -eq 0
    q "$B" "CREATE ROLE bob LOGIN" "GRANT CREATE ON DATABASE postgres TO bob" "GRANT pg_create_subscription TO bob" >/dev/null
    out=$(q "$B" "SET ROLE bob" \
        "CREATE SUBSCRIPTION bsub CONNECTION 'host=127.0.0.1 port=1 password=x' PUBLICATION x WITH (connect = false, origin = none)" 2>&1)
    check_match "16+, a pg_create_subscription role's CREATE SUBSCRIPTION passes the event trigger (warned, not refused)" "$out" \
        'WARNING: +this database replicates active-active .*segment tag "plain_b"'
    check "16+, ... the subscription exists" "$(q "$B" "SELECT count(*) FROM pg_subscription WHERE subname = 'bsub'")" -eq 1
    q "$B" "ALTER SUBSCRIPTION bsub SET (slot_name = NONE)" "DROP SUBSCRIPTION bsub" >/dev/null 2>&1
fi
# ---- 7. the guards through pg_dump/pg_restore: not in the dump (extension members' parts), made
# again by CREATE EXTENSION, enabled for replica sessions only
SOCK=$("$CLUSTER" sockdir "$A"); PORT=$("$CLUSTER" port "$A")
"$PGBIN/pg_dump" -h "$SOCK" -p "$PORT" -U postgres -Fc -f "$TMP/a.dump" postgres
check "pg_dump: no trigger or event trigger of pg_idgen in the dump" \
    "$("$PGBIN/pg_restore" -l "$TMP/a.dump" | grep -c -E 'TRIGGER.*pg_idgen_replica|EVENT TRIGGER' || true)" -eq 0
q "$A" "CREATE DATABASE restored" >/dev/null
"$PGBIN/pg_restore" -h "$SOCK" -p "$PORT" -U postgres -d restored --exit-on-error "$TMP/a.dump" 2>"$TMP/restore.err"
check "pg_restore: the publications restored (pall, palice; pg_restore shows WARNINGs only with --verbose)" \
    "$(qdb "$A" restored "SELECT string_agg(pubname, ',' ORDER BY pubname) FROM pg_publication")" == "palice,pall"
guards="SELECT count(*) FILTER (WHERE t.tgenabled = 'R') || '/' || count(DISTINCT c.oid) FROM pg_depend d
          JOIN pg_class c ON c.oid = d.objid AND c.relkind = 'r'
          LEFT JOIN pg_trigger t ON t.tgrelid = c.oid AND t.tgname LIKE 'pg_idgen_replica_guard%'
         WHERE d.classid = 'pg_class'::regclass AND d.deptype = 'e'
           AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_idgen')"
n=$(q "$A" "$guards")
check "A: two guards per table of pg_idgen, enabled replica (guards/tables: $n)" "${n%/*}" -eq $((2 * ${n#*/}))
check "restored: the same guards, enabled replica ($n)" "$(qdb "$A" restored "$guards")" == "$n"
check "restored: the event trigger" "$(qdb "$A" restored "SELECT evtenabled FROM pg_event_trigger WHERE evtname = 'pg_idgen_replication_guard'")" == O
expect_sql_error_db() { PGDATABASE=$1 expect_sql_error "$A" "${@:2}"; }
expect_sql_error_db restored 22023 'cannot add pg_idgen.s table "pg_idgen_layouts"' "ALTER PUBLICATION palice ADD TABLE pg_idgen_layouts"

# ---- 8. CREATE EXTENSION in a database that already publishes FOR ALL TABLES: warned
q "$A" "CREATE DATABASE late" >/dev/null
qdb "$A" late "SET client_min_messages = error" "CREATE PUBLICATION plate FOR ALL TABLES" >/dev/null
out=$(qdb "$A" late "CREATE EXTENSION pg_idgen" 2>&1)
check_match "CREATE EXTENSION under an existing FOR ALL TABLES publication: WARNING naming it" "$out" \
    'WARNING: +publications carry pg_idgen.s tables: plate'

check "B's log: no XX000" "$(grep -c 'XX000' "$BLOG" || true)" -eq 0

finish
