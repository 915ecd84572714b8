#!/usr/bin/env bash
# migrate/002_logical_move [OLD] [NEW] — moving a busy database to a new cluster of another major
# by logical replication, with writers on the old cluster through the move. Both default to the
# suite's major (PG, else 15: a move to new hardware, which the suite's run of each major has
# installed); across majors, give them (16 17, 15 18; the old major must not be newer) with
# pg_idgen installed into both (make install-test PG=OLD; make install-test PG=NEW).
#
# Old cluster (major OLD, worker id 3 from the setting): a custom layout, a mask key, a plain
# tag (step 100), a strided tag (nodes 2, node_index 1, step 50), a slotted tag (8 slots, owns
# 1, 4, 6, step 20), a keyed space (step 100, section_size 100) with 3 hot keys and 1,000 cold
# ones; tables ev (id DEFAULT snowflake_next(), and one DEFAULT segment_next() column per tag),
# masked (the id and uid_mask(id)), msgs (key, keyed_next(key)). Published FOR ALL TABLES,
# pg_idgen's tables included. New cluster (major NEW, the same worker id, its clock 60 s behind the
# old one's, pg_idgen.max_drift_ms 120 s so that it may continue above the old ids at once): the
# application's tables, a subscription copying them.
# Writers (4 bash loops, 20 ev rows + 20 msgs rows per transaction) write to the old cluster,
# then, at the cut-over, pause (every writer idle), the subscription catches up, and they move to
# the new cluster and write on. Two runs:
#   move:    pg_idgen_state_export() | pg_idgen_state_import() (scripts/move-state.sh) once under
#            load, once again at the cut-over (writes stopped), once more afterwards (only raises);
#   control: no import: the tags and the keyed space made on the new cluster by hand with the same
#            arguments, its own mask key of the same name (as without the cut-over step).
#   sequences (both majors 19 or newer): as control, but published FOR ALL TABLES, ALL SEQUENCES
#            and, at the cut-over, ALTER SUBSCRIPTION ... REFRESH SEQUENCES (PostgreSQL 19 copies
#            sequence values): what that carries by itself, without pg_idgen_state_import.
# Asserted (move): every acknowledged row on the new cluster; no snowflake id, segment value (per
# tag) or (key, value) twice across both clusters; every new id above every old one; strided and
# slotted values only in their node's chunks and slots; every key's first value on the new cluster
# above its own last on the old, no further than a restart of the old would jump (at most a step
# above the largest value of its bucket); every masked id unmasks to its id on both clusters; the
# subscription applied the tags and spaces made on the old cluster under load without an apply
# error. Asserted (control): values handed out twice, ids below the old ones, masked ids that do
# not unmask. Asserted (sequences): every backing sequence's value on the new cluster equal to the
# old one's after the refresh; no plain, strided or slotted tag value twice (their reservations
# are backing sequences'); still (key, value) pairs twice, snowflake ids below the old ones and
# masked ids that do not unmask (the keyed bounds, the worker's floor and the mask keys are no
# sequences). Figures logged: rows, cut-over time (writers paused -> first write on the new
# cluster), import time, repeats in the control and with the refresh alone.
set -euo pipefail
ROOT_DIR=$(cd "$(dirname "$0")/../../.." && pwd)
if [ -d "${1:-}" ]; then ROOT_DIR=$1; shift; fi   # scripts/run-integration.sh passes the repository
OLDV=${1:-${PG:-15}}
NEWV=${2:-${PG:-15}}
. "$(dirname "$0")/../lib.bash" "$ROOT_DIR"
. "$ROOT/tests/upgrade/lib.bash"
TEST_NAME=migrate/002_logical_move_${OLDV}_to_${NEWV}
[ "$OLDV" -le "$NEWV" ] || { echo "OLD ($OLDV) must not be newer than NEW ($NEWV)" >&2; exit 2; }
for v in "$OLDV" "$NEWV"; do
    [ -x "$(pg_config_for "$v")" ] || { echo "PostgreSQL $v must be installed with pg_idgen (make install-test PG=$v)" >&2; exit 1; }
done

O=mv_old N=mv_new
WRITERS=4
BATCH=20
STEP_KEYED=100

