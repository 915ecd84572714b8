#!/usr/bin/env bash
# segment/012_backing_sequence_privileges — a segment tag's backing sequences (the tag's, and each
# slot's of a slotted tag) are its durable high-water marks: no role but their owner gets a
# privilege on them, whatever default privileges the superuser that creates the tag has. One
# cluster on port 29188 (+ IT_PORT_OFFSET). The superuser sets ALTER DEFAULT PRIVILEGES ... GRANT
# ALL ON SEQUENCES to PUBLIC (in schema public) and to the role app (everywhere), then creates a
# tag and a slotted tag; app uses both (segment_next is PUBLIC's), then tries setval on their
# sequences: 42501, and after a restart no value of a tag is handed out twice. (Without the revoke, app
# moved the sequence back to 1 and, after the restart, got 11 again.)
# Pass/fail never depends on timing.
set -euo pipefail
. "$(dirname "$0")/../lib.bash"

C=it_segacl
cluster_start "$C" 29188 -c pg_idgen.worker_id=1
q "$C" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" "CREATE ROLE app LOGIN" \
    "ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT ALL ON SEQUENCES TO PUBLIC" \
    "ALTER DEFAULT PRIVILEGES GRANT ALL ON SEQUENCES TO app" \
    "SELECT segment_create('plain', 10)" "SELECT segment_create('slotted', 10, slots => 4)" >/dev/null
# the control: a sequence the superuser creates itself gets the default privileges
q "$C" "CREATE SEQUENCE control_seq" >/dev/null
check "control: the default privileges give PUBLIC and app privileges on a new sequence" \
    "$(q "$C" "SELECT count(DISTINCT a.grantee) FROM pg_class c, aclexplode(c.relacl) a WHERE c.relname = 'control_seq' AND a.grantee <> c.relowner")" -eq 2
SEQS="SELECT c.oid FROM pg_class c WHERE c.relkind = 'S' AND c.relname LIKE 'pg\_idgen\_seg\_%'"
check "the tags have backing sequences (the plain tag's, the slotted tag's and its 4 slots')" "$(q "$C" "SELECT count(*) FROM ($SEQS) s")" -eq 6
check "no role but the owner has a privilege on a backing sequence" \
    "$(q "$C" "SELECT count(*) FROM pg_class c, aclexplode(c.relacl) a WHERE c.oid IN ($SEQS) AND a.grantee <> c.relowner")" -eq 0

app() { "$CLUSTER" psql "$C" -U app -At -v ON_ERROR_STOP=0 -c '\set VERBOSITY verbose' "$@" 2>&1; }
q "$C" "CREATE TABLE seen (tag text, v bigint)" "GRANT INSERT, SELECT ON seen TO app" >/dev/null
take() { app -c "INSERT INTO seen SELECT t, segment_next(t) FROM unnest('{plain,slotted}'::text[]) t, generate_series(1, 25)" >/dev/null; }
take
check "app got values of both tags" "$(q "$C" "SELECT count(*) FROM seen")" -eq 50
for s in $(q "$C" "SELECT c.oid::regclass FROM pg_class c WHERE c.oid IN ($SEQS)"); do
    check_match "app may not setval $s (42501)" "$(app -c "SELECT setval('$s', 1)")" 'ERROR: +42501'
done
"$CLUSTER" restart "$C" >/dev/null 2>&1
take
check "after the restart app got values of both tags again" "$(q "$C" "SELECT count(*) FROM seen")" -eq 100
check "no value of a tag handed out twice" "$(q "$C" "SELECT count(*) - count(DISTINCT (tag, v)) FROM seen")" -eq 0
finish
