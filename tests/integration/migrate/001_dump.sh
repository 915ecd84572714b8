#!/usr/bin/env bash
# migrate/001_dump — uid_migrate_key (docs/migrating.md) on real data, then
# pg_dump / pg_restore into a fresh database:
#   a bigserial key with 20,000 rows, a table whose foreign key references it and a view on it;
#   an integer serial key (converted with to_bigint => true, with its referencing column); a
#   GENERATED ALWAYS AS IDENTITY key; a partitioned table; an invoice number moved to a segment
#   tag. After the conversion and after the restore: every DEFAULT is the new generator, the data
#   is the same (md5 of the ordered rows), the foreign keys exist and are enforced, the views
#   return the rows, the old sequences are gone, and new keys are above every old key.
# integration: cross-version
set -euo pipefail
. "$(dirname "$0")/../lib.bash"

C=it_migrate
cluster_start "$C" 28968
q "$C" "CREATE DATABASE app" >/dev/null
a() { qdb "$C" app "$@"; }
r() { qdb "$C" restored "$@"; }

a "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
a "CREATE TABLE customers (id bigserial PRIMARY KEY, name text NOT NULL)" \
  "INSERT INTO customers (name) SELECT 'c' || g FROM generate_series(1, 20000) g" \
  "CREATE TABLE orders (id serial PRIMARY KEY, customer_id bigint NOT NULL REFERENCES customers (id), total int)" \
  "INSERT INTO orders (customer_id, total) SELECT 1 + g % 20000, g FROM generate_series(1, 30000) g" \
  "CREATE TABLE order_lines (order_id integer NOT NULL REFERENCES orders (id), qty int)" \
  "INSERT INTO order_lines SELECT 1 + g % 30000, g % 7 FROM generate_series(1, 40000) g" \
  "CREATE VIEW big_customers AS SELECT c.id, c.name, sum(o.total) AS spent FROM customers c JOIN orders o ON o.customer_id = c.id GROUP BY c.id, c.name" \
  "CREATE TABLE events (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, what text)" \
  "INSERT INTO events (what) SELECT 'e' || g FROM generate_series(1, 5000) g" \
  "CREATE TABLE log (id bigserial, at date NOT NULL, PRIMARY KEY (id)) PARTITION BY RANGE (id)" \
  "CREATE TABLE log_old PARTITION OF log FOR VALUES FROM (1) TO (100000)" \
  "CREATE TABLE log_new PARTITION OF log FOR VALUES FROM (100000) TO (MAXVALUE)" \
  "INSERT INTO log (at) SELECT date '2026-01-01' + g % 300 FROM generate_series(1, 3000) g" \
  "CREATE TABLE invoices (no bigserial PRIMARY KEY, amount int)" \
  "INSERT INTO invoices (amount) SELECT g FROM generate_series(1, 1234) g" >/dev/null

fingerprint() {   # md5 of every table's ordered rows and of the view
    "$@" "SELECT md5(string_agg(x, ',' ORDER BY x)) FROM (
            SELECT 'c' || id || name AS x FROM customers
            UNION ALL SELECT 'o' || id || ':' || customer_id || ':' || total FROM orders
            UNION ALL SELECT 'l' || order_id || ':' || qty || ':' || count(*) FROM order_lines GROUP BY order_id, qty
            UNION ALL SELECT 'v' || id || ':' || spent FROM big_customers
            UNION ALL SELECT 'e' || id || what FROM events
            UNION ALL SELECT 'g' || id || ':' || at FROM log
            UNION ALL SELECT 'i' || no || ':' || amount FROM invoices) s"
}
before=$(fingerprint a)
maxes() { "$@" "SELECT (SELECT max(id) FROM customers) || ' ' || (SELECT max(id) FROM orders) || ' ' || (SELECT max(id) FROM events) || ' ' || (SELECT max(id) FROM log) || ' ' || (SELECT max(no) FROM invoices)"; }
read -r max_c max_o max_e max_l max_i <<<"$(maxes a)"
check "old maxima" "$max_c $max_o $max_e $max_l $max_i" == "20000 30000 5000 3000 1234"

# the conversions, one transaction each (the function runs in the caller's transaction)
dry=$(a "SELECT string_agg(s, ' ') FROM uid_migrate_key('orders', 'id', to_bigint => true, dry_run => true) s")
check_match "dry run of the integer key: both columns to bigint, then the default" "$dry" \
    '^LOCK TABLE public.orders IN ACCESS EXCLUSIVE MODE; ALTER TABLE public.orders ALTER COLUMN id TYPE bigint; ALTER TABLE public.order_lines ALTER COLUMN order_id TYPE bigint; ALTER TABLE public.orders ALTER COLUMN id SET DEFAULT public.snowflake_next\(\); DROP SEQUENCE public.orders_id_seq;$'
check "dry run changed nothing" "$(a "SELECT format_type(atttypid, NULL) FROM pg_attribute WHERE attrelid = 'orders'::regclass AND attname = 'id'")" == integer
PGDATABASE=app expect_sql_error "$C" 42804 'ALTER TABLE public.orders ALTER COLUMN id TYPE bigint first' \
    "SELECT * FROM uid_migrate_key('orders', 'id')"
a "CREATE VIEW order_ids AS SELECT id FROM orders" >/dev/null
PGDATABASE=app expect_sql_error "$C" 0A000 'views or rules depend on it: public.order_ids' \
    "SELECT * FROM uid_migrate_key('orders', 'id', to_bigint => true)"
