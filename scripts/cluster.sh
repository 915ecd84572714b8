#!/usr/bin/env bash
# scripts/cluster.sh — throwaway PostgreSQL clusters (15, 16, 17 or 18) for pg_idgen.
#
# Usage:
#   scripts/cluster.sh start   NAME PORT [postgres options...]  # initdb on first use, then (re)start
#   scripts/cluster.sh init    NAME                             # initdb only (e.g. a pg_upgrade target)
#   scripts/cluster.sh stop    NAME [smart|fast|immediate]      # default: fast; no-op if not running
#   scripts/cluster.sh restart NAME [postgres options...]       # stop fast + start on the stored port
#   scripts/cluster.sh crash   NAME                             # SIGKILL the postmaster and its children
#   scripts/cluster.sh status  NAME                             # exit 0 if running
#   scripts/cluster.sh psql    NAME [psql args...]              # psql -X -v ON_ERROR_STOP=1 as postgres
#   scripts/cluster.sh env     NAME                             # prints `export PGHOST=...` lines (eval them)
#   scripts/cluster.sh port|pgdata|sockdir NAME                 # print one value
#   scripts/cluster.sh log     NAME [LINES]                     # tail startup + server log
#   scripts/cluster.sh faketime NAME OFFSET                     # e.g. -5s, +0, -2m, +1h (see below)
#   scripts/cluster.sh destroy NAME                             # stop immediate + rm -rf
#   scripts/cluster.sh standby NAME PRIMARY PORT [postgres options...]
#                                    # streaming standby of running PRIMARY: pg_basebackup -R -X stream
#                                    # into .run/NAME/data (must not exist), then start as above
#   scripts/cluster.sh promote NAME                             # pg_ctl promote -w (standby -> primary)
#   scripts/cluster.sh list | stopall | rundir
#   scripts/cluster.sh pgbin | pgconfig | psqlbin | pgenv      # the selected PostgreSQL's programs
#
# The PostgreSQL major is chosen by PG=NN (15 default, 16, 17, 18) or PG_CONFIG=<pg_config>,
# resolved by scripts/pgenv.bash (the one place that knows where each major lives). A cluster
# remembers the major that made it (data/PG_VERSION): start refuses to run it with another
# major; stop, destroy, stopall and status use the binaries of the cluster's own major.
#
# Examples:
#   scripts/cluster.sh start t1 28901 -c pg_idgen.worker_id=7 -c pg_idgen.max_drift_ms=0
#   eval "$(scripts/cluster.sh env t1)"; psql -c 'select snowflake_next()'
#
# Layout (.run is <repo>/.run, or /tmp/pg_idgen-run when the postgres user
# cannot reach the repo; PG_IDGEN_RUN_DIR overrides): .run/NAME/ (owned by postgres, mode 755) holds
#   data/            PGDATA (initdb -A trust -U postgres --locale=C.UTF-8 -E UTF8)
#   .s.PGSQL.PORT    the unix socket (PGHOST=.run/NAME)
#   port             the port used by the last start
#   startup.log      pg_ctl -l log (errors before the logging collector starts)
#   faketime         the libfaketime offset file, when faketime is enabled
# The server log proper is data/log/postgresql.log (see pgrx-config/postgresql.conf).
# data/postgresql.conf gets, once, `include '<repo>/pgrx-config/postgresql.conf'`
# (when the postgres user cannot read the repo: `include 'pg_idgen-shared.conf'`, a copy of it in
# the data directory that each start refreshes) followed by `include 'cluster.conf'`, which each start rewrites with the port
# and the socket directory. Extra arguments to start are handed to postgres
# unchanged (pg_ctl -o), so `-c name=value` overrides any file setting.
# PostgreSQL refuses to run as root, so initdb/pg_ctl run as the `postgres`
# OS user (runuser when we are root, sudo -u postgres otherwise).
#
# ---------------------------------------------------------------------------
# Fake clock (libfaketime 0.9.10, Debian package `faketime`), verified on bookworm:
#   Start with CLUSTER_FAKETIME=1 (offset file .run/NAME/faketime) or with
#   FAKETIME_FILE=/some/file (any path the postgres user can read). The
#   postmaster (and so every backend and background worker it forks) then runs with
#     LD_PRELOAD=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1
#     FAKETIME_TIMESTAMP_FILE=<offset file>   # contents: one relative offset, e.g. "+0", "-5s", "+2m"
#     FAKETIME_NO_CACHE=1                     # re-read the file on EVERY time call
#     FAKETIME_DONT_FAKE_MONOTONIC=1          # only the wall clock moves; CLOCK_MONOTONIC stays real
#                                             # (without it 0.9.10 returns wall-clock-like values for it)
#     FAKETIME_DISABLE_SHM=1                  # no /dev/shm state shared with (and owned by) pg_ctl
#   Writing a new offset into the file (`cluster.sh faketime NAME -5s`, or just
#   `echo -5s > file`) moves the clock of the RUNNING postmaster and of RUNNING
#   backends at their next clock read (gettimeofday/clock_gettime/time), so
#   `select clock_timestamp()` jumps back 5 s in an open session. The offset is
#   always relative to the real clock, not cumulative: "+0" restores real time.
#   Set FAKETIME_FAKE_MONOTONIC=1 to fake CLOCK_MONOTONIC too, and
#   FAKETIME_CACHE_SECONDS=N to use FAKETIME_CACHE_DURATION=N instead of
#   FAKETIME_NO_CACHE (cheaper, but a change can take up to N s to be seen).
#   Clients (psql) are not preloaded: only the server sees the fake time.
# ---------------------------------------------------------------------------
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=pgenv.bash
if ! . "$ROOT/scripts/pgenv.bash"; then
    # the selected major is not installed: only what needs no programs of it may go on
    case ${1:-} in start|init|psql|standby|promote|pgbin|pgconfig|psqlbin|pgenv|env) exit 1 ;; esac
    PGBIN=/nonexistent PSQL=/nonexistent