conn() { echo "host=$("$CLUSTER" sockdir "$1") port=$("$CLUSTER" port "$1") user=postgres dbname=app"; }
db() { qdb "$1" app "${@:2}"; }

APP_DDL=(
    "CREATE TABLE ev (id bigint NOT NULL DEFAULT snowflake_next(), writer int NOT NULL, site text NOT NULL,
                      inv bigint NOT NULL DEFAULT segment_next('inv'), str bigint NOT NULL DEFAULT segment_next('str'),
                      slt bigint NOT NULL DEFAULT segment_next('slt'))"
    "CREATE TABLE masked (id bigint NOT NULL, pub bigint NOT NULL, site text NOT NULL)"
    "CREATE TABLE msgs (k bigint NOT NULL, v bigint NOT NULL, site text NOT NULL)"
)
# tag and space arguments, as on the old cluster (the control makes them by hand on the new one)
GENERATORS=(
    "SELECT segment_create('inv', step => 100)"
    "SELECT segment_create('str', step => 50, nodes => 2, node_index => 1)"
    "SELECT segment_create('slt', step => 20, slots => 8, owned => ARRAY[1, 4, 6])"
    "SELECT keyed_create('conv', step => $STEP_KEYED, section_size => 100)"
)

# writer W: one transaction per loop on the cluster named in $TMP/target (old, new), until it
# reads stop; with pause it marks itself idle ($TMP/w$W.state) and waits. Acknowledged batches go
# to $TMP/w$W.ok as "site rows".
writer() {
    local w=$1 target name out
    echo running > "$TMP/w$w.state"
    while :; do
        target=$(cat "$TMP/target")
        case $target in
            stop) break ;;
            pause) echo paused > "$TMP/w$w.state"; sleep 0.02; continue ;;
            old) name=$OLD_AT ;; new) name=$NEW_AT ;;
            *) sleep 0.01; continue ;;
        esac
        echo running > "$TMP/w$w.state"
        # shellcheck disable=SC2086  # "host port"
        if out=$(set -- $name; "$PSQL" -X -h "$1" -p "$2" -U postgres -d app -Atq \
              -v ON_ERROR_STOP=1 -c "
            WITH i AS (INSERT INTO ev (writer, site) SELECT $w, '$target' FROM generate_series(1, $BATCH) RETURNING id)
            INSERT INTO masked (id, pub, site) SELECT id, uid_mask(id, 'pub'), '$target' FROM i;
            INSERT INTO msgs (k, v, site)
              SELECT k, keyed_next('conv', k), '$target'
                FROM (SELECT CASE WHEN random() < 0.8 THEN 1 + (random() * 2)::int ELSE 1000 + (random() * 999)::int END AS k
                        FROM generate_series(1, $BATCH)) x;" 2>&1); then
            echo "$target $BATCH $(date +%s.%N)" >> "$TMP/w$w.ok"
        else
            echo "$target $(date +%s.%N) $out" >> "$TMP/w$w.err"
            sleep 0.05
        fi
    done
    echo stopped > "$TMP/w$w.state"
}
# the writers' target, replaced atomically (a writer never reads a half-written file)
set_target() { echo "$1" > "$TMP/target.new"; mv "$TMP/target.new" "$TMP/target"; }
writers_idle() { local w; for w in $(seq 1 $WRITERS); do [ "$(cat "$TMP/w$w.state")" = paused ] || return 1; done; }
acked() { cat "$TMP"/w*.ok 2>/dev/null | awk -v s="$1" '$1 == s { n += $2 } END { print n + 0 }'; }
batches_on() { cat "$TMP"/w*.ok 2>/dev/null | awk -v s="$1" '$1 == s' | wc -l; }
synced() { [ "$(db "$N" "SELECT count(*) FILTER (WHERE srsubstate <> 'r') = 0 AND count(*) >= 3 FROM pg_subscription_rel")" = t ]; }
COUNTS="SELECT (SELECT count(*) FROM ev) || ' ' || (SELECT count(*) FROM masked) || ' ' || (SELECT count(*) FROM msgs)"
caught_up() { [ "$(db "$N" "$COUNTS")" = "$(db "$O" "$COUNTS")" ]; }
import_pass() {   # the documented command; its output (one line per object) into $TMP/import.$1
    "$ROOT/scripts/move-state.sh" "$(conn "$O")" "$(conn "$N")" > "$TMP/import.$1" 2>&1 \
        || { ko "import pass $1: $(tail -5 "$TMP/import.$1")"; return 1; }
}

