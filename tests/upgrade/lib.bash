# tests/upgrade/lib.bash — what the upgrade tests share (sourced after tests/integration/lib.bash).
#   use MAJOR                           select the PostgreSQL major for cluster.sh & co
#   strip_pg_attver OLD TO              remove Debian 15's pg_attver column option (see below)
#   run_pg_upgrade FROM TO OLD NEW ...  pg_upgrade OLD (major FROM, shut down) into NEW (major
#                                       TO, initialised); extra arguments go to pg_upgrade (--check);
#                                       then copies the generator state (docs/operations.md, "Upgrading PostgreSQL")
#   check_like_fresh NAME DB DESC       DB of cluster NAME has exactly the objects of a fresh install
#                                       (tests/upgrade/objects.sql; the fresh install is database
#                                       fresh of NAME, created at the first call); the diff if not
#   build_tagged TAG COMMIT MAJOR       a released version, from its tag (or the commit it names, in
#                                       a clone without tags), as a package tree for MAJOR in
#                                       target/TAG/pkg-pgMAJOR (cached: built once per commit and
#                                       pg_config); prints nothing, fails the test if it cannot

use() { export PG=$1 PG_CONFIG=""; . "$ROOT/scripts/pgenv.bash"; }

# Debian's PostgreSQL 15.20 (15.20-0+deb12u1) stores a column option pg_attver=<n> on every
# column (pg_attribute.attoptions). pg_upgrade's dump carries it as ALTER COLUMN ... SET
# (pg_attver=...), which a PostgreSQL without Debian's patch (the 16-18 PyPI builds) rejects:
# "unrecognized parameter "pg_attver"" — for any table, pg_idgen or not. It cannot be RESET (the
# server re-adds it), so, as documented in docs/operations.md, it is removed from the catalog here.
strip_pg_attver() {
    local old=$1 to=$2 d n
    for d in $(q "$old" "SELECT datname FROM pg_database WHERE datallowconn"); do
        n=$(qdb "$old" "$d" "WITH u AS (UPDATE pg_catalog.pg_attribute SET attoptions = NULLIF(ARRAY(SELECT o FROM unnest(attoptions) o WHERE o NOT LIKE 'pg\_attver=%'), '{}')
                              WHERE EXISTS (SELECT FROM unnest(attoptions) o WHERE o LIKE 'pg\_attver=%') RETURNING 1) SELECT count(*) FROM u")
        [ "$n" = 0 ] || log "database $d: pg_attver column option removed from $n columns (Debian 15 patch, unknown to PostgreSQL $to here)"
    done
}

