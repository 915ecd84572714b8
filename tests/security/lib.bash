# tests/security/lib.bash — the guards against the privilege holes of an extension's SQL, shared by
# the fresh-install test (tests/integration/55_sql_guards.sh) and every update test
# (tests/upgrade/extension_update*.sh). Source it after tests/integration/lib.bash.
#
#   check_sql_binds_inside C DB DESC   tests/security/audit.sql finds nothing: every member of the
#                                      extension binds only pg_catalog's objects and its own, and
#                                      every string-bodied or SECURITY DEFINER function pins
#                                      search_path = pg_catalog, pg_temp
#   hostile_db C DB OWNER [NAMESDB]    database DB owned by the ordinary role OWNER, who owns its
#                                      schema public (the extension's schema) and a schema OWNER
#                                      and has planted in them a shadow of every function and
#                                      operator name the extension uses (tests/security/plant.sql;
#                                      the names from the source and from the catalog of NAMESDB,
#                                      a database with the extension), and who made OWNER, then
#                                      pg_catalog, the database's default search_path
#   hostile_forget C DB                forget the shadow calls so far (those of an old version's
#                                      install script, in an update test)
#   check_hostile_calls C DB OWNER DESC  a superuser, then OWNER, call every function and read
#                                      every view of the extension (gen_calls.sql, mode sample)
#                                      with the database's search_path, and fire every trigger
#                                      and event trigger (fire_hostile_triggers); no shadow ran,
#                                      OWNER is no superuser
SECURITY_DIR=$ROOT/tests/security

# psql in DB of cluster C as ROLE, with pg_catalog alone on the path (the harness's own queries)
sec_q() {
    local c=$1 db=$2 role=$3 args=() s; shift 3
    for s in "$@"; do args+=(-c "$s"); done
    PGOPTIONS="-c search_path=pg_catalog,pg_temp ${PGOPTIONS:-}" "$CLUSTER" psql "$c" -U "$role" -d "$db" -At "${args[@]}"
}

check_sql_binds_inside() {
    local c=$1 db=$2 desc=$3 out
    out=$("$CLUSTER" psql "$c" -d "$db" -At -f "$SECURITY_DIR/audit.sql" 2>&1) \
        || { ko "$desc: the audit did not run: $out"; return; }
    out=$(grep -v '^CREATE VIEW$' <<<"$out" || true)
    if [ -z "$out" ]; then
        ok "$desc: every member of pg_idgen binds only pg_catalog's objects and its own; string bodies pin their search_path"
    else
        ko "$desc: the audit found $(wc -l <<<"$out") violation(s)"
        sed 's/^/    /' <<<"$out" | head -40
    fi
}

