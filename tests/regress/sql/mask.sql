-- Opaque public ids: uid_mask/uid_unmask (FF1-AES-256 over 63 bits),
-- mask keys and their privileges, text codes.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_idgen;

-- FF1 through SQL: NIST SP 800-38G samples #1, #2 (AES-128, radix 10), #3 (radix 36) and #7 (AES-256)
SELECT uid_ff1_encrypt('\x2B7E151628AED2A6ABF7158809CF4F3C', 10, '{0,1,2,3,4,5,6,7,8,9}') AS sample1;
SELECT uid_ff1_encrypt('\x2B7E151628AED2A6ABF7158809CF4F3C', 10, '{0,1,2,3,4,5,6,7,8,9}',
                       '\x39383736353433323130') AS sample2;
SELECT uid_ff1_encrypt('\x2B7E151628AED2A6ABF7158809CF4F3C', 36,
                       '{0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18}', '\x3737373770717273373737') AS sample3;
SELECT uid_ff1_encrypt('\x2B7E151628AED2A6ABF7158809CF4F3CEF4359D8D580AA4F7F036D6F04FC6A94', 10,
                       '{0,1,2,3,4,5,6,7,8,9}') AS sample7;
SELECT uid_ff1_decrypt('\x2B7E151628AED2A6ABF7158809CF4F3C', 10, '{2,4,3,3,4,7,7,4,8,4}') AS sample1_back;
-- the fpe crate's radix-2 vector (AES-256 zero key, 32 zero bits) and a Zcash one (88 bits)
SELECT array_to_string(uid_ff1_encrypt(decode(repeat('00', 32), 'hex'), 2, array_fill(0, ARRAY[32])), '') AS binary32;
SELECT array_to_string(uid_ff1_encrypt('\x2B7E151628AED2A6ABF7158809CF4F3CEF4359D8D580AA4F7F036D6F04FC6A94', 2,
                       array_fill(0, ARRAY[88])), '') AS zcash88;

-- uid_mask_raw is FF1 over the 63 binary digits of the id, empty tweak
WITH k(key) AS (SELECT decode(repeat('2b', 32), 'hex'))
SELECT x.id, uid_mask_raw(x.id, k.key) AS masked,
       uid_mask_raw(x.id, k.key) = array_to_string(uid_ff1_encrypt(k.key, 2,
           (SELECT array_agg(substr(x.id::bit(64)::text, i, 1)::int ORDER BY i) FROM generate_series(2, 64) i)), '')::bit(63)::bigint
         AS is_ff1,
       uid_unmask_raw(uid_mask_raw(x.id, k.key), k.key) = x.id AS round_trip
  FROM k, (VALUES (0::bigint), (1), (2), (1000), (9223372036854775806), (9223372036854775807)) x(id);

-- a known key, inserted as pg_restore would (the functions draw random ones)
INSERT INTO pg_idgen_mask_keys (name, version, key) VALUES ('regress', 1, decode(repeat('2b', 32), 'hex'));
SELECT uid_mask(1000, 'regress') = uid_mask_raw(1000, decode(repeat('2b', 32), 'hex')) AS same_as_raw;
SELECT name, version, kept, current, in_use, fingerprint FROM uid_mask_keys WHERE name = 'regress';
-- round trip: sequential, edges, random
SELECT count(*) AS ids, bool_and(uid_unmask(uid_mask(g, 'regress'), 'regress') = g) AS round_trip,
       count(DISTINCT uid_mask(g, 'regress')) AS distinct_masks, bool_and(uid_mask(g, 'regress') >= 0) AS non_negative
  FROM (SELECT generate_series(0, 100000)::bigint AS g
        UNION ALL SELECT 9223372036854775807 - generate_series(0, 1000)
        UNION ALL SELECT (random() * 9.2e18)::bigint FROM generate_series(1, 10000)) s;
-- consecutive ids show no order: rank correlation near 0, about half of the steps go up
SELECT abs(corr(r_id, r_masked)) < 0.02 AS rank_corr_near_0, abs(avg(up::int) - 0.5) < 0.01 AS half_go_up
  FROM (SELECT rank() OVER (ORDER BY g) AS r_id, rank() OVER (ORDER BY m) AS r_masked,
               m > lag(m) OVER (ORDER BY g) AS up
          FROM (SELECT g, uid_mask(g, 'regress') AS m FROM generate_series(1000000, 1100000) g) s) t;

