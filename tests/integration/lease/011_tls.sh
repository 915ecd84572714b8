#!/usr/bin/env bash
# lease/011_tls — TLS and passwords of the registry connection (docs/leases-tls.md). A registry R
# (port 29027 + IT_PORT_OFFSET; a PostgreSQL built with OpenSSL: this major or Debian's 15, else
# the test is skipped) that accepts only `hostssl` connections (pg_hba.conf), with a
# server certificate for localhost/127.0.0.1 from a CA made here by openssl; node N (29028,
# ssl off) in auto mode, whose pg_idgen.registry is reloaded for each case; the states come
# from N's snowflake_lease().
#  1. verify-full by host=localhost and (in 2, after a refusal) by host=127.0.0.1, both in the
#     certificate's SAN: held, and R sees the worker's session encrypted (pg_stat_ssl).
#  2. verify-full by a name the certificate does not carry (host=wrong.example hostaddr=127.0.0.1):
#     refused, "name mismatch"; verify-ca by that name: held (the chain only); verify-full with
#     another CA's certificate as sslrootcert: refused, "not signed by a CA of sslrootcert", and
#     so is require with it (as libpq); require without sslrootcert: held (unchecked).
#  3. sslmode=disable: refused by R's hostssl-only pg_hba.conf; sslmode=require against N
#     itself (no TLS): refused, "server does not support TLS".
#  4. a role with `cert` authentication (client certificate only, no password): held; the same
#     with a group-readable key file: refused, saying so; as a URI: held; verify-full with only
#     hostaddr=: misconfigured, verify-ca with it: held; host=N,R with N first (no TLS): held through R.
#  5. passfile= (libpq's format: a wildcard port, an escaped ':' in the password): held with no
#     password in the setting; a world-readable password file is refused, saying so.
#  0. a password in the setting (password=, or a URI's user:password@) is refused when set (22023),
#     the error without it: cases 1-3 authenticate by password through a password file.
#  No detail ever shows the password.
# integration: major 15
# (in make test's share of 15 and 18: node and registry then are both Debian's 15, built with OpenSSL)
set -euo pipefail
. "$(dirname "$0")/../lib.bash"
. "$(dirname "$0")/../lease.bash"

R=it_tlsr
N=it_tlsn
PR=$(itport 29027)
PN=$(itport 29028)
PW='S3cret pass:word'
C=$TMP/certs
mkdir -p "$C"

