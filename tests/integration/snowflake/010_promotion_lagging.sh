#!/usr/bin/env bash
# snowflake/010_promotion_lagging — a standby that did not receive the primary's last reservations is
# promoted at once: no id it hands out equals or falls below an id the old primary handed out.
# Clocks in sync (one machine). Layout with 3 sequence bits (8 ids per ms) and
# pg_idgen.max_drift_ms = 2000: a burst runs the primary's logical clock 2 s ahead of the wall
# clock at once.
#  A. asynchronous standby: its WAL receiver is stopped (SIGSTOP) before the burst, so the
#     reservations the burst writes never reach it; the primary is stopped (immediate), the
#     standby promoted at once (the receiver continued only after the promotion asked it to end).
#     Restarted (clean) right after the promotion, before any id, its first 20,000 ids: none at
#     or below the old primary's largest; the end-of-recovery LOG line names the floor.
#  B. the standby in synchronous_standby_names, the same stopped receiver: a read-only
#     `SELECT snowflake_next()` burst waits for the standby (wait event SyncRep) instead of
#     handing out ids it never confirmed, and read-only `SELECT segment_next()` hands out only
#     values of confirmed reservations (then fails: it cannot reserve); a cancel ends the waiting
#     burst with 57014 and none of its unconfirmed ids; after the immediate stop
#     and the promotion, no snowflake id and no segment value a client received is handed out
#     again, and the promoted server's replayed reservation already covers the largest id
#     handed out.
# Pass/fail never depends on timing: waits poll for a state (bounded).
# integration: cross-version
set -euo pipefail
. "$(dirname "$0")/../lib.bash"

W=7
LAYOUT='time=41,worker=10,sequence=3'
OPTS=(-c pg_idgen.worker_id=$W -c "pg_idgen.layout=$LAYOUT" -c pg_idgen.max_drift_ms=2000)
N_NEW=20000

walrcv_pid() { q "$1" "SELECT pid FROM pg_stat_wal_receiver WHERE status = 'streaming'"; }
syncrep_waits() { q "$1" "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'"; }
burst_done() { ! kill -0 "$BURST" 2>/dev/null; }
waiting_or_done() { burst_done || [ "$(syncrep_waits "$1")" -ge 1 ]; }

