#!/usr/bin/env bash
# scripts/citus.sh — Citus 14.0.1, built from the vendored tarball and installed into one
# PostgreSQL major, for tests/citus (make test-citus) and bench/citus.sh. No network.
#
# Usage: scripts/citus.sh MAJOR        build (once per machine) and install into that major;
#                                      prints the installed citus.so path
#        scripts/citus.sh status MAJOR exit 0 when citus is installed into that major from this
#                                      tarball, else 1 (nothing built)
#   Env: CITUS_TARBALL (default <repo>/../shared/vendor/citus-14.0.1.tar.gz),
#        CITUS_JOBS (make -j, default 2), PG_IDGEN_PG_HOME (default /var/cache/pg_idgen).
#
# Cached: the build tree lives in $PG_IDGEN_PG_HOME/citus/<tarball sha256, 12>-pg<MAJOR>-<md5 of
# the pg_config path and its --version, 8>, with a stamp `built` when make succeeded; a second run
# only compares the installed citus.so with the built one (a fast no-op), and after the
# PostgreSQL install was replaced (make deps unpacking a wheel again) installs the cached build
# again (`make install`, seconds) without compiling. `make clean-servers` removes the cache with
# the servers.
# Build (the notes of ../shared/vendor/README.md): configure --without-libcurl --without-lz4
# --without-zstd, CFLAGS = pg_config --cflags without -Wmissing-variable-declarations (Debian's
# gcc 12 rejects it), make -j2 under nice; 1.5-4 minutes on 2 cores. citus.so finds that
# installation's libpq through its RUNPATH.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log() { printf '[citus] %s\n' "$*" >&2; }

mode=install
if [ "${1:-}" = status ]; then mode=status; shift; fi
MAJOR=${1:-}
[[ $MAJOR =~ ^[0-9]+$ ]] || { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ "$MAJOR" -ge 16 ] || { log "Citus 14.0.1 supports PostgreSQL 16, 17 and 18, not $MAJOR"; exit 1; }

PGENV_NO_RESOLVE=1 . "$ROOT/scripts/pgenv.bash"
CFG=$(pg_config_for "$MAJOR")
[ -x "$CFG" ] || { log "PostgreSQL $MAJOR is not installed ($CFG missing); run: make deps"; exit 1; }
TARBALL=${CITUS_TARBALL:-$ROOT/../shared/vendor/citus-14.0.1.tar.gz}
[ -f "$TARBALL" ] || { log "the Citus tarball is missing: $TARBALL (set CITUS_TARBALL)"; exit 1; }
JOBS=${CITUS_JOBS:-2}

SHA=$(sha256sum "$TARBALL" | cut -c1-12)
CFG_ID=$(printf '%s|%s' "$CFG" "$("$CFG" --version)" | md5sum | cut -c1-8)
CACHE=$PG_IDGEN_PG_HOME/citus/$SHA-pg$MAJOR-$CFG_ID
PKGLIB=$("$CFG" --pkglibdir)
SHAREDIR=$("$CFG" --sharedir)

installed() {
    [ -f "$CACHE/built" ] && [ -f "$CACHE/src/citus.so" ] && [ -f "$SHAREDIR/extension/citus.control" ] \
        && cmp -s "$CACHE/src/citus.so" "$PKGLIB/citus.so"
}
if installed; then
    [ $mode = status ] || log "Citus present in PostgreSQL $MAJOR ($PKGLIB/citus.so, build $CACHE)"
    [ $mode = status ] || echo "$PKGLIB/citus.so"
    exit 0
fi
[ $mode = install ] || exit 1

t0=$SECONDS
if [ ! -f "$CACHE/built" ]; then
    log "building Citus from $(basename "$TARBALL") (sha256 $SHA…) against $("$CFG" --version) into $CACHE"
    rm -rf "$CACHE" && mkdir -p "$CACHE"
    chmod 755 "$PG_IDGEN_PG_HOME" "$PG_IDGEN_PG_HOME/citus" 2>/dev/null || true
    tar xzf "$TARBALL" -C "$CACHE"
    mv "$CACHE"/citus-* "$CACHE/tree"
    cd "$CACHE/tree"
    ./configure PG_CONFIG="$CFG" --without-libcurl --without-lz4 --without-zstd >"$CACHE/configure.log" 2>&1 \
        || { tail -30 "$CACHE/configure.log" >&2; log "configure failed ($CACHE/configure.log)"; exit 1; }
    cflags=$("$CFG" --cflags | sed 's/-Wmissing-variable-declarations//g')
    nice -n 10 make -j"$JOBS" CFLAGS="$cflags" >"$CACHE/make.log" 2>&1 \
        || { grep -E 'error|Error' "$CACHE/make.log" | tail -20 >&2; log "make failed ($CACHE/make.log)"; exit 1; }
    mkdir -p "$CACHE/src"
    cp src/backend/distributed/citus.so "$CACHE/src/citus.so"
    touch "$CACHE/built"
    log "built in $((SECONDS - t0)) s"
fi
cd "$CACHE/tree"
make install >"$CACHE/install.log" 2>&1 || { tail -20 "$CACHE/install.log" >&2; log "make install failed"; exit 1; }
installed || { log "citus.so in $PKGLIB differs from the build after make install"; exit 1; }
log "Citus installed into PostgreSQL $MAJOR ($PKGLIB/citus.so) in $((SECONDS - t0)) s"
echo "$PKGLIB/citus.so"
