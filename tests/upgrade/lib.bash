# tests/upgrade/lib.bash — what the upgrade tests share (sourced after tests/integration/lib.bash).
#   use MAJOR                           select the PostgreSQL major for cluster.sh & co
#   strip_pg_attver OLD TO              remove Debian 15's pg_attver column option (see below)
#   run_pg_upgrade FROM TO OLD NEW ...  pg_upgrade OLD (major FROM, shut down) into NEW (major
#                                       TO, initialised); extra arguments go to pg_upgrade (--check);
#                                       then copies the generator state (docs/operations.md, "Upgrading PostgreSQL"),
#                                       unless PG_UPGRADE_COPY_STATE=0
#   check_like_fresh NAME DB DESC       DB of cluster NAME has exactly the objects of a fresh install
#                                       (tests/upgrade/objects.sql; the fresh install is database
#                                       fresh of NAME, created at the first call); the diff if not
#   build_tagged TAG COMMIT MAJOR       a released version, from its tag (or the commit it names, in
#                                       a clone without tags), as a package tree for MAJOR; sets
#                                       RELEASED_TREE to it; fails the test if it cannot. Cached
#                                       outside the clone (see below): built once per machine.
#
# Released versions never change, so their builds are kept across clones, like the PostgreSQL
# servers of make deps: under $PG_IDGEN_RELEASED_CACHE (default $PG_IDGEN_PG_HOME/released, i.e.
# /var/cache/pg_idgen/released), one tree per commit, major and pg_config (path and version), and
# one cargo target directory for all of them (the dependencies they share are compiled once).
# A fresh clone on a machine that ran the tests before builds nothing old; a fresh machine builds
# each released version once (about a minute each). make clean-servers removes the cache.

use() { export PG=$1 PG_CONFIG=""; . "$ROOT/scripts/pgenv.bash"; }