scenario() {
    local mode=$1
    log "=============== $mode ($OLDV -> $NEWV)"
    rm -f "$TMP"/w*.ok "$TMP"/w*.err "$TMP"/w*.state "$TMP"/import.*
    # ---- the old cluster
    use "$OLDV"
    cluster_start "$O" 29430 -c wal_level=logical -c pg_idgen.worker_id=3
    q "$O" "CREATE DATABASE app" >/dev/null
    db "$O" "SET client_min_messages = error" "CREATE EXTENSION pg_idgen" \
        "SELECT uid_mask_key_create('pub')" \
        "SELECT uid_layout_register('lay_m', '2024-01-01', 41, 10, 12)" \
        "${GENERATORS[@]}" "${APP_DDL[@]}" \
        "CREATE PUBLICATION mv_pub FOR ALL TABLES$([ "$mode" != sequences ] || echo ", ALL SEQUENCES")" >/dev/null
    check "$mode: old cluster runs PostgreSQL $OLDV" "$(q "$O" "SHOW server_version_num" | cut -c1-2)" -eq "$OLDV"
    # ---- the new cluster: its clock 60 s behind, the same worker id
    use "$NEWV"
    CLUSTER_FAKETIME=1 cluster_start "$N" 29431 -c pg_idgen.worker_id=3 -c pg_idgen.max_drift_ms=120000 \
        -c wal_retrieve_retry_interval=200ms
    "$CLUSTER" faketime "$N" -60s
    NLOG=$("$CLUSTER" pgdata "$N")/log/postgresql.log
    q "$N" "CREATE DATABASE app" >/dev/null
    db "$N" "SET client_min_messages = error" "CREATE EXTENSION pg_idgen" "${APP_DDL[@]}" >/dev/null
    check "$mode: new cluster runs PostgreSQL $NEWV" "$(q "$N" "SHOW server_version_num" | cut -c1-2)" -eq "$NEWV"
    if [ "$mode" != move ]; then
        # as without the cut-over step: generators made by hand, a mask key made here (their
        # backing sequences get the names they have on the old cluster: made in the same order)
        db "$N" "SELECT uid_mask_key_create('pub')" "SELECT uid_layout_register('lay_m', '2024-01-01', 41, 10, 12)" \
            "${GENERATORS[@]}" >/dev/null
    fi
    db "$N" "SET client_min_messages = error" "CREATE SUBSCRIPTION mv_sub CONNECTION '$(conn "$O")' PUBLICATION mv_pub" >/dev/null

    # ---- writers on the old cluster; the subscription copies and catches up under load
    OLD_AT="$("$CLUSTER" sockdir "$O") $("$CLUSTER" port "$O")" NEW_AT="$("$CLUSTER" sockdir "$N") $("$CLUSTER" port "$N")"
    set_target old
    local w pids=()
    for w in $(seq 1 $WRITERS); do writer "$w" & pids+=($!); BG_PIDS+=($!); done
    wait_until 60 "$mode: the subscription synchronized every table" synced
    wait_until 60 "$mode: 40 batches on the old cluster" eval '[ "$(batches_on old)" -ge 40 ]'
    # generators made on the old cluster under load: their rows replicate (and are skipped) too
    # (not with the sequences published: a sequence the new cluster lacks stops their refresh)
    [ "$mode" = sequences ] || db "$O" "SELECT segment_create('late_tag')" "SELECT keyed_create('late_space')" >/dev/null
    if [ "$mode" = move ]; then
        local t0; t0=$(date +%s%N)
        import_pass 1
        log "$mode: first import under load took $(( ($(date +%s%N) - t0) / 1000000 )) ms: $(tr '\n' ';' < "$TMP/import.1" | head -c 600)"
    fi
    wait_until 60 "$mode: 80 batches on the old cluster" eval '[ "$(batches_on old)" -ge 80 ]'

    # ---- the cut-over
    local pause_at first_new import_ms=0
    pause_at=$(date +%s.%N)
    set_target pause
    wait_until 30 "$mode: every writer idle" writers_idle
    wait_until 60 "$mode: the subscription caught up with the old cluster (the same rows on both)" caught_up
    check "$mode: no apply or synchronization error while the subscription ran" \
        "$(db "$N" "SELECT apply_error_count + $SYNC_ERRORS FROM pg_stat_subscription_stats s WHERE subname = 'mv_sub'")" -eq 0
    if [ "$mode" = move ]; then
        local t1; t1=$(date +%s%N)
        import_pass 2
        import_ms=$(( ($(date +%s%N) - t1) / 1000000 ))
    fi
    if [ "$mode" = sequences ]; then
        db "$N" "ALTER SUBSCRIPTION mv_sub REFRESH SEQUENCES" >/dev/null
        SEQS="SELECT string_agg(sequencename || '=' || coalesce(last_value::text, '-'), ' ' ORDER BY sequencename) FROM pg_catalog.pg_sequences WHERE sequencename LIKE 'pg_idgen_%'"
        seqs_same() { [ "$(db "$N" "$SEQS")" = "$(db "$O" "$SEQS")" ]; }
        wait_until 60 "sequences: the refresh copied every backing sequence's value" seqs_same
        check "sequences: the backing sequences on the new cluster equal the old ones after REFRESH SEQUENCES ($(db "$O" "SELECT count(*) FROM pg_catalog.pg_sequences WHERE sequencename LIKE 'pg_idgen_%'") sequences)" \
            "$(db "$N" "$SEQS")" == "$(db "$O" "$SEQS")"
    fi
    db "$N" "ALTER SUBSCRIPTION mv_sub DISABLE" "ALTER SUBSCRIPTION mv_sub SET (slot_name = NONE)" "DROP SUBSCRIPTION mv_sub" >/dev/null
    db "$O" "SELECT pg_drop_replication_slot('mv_sub')" >/dev/null
    set_target new
    wait_until 60 "$mode: a first batch on the new cluster" eval '[ "$(batches_on new)" -ge 1 ]'
    first_new=$(cat "$TMP"/w*.ok | awk '$1 == "new" { print $3 }' | sort -n | head -1)
    local cut_ms; cut_ms=$(awk -v a="$pause_at" -v b="$first_new" 'BEGIN { printf "%d", (b - a) * 1000 }')
    log "$mode: cut-over: writers paused -> first write on the new cluster: $cut_ms ms (import at the cut-over: $import_ms ms)"
    wait_until 120 "$mode: 80 batches on the new cluster" eval '[ "$(batches_on new)" -ge 80 ]'
    set_target stop
    for w in "${pids[@]}"; do wait "$w" || true; done
    BG_PIDS=()

    # ---- what both clusters handed out: all on the new cluster (the old rows replicated)
    local old_rows new_rows
    old_rows=$(acked old) new_rows=$(acked new)
    log "$mode: rows acknowledged: $old_rows on the old cluster, $new_rows on the new one (ev, masked and msgs each)"
    if [ "$mode" = move ]; then
        check "move: every acknowledged ev row on the new cluster (old + new)" \
            "$(db "$N" "SELECT count(*) FROM ev")" -eq $((old_rows + new_rows))
        check "move: ... and every msgs row" "$(db "$N" "SELECT count(*) FROM msgs")" -eq $((old_rows + new_rows))
        check "move: the old cluster has its own rows only" "$(db "$O" "SELECT count(*) FROM ev")" -eq "$old_rows"
        check "move: no failed write on either cluster" "$(cat "$TMP"/w*.err 2>/dev/null | wc -l)" -eq 0
        check "move: no snowflake id twice across both clusters" \
            "$(db "$N" "SELECT count(*) - count(DISTINCT id) FROM ev")" -eq 0
        check "move: every new snowflake id above every old one" \
            "$(db "$N" "SELECT (min(id) FILTER (WHERE site = 'new') > max(id) FILTER (WHERE site = 'old'))::text FROM ev")" == true
        check "move: new ids carry worker id 3" \
            "$(db "$N" "SELECT count(*) FROM ev, uid_decode(ev.id) d WHERE site = 'new' AND d.worker_id <> 3")" -eq 0
        local t
        for t in inv str slt; do
            check "move: no $t value twice across both clusters" "$(db "$N" "SELECT count(*) - count(DISTINCT $t) FROM ev")" -eq 0
            check "move: every new $t value above every old one" \
                "$(db "$N" "SELECT (min($t) FILTER (WHERE site = 'new') > max($t) FILTER (WHERE site = 'old'))::text FROM ev")" == true
        done
        check "move: strided values all in node 1's chunks (((v - 1) / 50) % 2 = 1)" \
            "$(db "$N" "SELECT count(*) FROM ev WHERE ((str - 1) / 50) % 2 <> 1")" -eq 0
        check "move: slotted values all in slots 1, 4, 6 (((v - 1) / 20) % 8)" \
            "$(db "$N" "SELECT count(*) FROM ev WHERE ((slt - 1) / 20) % 8 NOT IN (1, 4, 6)")" -eq 0
        check "move: no (key, value) twice across both clusters" \
            "$(db "$N" "SELECT count(*) FROM (SELECT k, v FROM msgs GROUP BY k, v HAVING count(*) > 1) d")" -eq 0
        local keys
        keys="WITH o AS (SELECT k, max(v) AS last FROM msgs WHERE site = 'old' GROUP BY k),
                   b AS (SELECT k / 100 AS section, max(v) AS top FROM msgs WHERE site = 'old' GROUP BY 1),
                   n AS (SELECT k, min(v) AS first FROM msgs WHERE site = 'new' GROUP BY k)
              SELECT count(*) FILTER (WHERE n.first <= o.last) || ' ' ||
                     count(*) FILTER (WHERE n.first > b.top + $STEP_KEYED) || ' ' || count(*) || ' ' ||
                     coalesce(max(n.first - o.last) FILTER (WHERE n.k <= 3), -1) || ' ' ||
                     coalesce(max(n.first - o.last) FILTER (WHERE n.k > 3), -1)
                FROM n JOIN o USING (k) JOIN b ON b.section = n.k / 100"
        local kr; kr=$(db "$N" "$keys")
        read -r below far both hot_jump cold_jump <<<"$kr"
        check "move: keys used on both clusters ($both): none continues at or below its own last old value" "$below" -eq 0
        check "move: ... none jumps further than a restart (a step above the largest old value of its section)" "$far" -eq 0
        check "move: hot and cold keys used on both clusters" "$both" -ge 20
        log "move: keyed: $both keys used on both clusters; largest jump (first new - last old): hot keys $hot_jump, cold keys $cold_jump (step $STEP_KEYED)"
        check "move: every masked id unmasks to its id on the new cluster" \
            "$(db "$N" "SELECT count(*) FROM masked WHERE uid_unmask(pub, 'pub') <> id")" -eq 0
        check "move: ... and on the old cluster (its own rows)" \
            "$(db "$O" "SELECT count(*) FROM masked WHERE uid_unmask(pub, 'pub') <> id")" -eq 0
        check "move: new rows' masked ids unmask on the old cluster too" \
            "$(db "$O" "SELECT count(*) FROM (VALUES $(db "$N" "SELECT string_agg(format('(%s,%s)', id, pub), ',') FROM (SELECT id, pub FROM masked WHERE site = 'new' LIMIT 200) x")) v(id, pub) WHERE uid_unmask(pub, 'pub') <> id")" -eq 0
        check "move: the layout lay_m decodes the same on both" \
            "$(db "$N" "SELECT md5(string_agg(d::text, ',' ORDER BY id)) FROM (SELECT id FROM ev WHERE site = 'old' ORDER BY id LIMIT 500) e, uid_decode(e.id, 'lay_m') d")" == \
            "$(db "$O" "SELECT md5(string_agg(d::text, ',' ORDER BY id)) FROM (SELECT id FROM ev ORDER BY id LIMIT 500) e, uid_decode(e.id, 'lay_m') d")"
        check "move: the tags and spaces made on the old cluster under load were imported (late_tag, late_space)" \
            "$(db "$N" "SELECT (SELECT count(*) FROM pg_idgen_segments WHERE tag = 'late_tag') + (SELECT count(*) FROM pg_idgen_keyed_spaces WHERE space = 'late_space')")" -eq 2
        # after the move, once more: only raises, nothing moves back
        local before after
        before=$(db "$N" "SELECT (SELECT max(inv) FROM ev) || ' ' || keyed_last('conv', 1)")
        import_pass 3
        check_match "move: a third import, after writes on the new cluster, moves no tag (already above)" \
            "$(grep -E '^segment tag\|inv\|' "$TMP/import.3")" 'already above'
        check_match "move: ... raises no keyed bound" "$(grep -E '^keyed space\|conv\|' "$TMP/import.3")" ', 0 of 1024 bucket bounds raised'
        after=$(db "$N" "SELECT (SELECT max(inv) FROM ev) || ' ' || keyed_last('conv', 1)")
        check "move: ... values unchanged by it" "$after" == "$before"
    else
        local dup_id below_id dup_inv dup_str dup_slt dup_keyed unmask_bad
        dup_id=$(db "$N" "SELECT count(*) - count(DISTINCT id) FROM ev")
        below_id=$(db "$N" "SELECT count(*) FROM ev WHERE site = 'new' AND id <= (SELECT max(id) FROM ev WHERE site = 'old')")
        dup_inv=$(db "$N" "SELECT count(*) - count(DISTINCT inv) FROM ev")
        dup_str=$(db "$N" "SELECT count(*) - count(DISTINCT str) FROM ev")
        dup_slt=$(db "$N" "SELECT count(*) - count(DISTINCT slt) FROM ev")
        dup_keyed=$(db "$N" "SELECT count(*) FROM (SELECT k, v FROM msgs GROUP BY k, v HAVING count(*) > 1) d")
        unmask_bad=$(db "$N" "SELECT count(*) FROM masked WHERE site = 'old' AND uid_unmask(pub, 'pub') <> id")
        log "$mode: repeats without the cut-over step$([ "$mode" = control ] || echo " (sequences refreshed)"): snowflake ids twice $dup_id, new ids at or below the old maximum $below_id; values twice: inv $dup_inv, str $dup_str, slt $dup_slt; (key, value) twice $dup_keyed; old masked ids that do not unmask on the new cluster $unmask_bad"
    fi
    if [ "$mode" = sequences ]; then
        check "sequences: no plain tag value twice (its reservations are its backing sequence's)" "$dup_inv" -eq 0
        check "sequences: no strided tag value twice" "$dup_str" -eq 0
        check "sequences: no slotted tag value twice" "$dup_slt" -eq 0
        check "sequences: still (key, value) pairs twice (the keyed bounds are no sequence)" "$dup_keyed" -gt 0
        check "sequences: still new snowflake ids at or below the old cluster's largest (no sequence either)" "$below_id" -gt 0
        check "sequences: still old masked ids that do not unmask (the mask key is no sequence)" "$unmask_bad" -gt 0
    elif [ "$mode" = control ]; then
        check "control: plain tag values handed out twice" "$dup_inv" -gt 0
        check "control: strided tag values handed out twice" "$dup_str" -gt 0
        check "control: slotted tag values handed out twice" "$dup_slt" -gt 0
        check "control: (key, value) pairs handed out twice" "$dup_keyed" -gt 0
        check "control: new snowflake ids at or below the old cluster's largest (clock 60 s behind)" "$below_id" -gt 0
        check "control: old masked ids do not unmask on the new cluster (its own key)" "$unmask_bad" -gt 0
    fi
    check "$mode: the new cluster's log: no relation that does not exist (42P01)" \
        "$(grep -cE 'relation "[^"]*" does not exist' "$NLOG" || true)" -eq 0
    check "$mode: no XX000 and no panic in the new cluster's log" "$(grep -c -E 'XX000|PANIC' "$NLOG" || true)" -eq 0
    "$CLUSTER" destroy "$N" >/dev/null 2>&1 || true
    "$CLUSTER" destroy "$O" >/dev/null 2>&1 || true
}

scenario move
scenario control
# PostgreSQL 19 publishes sequences: what REFRESH SEQUENCES alone carries
[ "$OLDV" -lt 19 ] || scenario sequences
finish
