#!/usr/bin/env bash
# scripts/private-install.sh — a private copy of a PostgreSQL installation someone gave (for the
# Citus tests and benchmark: a PostgreSQL with Citus installed from the user's own packages), with
# pg_idgen installed into the copy. The given installation is only read, never written.
#
# Usage: scripts/private-install.sh GIVEN_PG_CONFIG DIR [SOURCE_PG_CONFIG]
#   Copies GIVEN's programs (bindir), libraries (pkglibdir) and share directory (sharedir) into
#   DIR (emptied first), each at its place relative to their common parent, so that the copied
#   programs find the copied libraries and share files (PostgreSQL locates them relative to its
#   own bindir); shared libraries of the system (libpq...) stay where they are. Then installs
#   pg_idgen (pg_idgen.so, its control file and SQL scripts) into the copy from the installation
#   of SOURCE_PG_CONFIG (default: the project's PostgreSQL of GIVEN's major, scripts/pgenv.bash,
#   where make install / make install-test put the build). Both must be the same major.
#   Prints the copy's pg_config on stdout; every other line goes to stderr. Exit 1 with one line
#   saying why when something is missing.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
say() { echo "private-install: $*" >&2; }
die() { say "$*"; exit 1; }
[ $# -ge 2 ] || { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
GIVEN=$1 DIR=$2 SOURCE=${3:-}
[ -x "$GIVEN" ] || die "$GIVEN is not an executable pg_config"
major_of() { local v; v=$("$1" --version) || return 1; v=${v#PostgreSQL }; echo "${v%%.*}"; }
MAJOR=$(major_of "$GIVEN") || die "$GIVEN --version failed"
if [ -z "$SOURCE" ]; then
    SOURCE=$(PGENV_NO_RESOLVE=1 bash -c ". '$ROOT/scripts/pgenv.bash' && pg_config_for $MAJOR") \
        || die "PostgreSQL $MAJOR is not a major this project builds for"
fi
[ -x "$SOURCE" ] || die "$SOURCE (the project's PostgreSQL $MAJOR, where pg_idgen is built and installed) is missing: make deps"
[ "$(major_of "$SOURCE")" = "$MAJOR" ] || die "$GIVEN is PostgreSQL $MAJOR, $SOURCE is PostgreSQL $(major_of "$SOURCE")"
SRC_LIB=$("$SOURCE" --pkglibdir) SRC_SHARE=$("$SOURCE" --sharedir)
[ -f "$SRC_LIB/pg_idgen.so" ] && [ -f "$SRC_SHARE/extension/pg_idgen.control" ] \
    || die "pg_idgen is not installed into $SOURCE's PostgreSQL $MAJOR (make install-test PG=$MAJOR)"

BIN=$("$GIVEN" --bindir) LIB=$("$GIVEN" --pkglibdir) SHARE=$("$GIVEN" --sharedir)
# their common parent, by whole path components
common=$BIN
for d in "$LIB" "$SHARE"; do
    while [ "$common" != / ] && [[ "$d/" != "$common/"* ]]; do common=$(dirname "$common"); done
done
rel() { local r=${1#"$common"}; echo "${r#/}"; }
case $DIR in /*) ;; *) DIR=$PWD/$DIR ;; esac
case "$DIR/" in "$BIN/"*|"$LIB/"*|"$SHARE/"*) die "$DIR is inside the given installation" ;; esac
rm -rf "$DIR"
mkdir -p "$DIR"
copied=()
for d in "$BIN" "$LIB" "$SHARE"; do
    inside=0
    for c in ${copied[@]+"${copied[@]}"}; do [[ "$d/" == "$c/"* ]] && inside=1; done
    [ $inside = 1 ] && continue
    mkdir -p "$DIR/$(dirname "$(rel "$d")")"
    cp -a "$d" "$DIR/$(rel "$d")"
    copied+=("$d")
done
chmod 755 "$DIR"
COPY=$DIR/$(rel "$BIN")/pg_config
# the copied programs must find the copies (a build with relative paths, as every PostgreSQL
# build is unless its directories lie apart)
for pair in "pkglibdir:$LIB" "sharedir:$SHARE" "bindir:$BIN"; do
    want=$DIR/$(rel "${pair#*:}")
    got=$("$COPY" "--${pair%%:*}")
    [ "$(cd "$got" 2>/dev/null && pwd -P)" = "$(cd "$want" && pwd -P)" ] \
        || die "the copy's ${pair%%:*} is $got, not $want: this installation cannot be copied"
done
cp --remove-destination "$SRC_LIB/pg_idgen.so" "$DIR/$(rel "$LIB")/"
cp --remove-destination "$SRC_SHARE"/extension/pg_idgen.control "$SRC_SHARE"/extension/pg_idgen--*.sql \
    "$DIR/$(rel "$SHARE")/extension/"
say "PostgreSQL $MAJOR of $GIVEN copied into $DIR, pg_idgen from $SOURCE installed into the copy"
echo "$COPY"