hostile_db() {
    local c=$1 db=$2 owner=$3 namesdb=${4:-} schemas=${5:-"public $3"} names funcs ops bound d
    q "$c" "DO \$\$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$owner') THEN CREATE ROLE $owner LOGIN NOSUPERUSER; END IF; END \$\$" \
        "CREATE DATABASE $db OWNER $owner" >/dev/null
    sec_q "$c" "$db" "$owner" "CREATE SCHEMA $owner" >/dev/null
    names=$(python3 "$SECURITY_DIR/shadow_names.py" "$ROOT")
    funcs=$(sed -n 1p <<<"$names") ops=$(sed -n 2p <<<"$names")
    if [ -n "$namesdb" ]; then
        bound=$("$CLUSTER" psql "$c" -d "$namesdb" -At -f "$SECURITY_DIR/bound_names.sql" | grep -v '^CREATE VIEW$' | grep -v '^SET$')
        funcs="$funcs $(sed -n 1p <<<"$bound")" ops="$ops $(sed -n 2p <<<"$bound")"
    fi
    local sch exact out
    for sch in $schemas; do
        exact=off; [ "$sch" = public ] || exact=on
        out=$("$CLUSTER" psql "$c" -U "$owner" -d "$db" -At -v funcs="$funcs" -v ops="$ops" \
                -v schema="$sch" -v exact="$exact" -v owner="$owner" -v opgrid="${HOSTILE_OP_GRID:-full}" -f "$SECURITY_DIR/plant.sql" 2>&1) \
            || { ko "planting shadows in $db.$sch failed: $out"; return 1; }
        log "$db: $(grep -o 'planted [0-9]* shadows in schema .*' <<<"$out")"
    done
    # an exact shadow of every call site the catalog shows coerced: of the version in NAMESDB and
    # of the version about to be installed (HOSTILE_SITES, from hostile_sites_of_new)
    : > "$TMP/sites-$db.sql"
    [ -z "$namesdb" ] || python3 "$SECURITY_DIR/nonexact.py" plant public -- "$CLUSTER" psql "$c" -d "$namesdb" >> "$TMP/sites-$db.sql"
    [ ! -s "${HOSTILE_SITES:-/nonexistent}" ] || cat "$HOSTILE_SITES" >> "$TMP/sites-$db.sql"
    # ON_ERROR_STOP off: a site already shadowed by the grid, or named twice, is planted once
    "$CLUSTER" psql "$c" -U "$owner" -d "$db" -At -v ON_ERROR_STOP=0 -f "$TMP/sites-$db.sql" >/dev/null 2>&1 || true
    log "$db: exact shadows of $(grep -c '^CREATE \(OPERATOR\|AGGREGATE\|FUNCTION "public"\."[a-z]\)' "$TMP/sites-$db.sql" || true) coerced call sites"
    sec_q "$c" "$db" "$owner" "ALTER DATABASE $db SET search_path = $owner, pg_catalog, public" >/dev/null
    HOSTILE_SHADOWS=$(sec_q "$c" "$db" "$owner" "SELECT count(*) FROM pg_proc WHERE pronamespace IN ('public'::regnamespace, '$owner'::regnamespace) AND prosrc LIKE '%hostile_hit%'")
    check "$db: $owner planted shadows of the extension's names" "$HOSTILE_SHADOWS" -gt 1000
}

# hostile_sites_of_new C PORT: before an update test installs the old version, a fresh install of
# the version installed now (in a scratch cluster C) gives its coerced call sites (nonexact.py);
# hostile_db plants an exact shadow of each (HOSTILE_SITES)
hostile_sites_of_new() {
    local c=$1 port=$2
    cluster_start "$c" "$port" >/dev/null
    q "$c" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
    HOSTILE_SITES=$TMP/sites-new.sql
    python3 "$SECURITY_DIR/nonexact.py" plant public -- "$CLUSTER" psql "$c" > "$HOSTILE_SITES"
    log "the version installed now: $(grep -c '^CREATE \(OPERATOR\|AGGREGATE\|FUNCTION "public"\."[a-z]\)' "$HOSTILE_SITES" || true) coerced call sites (all schema-qualified, or the audit fails)"
    "$CLUSTER" stop "$c" fast >/dev/null 2>&1 || true
}

hostile_forget() { sec_q "$1" "$2" postgres "TRUNCATE public.hostile_calls" >/dev/null; }

# hostile_state C DB: what the calls need to get past "unknown tag": a tag, a space, a mask key and
# a layout named hostile, and a table of mallory's with a bigserial key for uid_migrate_key
hostile_state() {
    sec_q "$1" "$2" postgres "SET client_min_messages = warning" \
        "SELECT public.segment_create('hostile', 10)" "SELECT public.keyed_create('hostile')" \
        "SELECT public.uid_mask_key_create('hostile')" \
        "SELECT public.uid_layout_register('hostile', '2020-01-01Z', 41, 10, 12)" >/dev/null
    sec_q "$1" "$2" mallory "CREATE TABLE public.hostile_tbl (id bigserial PRIMARY KEY, v int)" \
        "INSERT INTO public.hostile_tbl (v) SELECT g FROM generate_series(1, 10) g" >/dev/null
}

