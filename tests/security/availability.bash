# tests/security/availability.bash — the availability guard: no role short of superuser can make
# another role's documented operation wait, and what a database writes into the registry's tables
# is given back when the database goes away. Shared by tests/integration/security/007_availability
# (a fresh install) and tests/upgrade/extension_update_050.sh (after the update). Source it after
# tests/integration/lib.bash.
#
#   avail_setup C REGDB VICDB    roles and objects: in REGDB (the registry database) the node
#                                roles of docs/worker-ids.md's SQL block (group idgen_nodes):
#                                node_x (the attacker, worker id 11), node_c (13-14), node_d (15,
#                                holding its lease under token 55 and slot 0 of the registry tag
#                                'vt'); nobody (a login role with PUBLIC's rights only); user_u
#                                (USAGE on the keyed space 'ak', victim has it too); the
#                                attacker's tag 'at'. In VICDB (another database): tag 'vs',
#                                space 'vk' (USAGE to victim)
#   avail_guard C REGDB VICDB DESC   for every role of nobody, user_u, node_x and every call
#                                tests/security/gen_avail_calls.sql generates for it (every
#                                function it may execute, auto mode over its own id and over the
#                                longest range; every statement its privileges on pg_idgen's
#                                relations allow, e.g. nextval on the backing sequence of a
#                                keyed space it may use): 'ak''s shared entry is released first
#                                (so that the victims' keyed_next of 'ak' claims it again, as the
#                                first call after a restart or an eviction does); the call runs
#                                in an open transaction of that
#                                role (BEGIN; the call; nothing more until the victims ran); while
#                                it is open (or the call still runs), each victim operation runs
#                                with lock_timeout = 300ms and statement_timeout = 5s and must
#                                answer as it does alone: node_c's choice (auto, 13-14), node_d's
#                                renewal of 15, its slot calls (rows, take, raise, release) and its
#                                marks calls (segment, keyed, forget), victim's keyed_next of 'ak'
#                                in REGDB, and in VICDB snowflake_next,
#                                segment_next, keyed_next. One check per role; a failure names the
#                                call and the victim. AVAIL_PAIRS: calls × operations run.
# A victim operation whose function the registry does not have (an older version) is left out.
# AVAIL_DOC=<file>: the SQL block of that copy of docs/worker-ids.md instead (a control run on
# 0.5.0's code uses 0.5.0's page, whose block names no pg_idgen_marks_forget).
AVAIL_SYSID_D=7300000000000000005

