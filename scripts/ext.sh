#!/usr/bin/env bash
# scripts/ext.sh — build pg_idgen and lay it out as an installable tree, with cargo alone (no
# cargo-pgrx): what `make install`, `make run`, the test layers' installs and `make package` use.
#
# Usage: scripts/ext.sh PG_CONFIG PROFILE OUT_DIR
#   PG_CONFIG  the pg_config of the server to build for (its major picks the feature pgNN)
#   PROFILE    a cargo profile: release (make install, packages), demo (make run), dev (tests)
#   OUT_DIR    made anew: OUT_DIR/<pkglibdir>/pg_idgen.so and OUT_DIR/<sharedir>/extension/
#              (pg_idgen.control, pg_idgen--<version>.sql, the update scripts of sql/), the layout
#              `cargo pgrx package` writes; the Makefile copies it over / (or 19's root)
#
# Three steps:
#   1. cargo build of the library and of sqlgen/ in one cargo run (they compile side by side).
#      pgrx-pg-sys's build script finds the server through PGRX_PG_CONFIG_PATH when pgrx's own
#      configuration (~/.pgrx/config.toml, written by `cargo pgrx init`) does not name it; where it
#      does, the variable is left unset, so that this build and cargo-pgrx's (make test-pgrx) see
#      the same environment and cargo does not build pgrx-pg-sys again for each in turn.
#   2. pg_idgen--<version>.sql: sqlgen/ (pg_idgen_sqlgen) reads the schema pgrx embedded in the
#      library (its `.pgrxsc` section) and renders it with pgrx's own renderer; make test-sql
#      checks that the result equals `cargo pgrx schema`.
#   3. the control file (@CARGO_VERSION@ replaced by the crate's version, as cargo-pgrx does) and
#      the update scripts sql/pg_idgen--*--*.sql.
# CARGO names the cargo to run (default scripts/cargo.sh, which adds --ignore-rust-version; inside
# PostgreSQL 19's root the root's own cargo); CARGO_TARGET_DIR is honoured.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
[ $# -eq 3 ] || { sed -n '5,11p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
PG_CONFIG=$1 PROFILE=$2 OUT=${3%/}
CARGO=${CARGO:-$ROOT/scripts/cargo.sh}
EXT=pg_idgen

[ -x "$PG_CONFIG" ] || { echo "scripts/ext.sh: $PG_CONFIG is not an executable pg_config (make deps, or make run PG=NN, installs the server first)" >&2; exit 1; }
major=$("$PG_CONFIG" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
[ -n "$version" ] || { echo "scripts/ext.sh: no version in Cargo.toml" >&2; exit 1; }
pkglibdir=$("$PG_CONFIG" --pkglibdir)
extdir=$("$PG_CONFIG" --sharedir)/extension
if grep -l '@GIT_HASH@' "$EXT.control" sql/"$EXT"--*--*.sql >&2; then
    echo "scripts/ext.sh: @GIT_HASH@ in the files above: only @CARGO_VERSION@ is replaced here" >&2; exit 1
fi

# pgrx's configuration names this server already: the same environment as cargo-pgrx's builds
pgrx_home=${PGRX_HOME:-$HOME/.pgrx}
if grep -Eq "^pg$major[[:space:]]*=[[:space:]]*\"$PG_CONFIG\"" "$pgrx_home/config.toml" 2>/dev/null; then
    unset PGRX_PG_CONFIG_PATH
else
    export PGRX_PG_CONFIG_PATH=$PG_CONFIG
fi

# One build and copy at a time per target directory: every major's build of a profile writes the
# same target/<profile>/libpg_idgen.so (cargo puts no hash in a cdylib's name), so a second make
# could replace it between this build and its copy.
mkdir -p "${CARGO_TARGET_DIR:-$ROOT/target}"
exec 8>"${CARGO_TARGET_DIR:-$ROOT/target}/.pg_idgen-ext.lock"
flock 8

echo "scripts/ext.sh: building pg_idgen $version for PostgreSQL $major (profile $PROFILE)"
# the artifacts' paths from cargo's own messages (wherever a configuration puts the target
# directory); the diagnostics still go to the terminal
msgs=$(mktemp)
trap 'rm -f "$msgs"; [ -z "${tmp:-}" ] || rm -rf "$tmp"' EXIT
"$CARGO" build --profile "$PROFILE" -p "$EXT" -p pg_idgen_sqlgen \
    --no-default-features --features "$EXT/pg$major" --message-format=json-render-diagnostics >"$msgs"
artifact() {   # artifact NAME KIND FIELD: the path cargo reported for that target
    grep '"reason":"compiler-artifact"' "$msgs" | grep "\"name\":\"$1\",\"src_path\"" | grep "\"kind\":\[\"$2\"\]" \
        | sed -n "s/.*\"$3\":\[\{0,1\}\"\([^\"]*\)\".*/\1/p" | tail -1
}
lib=$(artifact "$EXT" cdylib filenames)
sqlgen=$(artifact pg_idgen_sqlgen bin executable)
[ -f "$lib" ] && [ -x "$sqlgen" ] || { echo "scripts/ext.sh: cargo reported no library ($lib) or sqlgen ($sqlgen)" >&2; exit 1; }

mkdir -p "$(dirname "$OUT")"
tmp=$(mktemp -d "$OUT.XXXXXX")
mkdir -p "$tmp$pkglibdir" "$tmp$extdir"
cp "$lib" "$tmp$pkglibdir/$EXT.so"
# the script from the copy: the library installed and its script come from the same build
"$sqlgen" "$tmp$pkglibdir/$EXT.so" "$EXT.control" "$version" "$tmp$extdir/$EXT--$version.sql"
sed "s/@CARGO_VERSION@/$version/g" "$EXT.control" >"$tmp$extdir/$EXT.control"
for f in sql/"$EXT"--*--*.sql; do
    sed "s/@CARGO_VERSION@/$version/g" "$f" >"$tmp$extdir/$(basename "$f")"
done
chmod 755 "$tmp"
rm -rf "$OUT" && mv -T "$tmp" "$OUT"
tmp=
echo "scripts/ext.sh: $OUT ($(find "$OUT" -type f | wc -l) files)"