-- a fresh key: random, 32 bytes, version 1
SELECT uid_mask_key_create('orders') AS version;
SELECT length(key), key <> decode(repeat('00', 32), 'hex') AS not_zero FROM pg_idgen_mask_keys WHERE name = 'orders';
SELECT uid_unmask(uid_mask(123456789, 'orders'), 'orders') AS back;
-- rotation: new masks use version 2, version 1 still unmasks
CREATE TEMP TABLE saved AS SELECT uid_mask(42, 'orders') AS m1, uid_mask_text(42, 'orders') AS t1;
SELECT uid_mask_key_rotate('orders') AS version;
SELECT version, kept, current, in_use FROM uid_mask_keys WHERE name = 'orders' ORDER BY version;
SELECT uid_mask(42, 'orders') <> m1 AS new_mask, uid_unmask(m1, 'orders', 1) AS with_v1,
       uid_unmask(uid_mask(42, 'orders'), 'orders') AS with_current,
       (SELECT array_agg(version ORDER BY version) FROM uid_unmask_all(m1, 'orders') WHERE id = 42) AS found_in,
       uid_unmask_text(t1, 'orders') AS text_v1, uid_unmask_text(uid_mask_text(42, 'orders'), 'orders') AS text_v2
  FROM saved;
SELECT left(t1, 1) AS v1_symbol, left(uid_mask_text(42, 'orders'), 1) AS v2_symbol,
       length(uid_mask_text(42, 'orders', 'base62')) <= 12 AS short FROM saved;
-- losing a key in use is refused
SELECT regress_sqlstate_of($$SELECT uid_mask_key_drop('orders', 1)$$);
SELECT regress_sqlstate_of($$DELETE FROM pg_idgen_mask_keys WHERE name = 'orders'$$);
SELECT regress_sqlstate_of($$TRUNCATE pg_idgen_mask_keys$$);
SELECT regress_sqlstate_of($$UPDATE pg_idgen_mask_keys SET key = decode(repeat('00', 32), 'hex') WHERE name = 'orders'$$);
SELECT uid_mask_key_set_in_use('orders', 1, false);
SELECT uid_mask_key_drop('orders', 1);
SELECT version, kept, current, in_use, dropped_at IS NOT NULL AS dropped FROM uid_mask_keys WHERE name = 'orders' ORDER BY version;
SELECT regress_sqlstate_of($$SELECT uid_unmask(1, 'orders', 1)$$);
SELECT regexp_replace(regress_sqlstate_of('SELECT uid_unmask_text(' || quote_literal(t1) || ', ''orders'')'),
                      '"[0-9A-Z]+"$', '"<code>"') AS dropped_version FROM saved;
SELECT regress_sqlstate_of($$UPDATE pg_idgen_mask_keys SET key = decode(repeat('00', 32), 'hex') WHERE name = 'orders' AND version = 1$$);

-- errors
SELECT regress_sqlstate_of($$SELECT uid_mask(1, 'no_such_key')$$);
SELECT regress_sqlstate_of($$SELECT uid_mask(1, 'orders', 7)$$);
SELECT regress_sqlstate_of($$SELECT uid_mask(-1, 'orders')$$);
SELECT regress_sqlstate_of($$SELECT uid_unmask(-9223372036854775808, 'orders')$$);
SELECT regress_sqlstate_of($$SELECT uid_mask_raw(1, '\x00')$$);
SELECT regress_sqlstate_of($$SELECT uid_mask_key_create('orders')$$);
SELECT regress_sqlstate_of($$SELECT uid_mask_key_create('Orders!')$$);
SELECT regress_sqlstate_of($$SELECT uid_mask_key_rotate('nope')$$);
SELECT regress_sqlstate_of($$SELECT uid_ff1_encrypt('\x00', 10, '{1,2,3,4,5,6}')$$);
SELECT regress_sqlstate_of($$SELECT uid_ff1_encrypt('\x2B7E151628AED2A6ABF7158809CF4F3C', 10, '{1,2,3}')$$);
SELECT regress_sqlstate_of($$SELECT uid_ff1_encrypt('\x2B7E151628AED2A6ABF7158809CF4F3C', 10, '{1,2,3,4,5,10}')$$);
SELECT regress_sqlstate_of($$SELECT uid_ff1_encrypt('\x2B7E151628AED2A6ABF7158809CF4F3C', 10, '{1,2,3,NULL,5,6}')$$);
SELECT regress_sqlstate_of($$SELECT uid_ff1_encrypt('\x2B7E151628AED2A6ABF7158809CF4F3C', 1, '{0,0,0,0,0,0}')$$);
SELECT regress_sqlstate_of($$SELECT uid_ff1_encrypt('\x2B7E151628AED2A6ABF7158809CF4F3C', -2147483648, '{1}')$$);   -- the lowest int4: no overflow