a "DROP VIEW order_ids" >/dev/null
a "BEGIN" \
  "SELECT count(*) FROM uid_migrate_key('customers', 'id')" \
  "COMMIT" >/dev/null
a "BEGIN" \
  "SELECT count(*) FROM uid_migrate_key('orders', 'id', to_bigint => true)" \
  "SELECT count(*) FROM uid_migrate_key('events', 'id')" \
  "SELECT count(*) FROM uid_migrate_key('log', 'id')" \
  "SELECT count(*) FROM uid_migrate_key('invoices', 'no', generator => 'segment', tag => 'invoice')" \
  "COMMIT" >/dev/null

defaults() {
    "$@" "SELECT string_agg(c.relname || '.' || a.attname || '=' || coalesce(pg_get_expr(d.adbin, d.adrelid), 'none') || coalesce(nullif(' identity ' || a.attidentity::text, ' identity '), ''), ' ' ORDER BY c.relname)
            FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
            LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
           WHERE (c.relname, a.attname) IN (('customers', 'id'), ('orders', 'id'), ('events', 'id'), ('log', 'id'),
                                            ('log_old', 'id'), ('log_new', 'id'), ('invoices', 'no'))"
}
want_defaults="customers.id=snowflake_next() events.id=snowflake_next() invoices.no=segment_next('invoice'::text) log.id=snowflake_next() log_new.id=snowflake_next() log_old.id=snowflake_next() orders.id=snowflake_next()"
check "after the conversion: every default is the new generator" "$(defaults a)" == "$want_defaults"
check "after the conversion: the data is unchanged" "$(fingerprint a)" == "$before"
seqs() { "$@" "SELECT count(*) FROM pg_class WHERE relkind = 'S' AND relname NOT LIKE 'pg_idgen_seg_%'"; }
check "after the conversion: the old sequences are gone" "$(seqs a)" -eq 0
check "orders.id and order_lines.order_id are bigint" \
    "$(a "SELECT string_agg(format_type(atttypid, NULL), ' ' ORDER BY attrelid::regclass::text) FROM pg_attribute WHERE (attrelid, attname) IN (('orders'::regclass, 'id'), ('order_lines'::regclass, 'order_id'))")" \
    == "bigint bigint"

# pg_dump / pg_restore into a fresh database
dump=$TMP/app.dump
touch "$dump" && chown postgres "$dump"
sock=$("$CLUSTER" sockdir "$C"); port=$("$CLUSTER" port "$C")
runuser -u postgres -- "$PGBIN/pg_dump" -h "$sock" -p "$port" -U postgres -Fc -f "$dump" app
q "$C" "CREATE DATABASE restored" >/dev/null
runuser -u postgres -- "$PGBIN/pg_restore" -h "$sock" -p "$port" -U postgres -d restored "$dump"
check "restored: every default is the new generator" "$(defaults r)" == "$want_defaults"
check "restored: the data and the view are the same" "$(fingerprint r)" == "$before"
check "restored: no old sequence" "$(seqs r)" -eq 0
check "restored: the foreign keys" \
    "$(r "SELECT string_agg(conrelid::regclass::text || '->' || confrelid::regclass::text, ' ' ORDER BY 1) FROM pg_constraint WHERE contype = 'f' AND conparentid = 0")" \
    == "order_lines->orders orders->customers"
PGDATABASE=restored expect_sql_error "$C" 23503 'violates foreign key constraint' "INSERT INTO orders (customer_id, total) VALUES (424242, 1)"
check "restored: the view lists every customer with orders" "$(r "SELECT count(*) FROM big_customers")" -eq 20000

# new keys above the old ones, in the restored database and in the original
for db in app restored; do
    out=$(qdb "$C" "$db" \
        "INSERT INTO customers (name) SELECT 'new' || g FROM generate_series(1, 1000) g" \
        "INSERT INTO orders (customer_id, total) SELECT max(id), 1 FROM customers" \
        "INSERT INTO order_lines SELECT max(id), 1 FROM orders" \
        "INSERT INTO events (id, what) VALUES (0, 'explicit ids are allowed now')" \
        "INSERT INTO events (what) VALUES ('x')" \
        "INSERT INTO log (at) VALUES ('2026-11-22')" \
        "INSERT INTO invoices (amount) SELECT g FROM generate_series(1, 10) g" \
        "SELECT (SELECT count(*) FILTER (WHERE id > $max_c) FROM customers WHERE name LIKE 'new%') || ' ' ||
                (SELECT count(*) FROM orders WHERE id > $max_o) || ' ' ||
                (SELECT count(*) FROM events WHERE id > $max_e) || ' ' ||
                (SELECT count(*) FROM log_new WHERE id > $max_l) || ' ' ||
                (SELECT min(no) FROM invoices WHERE no > $max_i) || ' ' ||
                (SELECT count(*) FROM invoices WHERE no > $max_i) || ' ' ||
                (SELECT count(DISTINCT (uid_decode(id)).worker_id) FROM customers WHERE id > $max_c)" 2>&1 | tail -n 1)
    check "$db: new customers/orders/events/log rows above the old keys, invoices continue from the tag, worker 1" \
        "$out" == "1000 1 1 1 1235 10 1"
done
check "the restored tag continues above every invoice number" \
    "$(r "SELECT min(no) > $max_i FROM invoices WHERE amount BETWEEN 1 AND 10 AND no > $max_i")" == t

finish
