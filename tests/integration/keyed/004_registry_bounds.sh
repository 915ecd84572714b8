#!/usr/bin/env bash
# keyed/004_registry_bounds — keyed spaces created with registry => true keep a mark per bucket in
# the lease registry, so that an asynchronous standby promoted at once, before it received the
# last bound raises, continues above every value the old primary handed out. Three clusters on
# ports 29180-29182 (+ IT_PORT_OFFSET): R the registry (node roles node_a for worker id 1, node_b
# for 2, set up as docs/worker-ids.md says), P the primary (fixed lease of worker id 1, connecting
# as node_a), S its asynchronous streaming standby (the same settings).
#  1. Spaces 'reg' (registry => true) and 'loc' (the control, registry => false), step 5, sections
#     of 100; keyed_status shows the mode; a first round of 2,000 keys on P writes 'reg''s marks
#     in the registry (owned by node_a), none for 'loc'.
#  2. S replays everything, then P's WAL sender is stopped (SIGSTOP); 12 rounds of the 2,000 keys
#     of both spaces on P (4 clients at once, each on a quarter of the keys) (every (space, key, value) the client received kept); P is killed (-9);
#     S did not receive P's last WAL (P's sender never sent it); S is promoted at once
#     (async_pair_start and async_pair_cut_and_promote of lease.bash).
#  3. 12 rounds on S: 'reg': 0 (key, value) pairs handed out twice, every key above its largest
#     old value; 'loc': pairs handed out twice (> 0: the test sees the hole the marks close).
#  4. Registry stopped: a registry space hands out what its raised bounds allow, then 55000 ("did
#     not confirm"); values resume when the registry is back. S restarted with the registry down:
#     the first use of 'reg' is 55000 ("marks ... could not be read"), then works once it is back.
#  5. In the registry: node_b (another node's role) cannot write node_a's marks, a login role
#     without the grant cannot call the function, neither can raise one to the bigint maximum
#     (42501); the marks are unchanged. The function is SECURITY DEFINER with a pinned
#     search_path, not executable by PUBLIC.
# Pass/fail never depends on timing: waits poll for states (bounded).
set -euo pipefail
. "$(dirname "$0")/../lib.bash"
. "$(dirname "$0")/../lease.bash"

R=it_kbreg
P=it_kbp
S=it_kbs
K=2000
ROUNDS=12
rq() { q "$R" "$@"; }
# as_err ROLE SQL: the SQLSTATE of SQL run on the registry as ROLE (empty if it succeeded)
as_err() {
    "$CLUSTER" psql "$R" -U "$1" -At -v VERBOSITY=verbose -c '\set VERBOSITY verbose' -c "$2" 2>&1 \
        | grep -oE 'ERROR: +[0-9A-Z]{5}' | head -1 | grep -oE '[0-9A-Z]{5}$' || true
}
# rounds NODE N OUT: 4 clients at once, client c on the keys k of 1..K with k % 4 = c, N rounds of
# keyed_next on both spaces; every (space, key, value) a client received is appended to OUT (the
# raises of several backends reach the lease worker together: batched per space)
rounds() {
    local node=$1 n=$2 out=$3 c r pids=()
    for c in 0 1 2 3; do
        {
            echo "SET client_min_messages = warning;"
            for r in $(seq 1 "$n"); do
                echo "COPY (SELECT 'reg', k, keyed_next('reg', k) FROM generate_series(1, $K) k WHERE k % 4 = $c) TO STDOUT;"
                echo "COPY (SELECT 'loc', k, keyed_next('loc', k) FROM generate_series(1, $K) k WHERE k % 4 = $c) TO STDOUT;"
            done
        } | "$CLUSTER" psql "$node" -v ON_ERROR_STOP=1 -q >"$out.c$c" 2>"$out.c$c.err" &
        pids+=($!)
    done
    for c in "${pids[@]}"; do wait "$c" || true; done
    cat "$out".c? >>"$out"
    cat "$out".c?.err >&2
}