fi
PG_USER=postgres
FAKETIME_LIB=${FAKETIME_LIB:-/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1}
SHARED_CONF=$ROOT/pgrx-config/postgresql.conf

die() { printf 'cluster.sh: %s\n' "$*" >&2; exit 1; }
note() { printf '[cluster] %s\n' "$*" >&2; }

usage() { sed -n '2,/^# Examples/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2; }

# run a command as the postgres OS user
as_pg_here() {
    if [ "$(id -un)" = "$PG_USER" ]; then
        "$@"
    elif [ "$(id -u)" -eq 0 ]; then
        runuser -u "$PG_USER" -- "$@"
    else
        sudo -n -u "$PG_USER" -- "$@"
    fi
}
# ... from / when the postgres user cannot enter the current directory (a checkout under /root):
# there pg_ctl and the server would warn 'could not change directory to "<cwd>"', and a relative
# path could not be read by that user anyway
AS_PG_CWD=
as_pg() {
    if [ -z "$AS_PG_CWD" ]; then
        AS_PG_CWD=.; as_pg_here test -x "$PWD" 2>/dev/null || AS_PG_CWD=/
    fi
    if [ "$AS_PG_CWD" = / ]; then (cd / && as_pg_here "$@"); else as_pg_here "$@"; fi
}

# as root: chown; otherwise sudo
priv() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo -n "$@"; fi; }

# Where clusters live: $PG_IDGEN_RUN_DIR, else <repo>/.run when the postgres user
# can reach the repo (e.g. /work/main, mode 755), else /tmp/pg_idgen-run (e.g. a
# checkout under /root, mode 700). `cluster.sh rundir` prints the choice.
if [ -n "${PG_IDGEN_RUN_DIR:-}" ]; then
    RUN_DIR=$PG_IDGEN_RUN_DIR
elif as_pg test -x "$ROOT" 2>/dev/null; then
    RUN_DIR=$ROOT/.run
else
    RUN_DIR=/tmp/pg_idgen-run
fi

