#!/usr/bin/env bash
# security/002_ff1_bound — uid_ff1_encrypt/uid_ff1_decrypt cannot occupy a backend: the input is bounded
# (a domain of at most 2^1024 values: 308 numerals of radix 10, 1024 of radix 2; tweaks up to
# 1024 bytes; longer is 54000 at once, before any work), so one call is short and a statement
# of many calls ends on statement_timeout and on pg_cancel_backend between two calls.
#   A  90,000 numerals (7 s of FF1 before the bound) under a 1 s statement_timeout: 54000 at once.
#   B  the largest inputs work (and decrypt back).
#   C  a statement of many largest calls, sized to run >= 60 s in full: statement_timeout = 1 s
#      ends it with 57014 long before it could have finished, and the session is usable.
#   D  the same statement in another session, cancelled once it runs: 57014, and the backend is
#      idle again long before the statement could have finished.
set -euo pipefail
. "$(dirname "$0")/../lib.bash"

KEY="'\\x2B7E151628AED2A6ABF7158809CF4F3CEF4359D8D580AA4F7F036D6F04FC6A94'::bytea"
cluster_start ff1 28954
q ff1 "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null

# ---- A ----
expect_sql_error ff1 54000 'too many for FF1 with radix 10: at most 308' \
    "SET statement_timeout = '1s'" \
    "SELECT uid_ff1_encrypt($KEY, 10, array_fill(7, ARRAY[90000]))"
expect_sql_error ff1 54000 'too many for FF1 with radix 10: at most 308' \
    "SELECT uid_ff1_decrypt($KEY, 10, array_fill(7, ARRAY[309]))"
expect_sql_error ff1 54000 'at most 1024' "SELECT uid_ff1_encrypt($KEY, 2, array_fill(1, ARRAY[1025]))"
expect_sql_error ff1 54000 'tweak of 1025 bytes is too long' \
    "SELECT uid_ff1_encrypt($KEY, 10, '{1,2,3,4,5,6}', decode(repeat('ab', 1025), 'hex'))"
expect_sql_error ff1 54000 'at most 64' "SELECT uid_ff1_encrypt($KEY, 65536, array_fill(1, ARRAY[65]))"

# ---- B ----
check "308 numerals of radix 10 encrypt and decrypt back" \
    "$(q ff1 "WITH x AS (SELECT array_agg((g * 7) % 10) AS p FROM generate_series(1, 308) g)
              SELECT uid_ff1_decrypt($KEY, 10, uid_ff1_encrypt($KEY, 10, p, '\\x0102'::bytea), '\\x0102'::bytea) = p
                     AND uid_ff1_encrypt($KEY, 10, p) <> p FROM x")" == t
check "1024 numerals of radix 2, 64 of radix 65536, a 1024-byte tweak" \
    "$(q ff1 "SELECT cardinality(uid_ff1_encrypt($KEY, 2, array_fill(1, ARRAY[1024]))) = 1024
                 AND cardinality(uid_ff1_encrypt($KEY, 65536, array_fill(65535, ARRAY[64]))) = 64
                 AND cardinality(uid_ff1_encrypt($KEY, 10, '{1,2,3,4,5,6}', decode(repeat('ab', 1024), 'hex'))) = 6")" == t

# ---- C ----
# the cost of one largest call, measured here (this machine, this build): 200 calls
per_call_us=$(q ff1 "SELECT set_config('ff1.t0', clock_timestamp()::text, false)" \
    "SELECT count(uid_ff1_encrypt($KEY, 10, array_fill((g % 10)::int, ARRAY[308]))) FROM generate_series(1, 200) g" \
    "SELECT (extract(epoch FROM clock_timestamp() - current_setting('ff1.t0')::timestamptz) * 1e6 / 200)::bigint" | tail -1)
check "one largest call takes a measurable time (us)" "$per_call_us" -gt 0
calls=$(( 60 * 1000000 / per_call_us + 1 ))    # a statement of >= 60 s in full
log "one call of 308 numerals: ${per_call_us} us; the long statement makes $calls calls (>= 60 s)"
LONG="SELECT count(uid_ff1_encrypt($KEY, 10, array_fill((g % 10)::int, ARRAY[308]))) FROM generate_series(1, $calls) g"
t0=$(date +%s%N)
out=$(q ff1 '\set VERBOSITY verbose' "SET statement_timeout = '1s'" "$LONG" 2>&1 || true)
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
check_match "statement_timeout ends the long statement: 57014" "$out" 'ERROR:  57014: canceling statement due to statement timeout'
check "it ended long before the full run could (ms, full >= 60000)" "$ms" -lt 30000
check "the cluster answers afterwards" "$(q ff1 "SELECT 1")" == 1

# ---- D ----
q ff1 '\set VERBOSITY verbose' "SET application_name = 'ff1_long'" "$LONG" >"$TMP/long.out" 2>&1 &
BG_PIDS+=($!)
bg=$!
pid=""
for _ in $(seq 1 200); do   # wait (at most 20 s) until the statement runs
    pid=$(q ff1 "SELECT pid FROM pg_stat_activity WHERE application_name = 'ff1_long' AND state = 'active' AND query LIKE '%uid_ff1_encrypt%'")
    [ -n "$pid" ] && break
    sleep 0.1
done
check "the long statement is running (pid)" "${pid:-0}" -gt 0
t0=$(date +%s%N)
check "pg_cancel_backend" "$(q ff1 "SELECT pg_cancel_backend($pid)")" == t
state=""
for _ in $(seq 1 300); do   # wait (at most 30 s) until the backend is no longer running it
    state=$(q ff1 "SELECT coalesce((SELECT state FROM pg_stat_activity WHERE pid = $pid), 'gone')")
    [ "$state" != active ] && break
    sleep 0.1
done
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
wait "$bg" || true
check "the backend stopped running it" "$state" != active
check "it stopped long before the full run could (ms, full >= 60000)" "$ms" -lt 30000
check_match "the session got 57014" "$(cat "$TMP/long.out")" 'ERROR:  57014: canceling statement due to user request'

finish