-- text codes
SELECT uid_to_text(0) AS zero, uid_to_text(1234) AS c, uid_to_text(1234, 'crockford_check') AS cc,
       uid_to_text(1234, 'base62') AS b62, uid_to_text(9223372036854775807) AS max_c,
       uid_to_text(9223372036854775807, 'crockford_check') AS max_cc, uid_to_text(9223372036854775807, 'base62') AS max_b62;
SELECT uid_from_text('16J') AS upper, uid_from_text('16j') AS lower, uid_from_text('1-6-J') AS hyphens,
       uid_from_text('IlO') = uid_from_text('110') AS aliases, uid_from_text('16jd', 'crockford_check') AS checked,
       uid_from_text('14u', 'crockford_check') AS check_u, uid_from_text('AzL8n0Y58m7', 'base62') AS max_b62;
SELECT regress_sqlstate_of($$SELECT uid_from_text('12U4')$$);
SELECT regress_sqlstate_of($$SELECT uid_from_text('ABC DEF')$$);
SELECT regress_sqlstate_of($$SELECT uid_from_text('16JE', 'crockford_check')$$);
SELECT regress_sqlstate_of($$SELECT uid_from_text('*', 'crockford_check')$$);
SELECT regress_sqlstate_of($$SELECT uid_from_text('')$$);
SELECT regress_sqlstate_of($$SELECT uid_from_text('80000000000000')$$);
SELECT regress_sqlstate_of($$SELECT uid_from_text('AzL8n0Y58m8', 'base62')$$);
SELECT regress_sqlstate_of($$SELECT uid_from_text('ab-c', 'base62')$$);
SELECT regress_sqlstate_of($$SELECT uid_from_text('1', 'base64')$$);
SELECT regress_sqlstate_of($$SELECT uid_to_text(-1)$$);
-- composed: a masked, Crockford-coded number reveals nothing and comes back
SELECT uid_to_text(uid_mask(1000, 'regress')) AS code,
       uid_unmask(uid_from_text(lower(uid_to_text(uid_mask(1000, 'regress')))), 'regress') AS back;

-- NULL in any argument: NULL, never an internal error
SELECT uid_mask(NULL, 'orders') IS NULL AS a, uid_mask(1, NULL) IS NULL AS b, uid_mask(1, 'orders', NULL) IS NULL AS c,
       uid_unmask(NULL, 'orders') IS NULL AS d, uid_unmask_raw(1, NULL) IS NULL AS e, uid_to_text(NULL) IS NULL AS f,
       uid_from_text('1', NULL) IS NULL AS g, uid_mask_text(1, NULL) IS NULL AS h, uid_unmask_text(NULL, 'orders') IS NULL AS i,
       uid_ff1_encrypt(NULL, 10, '{1}') IS NULL AS j, uid_mask_key_create(NULL) IS NULL AS k,
       uid_mask_key_drop('orders', NULL) IS NULL AS l;

-- volatility, strictness and parallel safety as documented
SELECT p.proname, pg_get_function_identity_arguments(p.oid) AS args, p.provolatile, p.proisstrict, p.proparallel
  FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'pg_idgen'
 WHERE p.proname ~ '^uid_(mask|unmask|to_text|from_text|ff1)'
 ORDER BY 1, 2;

-- an ordinary role uses keys through the functions but cannot read them
CREATE ROLE regress_mask_user;
SELECT has_table_privilege('regress_mask_user', 'pg_idgen_mask_keys', 'SELECT') AS can_select,
       has_function_privilege('regress_mask_user', 'uid_mask_key_create(text)', 'EXECUTE') AS can_create,
       has_function_privilege('regress_mask_user', 'uid_mask(bigint, text)', 'EXECUTE') AS can_mask;