check_name() {
    [ -n "${1:-}" ] || usage
    [[ $1 =~ ^[A-Za-z0-9_.-]+$ ]] || die "bad cluster name '$1'"
}

set_paths() {
    NAME=$1
    CDIR=$RUN_DIR/$NAME
    PGDATA_DIR=$CDIR/data
}

stored_port() { cat "$CDIR/port" 2>/dev/null || die "cluster '$NAME' has no port (never started?)"; }

# bindir of the major that made the cluster in $1 (default PGDATA_DIR), else the selected one
own_bin() {
    local d=${1:-$PGDATA_DIR} v
    v=$(cat "$d/PG_VERSION" 2>/dev/null || true)
    if [ -n "$v" ] && [ "$v" != "$PG" ]; then pg_bindir_for "$v" 2>/dev/null || echo "$PGBIN"; else echo "$PGBIN"; fi
}

is_running() {
    [ -f "$PGDATA_DIR/postmaster.pid" ] || return 1
    as_pg "$(own_bin)/pg_ctl" -D "$PGDATA_DIR" status >/dev/null 2>&1
}

postmaster_pid() { head -1 "$PGDATA_DIR/postmaster.pid" 2>/dev/null; }

show_logs() {
    local n=${1:-40}
    if [ -f "$CDIR/startup.log" ]; then
        echo "==> $CDIR/startup.log (last $n lines)" >&2
        tail -n "$n" "$CDIR/startup.log" >&2 || true
    fi
    if [ -f "$PGDATA_DIR/log/postgresql.log" ]; then
        echo "==> $PGDATA_DIR/log/postgresql.log (last $n lines)" >&2
        tail -n "$n" "$PGDATA_DIR/log/postgresql.log" >&2 || true
    fi
}

ensure_dirs() {
    mkdir -p "$RUN_DIR"
    chmod 755 "$RUN_DIR"
    if [ ! -d "$CDIR" ]; then
        mkdir -p "$CDIR"
    fi
    priv chown "$PG_USER:$PG_USER" "$CDIR"
    chmod 755 "$CDIR" 2>/dev/null || priv chmod 755 "$CDIR"
    # the postgres user must be able to traverse every parent of the run dir
    local d=$RUN_DIR
    while [ "$d" != "/" ]; do
        as_pg test -x "$d" || die "postgres user cannot traverse $d (chmod o+x it)"
        d=$(dirname "$d")
    done
}

# The shared settings file a cluster includes: the repo's own, or, when the postgres user cannot
# read it (a checkout in a home directory of mode 700: /root, or a home made by Debian 12's
# adduser), a copy in the cluster's directory that each start refreshes
# (the copy lives in the data directory, included by a relative path: a standby made by
# pg_basebackup gets its own copy with the rest)
SHARED_COPY=pg_idgen-shared.conf
cluster_shared_conf() {
    if as_pg test -r "$SHARED_CONF" 2>/dev/null; then echo "$SHARED_CONF"; else echo "$SHARED_COPY"; fi
}
refresh_shared_conf() {   # a cluster that includes the copy gets the checkout's current settings
    grep -qxF "include '$SHARED_COPY'" "$PGDATA_DIR/postgresql.conf" 2>/dev/null || return 0
    as_pg sh -c "cat > '$PGDATA_DIR/$SHARED_COPY'" < "$SHARED_CONF"
}

do_initdb() {
    [ -f "$SHARED_CONF" ] || die "missing $SHARED_CONF"
    note "initdb $PGDATA_DIR"
    # INITDB_OPTS: extra initdb options, e.g. --no-data-checksums (18 enables checksums by
    # default; a pg_upgrade target must match its source)
    # shellcheck disable=SC2086
    as_pg "$PGBIN/initdb" -D "$PGDATA_DIR" -A trust -U "$PG_USER" \
        --locale=C.UTF-8 -E UTF8 --no-sync ${INITDB_OPTS:-} >"$CDIR/initdb.log" 2>&1 \
        || { cat "$CDIR/initdb.log" >&2; die "initdb failed"; }
    as_pg sh -c "cat >> '$PGDATA_DIR/postgresql.conf'" <<EOF

# ---- added by scripts/cluster.sh ----
include '$(cluster_shared_conf)'
include_if_exists 'cluster.conf'
EOF
    refresh_shared_conf
}

