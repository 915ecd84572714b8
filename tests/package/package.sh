#!/usr/bin/env bash
# tests/package/package.sh MAJOR DIR — the release package of one PostgreSQL major, installed the
# way a DBA installs it (`make test-package PG=NN`, after `make package PG=NN` made it in DIR).
#
#   Debian's PostgreSQL 15: postgresql-15-pg-idgen_<v>-1_<arch>.deb
#     * metadata: name, version, Depends on postgresql-15 (and the C libraries dpkg-shlibdeps
#       found), files owned by root, copyright and changelogs in /usr/share/doc;
#     * apt-get install ./<deb> (after removing the test build's files, so that every file the
#       test sees comes from the package): the library and the scripts are where pg_config
#       says, dpkg owns them;
#     * a cluster: CREATE EXTENSION (the package's default version), snowflake_next(), a segment
#       tag, uid_decode; DROP EXTENSION;
#     * apt-get remove, then purge: not one file of the package is left (dpkg -L list and a search
#       for pg_idgen* in the library and extension directories), dpkg knows nothing of it.
#   Other servers (PyPI builds of 16-18): pg_idgen-<v>-pgNN-linux-<arch>.tar.gz
#     * the archive's MANIFEST lists exactly its lib/ and extension/ files with their MD5s;
#       install.sh and uninstall.sh refuse another major; install.sh into PG_CONFIG's
#       directories; the same cluster checks; uninstall.sh removes every file of the package
#       and keeps one that another installation changed.
#   Both: META.json and CHANGELOG.md name the version of Cargo.toml.
# At exit the test build is installed again (make install-test PG=NN): later layers use it.
set -euo pipefail
MAJOR=${1:?usage: tests/package/package.sh MAJOR DIR}
DIR=${2:?usage: tests/package/package.sh MAJOR DIR}
export PG=$MAJOR PG_CONFIG=
. "$(dirname "$0")/../integration/lib.bash" "$(cd "$(dirname "$0")/../.." && pwd)"
TEST_NAME=package_pg$MAJOR
VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml" | head -1)
ARCH=$(dpkg --print-architecture)
LIBDIR=$("$PG_CONFIG" --pkglibdir)
EXTDIR=$("$PG_CONFIG" --sharedir)/extension
DIR=$(cd "$DIR" && pwd)

restore_test_build() { make -C "$ROOT" --no-print-directory install-test PG="$MAJOR" >/dev/null 2>&1 || echo "[$TEST_NAME] could not reinstall the test build" >&2; }
our_files() { find "$LIBDIR" "$EXTDIR" -maxdepth 1 -name 'pg_idgen*' 2>/dev/null | sort; }
remove_test_build() {   # files a `make install-test` copied (no package owns them)
    local f
    for f in $(our_files); do
        if dpkg -S "$f" >/dev/null 2>&1; then ko "$f belongs to a package before the test"; else rm -f "$f"; fi
    done
    check "no pg_idgen file in $LIBDIR and $EXTDIR before installing the package" "$(our_files | wc -l)" -eq 0
}

# the cluster checks, with whatever is installed
use_it() {
    cluster_start pkg 28995 -c pg_idgen.worker_id=3
    check "CREATE EXTENSION installs the package's version" \
        "$(q pkg "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" "SELECT extversion FROM pg_extension WHERE extname = 'pg_idgen'" | tail -1)" == "$VERSION"
    check "snowflake_next() gives 1000 distinct ids of worker 3" \
        "$(q pkg "SELECT count(DISTINCT s.id) FILTER (WHERE d.worker_id = 3) FROM (SELECT snowflake_next() AS id FROM generate_series(1, 1000)) s, uid_decode(s.id) d")" -eq 1000
    check "a segment tag serves 1, 2, 3" \
        "$(q pkg "SELECT segment_create('pkg', 10)" "SELECT string_agg(segment_next('pkg')::text, ',') FROM generate_series(1, 3)" | tail -1)" == "1,2,3"
    check "DROP EXTENSION leaves no relation named pg_idgen*" \
        "$(q pkg "DROP EXTENSION pg_idgen" "SELECT count(*) FROM pg_class WHERE relname LIKE 'pg\_idgen%'" | tail -1)" -eq 0
    "$CLUSTER" stop pkg fast >/dev/null
}

trap 'rc=$?; restore_test_build; (exit $rc); cleanup' EXIT

# the release's metadata agrees with Cargo.toml (docs/contributing.md, "Releasing")
check "META.json: version and provides.pg_idgen.version are Cargo.toml's" \
    "$(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(m["version"], m["provides"]["pg_idgen"]["version"], m["meta-spec"]["version"])' "$ROOT/META.json")" == "$VERSION $VERSION 1.0.0"
check "CHANGELOG.md has a section for $VERSION" "$(grep -c "^## $VERSION " "$ROOT/CHANGELOG.md")" -eq 1

