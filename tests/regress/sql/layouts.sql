-- Decoding and composing ids of every layout, custom layouts in the catalog,
-- and their errors.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_idgen;

SELECT name, builtin, epoch, unit_ms, time_bits, worker_bits, sequence_bits, field_order,
       worker_split, can_generate
  FROM uid_layouts();

-- Known answers from the peers' published documentation
-- Discord: 175928847299117063 -> 2016-04-30 11:18:25.796 UTC, worker 1, process 0, increment 7
SELECT * FROM uid_decode(175928847299117063, 'discord');
-- Instagram: 11637205501278089 -> shard 1341, sequence 905, 2011-09-09 22:28:04.721 UTC
SELECT * FROM uid_decode(11637205501278089, 'instagram');
-- pgEdge: get_epoch(136169504773242881) = 1704996539.845
SELECT extract(epoch FROM ts) AS get_epoch, worker_id AS get_node, sequence AS get_count
  FROM uid_decode(136169504773242881, 'pgedge');
-- Twitter: the machine field splits into datacenter (high) and worker (low)
SELECT * FROM uid_decode(uid_compose('2023-05-01 10:00:00.123+00', (3 << 5) | 17, 99, 'twitter'), 'twitter');
-- Sonyflake keeps the sequence above the machine id, in 10 ms ticks; v1 and v2 epochs differ
SELECT uid_compose('2024-02-29 12:00:00.01+00', 65535, 1, 'sonyflake') AS sonyflake_id;
SELECT * FROM uid_decode(uid_compose('2024-02-29 12:00:00.01+00', 65535, 1, 'sonyflake'), 'sonyflake');
SELECT ts FROM uid_decode(uid_compose('2024-02-29 12:00:00.01+00', 65535, 1, 'sonyflake'), 'sonyflake_v2');
-- Baidu: 1 s ticks, epoch 2016-05-20 +08:00
SELECT * FROM uid_decode(uid_compose('2020-01-01 00:00:07+00', 4194303, 8191, 'baidu'), 'baidu');
-- ShardingSphere and the server's own layout
SELECT * FROM uid_decode(uid_compose('2021-07-07 07:07:07.007+00', 1023, 4095, 'shardingsphere'), 'shardingsphere');
SELECT * FROM uid_decode(uid_compose('2026-06-01 12:34:56.789+00', 5, 17), 'server');
-- layout names are case-insensitive
SELECT worker_id FROM uid_decode(175928847299117063, 'Discord');

-- compose is the exact inverse of decode, over many ids of every layout
SELECT l.name, bool_and(uid_compose(d.ts, d.worker_id, d.sequence, l.name) = x.id) AS round_trip
  FROM uid_layouts() l,
       LATERAL (SELECT uid_compose(l.epoch + (g * 7919 % 100000) * interval '1 second' * l.unit_ms,
                                   (g * 31) % (1 << least(l.worker_bits, 16)),
                                   (g * 17) % (1 << l.sequence_bits), l.name) AS id
                  FROM generate_series(1, 200) g) x,
       LATERAL uid_decode(x.id, l.name) d
 GROUP BY l.name ORDER BY l.name;

-- js53: JavaScript-safe ids (37 bits of 10 ms from 2026-01-01, 6 worker bits, 10 sequence bits)
SELECT * FROM uid_decode(uid_compose('2026-11-22 10:20:30.45+00', 63, 1023, 'js53'), 'js53');
SELECT uid_compose('2026-11-22 10:20:30.459+00', 5, 7, 'js53') AS js53_id,
       snowflake_at('2026-11-22 10:20:30.45+00', 5, 'js53') AS js53_at;
-- the last id of the layout's lifetime is 2^53 - 1 = Number.MAX_SAFE_INTEGER
SELECT uid_compose('2069-07-21 06:52:14.71+00', 63, 1023, 'js53') AS js53_max,
       uid_compose('2069-07-21 06:52:14.71+00', 63, 1023, 'js53') = (2::numeric ^ 53 - 1)::bigint AS is_2_53_minus_1;