cmd_start() {
    check_name "${1:-}"; set_paths "$1"; shift
    local port=${1:-}; [ -n "$port" ] || usage; shift
    [[ $port =~ ^[0-9]+$ ]] || die "bad port '$port'"
    ensure_dirs
    if [ -f "$PGDATA_DIR/PG_VERSION" ] && [ "$(cat "$PGDATA_DIR/PG_VERSION")" != "$PG" ]; then
        die "cluster '$NAME' was made by PostgreSQL $(cat "$PGDATA_DIR/PG_VERSION"), not $PG: start it with PG=$(cat "$PGDATA_DIR/PG_VERSION"), or destroy it first (scripts/cluster.sh destroy $NAME)"
    fi
    if is_running; then
        note "$NAME is running; restarting it"
        as_pg "$PGBIN/pg_ctl" -D "$PGDATA_DIR" -m fast -w stop >/dev/null
    fi
    if [ -f "$PGDATA_DIR/PG_VERSION" ]; then refresh_shared_conf; else do_initdb; fi
    echo "$port" | as_pg tee "$CDIR/port" >/dev/null
    as_pg sh -c "cat > '$PGDATA_DIR/cluster.conf'" <<EOF
# written by scripts/cluster.sh at every start
port = $port
unix_socket_directories = '$CDIR'
EOF

    # postgres options: shell-quoted for pg_ctl -o (which goes through /bin/sh)
    local opts="" a
    for a in "$@"; do opts+="$(printf '%q' "$a") "; done

    local envs=()
    local ftfile=${FAKETIME_FILE:-}
    if [ -z "$ftfile" ] && [ "${CLUSTER_FAKETIME:-0}" = 1 ]; then ftfile=$CDIR/faketime; fi
    if [ -n "$ftfile" ]; then
        [ -e "$FAKETIME_LIB" ] || die "libfaketime not found at $FAKETIME_LIB (apt-get install faketime)"
        case $ftfile in /*) ;; *) ftfile=$PWD/$ftfile ;; esac
        # the per-cluster default file restarts at real time; an explicit FAKETIME_FILE is left as is
        if [ -z "${FAKETIME_FILE:-}" ] || [ ! -s "$ftfile" ]; then echo "+0" > "$ftfile"; fi
        chmod 644 "$ftfile" 2>/dev/null || true
        as_pg test -r "$ftfile" || die "postgres user cannot read $ftfile"
        echo "$ftfile" | as_pg tee "$CDIR/faketime_file" >/dev/null
        envs+=("LD_PRELOAD=$FAKETIME_LIB" "FAKETIME_TIMESTAMP_FILE=$ftfile")
        if [ -n "${FAKETIME_CACHE_SECONDS:-}" ]; then
            envs+=("FAKETIME_CACHE_DURATION=$FAKETIME_CACHE_SECONDS")
        else
            envs+=("FAKETIME_NO_CACHE=1")
        fi
        [ "${FAKETIME_FAKE_MONOTONIC:-0}" = 1 ] || envs+=("FAKETIME_DONT_FAKE_MONOTONIC=1")
        envs+=("FAKETIME_DISABLE_SHM=1")   # no /dev/shm segment tied to the pg_ctl process
        note "faketime enabled: offset file $ftfile (now: $(cat "$ftfile"))"
    else
        as_pg rm -f "$CDIR/faketime_file"
    fi

    # RUST_BACKTRACE is removed from the server's environment, unless CLUSTER_RUST_BACKTRACE gives
    # it a value (the test that no error carries a backtrace, whatever the environment says)
    [ -z "${CLUSTER_RUST_BACKTRACE:-}" ] || envs+=("RUST_BACKTRACE=$CLUSTER_RUST_BACKTRACE")
    note "starting $NAME on port $port (socket dir $CDIR)${opts:+ with: $opts}"
    if ! as_pg env -u RUST_BACKTRACE ${envs[@]+"${envs[@]}"} "$PGBIN/pg_ctl" -D "$PGDATA_DIR" -l "$CDIR/startup.log" \
            -w -t "${PG_START_TIMEOUT:-60}" -o "$opts" start >/dev/null; then
        show_logs 40
        die "failed to start $NAME"
    fi
}

cmd_restart() {
    check_name "${1:-}"; set_paths "$1"; shift
    local port; port=$(stored_port)
    cmd_start "$NAME" "$port" "$@"
}

cmd_stop() {
    check_name "${1:-}"; set_paths "$1"
    local mode=${2:-fast}
    case $mode in smart|fast|immediate) ;; *) die "bad stop mode '$mode'" ;; esac
    if is_running; then
        note "stopping $NAME ($mode)"
        as_pg "$(own_bin)/pg_ctl" -D "$PGDATA_DIR" -m "$mode" -w -t 60 stop >/dev/null
    fi
}

cmd_crash() {
    check_name "${1:-}"; set_paths "$1"
    is_running || die "$NAME is not running"
    local pid kids
    pid=$(postmaster_pid)
    kids=$(pgrep -P "$pid" || true)
    note "SIGKILL postmaster $pid and children: $(echo $kids)"
    kill -KILL "$pid" $kids 2>/dev/null || true
    local i
    for i in $(seq 1 50); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
}

cmd_status() {
    check_name "${1:-}"; set_paths "$1"
    if is_running; then echo "$NAME: running (pid $(postmaster_pid), port $(stored_port))"; else echo "$NAME: stopped"; return 3; fi
}

cmd_psql() {
    check_name "${1:-}"; set_paths "$1"; shift
    local port; port=$(stored_port)
    exec "$PSQL" -X -q -v ON_ERROR_STOP=1 -h "$CDIR" -p "$port" -U "$PG_USER" -d "${PGDATABASE:-postgres}" "$@"
}

cmd_env() {
    check_name "${1:-}"; set_paths "$1"
    local port; port=$(stored_port)
    cat <<EOF
export PGHOST='$CDIR'
export PGPORT='$port'
export PGUSER='$PG_USER'
export PGDATABASE='${PGDATABASE:-postgres}'
export PGDATA='$PGDATA_DIR'
EOF
}

cmd_faketime() {
    check_name "${1:-}"; set_paths "$1"
    local off=${2:-}
    [[ $off =~ ^[-+][0-9]+(\.[0-9]+)?[smhdy]?$ ]] || die "offset must look like -5s, +0, +1.5s, -2m, +1h, -1d"
    local f
    f=$(cat "$CDIR/faketime_file" 2>/dev/null) || die "$NAME was not started with faketime (CLUSTER_FAKETIME=1 or FAKETIME_FILE=...)"
    # write-then-rename so a concurrent reader never sees an empty file
    printf '%s\n' "$off" > "$f.tmp.$$"
    chmod 644 "$f.tmp.$$"
    mv -f "$f.tmp.$$" "$f"
    note "$NAME fake clock offset: $off"
}

# A streaming replica of PRIMARY laid out like any other cluster (.run/NAME/data, port, logs):
# postgresql.conf (with its includes) comes from the primary, cluster.conf is rewritten by
# cmd_start, and -R writes standby.signal + primary_conninfo (the primary's socket and port)
# into postgresql.auto.conf. The copied server log of the primary is removed.
cmd_standby() {
    check_name "${1:-}"; check_name "${2:-}"
    [ $# -ge 3 ] || usage
    local name=$1 primary=$2 port=$3; shift 3
    [[ $port =~ ^[0-9]+$ ]] || die "bad port '$port'"
    set_paths "$primary"
    is_running || die "primary '$primary' is not running"
    local psock=$CDIR pport; pport=$(stored_port)
    set_paths "$name"
    [ ! -e "$PGDATA_DIR" ] || die "'$name' already has $PGDATA_DIR (destroy it first)"
    ensure_dirs
    note "pg_basebackup of $primary (port $pport) into $PGDATA_DIR"
    as_pg "$PGBIN/pg_basebackup" -D "$PGDATA_DIR" -h "$psock" -p "$pport" -U "$PG_USER" \
        -X stream -R --checkpoint=fast >"$CDIR/basebackup.log" 2>&1 \
        || { cat "$CDIR/basebackup.log" >&2; die "pg_basebackup failed"; }
    as_pg sh -c "rm -f '$PGDATA_DIR'/log/*"
    cmd_start "$name" "$port" "$@"
}

cmd_promote() {
    check_name "${1:-}"; set_paths "$1"
    is_running || die "$NAME is not running"
    note "promoting $NAME"
    as_pg "$PGBIN/pg_ctl" -D "$PGDATA_DIR" -w -t 60 promote >/dev/null
}

cmd_destroy() {
    check_name "${1:-}"; set_paths "$1"
    if is_running; then as_pg "$(own_bin)/pg_ctl" -D "$PGDATA_DIR" -m immediate -w stop >/dev/null || true; fi
    priv rm -rf "$CDIR"
    note "destroyed $NAME"
}

cmd_list() {
    [ -d "$RUN_DIR" ] || return 0
    local d
    for d in "$RUN_DIR"/*/; do
        [ -f "$d/data/PG_VERSION" ] || continue
        set_paths "$(basename "$d")"
        if is_running; then echo "$NAME running port=$(stored_port)"; else echo "$NAME stopped"; fi
    done
}

