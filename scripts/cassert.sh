#!/usr/bin/env bash
# scripts/cassert.sh — an assert-enabled PostgreSQL 15 (--enable-cassert --enable-debug) for
# `make test-assert`. Idempotent and cached: a quick no-op when the install exists and was built
# from the same source version with the same configure flags.
#
# Usage: scripts/cassert.sh            build (if needed) and print the install's pg_config path
#        scripts/cassert.sh pg_config  print that path only (fails when not built)
#        scripts/cassert.sh scan FILE|DIR...  look for assertion failures and crashes in logs
#   Env: CASSERT_PREFIX (default /opt/pg15-cassert), CASSERT_CACHE (source and build tree,
#        default /var/cache/pg_idgen-cassert), CASSERT_JOBS (make -j, default 2).
#
# Source: the upstream tarball of Debian's postgresql-15 source package, WITHOUT the Debian
# patches (`apt-get source --download-only`, then `dpkg-source -x --skip-patches`), from deb-src
# lines for bookworm and bookworm-security that this script adds when missing
# (/etc/apt/sources.list.d/pg_idgen-deb-src.sources). 15.18-0+deb12u1 is the newest version the
# archive serves as source. The Debian patches must stay off: 50-per-version-dirs hard-codes
# pkglibdir to /usr/lib/postgresql/15/lib whatever the prefix, so `make install` would overwrite
# the system server's modules and pgxs. As a second line of defence the script refuses to install
# unless every directory the built pg_config reports lies under $CASSERT_PREFIX. Installs postgres_fdw (tests/integration/fleet/001_shards.sh) and pg_regress
# ($pkglibdir/pgxs/src/test/regress/pg_regress, what tests/regress/run.sh runs). Takes about
# 10 minutes on 2 cores; the compiler runs under `nice -n 10`.
set -euo pipefail

PG_SRC_VERSION=15.18-0+deb12u1
PREFIX=${CASSERT_PREFIX:-/opt/pg15-cassert}
CACHE=${CASSERT_CACHE:-/var/cache/pg_idgen-cassert}
JOBS=${CASSERT_JOBS:-2}
CONFIGURE_FLAGS=(--prefix="$PREFIX" --enable-cassert --enable-debug --without-icu --without-readline
                 "CFLAGS=-O2")
STAMP=$PREFIX/.pg_idgen-cassert
WANT="$PG_SRC_VERSION upstream ${CONFIGURE_FLAGS[*]}"

log() { printf '[cassert] %s\n' "$*" >&2; }
SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo

# scan FILE|DIR...: assertion failures and crashes in server logs. A failed Assert() prints
# `TRAP: FailedAssertion(...)` and aborts; SIGSEGV/SIGBUS/SIGILL/SIGFPE are crashes; a SIGABRT
# is one too unless the log has as many PANICs (a PANIC aborts on purpose: tests provoke some).
# A SIGKILL is what the crash tests do. Prints the findings; exit 1 if any.
if [ "${1:-}" = scan ]; then
    shift
    files=()
    while IFS= read -r f; do files+=("$f"); done < <(find "$@" -type f 2>/dev/null)
    [ ${#files[@]} -gt 0 ] || exit 0
    awk '/ PANIC: /                                { p[FILENAME]++ }
         /terminated by signal 6/                  { a[FILENAME]++; l[FILENAME] = l[FILENAME] "  " $0 "\n" }
         /TRAP:|terminated by signal (4|7|8|11):/  { print FILENAME ": " $0; bad = 1 }
         END { for (f in a) if (a[f] > p[f]) { printf "%s: %d SIGABRT without a PANIC:\n%s", f, a[f] - p[f], l[f]; bad = 1 }
               exit bad }' "${files[@]}"
    exit
fi

if [ "${1:-}" = pg_config ]; then
    [ "$(cat "$STAMP" 2>/dev/null)" = "$WANT" ] || { log "not built; run scripts/cassert.sh"; exit 1; }
    echo "$PREFIX/bin/pg_config"; exit 0
fi

if [ "$(cat "$STAMP" 2>/dev/null)" = "$WANT" ] && [ -x "$PREFIX/bin/postgres" ] \
        && "$PREFIX/bin/pg_config" --configure | grep -q -- --enable-cassert; then
    log "assert-enabled PostgreSQL present in $PREFIX ($("$PREFIX/bin/postgres" --version))"
    echo "$PREFIX/bin/pg_config"; exit 0
fi

export DEBIAN_FRONTEND=noninteractive
# build dependencies for the flags above (and dpkg-dev for apt-get source)
need=()
for p in build-essential bison flex zlib1g-dev pkg-config dpkg-dev; do
    [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" = "install ok installed" ] || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
    log "apt-get install ${need[*]}"
    $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
fi

mkdir -p "$CACHE"
SRC=$CACHE/postgresql-15-${PG_SRC_VERSION%%-*}-upstream
if [ ! -f "$SRC/configure" ]; then
    if ! grep -rqs '^Types:.*deb-src\|^deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/; then
        log "adding deb-src for bookworm and bookworm-security"
        $SUDO tee /etc/apt/sources.list.d/pg_idgen-deb-src.sources >/dev/null <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
        $SUDO apt-get update -qq
    fi
    log "apt-get source --download-only postgresql-15=$PG_SRC_VERSION into $CACHE"
    (cd "$CACHE" && apt-get source -qq --download-only "postgresql-15=$PG_SRC_VERSION")
    rm -rf "$SRC"
    (cd "$CACHE" && dpkg-source -q -x --skip-patches "postgresql-15_$PG_SRC_VERSION.dsc" "$SRC")
fi

BUILD=$CACHE/build
if [ "$(cat "$BUILD/.configured" 2>/dev/null)" != "$WANT" ]; then
    log "configure ${CONFIGURE_FLAGS[*]}"
    rm -rf "$BUILD"; mkdir -p "$BUILD"
    (cd "$BUILD" && "$SRC/configure" "${CONFIGURE_FLAGS[@]}" >configure.out 2>&1) \
        || { tail -30 "$BUILD/configure.out" >&2; exit 1; }
    echo "$WANT" > "$BUILD/.configured"
fi
start=$SECONDS
log "make -j$JOBS (nice -n 10)"
nice -n 10 make -C "$BUILD" -s -j"$JOBS" >"$BUILD/make.out" 2>&1 || { tail -40 "$BUILD/make.out" >&2; exit 1; }
nice -n 10 make -C "$BUILD/contrib/postgres_fdw" -s -j"$JOBS" >>"$BUILD/make.out" 2>&1 \
    || { tail -40 "$BUILD/make.out" >&2; exit 1; }
# refuse to install anything outside $PREFIX (see above): every directory compiled in
# (PGBINDIR, LIBDIR, PKGLIBDIR, PGSHAREDIR, ... — what make install uses) must lie under it
paths=$(sed -n 's/^#define [A-Z]* "\(.*\)"$/\1/p' "$BUILD/src/port/pg_config_paths.h")
[ "$(wc -l <<<"$paths")" -ge 10 ] || { log "ERROR: cannot read $BUILD/src/port/pg_config_paths.h"; exit 1; }
while read -r v; do
    case $v in "$PREFIX"/*) ;; *) log "ERROR: $v (pg_config_paths.h) is outside $PREFIX: not installing"; exit 1 ;; esac
done <<<"$paths"
rm -f "$STAMP"
make -C "$BUILD" -s install >"$BUILD/install.out" 2>&1 || { tail -40 "$BUILD/install.out" >&2; exit 1; }
make -C "$BUILD/contrib/postgres_fdw" -s install >>"$BUILD/install.out" 2>&1
[ -x "$("$PREFIX/bin/pg_config" --pkglibdir)/pgxs/src/test/regress/pg_regress" ] \
    || make -C "$BUILD/src/test/regress" -s install >>"$BUILD/install.out" 2>&1
echo "$WANT" > "$STAMP"
log "built and installed into $PREFIX in $((SECONDS - start)) s"
echo "$PREFIX/bin/pg_config"