ANALYZE pg_idgen_mask_keys;
SELECT uid_mask_key_set_in_use('regress', 1, true);   -- empties this backend's key cache
SET ROLE regress_mask_user;
SELECT uid_mask(1000, 'regress') = uid_mask_raw(1000, decode(repeat('2b', 32), 'hex')) AS can_mask;
SELECT regress_sqlstate_of($$SELECT key FROM pg_idgen_mask_keys$$);
COPY pg_idgen_mask_keys TO STDOUT;
SELECT regress_sqlstate_of($$SELECT uid_mask_key_create('mine')$$);
SELECT regress_sqlstate_of($$SELECT uid_mask_key_rotate('regress')$$);
SELECT regress_sqlstate_of($$SELECT uid_mask_key_drop('regress', 1)$$);
SELECT count(*) AS stats_rows FROM pg_stats WHERE tablename = 'pg_idgen_mask_keys';
SELECT name, version, fingerprint FROM uid_mask_keys WHERE name = 'regress';
RESET ROLE;
DROP ROLE regress_mask_user;

-- text symbols are never reused while a row of their version exists: a key's text code carries
-- its version modulo 32, and after version 1 is dropped, version 33 would take its symbol and
-- decode version-1 codes silently to a wrong id
CREATE FUNCTION pg_temp.sym_unmask(c text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN RETURN CASE uid_unmask_text(c, 'sym') WHEN 424242 THEN '424242, the id' ELSE 'another id' END;
EXCEPTION WHEN others THEN RETURN SQLSTATE; END $$;
SELECT uid_mask_key_create('sym') AS v1;
CREATE TEMP TABLE sym_codes AS SELECT uid_mask_text(424242, 'sym') AS c1;
SELECT max(uid_mask_key_rotate('sym')) AS last FROM generate_series(2, 32);
SELECT pg_temp.sym_unmask(c1) AS v1_code_while_kept FROM sym_codes;
SELECT regress_sqlstate_of($$SELECT uid_mask_key_rotate('sym')$$) AS rotate_33_while_1_kept;
SELECT uid_mask_key_set_in_use('sym', 1, false);
SELECT uid_mask_key_drop('sym', 1);
-- version 1 dropped: version 33 would reuse its symbol while version-1 codes may exist
SELECT regress_sqlstate_of($$SELECT uid_mask_key_rotate('sym')$$) AS rotate_33_after_1_dropped;
SELECT max(version) AS still_32 FROM pg_idgen_mask_keys WHERE name = 'sym';
SELECT pg_temp.sym_unmask(c1) AS v1_code_after_drop FROM sym_codes;
-- every version dropped: creating the key again must not take a used symbol either
SELECT count(uid_mask_key_set_in_use('sym', v, false)) AS not_in_use FROM generate_series(2, 32) v;
SELECT count(uid_mask_key_drop('sym', v)) AS dropped FROM generate_series(2, 32) v;
SELECT regress_sqlstate_of($$SELECT uid_mask_key_create('sym')$$) AS create_again;
SELECT pg_temp.sym_unmask(c1) AS v1_code_still_42704 FROM sym_codes;
-- the rows of dropped versions hold their symbols: deleting version 1's by hand (only when no
-- text code of it can come back) frees its symbol
DELETE FROM pg_idgen_mask_keys WHERE name = 'sym' AND version = 1;
SELECT uid_mask_key_create('sym') AS v33;
SELECT uid_mask_key_set_in_use('sym', 33, false);
DELETE FROM pg_idgen_mask_keys WHERE name = 'sym';

-- a text code longer than 256 bytes is refused before it is read or echoed (22P02): a caller's
-- string of up to 1 GB must not cost its length in time and memory
SELECT uid_from_text(repeat('-', 255) || '1') AS longest_accepted;
SELECT regress_sqlstate_of($$SELECT uid_from_text(repeat('-', 256) || '1')$$) AS too_long;
SELECT regress_sqlstate_of($$SELECT uid_unmask_text(repeat('1', 300), 'regress')$$) AS too_long_unmask;
SELECT regress_sqlstate_of($$SELECT uid_from_text(repeat('-', 100000000), 'crockford')$$) AS hundred_mb;