# fire_hostile_triggers C DB OWNER DESC: gen_calls.sql cannot call trigger and event trigger
# functions; this fires every one the extension has, with the database's search_path (OWNER's
# schema first): OWNER (an ordinary role; on 16+ granted pg_create_subscription) creates, alters
# and drops a publication of a table it creates and a subscription (the SECURITY DEFINER event trigger
# runs as the extension's owner on DDL of ANY role); a superuser creates publications FOR ALL
# TABLES (with publish truncate) and TABLES IN SCHEMA public (they cover pg_idgen's tables: the
# warnings), one naming a table of pg_idgen (refused), an origin = none subscription (the
# active-active check, on 16+), and TRUNCATEs a table of pg_idgen (refused while published). The
# caller then counts the shadow calls. Each path must have run: the texts it raises are checked.
fire_hostile_triggers() {
    local c=$1 db=$2 owner=$3 desc=$4 v16 out tbl
    v16=$([ "$(sec_q "$c" "$db" postgres "SELECT current_setting('server_version_num')::int >= 160000")" = t ] && echo 1 || echo 0)
    tbl=$(sec_q "$c" "$db" postgres "SELECT c.oid::regclass FROM pg_class c JOIN pg_depend d ON d.objid = c.oid AND d.classid = 'pg_class'::regclass AND d.deptype = 'e' JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'pg_idgen' WHERE c.relkind = 'r' AND c.relname = 'pg_idgen_keyed_marks'")
    [ "$v16" = 0 ] || sec_q "$c" "$db" postgres "GRANT pg_create_subscription TO $owner" >/dev/null
    # a generator the active-active check names (the calls drop the ones hostile_state made)
    local ext; ext=$(sec_q "$c" "$db" postgres "SELECT extnamespace::regnamespace FROM pg_extension WHERE extname = 'pg_idgen'")
    sec_q "$c" "$db" postgres "SET client_min_messages = warning" "SELECT $ext.keyed_create('hostile_aa')" >/dev/null
    # how often the event trigger function ran: its calls in pg_stat_user_functions (flushed when
    # each session below exits)
    sec_q "$c" "$db" postgres "ALTER DATABASE $db SET track_functions = 'pl'" >/dev/null
    et_calls() { sec_q "$c" "$db" postgres "SELECT coalesce(sum(calls), 0) FROM pg_stat_user_functions WHERE funcname = 'pg_idgen_replication_check'"; }
    local base want i
    base=$(et_calls) want=$((base + 5 + 3 * v16))
    out=$( {
        "$CLUSTER" psql "$c" -U "$owner" -d "$db" -At -v ON_ERROR_STOP=0 2>&1 <<SQL
CREATE TABLE public.hostile_pub_tbl (id bigint PRIMARY KEY);
CREATE PUBLICATION hostile_pub_own FOR TABLE public.hostile_pub_tbl;
ALTER PUBLICATION hostile_pub_own SET (publish = 'insert, update');
ALTER PUBLICATION hostile_pub_own RENAME TO hostile_pub_own2;
ALTER PUBLICATION hostile_pub_own2 DROP TABLE public.hostile_pub_tbl;
ALTER PUBLICATION hostile_pub_own2 ADD TABLE public.hostile_pub_tbl;
SQL
        [ "$v16" = 0 ] || "$CLUSTER" psql "$c" -U "$owner" -d "$db" -At -v ON_ERROR_STOP=0 2>&1 <<SQL
CREATE SUBSCRIPTION hostile_sub_own CONNECTION 'host=127.0.0.1 port=1 dbname=none user=none password=none' PUBLICATION hostile_pub_own2 WITH (connect = false, origin = none);
ALTER SUBSCRIPTION hostile_sub_own SET (origin = any);
ALTER SUBSCRIPTION hostile_sub_own SET (slot_name = NONE);
DROP SUBSCRIPTION hostile_sub_own;
SQL
        for i in $(seq 1 100); do [ "$(et_calls)" -ge "$want" ] && break; sleep 0.1; done
        echo "OWNER_CALLS $(( $(et_calls) - base ))"
        "$CLUSTER" psql "$c" -U postgres -d "$db" -At -v ON_ERROR_STOP=0 2>&1 <<SQL
CREATE PUBLICATION hostile_pub_all FOR ALL TABLES;
CREATE PUBLICATION hostile_pub_schema FOR TABLES IN SCHEMA public;
CREATE PUBLICATION hostile_pub_named FOR TABLE $tbl;
TRUNCATE $tbl;
SQL
        [ "$v16" = 0 ] || "$CLUSTER" psql "$c" -U postgres -d "$db" -At -v ON_ERROR_STOP=0 2>&1 <<SQL
CREATE SUBSCRIPTION hostile_sub_su CONNECTION 'host=127.0.0.1 port=1 dbname=none' PUBLICATION hostile_pub_all WITH (connect = false, origin = none);
ALTER SUBSCRIPTION hostile_sub_su SET (slot_name = NONE);
DROP SUBSCRIPTION hostile_sub_su;
SQL
        "$CLUSTER" psql "$c" -U postgres -d "$db" -At -v ON_ERROR_STOP=0 2>&1 <<SQL
DROP PUBLICATION hostile_pub_all, hostile_pub_schema, hostile_pub_own2;
DROP TABLE public.hostile_pub_tbl;
SQL
    } )
    sec_q "$c" "$db" postgres "ALTER DATABASE $db RESET track_functions" "SELECT $ext.keyed_drop('hostile_aa')" >/dev/null
    check "$desc: $owner's $((5 + 3 * v16)) publication and subscription commands each ran the SECURITY DEFINER event trigger" \
        "$(sed -n 's/^OWNER_CALLS //p' <<<"$out")" -eq $((5 + 3 * v16))
    check_match "$desc: FOR ALL TABLES ran its warning" "$out" 'publication "hostile_pub_all" carries pg_idgen.s tables \(FOR ALL TABLES\)'
    check_match "$desc: TABLES IN SCHEMA public ran its warning" "$out" 'publication "hostile_pub_schema" carries pg_idgen.s tables \(TABLES IN SCHEMA public\)'
    check_match "$desc: a publication naming pg_idgen's table was refused by the event trigger" "$out" 'cannot add pg_idgen.s table "pg_idgen_keyed_marks" to publication "hostile_pub_named"'
    check_match "$desc: the TRUNCATE guard ran and refused" "$out" 'cannot truncate pg_idgen.s table "pg_idgen_keyed_marks": publications "hostile_pub_all", "hostile_pub_schema" publish its TRUNCATE'
    if [ "$v16" = 1 ]; then
        check_match "$desc: $owner's CREATE/ALTER SUBSCRIPTION ran the event trigger (origin = any warning)" "$out" 'subscription "hostile_sub_own" has origin = any'
        check_match "$desc: the active-active check ran (generators that collide)" "$out" 'replicates active-active .* keyed space "hostile_aa"'
        sec_q "$c" "$db" postgres "REVOKE pg_create_subscription FROM $owner" >/dev/null
    fi
    check "$desc: none of the publications and subscriptions is left" \
        "$(sec_q "$c" "$db" postgres "SELECT (SELECT count(*) FROM pg_publication) + (SELECT count(*) FROM pg_subscription s JOIN pg_database d ON d.oid = s.subdbid WHERE d.datname = current_database())")" -eq 0
}