SELECT * FROM uid_decode(9007199254740991, 'js53');
-- every js53 id over the lifetime is <= 2^53 - 1 (a sample of 10,000 instants, workers, sequences)
SELECT max(uid_compose('2026-01-01Z'::timestamptz + g * interval '137438953 ms',
                       g % 64, (g * 7) % 1024, 'js53')) <= 9007199254740991 AS all_js_safe
  FROM generate_series(0, 9999) g;
-- beyond the field's end, above 2^53 - 1, before the epoch, worker 64, sequence 1024: errors
SELECT regress_sqlstate_of($$SELECT uid_compose('2069-07-21 06:52:14.72+00', 0, 0, 'js53')$$);
SELECT regress_sqlstate_of($$SELECT snowflake_at('2069-07-21 06:52:14.72+00', 0, 'js53')$$);
SELECT regress_sqlstate_of($$SELECT uid_decode(9007199254740992, 'js53')$$);
SELECT regress_sqlstate_of($$SELECT uid_compose('2025-12-31 23:59:59.99+00', 0, 0, 'js53')$$);
SELECT regress_sqlstate_of($$SELECT uid_compose('2026-06-01Z', 64, 0, 'js53')$$);
SELECT regress_sqlstate_of($$SELECT uid_compose('2026-06-01Z', 0, 1024, 'js53')$$);

-- snowflake_at bounds for ids of any layout
SELECT snowflake_at('2016-04-30 11:18:25.796+00', NULL, 'discord') <= 175928847299117063 AS lower_bound,
       snowflake_at('2016-04-30 11:18:25.797+00', NULL, 'discord') > 175928847299117063 AS upper_bound,
       snowflake_at('2016-04-30 11:18:25.796+00', 32, 'discord') AS at_worker_32;
SELECT snowflake_at(NULL, 1, 'discord') IS NULL AS null_in_null_out;

-- a custom layout: a Baidu uid-generator configured with 29/21/13 bits, epoch 2016-09-20 (+08)
SELECT uid_layout_register('baidu_29_21_13', '2016-09-20 00:00:00+08', 29, 21, 13, unit_ms => 1000);
SELECT name, builtin, epoch, unit_ms, time_bits, worker_bits, sequence_bits, can_generate
  FROM uid_layouts() WHERE NOT builtin;
SELECT uid_compose('2019-11-21 01:46:40+00', 2000000, 8191, 'baidu_29_21_13') AS id;
SELECT * FROM uid_decode(1718986769072512999, 'baidu_29_21_13');
-- a custom layout with a split worker field and Sonyflake's field order
SELECT uid_layout_register('flake_split', '2020-01-01Z', 39, 16, 8, unit_ms => 10,
                           field_order => 'sequence_worker', worker_low_bits => 8);
SELECT * FROM uid_decode(uid_compose('2021-01-01Z', (7 << 8) | 9, 200, 'flake_split'), 'flake_split');
-- layouts are dumped with the extension's data
SELECT extcondition IS NOT NULL AS dumped FROM pg_extension WHERE extname = 'pg_idgen';