# ---- certificates: a CA, the registry's server certificate, a client certificate, another CA ----
ossl() { openssl "$@" >/dev/null 2>&1 || { echo "openssl $* failed" >&2; exit 1; }; }
ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
ossl req -x509 "${ec[@]}" -keyout "$C/ca.key" -out "$C/ca.crt" -days 2 -subj "/CN=pg_idgen test CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
ossl req -x509 "${ec[@]}" -keyout "$C/other-ca.key" -out "$C/other-ca.crt" -days 2 -subj "/CN=another CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
sign() {   # NAME SUBJECT EXTENSIONS
    ossl req -new "${ec[@]}" -keyout "$C/$1.key" -out "$C/$1.csr" -subj "$2"
    printf '%b' "$3" >"$C/$1.ext"
    ossl x509 -req -in "$C/$1.csr" -CA "$C/ca.crt" -CAkey "$C/ca.key" -CAcreateserial -days 2 \
        -out "$C/$1.crt" -extfile "$C/$1.ext"
}
sign server "/CN=localhost" "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n"
sign client "/CN=certuser" "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n"
chown -R postgres "$C"
chmod 600 "$C"/*.key
cp "$C/client.key" "$C/client-loose.key"; chown postgres "$C/client-loose.key"; chmod 640 "$C/client-loose.key"
printf '# registry passwords\n*:*:other:leaser:wrong\nlocalhost:*:reg:leaser:%s\n' "${PW//:/\\:}" >"$C/pgpass"
chown postgres "$C/pgpass"
printf '*:*:reg:leaser:%s\n' "${PW//:/\\:}" >"$C/pgpass-any"
chown postgres "$C/pgpass-any"; chmod 600 "$C/pgpass-any"

# ---- the registry: hostssl only ----
# It needs a server built with OpenSSL: this major's if it is (Debian's 15), else Debian's 15
# when pg_idgen is installed there (the 16-18 wheels have no SSL; a registry on another major
# than its nodes is as good), with a pg_idgen whose registry has the node functions (0.5.0 or
# later: this node writes the registry only through them). Without one the test is skipped,
# saying why.
RCFG=
for c in "$PG_CONFIG" "$(pg_config_for 15)"; do
    if [ -x "$c" ] && "$c" --configure | grep -q -- --with-openssl \
        && [ -f "$("$c" --sharedir)/extension/pg_idgen.control" ] \
        && grep -qs pg_idgen_lease_claim "$("$c" --sharedir)"/extension/pg_idgen--*.sql; then RCFG=$c; break; fi
done
if [ -z "$RCFG" ]; then
    log "SKIP: no PostgreSQL here is built with OpenSSL and has pg_idgen 0.5.0 or later installed (PostgreSQL $PG's build has no SSL; Debian's 15 with pg_idgen would do): TLS to the registry is not tested"
    finish
fi
register_cluster "$R"
env PG= PG_CONFIG="$RCFG" "$CLUSTER" start "$R" "$PR" -c ssl=on -c "ssl_cert_file=$C/server.crt" -c "ssl_key_file=$C/server.key" \
    -c "ssl_ca_file=$C/ca.crt" -c "listen_addresses=127.0.0.1" 2>/dev/null
log "registry: PostgreSQL $("$RCFG" --version | awk '{ print $2 }'), node: PostgreSQL $PG"
q "$R" "SET client_min_messages = warning" "CREATE DATABASE reg" "CREATE ROLE leaser LOGIN PASSWORD '$PW'" \
    "CREATE ROLE certuser LOGIN" >/dev/null
qdb "$R" reg "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
    "$(registry_node_sql leaser 0 3)" "$(registry_node_sql certuser 0 3)" >/dev/null
HBA=$("$CLUSTER" pgdata "$R")/pg_hba.conf
cat >"$HBA" <<EOF
local   all  all                     trust
hostssl reg  certuser  127.0.0.1/32  cert
hostssl reg  leaser    127.0.0.1/32  scram-sha-256
EOF
q "$R" "SELECT pg_reload_conf()" >/dev/null
check "R: pg_hba.conf has only hostssl lines for TCP" \
    "$(q "$R" "SELECT string_agg(DISTINCT type, ',') FROM pg_hba_file_rules WHERE error IS NULL AND type <> 'local'")" == hostssl

# ---- the node ----
cluster_start "$N" 29028 -c pg_idgen.worker_id=-1 -c pg_idgen.lease_mode=auto -c pg_idgen.lease_range=0-3 \
    -c pg_idgen.lease_ttl=6 -c pg_idgen.lease_margin=1 -c pg_idgen.node_name=n
q "$N" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
use() { q "$N" "ALTER SYSTEM SET pg_idgen.registry = '${1//\'/\'\'}'" "SELECT pg_reload_conf()" >/dev/null; }
# the password is never shown, whatever happened
no_password() {
    local d; d=$(lease "$N" detail)
    if [[ $d == *S3cret* || $d == *pass:word* ]]; then ko "$1: the detail shows the password: $d"; else ok "$1: the detail has no password"; fi
}
BASE="port=$PR dbname=reg connect_timeout=5"
# the password is never in the setting (refused there): a password file for every host name
PWD_OPT="user=leaser passfile=$C/pgpass-any"

# ---- 0. no password in the setting ----
expect_sql_error "$N" 22023 'invalid value for parameter "pg_idgen.registry": pg_idgen.registry must not hold a password' \
    "ALTER SYSTEM SET pg_idgen.registry = 'host=localhost $BASE user=leaser password=''S3cret'' sslmode=require'"
check "0: the error has no password" "$([[ $LAST_ERR == *S3cret* ]] && echo shows || echo clean)" == clean
expect_sql_error "$N" 22023 'must not hold a password' \
    "ALTER SYSTEM SET pg_idgen.registry = 'postgresql://leaser:S3cret@localhost:$PR/reg?sslmode=require'"
check "0: ... as a URI: no password in the error" "$([[ $LAST_ERR == *S3cret* ]] && echo shows || echo clean)" == clean

# ---- 1. verify-full, the right name ----
use "host=localhost $BASE $PWD_OPT sslmode=verify-full sslrootcert=$C/ca.crt"
wait_for "1: verify-full, host=localhost: held" state_is "$N" held
check "1: the worker's session at R is encrypted" \
    "$(q "$R" "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'pg_idgen lease worker'")" == t
# ---- 2. a name mismatch, verify-ca, another CA (each case changes the state) ----
use "host=wrong.example hostaddr=127.0.0.1 $BASE $PWD_OPT sslmode=verify-full sslrootcert=$C/ca.crt"
wait_for "2: verify-full by a name not in the certificate: refused, name mismatch" \
    detail_matches "$N" 'certificate verify failed: name mismatch'
check "2: ... state" "$(lease "$N" state)" == "registry unreachable"
no_password "2: name mismatch"
use "host=wrong.example hostaddr=127.0.0.1 $BASE $PWD_OPT sslmode=verify-ca sslrootcert=$C/ca.crt"
wait_for "2: verify-ca by that name (the chain is checked, not the name): held" state_is "$N" held
use "host=localhost $BASE $PWD_OPT sslmode=verify-full sslrootcert=$C/other-ca.crt"
wait_for "2: verify-full with another CA as sslrootcert: refused" \
    detail_matches "$N" 'certificate verify failed: the server.s certificate is not signed by a CA of sslrootcert'
use "host=127.0.0.1 $BASE $PWD_OPT sslmode=verify-full sslrootcert=$C/ca.crt"
wait_for "1: verify-full, host=127.0.0.1 (an IP address of the SAN): held" state_is "$N" held
use "host=localhost $BASE $PWD_OPT sslmode=require sslrootcert=$C/other-ca.crt"
wait_for "2: require with sslrootcert checks the chain too (as libpq): refused" \
    detail_matches "$N" 'not signed by a CA of sslrootcert'
use "host=localhost $BASE $PWD_OPT sslmode=require"
wait_for "2: require without sslrootcert: encrypted, the certificate unchecked: held" state_is "$N" held
use "host=localhost $BASE $PWD_OPT sslmode=verify-full"
wait_for "2: verify-full without sslrootcert: misconfigured" \
    detail_matches "$N" '^pg_idgen.registry is not a valid connection string: sslmode verify-ca and verify-full need sslrootcert'
check "2: ... state" "$(lease "$N" state)" == misconfigured

# ---- 3. no TLS ----
use "host=127.0.0.1 $BASE $PWD_OPT sslmode=disable"
wait_for "3: sslmode=disable: refused by R's hostssl-only pg_hba.conf" \
    detail_matches "$N" 'no pg_hba.conf entry for host .*no encryption'
no_password "3: disable"
use "host=127.0.0.1 port=$PN dbname=postgres $PWD_OPT sslmode=require"
wait_for "3: require against a server without TLS: refused" \
    detail_matches "$N" 'error performing TLS handshake: server does not support TLS'
no_password "3: require"

# ---- 4. a client certificate, no password ----
use "host=localhost $BASE user=certuser sslmode=verify-full sslrootcert=$C/ca.crt sslcert=$C/client.crt sslkey=$C/client.key"
wait_for "4: cert authentication (no password): held" state_is "$N" held
check "4: R authenticated the worker by its certificate" \
    "$(q "$R" "SELECT s.client_dn FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'pg_idgen lease worker' AND a.usename = 'certuser'")" == "/CN=certuser"
use "host=localhost $BASE user=certuser sslmode=verify-full sslrootcert=$C/ca.crt"
wait_for "4: the same role without a client certificate: refused by R" \
    detail_matches "$N" 'connection requires a valid client certificate|certificate authentication failed|no pg_hba.conf entry'
use "host=localhost $BASE user=certuser sslmode=verify-full sslrootcert=$C/ca.crt sslcert=$C/client.crt sslkey=$C/client-loose.key"
wait_for "4: a group-readable key file: refused, saying so" \
    detail_matches "$N" 'the file of sslkey has group or world access'
use "postgresql://certuser@localhost:$PR/reg?sslmode=verify-full&sslrootcert=$C/ca.crt&sslcert=$C/client.crt&sslkey=$C/client.key"
wait_for "4: the same as a URI (postgresql://certuser@localhost:port/reg?sslmode=verify-full&...): held" state_is "$N" held
use "hostaddr=127.0.0.1 $BASE user=certuser sslmode=verify-full sslrootcert=$C/ca.crt sslcert=$C/client.crt sslkey=$C/client.key"
wait_for "4: verify-full with hostaddr= only (no name to verify): misconfigured, saying so" \
    detail_matches "$N" 'verify-full needs host='
use "hostaddr=127.0.0.1 $BASE user=certuser sslmode=verify-ca sslrootcert=$C/ca.crt sslcert=$C/client.crt sslkey=$C/client.key"
wait_for "4: verify-ca with hostaddr= only: held" state_is "$N" held
use "hostaddr=127.0.0.1 $BASE user=certuser sslmode=verify-full sslrootcert=$C/ca.crt sslcert=$C/client.crt sslkey=$C/client.key"
wait_for "4: (verify-full, hostaddr= only, again: misconfigured)" state_is "$N" misconfigured
use "host=127.0.0.1,localhost port=$PN,$PR dbname=reg user=certuser sslmode=verify-full sslrootcert=$C/ca.crt sslcert=$C/client.crt sslkey=$C/client.key"
wait_for "4: two hosts, the first without TLS: refused there, held through the second" state_is "$N" held

# ---- 5. a password file ----
chmod 644 "$C/pgpass"
use "host=localhost $BASE user=leaser passfile=$C/pgpass sslmode=verify-full sslrootcert=$C/ca.crt"
wait_for "5: a world-readable password file: refused, saying so" \
    detail_matches "$N" 'the password file \(passfile\) has group or world access; permissions should be u=rw \(0600\) or less'
chmod 600 "$C/pgpass"
use "host=localhost $BASE user=leaser passfile=$C/pgpass sslmode=verify-full sslrootcert=$C/ca.crt connect_timeout=4"
wait_for "5: the password from the password file (escaped ':', wildcard port): held" state_is "$N" held
q "$R" "ALTER ROLE leaser PASSWORD 'changed'" >/dev/null
q "$R" "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'pg_idgen lease worker'" >/dev/null
wait_for "5: after the role's password changed: refused by R" \
    detail_matches "$N" 'password authentication failed for user "leaser"'
no_password "5: wrong password"

finish