check_hostile_calls() {
    local c=$1 db=$2 owner=$3 desc=$4 calls role n hits out rc errs
    calls=$TMP/hostile-calls-$db.sql
    "$CLUSTER" psql "$c" -d "$db" -At -v mode=sample -f "$SECURITY_DIR/gen_calls.sql" | grep -v '^SET$' > "$calls"
    n=$(wc -l < "$calls")
    for role in postgres "$owner"; do
        # the database's own search_path (the hostile schema first); some calls fail (refusals,
        # a layout's bits, ...): what matters is what ran, and that most calls ran
        out=$TMP/hostile-calls-$db-$role.out rc=0
        PGOPTIONS="-c statement_timeout=10s" "$CLUSTER" psql "$c" -U "$role" -d "$db" -At -v ON_ERROR_STOP=0 -f "$calls" >"$out" 2>&1 || rc=$?
        errs=$(grep -c 'ERROR:' "$out" || true)
        check "$desc: $role's session ran all $n calls ($errs failed)" "$rc" -eq 0
        [ "$role" != postgres ] || check "$desc: as a superuser, two thirds of the calls or more succeed (they reach the code)" "$errs" -lt $((n / 3))
    done
    fire_hostile_triggers "$c" "$db" "$owner" "$desc"
    hits=$(sec_q "$c" "$db" postgres "SELECT count(*) FROM public.hostile_calls")
    check "$desc: $n calls and views as a superuser and as $owner with $owner's schema first: no planted function or operator ran" "$hits" -eq 0
    [ "$hits" = 0 ] || sec_q "$c" "$db" postgres "SELECT what || ' by ' || by_user || ': ' || count(*) FROM public.hostile_calls GROUP BY what, by_user ORDER BY 1 LIMIT 20" | sed 's/^/    /'
    check "$desc: $owner is still no superuser" "$(sec_q "$c" "$db" postgres "SELECT rolsuper FROM pg_roles WHERE rolname = '$owner'")" == f
}