avail_setup() {
    local c=$1 reg=$2 vic=$3 doc once per role lohi
    doc=$(awk '/<!-- registry-roles-sql -->/ { f = 1; next } f && /^```sql/ { g = 1; next } g && /^```/ { exit } g { print }' "${AVAIL_DOC:-$ROOT/docs/worker-ids.md}")
    once=$(sed '/^-- per node/,$d' <<<"$doc")
    per=$(sed -n '/^-- per node/,$p' <<<"$doc")
    PGDATABASE=$reg "$CLUSTER" psql "$c" -v ON_ERROR_STOP=1 -q <<<"SET client_min_messages = warning; $once" >/dev/null
    for role in node_x:11 node_c:13:14 node_d:15; do
        lohi=${role#*:}
        PGDATABASE=$reg "$CLUSTER" psql "$c" -v ON_ERROR_STOP=1 -q <<<"$(sed "s/idgen_node1/${role%%:*}/g; s/'${role%%:*}', 1, 1)/'${role%%:*}', ${lohi%%:*}, ${lohi##*:})/" <<<"$per")" >/dev/null
    done
    qdb "$c" "$reg" "SET client_min_messages = warning" "CREATE ROLE nobody LOGIN" "CREATE ROLE user_u LOGIN" "CREATE ROLE victim LOGIN" \
        "SELECT keyed_create('ak')" "SELECT keyed_grant('ak', 'user_u')" "SELECT keyed_grant('ak', 'victim')" "SELECT segment_create('at', 10)" \
        "SELECT segment_registry_assign('vt', 1, ARRAY[15])" >/dev/null
    qdb "$c" "$vic" "SET client_min_messages = warning" "CREATE EXTENSION IF NOT EXISTS pg_idgen" \
        "SELECT segment_create('vs', 10)" "SELECT keyed_create('vk')" "SELECT keyed_grant('vk', 'victim')" >/dev/null
    AVAIL_VICOID=$(q "$c" "SELECT oid FROM pg_database WHERE datname = '$vic'")
    # node_d holds worker id 5 and slot 0 of 'vt'; its marks of VICDB exist (its owner row)
    avail_node_d "$c" "$reg" >/dev/null 2>&1
    PGDATABASE=$reg "$CLUSTER" psql "$c" -U node_d -At -c "SELECT count(*) FROM pg_idgen_slot_take('vt', 0, 15, 55)" >/dev/null
}

avail_claim_d() { echo "SELECT granted FROM pg_idgen_lease_claim(15, NULL, NULL, '$AVAIL_SYSID_D', 'nd', 'h', 1, 55, 60, true, 0, 0, NULL, NULL, NULL)"; }

# the victims, each as ROLE DB SQL... and what they answer alone
avail_node_d() {   # C REGDB: node_d's operations; prints their answers
    local c=$1 reg=$2 sql=("$(avail_claim_d)" "SELECT count(*) FROM pg_idgen_slot_rows(15, 55)"
        "SELECT count(*) FROM pg_idgen_slot_take('vt', 0, 15, 55)" "SELECT count(*) FROM pg_idgen_slot_raise('vt', 0, 15, 55, 1)"
        "SELECT pg_idgen_slot_release('vt', 0, 15, 55, 55)"
        "SELECT count(*) FROM pg_idgen_segment_marks('$AVAIL_SYSID_D', $AVAIL_VICOID, 'vs', '{0}', '{10}')"
        "SELECT count(*) FROM pg_idgen_keyed_marks('$AVAIL_SYSID_D', $AVAIL_VICOID, 'vk', '{0}', '{10}')")
    if [ "$(qdb "$c" "$reg" "SELECT to_regprocedure('pg_idgen_marks_forget(text, oid[])') IS NOT NULL")" = t ]; then
        sql+=("SELECT count(*) > 0 FROM pg_idgen_marks_forget('$AVAIL_SYSID_D', '{}')")
    fi
    PGOPTIONS="-c lock_timeout=300ms -c statement_timeout=5s" PGDATABASE=$reg "$CLUSTER" psql "$c" -U node_d -At "${sql[@]/#/-c}" 2>&1
}
# avail_release_ak C REGDB: releases the shared entry of the space 'ak' (pg_idgen_keyed_raise_bounds
# raises every bucket's bound by a step, and releases the entry), so that the next keyed_next of
# 'ak' claims it again, reading the durable bounds under the space's lock
avail_release_ak() {
    local c=$1 reg=$2
    if [ "$(qdb "$c" "$reg" "SELECT to_regprocedure('pg_idgen_keyed_raise_bounds(text, bigint[])') IS NOT NULL")" = t ]; then
        qdb "$c" "$reg" "SELECT pg_idgen_keyed_raise_bounds('ak', (SELECT array_agg(b.bound + s.step ORDER BY b.bucket)
            FROM pg_idgen_keyed_bounds b JOIN pg_idgen_keyed_spaces s ON s.space = b.space WHERE b.space = 'ak'))" >/dev/null
    fi
}
avail_victims() {  # C REGDB VICDB: every victim operation's answers, one per line
    local c=$1 reg=$2 vic=$3
    PGOPTIONS="-c lock_timeout=300ms -c statement_timeout=5s" PGDATABASE=$reg "$CLUSTER" psql "$c" -U victim -At \
        -c "SELECT keyed_next('ak', 1) > 0" 2>&1
    PGOPTIONS="-c lock_timeout=300ms -c statement_timeout=5s" PGDATABASE=$reg "$CLUSTER" psql "$c" -U node_c -At \
        -c "SELECT lease_worker_id || ' ' || granted FROM pg_idgen_lease_claim(NULL, 13, 14, '7300000000000000003', 'nc', 'h', 1, 33, 60, false, 0, 0, NULL, NULL, NULL)" 2>&1
    avail_node_d "$c" "$reg"
    PGOPTIONS="-c lock_timeout=300ms -c statement_timeout=5s" PGDATABASE=$vic "$CLUSTER" psql "$c" -U victim -At \
        -c "SELECT snowflake_next() > 0" -c "SELECT segment_next('vs') > 0" -c "SELECT keyed_next('vk', 1) > 0" 2>&1
}