if [[ $PG_CONFIG == /usr/lib/postgresql/"$MAJOR"/bin/pg_config ]]; then
    PKG=postgresql-$MAJOR-pg-idgen
    DEB=$DIR/${PKG}_$VERSION-1_$ARCH.deb
    [ -f "$DEB" ] || { ko "$DEB not found (make package PG=$MAJOR)"; finish; }
    info=$(dpkg-deb --field "$DEB")
    check "deb: package name" "$(dpkg-deb --field "$DEB" Package)" == "$PKG"
    check "deb: version" "$(dpkg-deb --field "$DEB" Version)" == "$VERSION-1"
    check_match "deb: depends on the server package and libc" "$(dpkg-deb --field "$DEB" Depends)" "^postgresql-$MAJOR, .*libc6 \(>= [0-9.]+\)"
    check_match "deb: section database, a description" "$info" $'Section: database\n.*Description: .+'
    contents=$(dpkg-deb --contents "$DEB")
    check "deb: every entry owned by root/root" "$(awk '$2 != "root/root"' <<<"$contents" | wc -l)" -eq 0
    for f in "$LIBDIR/pg_idgen.so" "$EXTDIR/pg_idgen.control" "$EXTDIR/pg_idgen--$VERSION.sql" \
             "$EXTDIR/pg_idgen--0.1.0--0.2.0.sql" "/usr/share/doc/$PKG/copyright" \
             "/usr/share/doc/$PKG/changelog.gz" "/usr/share/doc/$PKG/changelog.Debian.gz"; do
        check "deb: contains $f" "$(grep -c " \.$f\$" <<<"$contents")" -eq 1
    done
    remove_test_build
    if out=$(DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$DEB" 2>&1); then ok "apt-get install $DEB"; else ko "apt-get install: $(tail -5 <<<"$out")"; finish; fi
    check "dpkg: installed" "$(dpkg-query -W -f='${Status} ${Version}' "$PKG")" == "install ok installed $VERSION-1"
    listed=$(dpkg -L "$PKG" | while read -r f; do if [ -f "$f" ]; then echo "$f"; fi; done | sort)
    check "dpkg owns the library and every script in the extension directory" \
        "$(our_files | comm -23 - <(echo "$listed") | wc -l)" -eq 0
    use_it
    if out=$(DEBIAN_FRONTEND=noninteractive apt-get remove -y -q "$PKG" 2>&1); then ok "apt-get remove $PKG"; else ko "apt-get remove: $(tail -5 <<<"$out")"; fi
    left=$(while read -r f; do if [ -e "$f" ]; then echo "$f"; fi; done <<<"$listed")
    check "after remove: no file of the package is left" "$(grep -c . <<<"$left" || true)" -eq 0
    check "after remove: no pg_idgen file in the library and extension directories" "$(our_files | wc -l)" -eq 0
    DEBIAN_FRONTEND=noninteractive apt-get purge -y -q "$PKG" >/dev/null 2>&1 || true
    check "after purge: dpkg does not know the package" "$(dpkg-query -W -f='${Status}' "$PKG" 2>/dev/null || echo unknown)" == unknown
else
    TGZ=$DIR/pg_idgen-$VERSION-pg$MAJOR-linux-$ARCH.tar.gz
    [ -f "$TGZ" ] || { ko "$TGZ not found (make package PG=$MAJOR)"; finish; }
    tar -C "$TMP" -xzf "$TGZ"
    T=$TMP/pg_idgen-$VERSION-pg$MAJOR-linux-$ARCH
    check "tarball: MANIFEST lists exactly the lib/ and extension/ files, with their MD5s" \
        "$(cd "$T" && find lib extension -type f | sort | diff - <(awk '{ print $2 }' MANIFEST) >/dev/null && md5sum --quiet -c MANIFEST && echo same)" == same
    check "tarball: the scripts of this version and the upgrade from 0.1.0" \
        "$(awk '{ print $2 }' "$T/MANIFEST" | grep -c -e "^extension/pg_idgen--$VERSION.sql$" -e '^extension/pg_idgen--0.1.0--0.2.0.sql$' -e '^extension/pg_idgen.control$' -e '^lib/pg_idgen.so$')" -eq 4
    other=$(pg_config_for 15)
    if [ -x "$other" ] && [ "$MAJOR" != 15 ]; then
        if out=$(PG_CONFIG=$other "$T/install.sh" 2>&1); then ko "install.sh installed into PostgreSQL 15: $out"; else check_match "install.sh refuses another major" "$out" "for PostgreSQL $MAJOR"; fi
    fi
    remove_test_build
    if out=$(PG_CONFIG=$PG_CONFIG "$T/install.sh" 2>&1); then ok "install.sh: $out"; else ko "install.sh: $out"; finish; fi
    check "installed: exactly the MANIFEST's files" "$(our_files | wc -l)" -eq "$(wc -l < "$T/MANIFEST")"
    use_it
    if [ -x "$other" ] && [ "$MAJOR" != 15 ]; then
        if out=$(PG_CONFIG=$other "$T/uninstall.sh" 2>&1); then ko "uninstall.sh ran against PostgreSQL 15: $out"; else check_match "uninstall.sh refuses another major" "$out" "for PostgreSQL $MAJOR"; fi
    fi
    # a file that is not this package's copy (another build put there) is kept
    printf '\n-- changed by another installation\n' >> "$EXTDIR/pg_idgen.control"
    if out=$(PG_CONFIG=$PG_CONFIG "$T/uninstall.sh" 2>&1); then ok "uninstall.sh: $out"; else ko "uninstall.sh: $out"; fi
    check_match "uninstall.sh keeps a file that is not its own copy" "$out" "kept .*pg_idgen.control"
    check "after uninstall.sh: only that file is left" "$(our_files)" == "$EXTDIR/pg_idgen.control"
    rm -f "$EXTDIR/pg_idgen.control"
fi
finish
