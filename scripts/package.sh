#!/usr/bin/env bash
# scripts/package.sh — release packages of pg_idgen for one PostgreSQL major (`make package PG=NN`).
#
# Usage: scripts/package.sh TREE OUTDIR
#   TREE    a package tree made by scripts/ext.sh (release profile) for the major that
#           PG / PG_CONFIG select (scripts/pgenv.bash): the files under the server's own paths
#   OUTDIR  where the package goes (make package: target/packages)
#
# What it makes:
#   * a Debian package when the server is Debian's (pg_config under /usr/lib/postgresql/NN/bin):
#       postgresql-NN-pg-idgen_<version>-1_<arch>.deb
#     Depends on postgresql-NN and on the libraries dpkg-shlibdeps finds; a copyright file, the
#     upstream changelog (changelog.gz) and a Debian changelog (changelog.Debian.gz) in
#     /usr/share/doc/postgresql-NN-pg-idgen/, md5sums; files root:root 0644, the library
#     stripped of debugging symbols (its dynamic symbols stay: PostgreSQL looks functions up).
#   * otherwise (the servers from PyPI wheels, or any other install) a tarball,
#       pg_idgen-<version>-pgNN-linux-<arch>.tar.gz
#     with the same files under lib/ and extension/, the same documents under doc/ (with the
#     manual, doc/docs/*.md), MANIFEST
#     (MD5 and path of each file), and install.sh / uninstall.sh that copy them into (remove
#     them from) the directories of the pg_config given (PG_CONFIG=... ./install.sh); both
#     refuse another major, and uninstall.sh removes only files that are still this package's.
# The version is Cargo.toml's (the control file's default_version is made from it).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TREE=${1:?usage: scripts/package.sh TREE OUTDIR}
OUT=${2:?usage: scripts/package.sh TREE OUTDIR}
# shellcheck source=pgenv.bash
. "$ROOT/scripts/pgenv.bash"

VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml" | head -1)
PKGLIBDIR=$("$PG_CONFIG" --pkglibdir)
EXTDIR=$("$PG_CONFIG" --sharedir)/extension
# the tree's own paths: the server's, or for 19 (whose pg_config answers the paths the host sees
# under its sid root) the same paths inside the root, where the tree was built
DESTDIR=$(pg_destdir_for "$PG")
T=$TREE${PKGLIBDIR#"$DESTDIR"} TX=$TREE${EXTDIR#"$DESTDIR"}
LIB=$T/pg_idgen.so
[ -f "$LIB" ] || { echo "package.sh: $LIB not found (is $TREE a package tree for $PG_CONFIG?)" >&2; exit 1; }
[ -f "$TX/pg_idgen--$VERSION.sql" ] || { echo "package.sh: no pg_idgen--$VERSION.sql in $TX" >&2; exit 1; }
# The control file sets no `encoding`: the scripts must read the same in every database encoding.
if LC_ALL=C grep -l '[^[:print:][:space:]]' "$TX"/pg_idgen*.sql "$TX/pg_idgen.control"; then
    echo "package.sh: the files above have bytes outside ASCII" >&2; exit 1
fi
ARCH=$(dpkg --print-architecture 2>/dev/null || uname -m)
# Dates from the last commit, so that a package rebuilt from the same commit has the same text.
DATE_R=$(git -C "$ROOT" log -1 --format=%cD 2>/dev/null || date -R)
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$ROOT" log -1 --format=%ct 2>/dev/null || date +%s)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# the files of the extension: library, control file, install and upgrade scripts
ext_files() { (cd "$TX" && ls pg_idgen.control pg_idgen--*.sql); }

copyright() {
    cat <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: pg_idgen
Source: https://pgxn.org/dist/pg_idgen/

Files: *
Copyright: 2026 The pg_idgen developers
License: PostgreSQL

License: PostgreSQL
$(sed -e '1,/^$/d' -e 's/^$/./' -e 's/^/ /' "$ROOT/LICENSE")
EOF
}

if [[ $PG_CONFIG == /usr/lib/postgresql/"$PG"/bin/pg_config ]] && dpkg-query -W "postgresql-$PG" >/dev/null 2>&1; then
    PKG=postgresql-$PG-pg-idgen
    DEB=$OUT/${PKG}_$VERSION-1_$ARCH.deb
    R=$WORK/root
    install -d -m 755 "$R$PKGLIBDIR" "$R$EXTDIR" "$R/usr/share/doc/$PKG" "$R/DEBIAN"
    install -m 644 "$LIB" "$R$PKGLIBDIR/pg_idgen.so"
    strip --strip-unneeded "$R$PKGLIBDIR/pg_idgen.so"
    for f in $(ext_files); do install -m 644 "$TX/$f" "$R$EXTDIR/$f"; done
    copyright > "$R/usr/share/doc/$PKG/copyright"
    gzip -9n < "$ROOT/CHANGELOG.md" > "$R/usr/share/doc/$PKG/changelog.gz"
    printf '%s (%s-1) bookworm; urgency=medium\n\n  * pg_idgen %s (the upstream changes are in changelog.gz).\n\n -- The pg_idgen developers <pg_idgen@lists.invalid>  %s\n' \
        "$PKG" "$VERSION" "$VERSION" "$DATE_R" | gzip -9n > "$R/usr/share/doc/$PKG/changelog.Debian.gz"
    chmod 644 "$R/usr/share/doc/$PKG"/*
    # shared-library dependencies, as dpkg-shlibdeps computes them for a debian/ source tree
    mkdir -p "$WORK/src/debian"
    printf 'Source: pg-idgen\n\nPackage: %s\nArchitecture: any\n' "$PKG" > "$WORK/src/debian/control"
    SHLIBS=$(cd "$WORK/src" && dpkg-shlibdeps -O "$R$PKGLIBDIR/pg_idgen.so" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
    SIZE=$(du -sk --exclude=DEBIAN "$R" | cut -f1)
    cat > "$R/DEBIAN/control" <<EOF
Package: $PKG
Source: pg-idgen
Version: $VERSION-1
Architecture: $ARCH
Maintainer: The pg_idgen developers <pg_idgen@lists.invalid>
Installed-Size: $SIZE
Depends: postgresql-$PG${SHLIBS:+, $SHLIBS}
Section: database
Priority: optional
Homepage: https://pgxn.org/dist/pg_idgen/
Description: time-ordered 64-bit ids for PostgreSQL $PG (snowflake, segments)
 pg_idgen gives every table a distributed, time-ordered, sharding-friendly
 64-bit key from a column DEFAULT: snowflake_next() (time, worker id and
 sequence in shared memory, never a duplicate or a decrease across clock steps
 back, crashes and failover), uid_decode() for its own and other systems' ids,
 and segment_next(tag), dense values reserved durably in batches.
 .
 Add pg_idgen to shared_preload_libraries, then CREATE EXTENSION pg_idgen.
 This package is for PostgreSQL $PG.
EOF
    (cd "$R" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) > "$R/DEBIAN/md5sums"
    chmod 644 "$R/DEBIAN/control" "$R/DEBIAN/md5sums"
    find "$R" -type d -exec chmod 755 {} +
    dpkg-deb --root-owner-group -Zxz --build "$R" "$DEB" >/dev/null
    echo "$DEB"
else
    NAME=pg_idgen-$VERSION-pg$PG-linux-$ARCH
    D=$WORK/$NAME
    install -d -m 755 "$D/lib" "$D/extension" "$D/doc"
    install -m 644 "$LIB" "$D/lib/pg_idgen.so"
    strip --strip-unneeded "$D/lib/pg_idgen.so"
    for f in $(ext_files); do install -m 644 "$TX/$f" "$D/extension/$f"; done
    install -m 644 "$ROOT/README.md" "$ROOT/CHANGELOG.md" "$ROOT/LICENSE" "$D/doc/"
    # the manual beside the README, so that its relative links (docs/<page>.md) resolve
    install -d -m 755 "$D/doc/docs" && install -m 644 "$ROOT"/docs/*.md "$D/doc/docs/"
    # MANIFEST: the MD5 and path of every installed file (uninstall.sh removes a file only if it
    # is still this package's copy: another installation's or a later version's is kept)
    (cd "$D" && find lib extension -type f | sort | xargs md5sum) > "$D/MANIFEST"
    cat > "$D/install.sh" <<EOF
#!/bin/sh
# Installs pg_idgen $VERSION into the PostgreSQL $PG that PG_CONFIG (default: pg_config on PATH) names.
set -eu
PG_CONFIG=\${PG_CONFIG:-pg_config}
here=\$(cd "\$(dirname "\$0")" && pwd)
major=\$("\$PG_CONFIG" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\\1/')
[ "\$major" = "$PG" ] || { echo "install.sh: this package is for PostgreSQL $PG, \$PG_CONFIG is \$major" >&2; exit 1; }
lib=\$("\$PG_CONFIG" --pkglibdir); ext=\$("\$PG_CONFIG" --sharedir)/extension
install -m 755 "\$here/lib/pg_idgen.so" "\$lib/pg_idgen.so"
for f in "\$here"/extension/*; do install -m 644 "\$f" "\$ext/"; done
echo "pg_idgen $VERSION installed into \$lib and \$ext"
EOF
    cat > "$D/uninstall.sh" <<EOF
#!/bin/sh
# Removes the files of pg_idgen $VERSION (MANIFEST) from the PostgreSQL that PG_CONFIG names.
set -eu
PG_CONFIG=\${PG_CONFIG:-pg_config}
here=\$(cd "\$(dirname "\$0")" && pwd)
major=\$("\$PG_CONFIG" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\\1/')
[ "\$major" = "$PG" ] || { echo "uninstall.sh: this package is for PostgreSQL $PG, \$PG_CONFIG is \$major" >&2; exit 1; }
lib=\$("\$PG_CONFIG" --pkglibdir); ext=\$("\$PG_CONFIG" --sharedir)/extension
kept=0
while read -r sum f; do
    case \$f in lib/*) t=\$lib/\${f#lib/} ;; extension/*) t=\$ext/\${f#extension/} ;; *) continue ;; esac
    [ -e "\$t" ] || continue
    if [ "\$(md5sum < "\$t" | cut -d' ' -f1)" = "\$sum" ]; then
        rm -f "\$t"
    else
        echo "uninstall.sh: kept \$t (not this package's copy)" >&2; kept=\$((kept + 1))
    fi
done < "\$here/MANIFEST"
echo "pg_idgen $VERSION removed from \$lib and \$ext (\$kept file(s) of another installation kept)"
EOF
    chmod 755 "$D/install.sh" "$D/uninstall.sh"
    TGZ=$OUT/$NAME.tar.gz
    tar -C "$WORK" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" -cf - "$NAME" | gzip -9n > "$TGZ"
    echo "$TGZ"
fi