# avail_session C REGDB ROLE: a psql session of ROLE reading from a fifo (AVAIL_FD writes to it,
# AVAIL_PID is psql); its \warn markers go to $TMP/avail.ROLE.err
avail_session() {
    local c=$1 reg=$2 role=$3 fifo=$TMP/avail.$3.in
    [ -z "${AVAIL_FD:-}" ] || exec {AVAIL_FD}>&- 2>/dev/null || true
    rm -f "$fifo"; mkfifo "$fifo"
    PGDATABASE=$reg "$CLUSTER" psql "$c" -U "$role" -At -q -v ON_ERROR_STOP=0 <"$fifo" >>"$TMP/avail.$role.out" 2>>"$TMP/avail.$role.err" &
    AVAIL_PID=$!
    BG_PIDS+=("$AVAIL_PID")
    exec {AVAIL_FD}>"$fifo"
}

avail_guard() {
    local c=$1 reg=$2 vic=$3 desc=$4 base role calls i line ident call fails n ops got t
    trap '' PIPE
    avail_release_ak "$c" "$reg"
    base=$(avail_victims "$c" "$reg" "$vic")
    ops=$(wc -l <<<"$base")
    if grep -q ERROR <<<"$base"; then ko "$desc: the victim operations fail even alone: $(tr '\n' ' ' <<<"$base")"; return; fi
    AVAIL_PAIRS=0
    AVAIL_CALLS=0
    for role in nobody user_u node_x; do
        calls=$(PGDATABASE=$reg "$CLUSTER" psql "$c" -At -v role="$role" -f "$SECURITY_DIR/gen_avail_calls.sql" | grep '|' || true)
        avail_session "$c" "$reg" "$role"
        fails=()
        n=0
        i=0
        while IFS= read -r line; do
            i=$((i + 1))
            ident=${line%%|*}
            call=${line#*|}
            if ! kill -0 "$AVAIL_PID" 2>/dev/null; then   # the session ended (a call may end it): a new one
                fails+=("the session of $role ended before call $i: $(tail -2 "$TMP/avail.$role.err" | tr '\n' ' ')")
                avail_session "$c" "$reg" "$role"
            fi
            avail_release_ak "$c" "$reg"
            printf 'BEGIN;\nSET LOCAL statement_timeout = %s;\n\\warn START %d\n%s;\n\\warn DONE %d\n' "'10s'" "$i" "$call" "$i" >&"$AVAIL_FD" 2>/dev/null || true
            # the call ran (its transaction is open) or still runs
            for t in $(seq 1 200); do
                grep -q "^DONE $i\$" "$TMP/avail.$role.err" && break
                if grep -q "^START $i\$" "$TMP/avail.$role.err" && [ "$t" -gt 10 ] \
                   && is_t "$c" "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE usename = '$role' AND state = 'active')"; then break; fi
                sleep 0.05
            done
            got=$(avail_victims "$c" "$reg" "$vic")
            n=$((n + ops))
            if [ "$got" != "$base" ]; then
                fails+=("$ident: $call → $({ diff <(echo "$base") <(echo "$got") || true; } | { grep '^>' || true; } | head -2 | tr '\n' ' ' | cut -c1-300)")
            fi
            printf 'ROLLBACK;\n\\warn RB %d\n' "$i" >&"$AVAIL_FD" 2>/dev/null || true
            for t in $(seq 1 400); do grep -q "^RB $i\$" "$TMP/avail.$role.err" && break; sleep 0.05; done
        done <<<"$calls"
        exec {AVAIL_FD}>&-; AVAIL_FD=
        AVAIL_PAIRS=$((AVAIL_PAIRS + n))
        AVAIL_CALLS=$((AVAIL_CALLS + i))
        if [ ${#fails[@]} -eq 0 ]; then
            ok "$desc: $role: $i calls ($(cut -d'|' -f1 <<<"$calls" | sort -u | wc -l) functions) × $ops victim operations: every operation answered as alone, under lock_timeout 300ms"
        else
            ko "$desc: $role: ${#fails[@]} of $i calls made a victim operation wait or fail: $(printf '%s; ' "${fails[@]}" | cut -c1-1500)"
        fi
    done
    log "$desc: $AVAIL_CALLS calls × $ops victim operations = $AVAIL_PAIRS pairs"
}