# scenario TAG PRIMARY STANDBY PORT SYNC
scenario() {
    local tag=$1 P=$2 SB=$3 port=$4 sync=$5
    cluster_start "$P" "$port" "${OPTS[@]}"
    q "$P" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
        "SELECT segment_create('t', 100)" >/dev/null
    # a first reservation and a segment, both replicated
    q "$P" "SELECT count(snowflake_next()) FROM generate_series(1, 100)" >/dev/null
    standby_start "$SB" "$P" $((port + 1)) "${OPTS[@]}"
    if [ "$sync" = 1 ]; then
        q "$P" "ALTER SYSTEM SET synchronous_standby_names = '*'" "SELECT pg_reload_conf()" >/dev/null
        if poll 200 is_t "$P" "SELECT count(*) = 1 FROM pg_stat_replication WHERE sync_state = 'sync'"; then
            ok "$tag: the standby is synchronous"
        else ko "$tag: the standby did not become synchronous"; fi
    fi
    # ids handed out while the standby streams: the logical clock runs 2 s ahead
    local pre=$TMP/$tag.pre
    q "$P" "SET default_transaction_read_only = on" \
        "COPY (SELECT snowflake_next() FROM generate_series(1, 20000)) TO STDOUT" >"$pre"
    q "$P" "SELECT count(segment_next('t')) FROM generate_series(1, 150)" >/dev/null
    local lsn; lsn=$(q "$P" "SELECT pg_current_wal_lsn()")
    if poll 400 is_t "$SB" "SELECT pg_last_wal_replay_lsn() >= '$lsn'"; then
        ok "$tag: the standby replayed up to $lsn"
    else ko "$tag: the standby did not replay up to $lsn"; fi
    local rpid=
    poll 200 eval 'rpid=$(walrcv_pid "$SB"); [ -n "$rpid" ]' || true
    check "$tag: the standby's WAL receiver streams" "${rpid:-0}" -gt 0
    kill -STOP "$rpid"
    poll 100 eval '[ "$(proc_state "$rpid")" = T ]' || true
    check "$tag: the WAL receiver is stopped (process state)" "$(proc_state "$rpid")" == T

    # the burst: 30,000 ids at 8 per ms, read-only, every id the client receives is kept
    local burst=$TMP/$tag.burst segs=$TMP/$tag.segs
    ( q "$P" "SET default_transaction_read_only = on" \
        "COPY (SELECT snowflake_next() FROM generate_series(1, 30000)) TO STDOUT" >"$burst" 2>"$burst.err" || true ) &
    BURST=$!; BG_PIDS+=("$BURST")
    if [ "$sync" = 1 ]; then
        # the burst waits for the stopped standby, or (without that wait) ends
        poll 400 waiting_or_done "$P" || true
        check "$tag: the read-only snowflake_next() burst waits for the synchronous standby (session in SyncRep)" \
            "$(syncrep_waits "$P")" -eq 1
        # read-only segment_next(): values of the reservations already confirmed only; when
        # they run out it fails instead of reserving
        q "$P" "SET default_transaction_read_only = on" \
            "COPY (SELECT segment_next('t') FROM generate_series(1, 5000)) TO STDOUT" >"$segs" 2>"$segs.err" || true
        check_match "$tag: read-only segment_next() stops at the end of the confirmed reservations" \
            "$(cat "$segs.err")" "cannot reserve a new segment in a read-only transaction"
        # a cancel ends the waiting burst with 57014; none of the unconfirmed ids is handed out
        q "$P" "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE wait_event = 'SyncRep'" >/dev/null
        poll 400 burst_done || true
        check_match "$tag: the cancelled wait ends the statement (57014 message)" "$(cat "$burst.err")" \
            "canceling statement: the wait for synchronous standbys to confirm a snowflake time reservation was cancelled"
    else
        poll 1200 burst_done || true
        check "$tag: the burst ended: 30000 ids" "$(wc -l <"$burst")" -eq 30000
    fi
    local plsn; plsn=$(q "$P" "SELECT pg_current_wal_flush_lsn()")
    "$CLUSTER" stop "$P" immediate 2>/dev/null
    wait "$BURST" 2>/dev/null || true
    local received; received=$(q "$SB" "SELECT coalesce(pg_last_wal_receive_lsn(), '0/0') < '$plsn'")
    check "$tag: the standby lags (received before < the old primary's flushed $plsn)" "$received" == t

    grep -hE '^[0-9]+$' "$pre" "$burst" >"$burst.ids" || true
    local nold M
    nold=$(wc -l <"$burst.ids")
    M=$(sort -n "$burst.ids" | tail -1)
    log "$tag: old primary handed out $nold ids (20000 before the receiver stopped, $(grep -cE '^[0-9]+$' "$burst") after), max ${M:-none} ($(q "$SB" "SELECT ts FROM uid_decode(${M:-0})"))"
    check "$tag: the old primary handed out ids" "$nold" -gt 0

    # promotion at once; the receiver continues only so that the promotion can end it
    ( "$CLUSTER" promote "$SB" 2>/dev/null || true ) &
    local pp=$!
    # the promotion asked the stopped receiver to end (status stopping): only now it continues,
    # to end without reading what the kernel buffered for it
    poll 200 is_t "$SB" "SELECT status = 'stopping' FROM pg_stat_wal_receiver WHERE pid = $rpid" || true
    kill -CONT "$rpid" 2>/dev/null || true
    wait "$pp" || true
    if poll 600 is_t "$SB" "SELECT NOT pg_is_in_recovery()"; then ok "$tag: promoted"; else ko "$tag: not promoted"; fi
    if [ "$sync" = 1 ]; then
        check "$tag: the promoted server's replayed reservation covers the largest id handed out" \
            "$(q "$SB" "SELECT reserved_until > (SELECT ts FROM uid_decode($M)) FROM snowflake_stats() WHERE worker_id = $W")" == t
    fi
    if [ "$sync" = 0 ]; then
        # a clean restart right after the promotion, before any id: the state file written at
        # the shutdown keeps the floor, above the old primary's largest id
        local kept mms
        mms=$(q "$SB" "SELECT (extract(epoch FROM ts) * 1000)::bigint FROM uid_decode($M)")
        "$CLUSTER" stop "$SB" fast 2>/dev/null
        # what a start uses for worker W: its own line, or without one the floor
        local sf; sf="$("$CLUSTER" pgdata "$SB")/pg_idgen/snowflake.state"
        kept=$(awk -v w=$W '$1 == "worker" && $2 == w { print $3 }' "$sf")
        [ -n "$kept" ] || kept=$(awk '$1 == "floor" { print $2 }' "$sf")
        check "$tag: the state file after the clean stop keeps worker $W past the old primary's largest id (ms)" "$kept" -gt "${mms:-0}"
        "$CLUSTER" start "$SB" "$(itport $((port + 1)))" "${OPTS[@]}" 2>/dev/null
        check "$tag: restarted as a primary" "$(q "$SB" "SELECT pg_is_in_recovery()")" == f
    fi
    q "$SB" "COPY (SELECT snowflake_next() FROM generate_series(1, $N_NEW)) TO STDOUT" >"$TMP/$tag.new"
    check "$tag: the promoted server handed out $N_NEW ids" "$(sort -u "$TMP/$tag.new" | wc -l)" -eq $N_NEW
    local dup
    dup=$(awk -v m="$M" '$1 + 0 <= m + 0 { n++ } END { print n + 0 }' "$TMP/$tag.new")
    log "$tag: promoted server: min $(sort -n "$TMP/$tag.new" | head -1), max $(sort -n "$TMP/$tag.new" | tail -1)"
    check "$tag: of the promoted server's first $N_NEW ids, at or below the old primary's largest ($M)" "$dup" -eq 0
    check "$tag: ids the old and the promoted server both handed out" \
        "$(sort -n "$burst.ids" "$TMP/$tag.new" | uniq -d | wc -l)" -eq 0
    local line; line=$(grep -m1 'pg_idgen: end of recovery' "$("$CLUSTER" pgdata "$SB")/log/postgresql.log" || true)
    check_match "$tag: one LOG line names the floor after recovery" "$line" \
        'LOG: +pg_idgen: end of recovery: snowflake ids continue above .*max_drift_ms.*the old primary.s: 2000 ms.*clock_skew_ms'
    if [ "$sync" = 1 ]; then
        grep -E '^[0-9]+$' "$segs" >"$segs.vals" || true
        check "$tag: read-only segment_next() values received before the failover" "$(wc -l <"$segs.vals")" -gt 0
        q "$SB" "COPY (SELECT segment_next('t') FROM generate_series(1, 5000)) TO STDOUT" >"$TMP/$tag.segnew"
        check "$tag: segment values handed out before and again after the failover" \
            "$(sort -n "$segs.vals" "$TMP/$tag.segnew" | uniq -d | wc -l)" -eq 0
    fi
}

scenario async it_lag_p it_lag_s 29018 0
scenario sync it_lsync_p it_lsync_s 29035 1
finish