# The hostile database of an update test: made (and the released version installed there by a
# superuser) while the old library is installed, updated and checked after the update of app. The
# update scripts' SQL is the same on every major, so these run on the oldest and the newest
# supported major (HOSTILE_UPDATE_MAJORS) and plant in public only, with the operator grid over the
# numeric and string types (the fresh-install test plants the whole grid, and a schema before
# pg_catalog, on every major; every test plants an exact shadow of every call the catalog shows
# coerced, old version and new).
#   hostile_sites_of_new C PORT        (above) before the old version is installed
#   hostile_before_update C OLDDB      hostile_db C hostile mallory OLDDB, then CREATE EXTENSION
#                                      (the old version); the shadow calls of the old install
#                                      script are forgotten (what an old release did is history)
#   hostile_after_update C DESC        ALTER EXTENSION pg_idgen UPDATE by a superuser in it, then
#                                      check_sql_binds_inside and check_hostile_calls
HOSTILE_UPDATE_MAJORS=${HOSTILE_UPDATE_MAJORS:-15 18 19}
hostile_update_here() { [[ " $HOSTILE_UPDATE_MAJORS " == *" ${MAJOR:-$PG} "* ]]; }
hostile_before_update() {
    local c=$1 olddb=$2
    hostile_update_here || { log "SKIP: the hostile update (run on $HOSTILE_UPDATE_MAJORS)"; return 0; }
    HOSTILE_OP_GRID=small hostile_db "$c" hostile mallory "$olddb" public
    qdb "$c" hostile "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen SCHEMA public" >/dev/null
    hostile_forget "$c" hostile
}
hostile_after_update() {
    local c=$1 desc=$2 out
    hostile_update_here || return 0
    if out=$(qdb "$c" hostile "SET client_min_messages = warning" "ALTER EXTENSION pg_idgen UPDATE" 2>&1); then
        ok "$desc: ALTER EXTENSION pg_idgen UPDATE by a superuser in mallory's database"
    else
        ko "$desc: ALTER EXTENSION pg_idgen UPDATE in mallory's database: $out"; return
    fi
    check "$desc: mallory's database is at $NEW_VERSION" "$(sec_q "$c" hostile postgres "SELECT extversion FROM pg_extension WHERE extname = 'pg_idgen'")" == "$NEW_VERSION"
    check "$desc: the update ran no shadow" "$(sec_q "$c" hostile postgres "SELECT count(*) FROM public.hostile_calls")" -eq 0
    check_sql_binds_inside "$c" hostile "$desc (mallory's database)"
    hostile_state "$c" hostile
    check_hostile_calls "$c" hostile mallory "$desc"
}