# Debian's PostgreSQL 15.20 (15.20-0+deb12u1) stores a column option pg_attver=<n> on every
# column (pg_attribute.attoptions). pg_upgrade's dump carries it as ALTER COLUMN ... SET
# (pg_attver=...), which a PostgreSQL without Debian's patch (the 16-18 PyPI builds) rejects:
# "unrecognized parameter "pg_attver"" — for any table, pg_idgen or not. It cannot be RESET (the
# server re-adds it), so, as documented in docs/operations.md, it is removed from the catalog here.
strip_pg_attver() {
    local old=$1 to=$2 d n
    for d in $(q "$old" "SELECT datname FROM pg_database WHERE datallowconn"); do
        # pg_catalog alone on the path: a database's own search_path may put a hostile schema
        # first (the update tests' database of mallory does)
        n=$(qdb "$old" "$d" "SET search_path = pg_catalog, pg_temp" \
              "WITH u AS (UPDATE pg_catalog.pg_attribute SET attoptions = NULLIF(ARRAY(SELECT o FROM pg_catalog.unnest(attoptions) o WHERE o NOT LIKE 'pg\_attver=%'), '{}')
                              WHERE EXISTS (SELECT FROM pg_catalog.unnest(attoptions) o WHERE o LIKE 'pg\_attver=%') RETURNING 1) SELECT count(*) FROM u" | grep -v '^SET$')
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
    # the documented step: carry the generator state over (PG_UPGRADE_COPY_STATE=0 leaves it out:
    # the test of what the new cluster does without it)
    if [ $# -eq 0 ] && [ "${PG_UPGRADE_COPY_STATE:-1}" = 1 ]; then
        runuser -u postgres -- cp -a "$old_data/pg_idgen" "$new_data/"
    fi
}

build_tagged() {
    local tag=$1 commit=$2 major=$3 cfg cache key dir got tagged
    cfg=$(pg_config_for "$major")
    got=$(git -C "$ROOT" rev-parse -q --verify "$commit^{commit}" 2>/dev/null) \
        || { ko "commit $commit ($tag) is not in this clone (a shallow clone? git fetch --unshallow)"; finish; }
    if tagged=$(git -C "$ROOT" rev-parse -q --verify "$tag^{commit}" 2>/dev/null) && [ "$tagged" != "$got" ]; then
        ko "tag $tag names $tagged, not the released $got"; finish
    fi
    cache=${PG_IDGEN_RELEASED_CACHE:-$PG_IDGEN_PG_HOME/released}
    key="$got $cfg $("$cfg" --version)"
    dir=$cache/$tag-${got:0:12}-pg$major-$(printf %s "$key" | md5sum | cut -c1-8)
    RELEASED_TREE=$dir/pkg
    mkdir -p "$cache"
    # one build at a time in the cache (two test runs on one machine share it)
    exec {lockfd}>"$cache/.lock"
    flock "$lockfd"
    if [ "$(cat "$dir/stamp" 2>/dev/null)" = "$key" ]; then
        flock -u "$lockfd"; exec {lockfd}>&-
        log "$tag (${got:0:10}) for PostgreSQL $major: cached in $dir"; return
    fi
    log "building $tag (${got:0:10}) for PostgreSQL $major into $dir"
    rm -rf "$dir" && mkdir -p "$dir/src"
    git -C "$ROOT" archive "$got" | tar -x -C "$dir/src"
    # tar gives the files the commit's time: in the shared target dir cargo could then take the
    # crate for fresh and package whatever libpg_idgen.so another version's build left in
    # target/debug (seen: a "0.3.0" package holding the 0.2.0 library). Newer sources rebuild it.
    find "$dir/src" -type f -exec touch {} +
    # with the cargo-pgrx of the release's own pgrx (0.18.1 for 0.1.0-0.6.0): a cargo-pgrx builds
    # only crates on its own pgrx minor; scripts/deps.sh installs it under its own root if missing
    local t=$SECONDS pgrx_version cargo_pgrx
    pgrx_version=$(sed -n '/^name = "pgrx"$/{n;s/^version = "\(.*\)"$/\1/p;}' "$dir/src/Cargo.lock")
    cargo_pgrx=$("$ROOT/scripts/deps.sh" --cargo-pgrx "$pgrx_version") \
        || { flock -u "$lockfd"; exec {lockfd}>&-; ko "no cargo-pgrx $pgrx_version to build $tag with"; finish; }
    if ! (cd "$dir/src" && CARGO_TARGET_DIR=$cache/target PG_IDGEN_CARGO_PGRX=$cargo_pgrx \
            "$ROOT/scripts/cargo.sh" pgrx package --debug \
            --pg-config "$cfg" --out-dir "$dir/pkg") >"$dir/build.log" 2>&1; then
        flock -u "$lockfd"; exec {lockfd}>&-
        tail -30 "$dir/build.log"; ko "could not build $tag for PostgreSQL $major"; finish
    fi
    rm -rf "$dir/src"
    echo "$key" > "$dir/stamp"
    flock -u "$lockfd"; exec {lockfd}>&-
    log "$tag built for PostgreSQL $major in $((SECONDS - t)) s"
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

# The state an update test makes with a released version and checks after ALTER EXTENSION UPDATE
# (database app of cluster $1; the released library installed, the extension created):
#   make_app_state C       worker id 9 in the table, the custom layout legacy, orders (3,000 ids
#                          by DEFAULT snowflake_next()), tags inv (plain) and strided (nodes => 2,
#                          node_index => 1) with 1,000 DEFAULT segment_next() values each, mask key
#                          public and the masked form of every id (table masked)
#   record_app_state C     remembers what the checks compare (APP_* variables)
#   check_app_state_kept C after the update: worker id, layout, tags, mask key kept; 3,000 new ids
#                          and 1,000 new values per tag above every old one; no value twice
make_app_state() {
    qdb "$1" app "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
        "SELECT set_worker_id(9)" \
        "SELECT uid_layout_register('legacy', '2016-05-20 00:00:00+08', 28, 22, 13, unit_ms => 1000)" \
        "CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_next(), n int NOT NULL)" \
        "INSERT INTO orders (n) SELECT g FROM generate_series(1, 3000) g" \
        "SELECT segment_create('inv', step => 100)" \
        "SELECT segment_create('strided', step => 50, nodes => 2, node_index => 1)" \
        "CREATE TABLE invoices (no bigint PRIMARY KEY DEFAULT segment_next('inv'), n int NOT NULL)" \
        "CREATE TABLE strided (no bigint PRIMARY KEY DEFAULT segment_next('strided'), n int NOT NULL)" \
        "INSERT INTO invoices (n) SELECT g FROM generate_series(1, 1000) g" \
        "INSERT INTO strided (n) SELECT g FROM generate_series(1, 1000) g" \
        "SELECT uid_mask_key_create('public')" \
        "CREATE TABLE masked AS SELECT id, uid_mask(id, 'public') AS m FROM orders" >/dev/null
}
APP_TAGS_SQL="SELECT string_agg(format('%s %s %s %s %s %s', tag, step, unit, start, nodes, node_index), '; ' ORDER BY tag) FROM pg_idgen_segments"
APP_DECODE_SQL="SELECT md5(string_agg(format('%s %s', (uid_decode(id, 'legacy')).ts, (uid_decode(id, 'legacy')).worker_id), ',' ORDER BY id)) FROM orders"
record_app_state() {
    APP_MAX=$(qdb "$1" app "SELECT max(id) FROM orders")
    APP_TAGS=$(qdb "$1" app "$APP_TAGS_SQL")
    APP_SEG_MAX=$(qdb "$1" app "SELECT (SELECT max(no) FROM invoices) || ' ' || (SELECT max(no) FROM strided)")
    APP_DECODE=$(qdb "$1" app "$APP_DECODE_SQL")
    log "state before the update: max id $APP_MAX, max segment values (inv strided) $APP_SEG_MAX"
}
check_app_state_kept() {
    local c=$1 inv_max str_max
    check "the custom layout kept: old ids decode as before" "$(qdb "$c" app "$APP_DECODE_SQL")" == "$APP_DECODE"
    check "the tags' settings kept" "$(qdb "$c" app "$APP_TAGS_SQL")" == "$APP_TAGS"
    check "the mask key kept: every id masks to the same value and back" \
        "$(qdb "$c" app "SELECT count(*) FROM masked WHERE uid_mask(id, 'public') = m AND uid_unmask(m, 'public') = id")" -eq 3000
    qdb "$c" app "INSERT INTO orders (n) SELECT 3000 + g FROM generate_series(1, 3000) g" \
        "INSERT INTO invoices (n) SELECT 1000 + g FROM generate_series(1, 1000) g" \
        "INSERT INTO strided (n) SELECT 1000 + g FROM generate_series(1, 1000) g" >/dev/null
    check "new ids: above every old id, worker 9" \
        "$(qdb "$c" app "SELECT count(*) FROM orders WHERE n > 3000 AND id > $APP_MAX AND (uid_decode(id)).worker_id = 9")" -eq 3000
    read -r inv_max str_max <<<"$APP_SEG_MAX"
    check "new segment values above the old ones (inv, strided)" \
        "$(qdb "$c" app "SELECT (SELECT min(no) FROM invoices WHERE n > 1000) > $inv_max AND (SELECT min(no) FROM strided WHERE n > 1000) > $str_max")" == t
    check "the stride kept: every strided value in node 1's chunks of 50" \
        "$(qdb "$c" app "SELECT count(*) FROM strided WHERE ((no - 1) / 50) % 2 <> 1")" -eq 0
    check "no value twice" "$(qdb "$c" app "SELECT (SELECT count(DISTINCT no) FROM invoices) + (SELECT count(DISTINCT no) FROM strided) + (SELECT count(DISTINCT id) FROM orders)")" -eq 10000
}

# released_for TAG VERSION COMMIT MAJOR: the update tests' set-up for one released version on
# PostgreSQL MAJOR: builds it (build_tagged), sets OLD_VERSION and NEW_VERSION, defines
# install_old (the released library and scripts over the test build) and restore_new (the test
# build back, the released install script removed), and runs restore_new at exit.
released_for() {
    OLD_VERSION=$2 RELEASED_MAJOR=$4
    NEW_VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml" | head -1)
    RELEASED_EXTDIR=$("$(pg_config_for "$4")" --sharedir)/extension
    trap 'rc=$?; restore_new; (exit $rc); cleanup' EXIT
    build_tagged "$1" "$3" "$4"
    ok "$2 built from $1 for PostgreSQL $4"
}
# check_version_mismatch C DB DESC SQL: before the update, SQL fails with the version mismatch
# (55000: the old version installed, the new library loaded) and the ALTER EXTENSION hint
check_version_mismatch() {
    local c=$1 d=$2 desc=$3 sql=$4 out
    if out=$(qdb "$c" "$d" '\set VERBOSITY verbose' "$sql" 2>&1); then ko "$desc: it worked ($out)"; return; fi
    check_match "$desc" "$out" "ERROR: +55000: pg_idgen $OLD_VERSION is installed in this database, but the loaded library is $NEW_VERSION"
    check_match "$desc: the hint" "$out" "HINT: +Run ALTER EXTENSION pg_idgen UPDATE"
}

# The steps every update test from 0.3.0 on takes, on database app of cluster C:
#   switch_to_new_library C OPTS...  the new library over the old one and the server restarted;
#                                    app still at OLD_VERSION; STARTED (the postmaster's start time)
#   check_no_crash C DESC            the server did not restart since STARTED, no backend ended by
#                                    a signal
#   update_app C                     ALTER EXTENSION pg_idgen UPDATE in app (the test ends if it
#                                    fails): the new version, the objects of a fresh install, and
#                                    the hostile database's update (tests/security/lib.bash)
switch_to_new_library() {
    local c=$1; shift
    restore_new
    "$CLUSTER" restart "$c" "$@" >/dev/null 2>&1
    check "before the update: the database still has $OLD_VERSION" \
        "$(qdb "$c" app "SELECT extversion FROM pg_extension WHERE extname = 'pg_idgen'")" == "$OLD_VERSION"
    STARTED=$(q "$c" "SELECT pg_postmaster_start_time()")
}
check_no_crash() {
    local c=$1 desc=$2
    check "$desc: the server did not restart (no crash)" "$(q "$c" "SELECT pg_postmaster_start_time()")" == "$STARTED"
    check "$desc: no backend terminated by a signal" \
        "$(grep -c 'terminated by signal' "$("$CLUSTER" pgdata "$c")/log/postgresql.log" || true)" -eq 0
}
update_app() {
    local c=$1 out
    if out=$(qdb "$c" app "ALTER EXTENSION pg_idgen UPDATE" 2>&1); then ok "ALTER EXTENSION pg_idgen UPDATE in app"; else ko "ALTER EXTENSION pg_idgen UPDATE: $out"; finish; fi
    check "after the update: version" "$(qdb "$c" app "SELECT extversion FROM pg_extension WHERE extname = 'pg_idgen'")" == "$NEW_VERSION"
    check_like_fresh "$c" app "updated database has exactly the objects of a fresh $NEW_VERSION install"
    hostile_after_update "$c" "after the update from $OLD_VERSION"
}

install_old() { cp -r --remove-destination "$RELEASED_TREE/." /; }
restore_new() {
    rm -f "$RELEASED_EXTDIR/pg_idgen--$OLD_VERSION.sql"
    make -C "$ROOT" --no-print-directory install-test PG="$RELEASED_MAJOR" >/dev/null 2>&1 \
        || echo "[$TEST_NAME] could not reinstall the test build into PostgreSQL $RELEASED_MAJOR" >&2
}