# ---- the registry and the primary ----
async_pair_start "$R" "$P" "$S" 29180 pg_idgen_keyed_marks

# ---- 1. the spaces ----
q "$P" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
    "SELECT keyed_create('reg', 5, 100, registry => true)" "SELECT keyed_create('loc', 5, 100)" >/dev/null
check "1: keyed_status shows the mode" \
    "$(q "$P" "SELECT string_agg(space || ':' || registry, ',' ORDER BY space) FROM keyed_status")" == "loc:false,reg:true"
SYSID=$(q "$P" "SELECT system_identifier FROM pg_control_system()")
DBOID=$(q "$P" "SELECT oid FROM pg_database WHERE datname = current_database()")
rounds "$P" 1 "$TMP/old"
check "1: the first round handed out 2 x $K values" "$(wc -l <"$TMP/old")" -eq $((2 * K))
check "1: the registry has a mark per bucket used of 'reg' (21: keys 1 .. 2000 in sections 0 .. 20), at its bound 5, none for 'loc'" \
    "$(rq "SELECT string_agg(space || ':' || n || ':' || lo || '-' || hi, ',') FROM (SELECT space, count(*) n, min(bound) lo, max(bound) hi FROM pg_idgen_keyed_marks WHERE system_identifier = $SYSID AND database = $DBOID GROUP BY space) s")" \
    == "reg:21:5-5"
check "1: node_a owns the marks of P's system identifier" \
    "$(rq "SELECT role_name FROM pg_idgen_keyed_mark_owners WHERE system_identifier = $SYSID")" == node_a

# ---- 2. an asynchronous standby that misses the last raises ----
load_on_p() {
    rounds "$P" "$ROUNDS" "$TMP/old"
    check "2: P handed out $((ROUNDS + 1)) rounds of both spaces" "$(wc -l <"$TMP/old")" -eq $((2 * K * (ROUNDS + 1)))
}
async_pair_cut_and_promote 2 load_on_p

# ---- 3. the load continues on the promoted standby ----
rounds "$S" "$ROUNDS" "$TMP/new"
check "3: S handed out $ROUNDS rounds of both spaces (no error)" "$(wc -l <"$TMP/new")" -eq $((2 * K * ROUNDS))
dups() { sort "$TMP/old" "$TMP/new" | uniq -d | awk -F'\t' -v s="$1" '$1 == s' | wc -l; }
check "3: registry => true: (key, value) pairs handed out twice" "$(dups reg)" -eq 0
check "3: registry => false (the control): pairs handed out twice — the hole exists without the marks" "$(dups loc)" -gt 0
log "3: registry => false: $(dups loc) of $((K * ROUNDS)) pairs handed out twice"
check "3: registry => true: keys whose first value on S is not above their largest on P" \
    "$(awk -F'\t' '$1 == "reg" { if (FILENAME ~ /old$/) { if ($3 > m[$2]) m[$2] = $3 } else if (!($2 in f)) f[$2] = $3 }
        END { n = 0; for (k in f) if (f[k] <= m[k]) n++; print n }' "$TMP/old" "$TMP/new")" -eq 0

# ---- 4. the registry stopped ----
q "$S" "SET client_min_messages = warning" "SELECT keyed_create('down', 1000, 100, registry => true)" >/dev/null
check "4: first value of a new registry space" "$(q "$S" "SELECT keyed_next('down', 1)")" -eq 1
"$CLUSTER" stop "$R" fast >/dev/null 2>&1
check "4: registry stopped: the values below the raised bound go on (2 .. 1000)" \
    "$(q "$S" "SELECT max(keyed_next('down', 1)) FROM generate_series(1, 999)")" -eq 1000