cmd_stopall() {
    # every running postmaster below .run/: our clusters (.run/NAME/data) and
    # the ones `cargo pgrx test --pgdata .run/pgrx-test` leaves behind (.run/pgrx-test/15-PID)
    [ -d "$RUN_DIR" ] || return 0
    local pidfile d b
    while IFS= read -r pidfile; do
        d=$(dirname "$pidfile")
        b=$(own_bin "$d")
        as_pg "$b/pg_ctl" -D "$d" status >/dev/null 2>&1 || continue
        note "stopping ${d#"$RUN_DIR"/}"
        as_pg "$b/pg_ctl" -D "$d" -m fast -w -t 60 stop >/dev/null \
            || as_pg "$b/pg_ctl" -D "$d" -m immediate -w stop >/dev/null || true
    done < <(find "$RUN_DIR" -mindepth 2 -maxdepth 3 -name postmaster.pid 2>/dev/null)
}

cmd=${1:-}; [ $# -gt 0 ] && shift
case $cmd in
    start)    cmd_start "$@" ;;
    init)     check_name "${1:-}"; set_paths "$1"; ensure_dirs
              [ -f "$PGDATA_DIR/PG_VERSION" ] && die "'$1' already has $PGDATA_DIR"; do_initdb ;;
    stop)     cmd_stop "$@" ;;
    restart)  cmd_restart "$@" ;;
    crash)    cmd_crash "$@" ;;
    status)   cmd_status "$@" ;;
    psql)     cmd_psql "$@" ;;
    env)      cmd_env "$@" ;;
    port)     check_name "${1:-}"; set_paths "$1"; stored_port ;;
    pgdata)   check_name "${1:-}"; set_paths "$1"; echo "$PGDATA_DIR" ;;
    sockdir)  check_name "${1:-}"; set_paths "$1"; echo "$CDIR" ;;
    log)      check_name "${1:-}"; set_paths "$1"; show_logs "${2:-40}" 2>&1 ;;
    faketime) cmd_faketime "$@" ;;
    destroy)  cmd_destroy "$@" ;;
    standby)  cmd_standby "$@" ;;
    promote)  cmd_promote "$@" ;;
    list)     cmd_list ;;
    rundir)   echo "$RUN_DIR" ;;
    pgbin)    echo "$PGBIN" ;;
    pgconfig) echo "$PG_CONFIG" ;;
    psqlbin)  echo "$PSQL" ;;
    pgenv)    bash "$ROOT/scripts/pgenv.bash" ;;
    stopall)  cmd_stopall ;;
    *)        usage ;;
esac