# working_bindir MAJOR BINDIR: BINDIR, or, when its psql does not run (the PostgreSQL 17 wheel's
# segfaults), a directory of links to BINDIR's programs whose psql runs the client psql that
# scripts/pgenv.bash picks (a newer major's, which speaks to older servers) and answers -V as
# MAJOR's psql would: pg_upgrade checks that version string and restores global objects with psql.
working_bindir() {
    local major=$1 bin=$2 dir version client
    if pgenv_runs_ok "$bin/psql"; then echo "$bin"; return; fi
    version=$("$bin/pg_config" --version 2>/dev/null || "$(pg_config_for "$major")" --version)
    version=${version#PostgreSQL }
    client=$(PG=$major PG_CONFIG= bash -c '. "$1/scripts/pgenv.bash" && echo "$PG_CLIENT_BIN"' _ "$ROOT")
    dir=$TMP/bin-$major && mkdir -p "$dir"
    for f in "$bin"/*; do ln -sf "$f" "$dir/"; done
    rm -f "$dir/psql"
    printf '#!/bin/sh
case "$1" in -V|--version) echo "psql (PostgreSQL) %s"; exit 0 ;; esac
exec "%s/psql" "$@"
' \
        "${version%% *}" "$client" > "$dir/psql"
    chmod 755 "$dir" "$dir/psql"
    log "PostgreSQL $major: its psql does not run; pg_upgrade gets $dir (psql -> $client/psql)" >&2
    echo "$dir"
}

run_pg_upgrade() {
    local from=$1 to=$2 old=$3 new=$4; shift 4
    local bin_from bin_to old_data new_data work out f
    bin_from=$("$(pg_config_for "$from")" --bindir) bin_to=$("$(pg_config_for "$to")" --bindir)
    bin_to=$(working_bindir "$to" "$bin_to")
    old_data=$("$CLUSTER" pgdata "$old") new_data=$("$CLUSTER" pgdata "$new")
    work=$TMP/upgrade-$old-$new && mkdir -p "$work" && chown postgres:postgres "$work"
    if out=$(cd "$work" && runuser -u postgres -- "$bin_to/pg_upgrade" -U postgres \
            -b "$bin_from" -B "$bin_to" -d "$old_data" -D "$new_data" \
            -p "$(itport 28991)" -P "$(itport 28992)" -s "$work" "$@" 2>&1); then
        ok "pg_upgrade $* $from -> $to ($(grep -c '^' <<<"$out") lines of output)"
    else
        ko "pg_upgrade $* failed: $(tail -8 <<<"$out")"
        f=$(sed -n 's/.*Consult the last few lines of "\(.*\)".*/\1/p' <<<"$out" | head -1)
        [ -z "$f" ] || { echo "--- last lines of $f"; tail -40 "$f"; }
        return 1
    fi
    if [ $# -eq 0 ]; then   # the documented step: carry the generator state over
        runuser -u postgres -- cp -a "$old_data/pg_idgen" "$new_data/"
    fi
}

build_tagged() {
    local tag=$1 commit=$2 major=$3 cfg dir got tagged
    cfg=$(pg_config_for "$major") dir=$ROOT/target/$tag
    got=$(git -C "$ROOT" rev-parse -q --verify "$commit^{commit}" 2>/dev/null) \
        || { ko "commit $commit ($tag) is not in this clone (a shallow clone? git fetch --unshallow)"; finish; }
    if tagged=$(git -C "$ROOT" rev-parse -q --verify "$tag^{commit}" 2>/dev/null) && [ "$tagged" != "$got" ]; then
        ko "tag $tag names $tagged, not the released $got"; finish
    fi
    if [ "$(cat "$dir/pkg-pg$major.stamp" 2>/dev/null)" = "$got $cfg" ]; then
        log "$tag (${got:0:10}) already built for PostgreSQL $major"; return
    fi
    log "building $tag (${got:0:10}) for PostgreSQL $major (target/$tag)"
    rm -rf "$dir/src" "$dir/pkg-pg$major" && mkdir -p "$dir/src"
    git -C "$ROOT" archive "$got" | tar -x -C "$dir/src"
    if ! (cd "$dir/src" && CARGO_TARGET_DIR=$dir cargo pgrx package --debug \
            --pg-config "$cfg" --out-dir "$dir/pkg-pg$major") >"$dir/build-pg$major.log" 2>&1; then
        tail -30 "$dir/build-pg$major.log"; ko "could not build $tag for PostgreSQL $major"; finish
    fi
    echo "$got $cfg" > "$dir/pkg-pg$major.stamp"
}

objects_of() { "$CLUSTER" psql "$1" -d "$2" -XAt -f "$ROOT/tests/upgrade/objects.sql"; }
check_like_fresh() {
    local name=$1 db=$2 desc=$3 fresh=$TMP/fresh-$1.objects
    if [ ! -s "$fresh" ]; then
        q "$name" "CREATE DATABASE fresh" >/dev/null
        qdb "$name" fresh "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
        objects_of "$name" fresh > "$fresh"
    fi
    objects_of "$name" "$db" > "$TMP/$name-$db.objects"
    check "$desc ($(wc -l < "$fresh") lines)" \
        "$(diff "$fresh" "$TMP/$name-$db.objects" > "$TMP/$name-$db.diff" && echo same || echo differ)" == same
    [ ! -s "$TMP/$name-$db.diff" ] || sed 's/^/    /' "$TMP/$name-$db.diff" | head -40
}
