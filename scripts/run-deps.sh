#!/usr/bin/env bash
# scripts/run-deps.sh — the first step of `make run`: what the demo needs (scripts/deps.sh --run
# MAJOR), and, on a machine where that server or pgrx's configuration for it is not there yet,
# the extension's Rust dependencies compiled at the same time.
#
# Usage: scripts/run-deps.sh MAJOR      (from the Makefile; MAJOR 15-19)
#
# On a fresh machine the apt packages (PostgreSQL, its headers, libclang) take 30-60 s and compiling
# the dependencies about a minute; one waits on the network and dpkg, the other on the CPU. So while
# scripts/deps.sh installs, `cargo build --profile demo` compiles everything that does not need a
# PostgreSQL: syn, tokio, rustls, bindgen, pgrx's macros, pg_idgen_core. It is given an empty
# PGRX_HOME, so the one unit that reads the server (pgrx-pg-sys's build script, bindgen over the
# server's headers) fails at once instead of reading a server that apt is still unpacking; that
# failure is expected and only logged. Once the server is installed the compile is stopped, and
# scripts/ext.sh (the Makefile's install-run) goes on from what it finished: the same profile,
# features and flags, so cargo reuses every crate compiled so far. No cargo-pgrx is built or needed.
#
# Where the server is already there, nothing runs alongside: the build that follows is cargo's
# usual incremental one (an empty PGRX_HOME would make cargo run the server's build script again
# for nothing).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
MAJOR=${1:?usage: scripts/run-deps.sh MAJOR}
export PATH="$HOME/.cargo/bin:$PATH"
PGENV_NO_RESOLVE=1 . scripts/pgenv.bash          # pg_config_for

log() { printf '[run] %s\n' "$*" >&2; }

cfg=$(pg_config_for "$MAJOR")
ahead=1
# the server is there: nothing to overlap (the build that follows is cargo's usual incremental one)
[ ! -x "$cfg" ] || ahead=0
command -v cargo >/dev/null 2>&1 || ahead=0

# 19 is built inside its sid root, which scripts/deps.sh makes first: nothing to compile ahead
[ "$MAJOR" != 19 ] || ahead=0
if [ $ahead = 0 ]; then
    exec scripts/deps.sh --run "$MAJOR"
fi

mkdir -p target
LOG=target/run-deps-ahead.log
EMPTY=$(mktemp -d)
ahead_pid=
# the compile runs in a session of its own (setsid): stopping it (an interrupt, a failure of
# scripts/deps.sh) stops cargo and every rustc it started, not cargo alone
stop_ahead() {
    if [ -n "$ahead_pid" ] && kill -0 "$ahead_pid" 2>/dev/null; then
        kill -TERM -- "-$ahead_pid" 2>/dev/null || true
        wait "$ahead_pid" 2>/dev/null || true
    fi
    rm -rf "$EMPTY"
}
trap stop_ahead EXIT
trap 'exit 130' INT TERM
log "compiling the Rust dependencies while scripts/deps.sh installs (log: $LOG)"
# PGRX_PG_CONFIG_PATH / _AS_ENV would name a server to pgrx-pg-sys's build script: not yet
env -u PGRX_PG_CONFIG_PATH -u PGRX_PG_CONFIG_AS_ENV PGRX_HOME="$EMPTY" \
    setsid scripts/cargo.sh build --profile demo -p pg_idgen -p pg_idgen_sqlgen --no-default-features --features "pg_idgen/pg$MAJOR" --keep-going \
    >"$LOG" 2>&1 </dev/null &
ahead_pid=$!
scripts/deps.sh --run "$MAJOR"    # on failure: exit, and stop_ahead stops the compile
# The server is there: the compile ahead is stopped rather than waited for, and the build that
# follows (scripts/ext.sh) goes on from the crates it finished, with pgrx-pg-sys's build script
# (bindgen over the server's headers) starting as soon as its own dependencies are compiled,
# beside the others, instead of after all of them. Its exit status is not looked at: a failure
# shows again, with its message, in that build.
stop_ahead
ahead_pid=
log "the compile ahead stopped when the server was installed: $(grep -c '^ *Compiling' "$LOG") crates started"
