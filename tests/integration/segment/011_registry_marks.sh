#!/usr/bin/env bash
# segment/011_registry_marks — segment tags created with registry_marks => true keep a mark per
# stride slot in the lease registry, so that an asynchronous standby promoted at once, before it
# received the last reservations, continues above every value the old primary handed out; tags
# whose slots the registry owns (registry => true) already do, through their ceilings. Three
# clusters on ports 29200-29202 (+ IT_PORT_OFFSET): R the registry (node roles node_a for worker
# id 1, node_b for 2, as docs/worker-ids.md says), P the primary (fixed lease of worker id 1,
# connecting as node_a), S its asynchronous streaming standby (the same settings).
#  1. Tags on P, step 100: 'mk' (plain, registry_marks => true), 'ms' (slots => 4, all owned,
#     registry_marks => true), 'pl' (plain, the control) and 'ro' (slots => 4 owned through the
#     registry, registry => true, assigned to worker id 1). segment_status shows the mode; a
#     first round writes the marks of 'mk' (slot 0) and 'ms' (slots 0..3) in the registry
#     (owned by node_a), none for 'pl'; each mark is the largest value reserved.
#  2. S replays everything, then P's WAL sender is stopped (SIGSTOP); 12 rounds on P (4 clients
#     at once, 500 values of each tag per client and round; every (tag, value) kept); P is killed
#     (-9); S did not receive P's last WAL; S is promoted at once (async_pair_start and
#     async_pair_cut_and_promote of lease.bash).
#  3. 12 rounds on S of 'mk', 'ms', 'pl' at once: 'mk', 'ms': 0 values handed out twice, the
#     first value above the largest before; 'pl': values handed out twice (> 0: the test sees the
#     hole the marks close). 'ro' once S holds worker id 1's lease (after P's lease ran out): 0
#     values handed out twice, above the largest before (the registry's ceilings).
#  4. Registry stopped: a registry_marks tag hands out the values of the chunks already reserved
#     (up to its registry mark), then 55000 ("did not confirm its mark"); values resume when the
#     registry is back. S restarted with the registry down: the first use of 'mk' is 55000
#     ("could not be read"), 'pl' works; 'mk' works once it is back, above every value it had.
#  5. In the registry: node_b (another node's role) cannot raise node_a's segment marks to the
#     bigint maximum nor read them, a login role without the grant cannot call the function
#     (42501); the marks are unchanged. SECURITY DEFINER, search_path pinned, not PUBLIC.
# Pass/fail never depends on timing: waits poll for states (bounded).
set -euo pipefail
. "$(dirname "$0")/../lib.bash"
. "$(dirname "$0")/../lease.bash"

R=it_smreg
P=it_smp
S=it_sms
K=500
ROUNDS=12
rq() { q "$R" "$@"; }
# as_err ROLE SQL: the SQLSTATE of SQL run on the registry as ROLE (empty if it succeeded)
as_err() {
    "$CLUSTER" psql "$R" -U "$1" -At -c '\set VERBOSITY verbose' -c "$2" 2>&1 \
        | grep -oE 'ERROR: +[0-9A-Z]{5}' | head -1 | grep -oE '[0-9A-Z]{5}$' || true
}
# rounds NODE N OUT TAG...: 4 clients at once, N rounds of K segment_next of each TAG per
# client; every (tag, value) a client received is appended to OUT
rounds() {
    local node=$1 n=$2 out=$3 c r t pids=()
    shift 3
    for c in 0 1 2 3; do
        {
            echo "SET client_min_messages = warning;"
            for r in $(seq 1 "$n"); do
                for t in "$@"; do
                    echo "COPY (SELECT '$t', segment_next('$t') FROM generate_series(1, $K)) TO STDOUT;"
                done
            done
        } | "$CLUSTER" psql "$node" -v ON_ERROR_STOP=1 -q >"$out.c$c" 2>"$out.c$c.err" &
        pids+=($!)
    done
    for c in "${pids[@]}"; do wait "$c" || true; done
    cat "$out".c? >>"$out"
    cat "$out".c?.err >&2
}
count_of() { awk -F'\t' -v t="$2" '$1 == t' "$1" | wc -l; }
# values of TAG handed out in both files
dups() { cat "$TMP/old" "$1" | awk -F'\t' -v t="$2" '$1 == t { print $2 }' | sort | uniq -d | wc -l; }
max_of() { awk -F'\t' -v t="$2" '$1 == t && ($2 > m || m == "") { m = $2 } END { print m + 0 }' "$1"; }
# the first value of TAG each client received in FILE, the smallest of them
first_min() {
    local f=$1 t=$2 c m=
    for c in "$f".c?; do
        local v; v=$(awk -F'\t' -v t="$t" '$1 == t { print $2; exit }' "$c")
        [ -n "$v" ] && { [ -z "$m" ] || [ "$v" -lt "$m" ]; } && m=$v
    done
    echo "${m:-0}"
}

