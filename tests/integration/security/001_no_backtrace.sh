#!/usr/bin/env bash
# security/001_no_backtrace — no error carries a Rust backtrace, whatever RUST_BACKTRACE says in the
# server's environment (RUST_BACKTRACE=1, then =full): a sample of error paths — errors the
# extension raises itself, and PostgreSQL errors raised inside a call from Rust (a trigger under
# SPI: the 55006 of uid_mask_key_drop; a statement run by pg_idgen_migrate_as_owner) — shown with
# VERBOSITY verbose and every CONTEXT line: no "backtrace", no frame line ("  12: name" or
# "at src/x.rs:12"), in the client's output and in the server log.
set -euo pipefail
. "$(dirname "$0")/../lib.bash"

ERRORS=(
    "SELECT uid_mask_key_drop('bt', 1)"                                 # 55006, from the guard trigger under SPI
    "SELECT pg_idgen_migrate_as_owner('bt_t', 'ALTER TABLE public.bt_t ADD COLUMN x no_such_type')"  # 42704 under SPI
    "SELECT pg_idgen_migrate_as_owner('bt_t', 'SELECT 1/0')"           # 22012 under SPI
    "SELECT * FROM uid_migrate_key('bt_t', 'v')"                        # plpgsql, 55000
    "SELECT snowflake_at(now(), 5000)"                                  # 22003, worker id out of range
    "SELECT segment_next('no_such_tag')"
    "SELECT uid_decode(-1)"
    "SELECT uid_mask(5, 'no_such_key')"
    "SELECT uid_unmask_text('0zzzz', 'bt', 'crockford')"
    "SELECT uid_ff1_encrypt('\\x00'::bytea, 10, '{1,2,3}', '\\x'::bytea)"
    "SELECT uid_layout_register('bt_layout', '2020-01-01Z', 41, 10, 12)"  # 42710, registered already
    "SELECT uid_from_text('!!', 'base62')"
)

port=28955
for style in 1 full; do
    CLUSTER_RUST_BACKTRACE=$style cluster_start "bt_$style" "$port"
    port=$((port + 1))
    pm=$(head -1 "$("$CLUSTER" pgdata "bt_$style")/postmaster.pid")
    check "bt_$style: the postmaster runs with RUST_BACKTRACE=$style" \
        "$(tr '\0' '\n' <"/proc/$pm/environ" | grep -c "^RUST_BACKTRACE=$style\$")" -eq 1
    q "bt_$style" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
        "SELECT uid_mask_key_create('bt')" "CREATE TABLE bt_t (id serial PRIMARY KEY, v int)" \
        "SELECT uid_layout_register('bt_layout', '2020-01-01Z', 41, 10, 12)" >/dev/null
    out="" failed=0
    for sql in "${ERRORS[@]}"; do
        one=$(q "bt_$style" '\set VERBOSITY verbose' '\set SHOW_CONTEXT always' "$sql" 2>&1 || true)
        grep -q '^ERROR:' <<<"$one" || { failed=1; ko "bt_$style: [$sql] did not fail: $one"; }
        out+=$one$'\n'
    done
    check "bt_$style: every sample failed with an ERROR" "$failed" -eq 0
    check "bt_$style: no error code XX000" "$(grep -c 'ERROR:  XX000' <<<"$out")" -eq 0
    check_match "bt_$style: the 55006 of uid_mask_key_drop is there" "$out" 'ERROR:  55006: cannot drop mask key "bt" version 1'
    check "bt_$style: no 'backtrace' in any error" "$(grep -ci 'backtrace' <<<"$out")" -eq 0
    check "bt_$style: no frame line in any error" \
        "$(grep -cE '^ +[0-9]+: |^ +at .*\.rs:[0-9]+' <<<"$out")" -eq 0
    log=$("$CLUSTER" log "bt_$style" 400 2>/dev/null || true)
    check "bt_$style: no backtrace in the server log either" \
        "$(grep -ciE 'stack backtrace|^ +[0-9]+: [a-z_:<]|^ +at .*\.rs:[0-9]+' <<<"$log")" -eq 0
done

finish