-- errors
SELECT * FROM uid_decode(-1, 'twitter');
SELECT * FROM uid_decode(1, 'no_such_layout');
SELECT * FROM uid_decode(9223372036854775807, 'baidu_29_21_13');
SELECT uid_compose('2026-01-01', 65536, 0, 'sonyflake');
SELECT uid_compose('2026-01-01', 0, 256, 'sonyflake');
SELECT uid_compose('2000-01-01', 0, 0, 'sonyflake_v2');
SELECT uid_layout_register('baidu_29_21_13', '2016-09-20 00:00:00+08', 29, 21, 13, unit_ms => 1000);
SELECT uid_layout_register('twitter', '2016-09-20Z', 41, 10, 12);
SELECT uid_layout_register('bad', '2016-09-20Z', 41, 10, 14);
SELECT uid_layout_register('bad', '2016-09-20Z', 41, 32, 12);
SELECT uid_layout_register('bad', '2016-09-20Z', 41, 10, 12, unit_ms => 0);
SELECT uid_layout_register('bad', '2016-09-20Z', 41, 10, 12, field_order => 'worker_time');
SELECT uid_layout_register('bad', '2016-09-20Z', 41, 10, 12, worker_low_bits => 10);
SELECT uid_layout_register('Bad Name', '2016-09-20Z', 41, 10, 12);
SELECT uid_layout_drop('no_such_layout');
SELECT uid_layout_drop('discord');
SELECT regress_sqlstate_of($$SELECT uid_decode(1, 'no_such_layout')$$);
SELECT regress_sqlstate_of($$SELECT uid_layout_register('twitter', '2016-09-20Z', 41, 10, 12)$$);
SELECT regress_sqlstate_of($$SELECT uid_layout_register('baidu_29_21_13', '2016-09-20Z', 29, 21, 13)$$);
SELECT regress_sqlstate_of($$SELECT uid_layout_register('bad', '2016-09-20Z', 41, 10, 14)$$);
-- layouts narrower than 63 bits register (decode and compose; they could generate too): the
-- unused top bits are always zero, ids above them are refused
SELECT uid_layout_register('narrow42', '2026-01-01Z', 30, 4, 8, unit_ms => 10);
SELECT name, time_bits + worker_bits + sequence_bits AS total_bits, can_generate
  FROM uid_layouts() WHERE name = 'narrow42';
SELECT uid_compose('2026-03-01Z', 15, 255, 'narrow42') AS narrow_id;
SELECT * FROM uid_decode(uid_compose('2026-03-01Z', 15, 255, 'narrow42'), 'narrow42');
SELECT * FROM uid_decode(4398046511103, 'narrow42');
SELECT regress_sqlstate_of($$SELECT uid_decode(4398046511104, 'narrow42')$$);
SELECT regress_sqlstate_of($$SELECT uid_compose('2060-01-01Z', 0, 0, 'narrow42')$$);
SELECT uid_layout_drop('narrow42');
SELECT uid_layout_register('smallest', '2026-01-01Z', 20, 1, 1);
SELECT * FROM uid_decode(4194303, 'smallest');
SELECT uid_layout_drop('smallest');
SELECT regress_sqlstate_of($$SELECT uid_layout_register('too_small', '2026-01-01Z', 19, 1, 1)$$);
-- a 64-bit layout (like Instagram's) is accepted for decoding; it cannot generate
SELECT uid_layout_register('wide', '2016-09-20Z', 41, 10, 13);
SELECT name, can_generate FROM uid_layouts() WHERE name = 'wide';
SELECT * FROM uid_decode(4611686018427387904, 'wide');
SELECT uid_layout_drop('wide');
SELECT regress_sqlstate_of($$SELECT uid_decode(-1, 'twitter')$$);
-- only privileged roles register layouts; everyone decodes
CREATE ROLE idgen_layout_user;
SET ROLE idgen_layout_user;
SELECT worker_id FROM uid_decode(175928847299117063, 'discord');
SELECT * FROM uid_decode(1718986769072512999, 'baidu_29_21_13');
SELECT regress_sqlstate_of($$SELECT uid_layout_register('mine', '2016-09-20Z', 41, 10, 12)$$);
SELECT regress_sqlstate_of($$SELECT uid_layout_drop('baidu_29_21_13')$$);
RESET ROLE;
DROP ROLE idgen_layout_user;
-- dropping a layout: the next decode (in every session) no longer finds it
SELECT uid_layout_drop('flake_split');
SELECT regress_sqlstate_of($$SELECT uid_decode(1, 'flake_split')$$);