# ---- the registry and the primary ----
assign_ro() { check "0: the registry assigns the 4 slots of 'ro' to worker id 1" "$(rq "SELECT segment_registry_assign('ro', 4, ARRAY[1])")" -eq 4; }
async_pair_start "$R" "$P" "$S" 29200 pg_idgen_segment_marks assign_ro

# ---- 1. the tags ----
q "$P" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
    "SELECT segment_create('mk', 100, registry_marks => true)" \
    "SELECT segment_create('ms', 100, slots => 4, registry_marks => true)" \
    "SELECT segment_create('pl', 100)" \
    "SELECT segment_create('ro', 100, slots => 4, registry => true)" >/dev/null
check "1: segment_status shows the mode" \
    "$(q "$P" "SELECT string_agg(tag || ':' || registry_marks, ',' ORDER BY tag) FROM segment_status")" \
    == "mk:true,ms:true,pl:false,ro:false"
serves_ro() { [ "$(q "$1" "SELECT owned_slots::text FROM segment_status WHERE tag = 'ro'" 2>/dev/null)" = "{0,1,2,3}" ]; }
wait_for "1: P serves the 4 slots of 'ro'" serves_ro "$P"
SYSID=$(q "$P" "SELECT system_identifier FROM pg_control_system()")
DBOID=$(q "$P" "SELECT oid FROM pg_database WHERE datname = current_database()")
marks() { rq "SELECT coalesce(string_agg(tag || ':' || slot || ':' || bound, ',' ORDER BY tag, slot), '') FROM pg_idgen_segment_marks WHERE system_identifier = $SYSID AND database = $DBOID"; }
rounds "$P" 1 "$TMP/old" mk ms pl ro
check "1: the first round handed out 4 x $K values of each tag" "$(wc -l <"$TMP/old")" -eq $((4 * 4 * K))
MK_MARK=$(rq "SELECT bound FROM pg_idgen_segment_marks WHERE system_identifier = $SYSID AND tag = 'mk'")
check "1: the registry has marks of 'mk' (slot 0) and 'ms' (slots 0..3), none of 'pl' or 'ro'" \
    "$(marks | sed -E 's/:[0-9]+(,|$)/\1/g')" == "mk:0,ms:0,ms:1,ms:2,ms:3"
check "1: 'mk''s mark covers every value it handed out" "$MK_MARK" -ge "$(max_of "$TMP/old" mk)"
check "1: node_a owns the marks of P's system identifier" \
    "$(rq "SELECT role_name FROM pg_idgen_keyed_mark_owners WHERE system_identifier = $SYSID")" == node_a

# ---- 2. an asynchronous standby that misses the last reservations ----
load_on_p() {
    rounds "$P" "$ROUNDS" "$TMP/old" mk ms pl ro
    check "2: P handed out $((ROUNDS + 1)) rounds of the 4 tags" "$(wc -l <"$TMP/old")" -eq $((4 * 4 * K * (ROUNDS + 1)))
}
async_pair_cut_and_promote 2 load_on_p

# ---- 3. the load continues on the promoted standby ----
rounds "$S" "$ROUNDS" "$TMP/new" mk ms pl
check "3: S handed out $ROUNDS rounds of 'mk', 'ms', 'pl' (no error)" "$(wc -l <"$TMP/new")" -eq $((3 * 4 * K * ROUNDS))
check "3: registry_marks => true (plain): values handed out twice" "$(dups "$TMP/new" mk)" -eq 0
check "3: registry_marks => true (slotted): values handed out twice" "$(dups "$TMP/new" ms)" -eq 0
check "3: the control (no marks): values handed out twice — the hole exists without the marks" "$(dups "$TMP/new" pl)" -gt 0
log "3: without the marks: $(dups "$TMP/new" pl) of $((4 * K * ROUNDS)) values handed out twice; with them: $(dups "$TMP/new" mk) (plain), $(dups "$TMP/new" ms) (slotted)"
check "3: 'mk''s first value on S is above its largest on P" "$(first_min "$TMP/new" mk)" -gt "$(max_of "$TMP/old" mk)"
wait_for "3: S serves the 4 slots of 'ro' (P's lease of worker id 1 ran out, S took it)" serves_ro "$S"
rounds "$S" 1 "$TMP/newro" ro
check "3: S handed out a round of 'ro'" "$(count_of "$TMP/newro" ro)" -eq $((4 * K))
check "3: registry => true (the registry's ceilings, already): values handed out twice" "$(dups "$TMP/newro" ro)" -eq 0
check "3: 'ro''s first value on S is above its largest on P" "$(first_min "$TMP/newro" ro)" -gt "$(max_of "$TMP/old" ro)"

