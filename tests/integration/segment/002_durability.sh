#!/usr/bin/env bash
# segment/002_durability: no value is ever handed out twice, whatever happens to the
# caller's transaction or the server. A "before" maximum is taken from values a client saw;
# after each event a fresh value must be greater.
#  A. ROLLBACK: values handed out in a rolled-back transaction are not handed out again.
#  B. kill -9 of a backend that holds values in an open transaction (crash restart of the
#     instance) — with wal_writer_delay = 10 s, so only segment_next's own WAL flush can have
#     made the reservation durable (no commit ever happened).
#  C. pg_ctl stop -m immediate right after values were handed out in an open transaction.
#  D. clean restart (stop -m fast).
#  E. a refill whose nextval writes no WAL, right after a WAL segment switch (the insert position
#     then points past a page header that no record ends at): no "xlog flush request ... is not
#     satisfied" error (found by the benchmark).
# integration: cross-version
set -euo pipefail
. "$(dirname "$0")/../lib.bash"

C=it_seg_dur
OPTS=(-c wal_writer_delay=10000 -c checkpoint_timeout=3600)
cluster_start "$C" 28972 "${OPTS[@]}"
q "$C" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
      "SELECT segment_create('dur', 100)" "SELECT segment_create('dur_big', 100000)" >/dev/null

next() { q "$C" "SELECT segment_next('$1')"; }

# ---- A: rollback ----
rb=$(q "$C" "BEGIN" "SELECT max(segment_next('dur')) FROM generate_series(1, 250)" "ROLLBACK" | grep -E "^[0-9]+$" | head -1)
after=$(next dur)
check "A: value after ROLLBACK > values handed out in the rolled-back transaction" "$after" -gt "$rb"
other=$("$CLUSTER" psql "$C" -At -c "SELECT segment_next('dur')")
check "A: another session continues above too" "$other" -gt "$after"

# wait until the server accepts connections again after a crash restart
wait_up() {
    local i
    for i in $(seq 1 100); do
        q "$C" "SELECT 1" >/dev/null 2>&1 && return 0
        sleep 0.2
    done
    return 1
}

# open_tx TAG N : starts a session that hands out N values in an open transaction, prints the
# max and its pid into $TMP/open.out, then sleeps; returns once the max has been printed
open_tx() {
    rm -f "$TMP/open.out"
    "$CLUSTER" psql "$C" -At -c "BEGIN" -c "SELECT max(segment_next('$1')) FROM generate_series(1, $2)" \
        -c "SELECT pg_backend_pid()" -c "SELECT pg_sleep(600)" -c "COMMIT" \
        >"$TMP/open.out" 2>/dev/null &
    BG_PIDS+=($!)
    local i
    for i in $(seq 1 200); do
        [ "$(grep -cE '^[0-9]+$' "$TMP/open.out" 2>/dev/null || true)" -ge 2 ] && return 0
        sleep 0.05
    done
    return 1
}

# ---- B: kill -9 of a backend ----
for tag in dur dur_big; do
    open_tx "$tag" 5000
    before=$(grep -E '^[0-9]+$' "$TMP/open.out" | sed -n 1p); pid=$(grep -E '^[0-9]+$' "$TMP/open.out" | sed -n 2p)
    kill -9 "$pid"
    wait_up
    after=$(next "$tag")
    check "B ($tag): after kill -9 of backend $pid, $after > $before" "$after" -gt "$before"
done
crashes=$("$CLUSTER" log "$C" 200 | grep -c "terminated by signal 9" || true)
check "B: the postmaster saw the backends killed (crash restarts)" "$crashes" -ge 2

# ---- C: immediate shutdown ----
for tag in dur dur_big; do
    open_tx "$tag" 5000
    before=$(grep -E '^[0-9]+$' "$TMP/open.out" | sed -n 1p)
    "$CLUSTER" stop "$C" immediate >/dev/null 2>&1
    cluster_start "$C" 28972 "${OPTS[@]}"
    after=$(next "$tag")
    check "C ($tag): after stop -m immediate, $after > $before" "$after" -gt "$before"
done

# ---- D: clean restart ----
before=$(q "$C" "SELECT max(segment_next('dur')) FROM generate_series(1, 1234)")
"$CLUSTER" stop "$C" fast >/dev/null 2>&1
cluster_start "$C" 28972 "${OPTS[@]}"
after=$(next dur)
check "D: after a clean restart, $after > $before" "$after" -gt "$before"

# ---- E: refill at a WAL page boundary ----
q "$C" "SELECT segment_create('walpage', 10)" "SELECT segment_next('walpage') FROM generate_series(1, 25)" >/dev/null
errs=0
for i in $(seq 1 5); do
    out=$(q "$C" "SELECT pg_switch_wal()" "SELECT max(segment_next('walpage')) FROM generate_series(1, 30)" 2>&1) || errs=$((errs + 1))
done
check "E: refills right after pg_switch_wal() succeed" "$errs" -eq 0
finish