expect_sql_error "$S" 55000 "did not confirm" "SELECT keyed_next('down', 1)"
expect_sql_error "$S" 55000 "did not confirm" "SELECT keyed_next('down', 1)"
cluster_start "$R" 29180 -c pg_idgen.worker_id=-1
resumed() { [ "$(q "$S" "SELECT keyed_next('down', 1)" 2>/dev/null)" -gt 1000 ]; }
if poll 600 resumed; then ok "4: registry back: values resume above the bound"; else ko "4: values did not resume"; fi
"$CLUSTER" stop "$R" fast >/dev/null 2>&1
"$CLUSTER" stop "$S" fast >/dev/null 2>&1
"$CLUSTER" restart "$S" "${PAIR_OPTS[@]}" >/dev/null 2>&1
expect_sql_error "$S" 55000 "could not be read" "SELECT keyed_next('reg', 1)"
check "4: registry down: a local space still works" "$(q "$S" "SELECT keyed_next('loc', 5000) > 0")" == t
cluster_start "$R" 29180 -c pg_idgen.worker_id=-1
back() { [ -n "$(q "$S" "SELECT keyed_next('reg', 1)" 2>/dev/null)" ]; }
if poll 600 back; then ok "4: registry back: the first use of 'reg' after the restart works"; else ko "4: 'reg' unusable after the registry came back"; fi
MAXOLD=$(awk -F'\t' '$1 == "reg" && $2 == 1 { if ($3 > m) m = $3 } END { print m + 0 }' "$TMP/old" "$TMP/new")
check "4: key 1 of 'reg' continues above every value it had" "$(q "$S" "SELECT keyed_next('reg', 1)")" -gt "$MAXOLD"

# ---- 5. another node's role cannot write these marks ----
MARKS=$(rq "SELECT md5(string_agg(space || bucket || ':' || bound, ',' ORDER BY space, bucket)) FROM pg_idgen_keyed_marks")
check "5: node_b cannot raise node_a's mark to the bigint maximum (42501)" \
    "$(as_err node_b "SELECT * FROM pg_idgen_keyed_marks('$SYSID', $DBOID, 'reg', '{0}', '{9223372036854775807}')")" == 42501
check "5: node_b cannot read node_a's marks either (42501)" \
    "$(as_err node_b "SELECT * FROM pg_idgen_keyed_marks('$SYSID', $DBOID, 'reg', '{}', '{}')")" == 42501
check "5: a login role without the grant cannot call it (42501)" \
    "$(as_err plain_login "SELECT * FROM pg_idgen_keyed_marks('$SYSID', $DBOID, 'reg', '{0}', '{9223372036854775807}')")" == 42501
check "5: nor write the table (42501)" \
    "$(as_err node_b "UPDATE pg_idgen_keyed_marks SET bound = 9223372036854775807")" == 42501
check "5: nor take the ownership (42501)" \
    "$(as_err node_b "UPDATE pg_idgen_keyed_mark_owners SET role_name = 'node_b'")" == 42501
check "5: the marks are unchanged" \
    "$(rq "SELECT md5(string_agg(space || bucket || ':' || bound, ',' ORDER BY space, bucket)) FROM pg_idgen_keyed_marks")" == "$MARKS"
as_err node_b "SELECT * FROM pg_idgen_keyed_marks('42', $DBOID, 'x', '{0}', '{7}')" >/dev/null
check "5: node_b writes the marks of a system identifier of its own (and owns them)" \
    "$(rq "SELECT m.bound || ':' || o.role_name FROM pg_idgen_keyed_marks m JOIN pg_idgen_keyed_mark_owners o USING (system_identifier) WHERE system_identifier = 42")" == "7:node_b"
check "5: the function is SECURITY DEFINER, search_path pinned, not executable by PUBLIC" \
    "$(rq "SELECT p.prosecdef AND p.proconfig = '{\"search_path=pg_catalog, pg_temp\"}' AND NOT has_function_privilege('public', p.oid, 'EXECUTE') FROM pg_proc p WHERE proname = 'pg_idgen_keyed_marks'")" == t
finish
