#!/usr/bin/env bash
# lease/014_tls_files — the files pg_idgen.registry names (sslrootcert, sslcert, sslkey,
# passfile) are read only if they are regular files, and a FIFO or a device there never hangs
# the lease worker. One cluster on port 29165 (+ IT_PORT_OFFSET), fixed mode for worker id 1; the
# registry named is a closed port (29166): the files are read before any connection.
#  1. sslrootcert a FIFO without a writer (sslmode verify-full): the worker's detail says
#     "the file of sslrootcert is not a regular file" — an ordinary open() of it blocks for ever.
#  2. sslrootcert /dev/zero (a device: reading it never ends): the same refusal.
#  3. sslcert a FIFO (sslkey a regular 0600 file, sslmode require): "the file of sslcert is not a
#     regular file"; passfile a FIFO: "the password file (passfile) is not a regular file".
#  4. Back to sslrootcert the FIFO: `pg_ctl stop -m fast` finishes (bounded at 30 s by the test;
#     a worker blocked in the open never answered SIGTERM and the stop never finished).
#  5. A registry that accepts connections and never answers (port 29167), lease_ttl 60: each
#     registry operation may wait 10 s; the worker waits in one (the registry accepted it), and
#     `pg_ctl stop -m fast` finishes within 5 s: the worker stops waiting at SIGTERM.
# Pass/fail never depends on timing: the waits are for states, with a generous bound (90 s).
set -euo pipefail
. "$(dirname "$0")/../lib.bash"
. "$(dirname "$0")/../lease.bash"

N=it_ltf
DEAD="host=127.0.0.1 port=$(itport 29166) user=postgres dbname=postgres connect_timeout=2"
FIFO=$TMP/fifo
mkfifo "$FIFO"
KEY=$TMP/client.key
echo "not a key" >"$KEY"
chmod 600 "$KEY"
# unblocks whoever opened the FIFO for reading (the worker of an unfixed build), so that the
# server can be stopped and destroyed whatever happened
unblock() { timeout 2 bash -c "exec 3>'$FIFO'; exec 3>&-" 2>/dev/null || true; }
# the listener of part 5 writes its pid there (python3 may run under a wrapper: $! is not it)
PYPID=$TMP/listener.pid
trap 'rc=$?; unblock; [ -s "$PYPID" ] && kill "$(cat "$PYPID")" 2>/dev/null; (exit $rc); cleanup' EXIT

cluster_start "$N" 29165 -c pg_idgen.lease_mode=fixed -c pg_idgen.worker_id=1 -c pg_idgen.lease_ttl=6 -c pg_idgen.lease_margin=1
q "$N" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
use() { q "$N" "ALTER SYSTEM SET pg_idgen.registry = '${1//\'/\'\'}'" "SELECT pg_reload_conf()" >/dev/null; }
# between the steps: the registry string without files, until the worker says it cannot connect
# (so that each step's detail is the worker's answer to that step's setting)
plain() {
    use "$DEAD"
    wait_for "$1: (without files: the worker tries to connect)" detail_matches "$N" 'cannot connect to the registry'
}

# ---- 1. a FIFO as sslrootcert ----
use "$DEAD sslmode=verify-full sslrootcert=$FIFO"
wait_for "1: sslrootcert a FIFO: 'not a regular file' in the detail" \
    detail_matches "$N" 'the file of sslrootcert is not a regular file'
expect_sql_error "$N" 55000 'the file of sslrootcert is not a regular file' "SELECT snowflake_next()"

# ---- 2. a device as sslrootcert ----
plain 2
use "$DEAD sslmode=verify-full sslrootcert=/dev/zero"
wait_for "2: sslrootcert /dev/zero: 'not a regular file' in the detail" \
    detail_matches "$N" 'the file of sslrootcert is not a regular file'

# ---- 3. sslcert, passfile ----
plain 3
use "$DEAD sslmode=require sslcert=$FIFO sslkey=$KEY"
wait_for "3: sslcert a FIFO: 'not a regular file' in the detail" \
    detail_matches "$N" 'the file of sslcert is not a regular file'
plain 3
use "$DEAD passfile=$FIFO"
wait_for "3: passfile a FIFO: 'not a regular file' in the detail" \
    detail_matches "$N" 'the password file \(passfile\) is not a regular file'

# ---- 4. the server stops fast ----
plain 4
use "$DEAD sslmode=verify-full sslrootcert=$FIFO"
wait_for "4: sslrootcert the FIFO again" detail_matches "$N" 'the file of sslrootcert is not a regular file'
t0=$(date +%s.%N)
rc=0
timeout 30 "$CLUSTER" stop "$N" fast || rc=$?
took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
check "4: pg_ctl stop -m fast finished (exit status; 124: still waiting after 30 s), in $took s" "$rc" -eq 0

# ---- 5. a registry that never answers ----
PH=$(itport 29167)
ACC=$TMP/accepted
python3 -c '
import os, socket, sys
open(sys.argv[3], "w").write(str(os.getpid()))
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(16)
held = []
while True:
    c, _ = s.accept(); held.append(c)
    open(sys.argv[2], "a").write("accepted\n")
' "$PH" "$ACC" "$PYPID" &
BG_PIDS+=($!)
cluster_start "$N" 29165 -c pg_idgen.lease_mode=fixed -c pg_idgen.worker_id=1 -c pg_idgen.lease_ttl=60 -c pg_idgen.lease_margin=5 \
    -c "pg_idgen.registry=host=127.0.0.1 port=$PH user=postgres dbname=postgres"
accepted() { [ -s "$ACC" ]; }
wait_for "5: the registry that never answers accepted the worker's connection" accepted
t0=$(date +%s.%N)
rc=0
timeout 30 "$CLUSTER" stop "$N" fast || rc=$?
took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
check "5: pg_ctl stop -m fast finished (exit status)" "$rc" -eq 0
check "5: ... within 5 s (each registry operation may wait 10 s); took $took s" "$(awk -v t="$took" 'BEGIN { print (t < 5) ? 1 : 0 }')" -eq 1
finish