# ---- 4. the registry stopped ----
q "$S" "SET client_min_messages = warning" "SELECT segment_create('down', 1000, registry_marks => true)" \
    "CREATE FUNCTION take_until_error(t text, lim int) RETURNS text LANGUAGE plpgsql AS \$\$
     DECLARE n int := 0; v bigint; last bigint;
     BEGIN
         WHILE n < lim LOOP
             BEGIN
                 v := segment_next(t);
             EXCEPTION WHEN OTHERS THEN
                 RETURN n || ':' || coalesce(last, 0) || ':' || SQLSTATE;
             END;
             n := n + 1; last := v;
         END LOOP;
         RETURN n || ':' || coalesce(last, 0) || ':none';
     END \$\$" >/dev/null
check "4: first value of a new registry_marks tag" "$(q "$S" "SELECT segment_next('down')")" -eq 1
"$CLUSTER" stop "$R" fast >/dev/null 2>&1
GOT=$(q "$S" "SELECT take_until_error('down', 5000)")
log "4: registry stopped: $GOT (values handed out : the last : the SQLSTATE that ended them)"
check "4: registry stopped: the reserved values go on, then 55000" "${GOT##*:}" == 55000
expect_sql_error "$S" 55000 "did not confirm its mark" "SELECT segment_next('down')"
cluster_start "$R" 29200 -c pg_idgen.worker_id=-1
LAST=$(echo "$GOT" | cut -d: -f2)
check "4: the last value handed out is the registry's mark (every reserved value, nothing above)" \
    "$(rq "SELECT bound FROM pg_idgen_segment_marks WHERE system_identifier = $SYSID AND tag = 'down'")" -eq "$LAST"
resumed() { [ "$(q "$S" "SELECT segment_next('down')" 2>/dev/null)" -gt "$LAST" ]; }
if poll 600 resumed; then ok "4: registry back: values resume above the mark"; else ko "4: values did not resume"; fi
"$CLUSTER" stop "$R" fast >/dev/null 2>&1
"$CLUSTER" stop "$S" fast >/dev/null 2>&1
"$CLUSTER" restart "$S" "${PAIR_OPTS[@]}" >/dev/null 2>&1
expect_sql_error "$S" 55000 "could not be read" "SELECT segment_next('mk')"
check "4: registry down: a tag without the marks still works" "$(q "$S" "SELECT segment_next('pl') > 0")" == t
cluster_start "$R" 29200 -c pg_idgen.worker_id=-1
back() { [ -n "$(q "$S" "SELECT segment_next('mk')" 2>/dev/null)" ]; }
if poll 600 back; then ok "4: registry back: the first use of 'mk' after the restart works"; else ko "4: 'mk' unusable after the registry came back"; fi
check "4: 'mk' continues above every value it had" "$(q "$S" "SELECT segment_next('mk')")" -gt \
    "$(cat "$TMP/old" "$TMP/new" | awk -F'\t' '$1 == "mk" && $2 > m { m = $2 } END { print m + 0 }')"

# ---- 5. another node's role cannot write these marks ----
MARKS=$(rq "SELECT md5(string_agg(tag || slot || ':' || bound, ',' ORDER BY tag, slot)) FROM pg_idgen_segment_marks")
check "5: node_b cannot raise node_a's mark to the bigint maximum (42501)" \
    "$(as_err node_b "SELECT * FROM pg_idgen_segment_marks('$SYSID', $DBOID, 'mk', '{0}', '{9223372036854775807}')")" == 42501
check "5: node_b cannot read node_a's marks either (42501)" \
    "$(as_err node_b "SELECT * FROM pg_idgen_segment_marks('$SYSID', $DBOID, 'mk', '{}', '{}')")" == 42501
check "5: a login role without the grant cannot call it (42501)" \
    "$(as_err plain_login "SELECT * FROM pg_idgen_segment_marks('$SYSID', $DBOID, 'mk', '{0}', '{9223372036854775807}')")" == 42501
check "5: nor write the table (42501)" \
    "$(as_err node_b "UPDATE pg_idgen_segment_marks SET bound = 9223372036854775807")" == 42501
check "5: the marks are unchanged" \
    "$(rq "SELECT md5(string_agg(tag || slot || ':' || bound, ',' ORDER BY tag, slot)) FROM pg_idgen_segment_marks")" == "$MARKS"
check "5: the function is SECURITY DEFINER, search_path pinned, not executable by PUBLIC" \
    "$(rq "SELECT p.prosecdef AND p.proconfig = '{\"search_path=pg_catalog, pg_temp\"}' AND NOT has_function_privilege('public', p.oid, 'EXECUTE') FROM pg_proc p WHERE proname = 'pg_idgen_segment_marks'")" == t
finish
