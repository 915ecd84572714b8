'use strict';
// node-postgres (pg): ids of the default layout (above 2^53 since 2026-01-25) as strings (pg's
// default for bigint) and as BigInt, never as Number; ids of the JavaScript-safe layout js53
// (at most 2^53 - 1) as plain Numbers.
//   node test_pg.js default   the cluster runs the default layout, worker id CLIENT_WORKER_ID
//   node test_pg.js js53      the cluster runs pg_idgen.layout=js53, worker id JS53_WORKER_ID
// Prints PASS:/FAIL: lines naming the client and the check and a STAT: line (see run.sh).
const pg = require('pg');

const mode = process.argv[2];
const client = mode === 'js53' ? 'node-postgres (js53, Number)' : 'node-postgres (default layout)';
const ROWS = Number(process.env.CLIENT_ROWS);
const WORKER_ID = Number(mode === 'js53' ? process.env.JS53_WORKER_ID : process.env.CLIENT_WORKER_ID);
const MAX_SAFE = BigInt(process.env.JS_MAX_SAFE);

const stat = { passed: 0, failed: 0, rows: 0, compared: 0, lookups: 0 };
function ok(check, cond, detail) {
  if (cond) { stat.passed++; console.log(`PASS: ${client}: ${check}${detail ? ` (${detail})` : ''}`); }
  else { stat.failed++; console.log(`FAIL: ${client}: ${check}: ${detail || 'false'}`); }
  return cond;
}
const show = (v) => { const s = typeof v === 'bigint' ? `${v}n` : JSON.stringify(v); return s.length > 120 ? `${s.slice(0, 120)}...` : s; };
function eq(check, got, want) {
  return ok(check, got === want, got === want ? show(got) : `got ${show(got)}, want ${show(want)}`);
}
// held: Map n -> id as the client holds it; serverRows: [{n, id_text}] of the whole table.
// Every id compared exactly: its decimal text in JavaScript against the server's id::text.
function compareIds(check, held, serverRows) {
  const bad = [];
  for (const r of serverRows) {
    if (!held.has(r.n) || String(held.get(r.n)) !== r.id_text) bad.push([r.n, String(held.get(r.n)), r.id_text]);
  }
  stat.compared += held.size;
  const types = [...new Set([...held.values()].map((v) => typeof v))].join(',');
  return ok(`${check}: ${held.size} ids equal the server's id::text exactly`,
    bad.length === 0 && held.size === serverRows.length && held.size > 0,
    bad.length === 0 ? `typeof ${types}` : `${bad.length} of ${serverRows.length} differ, first [n, client, server]: ${JSON.stringify(bad.slice(0, 3))}`);
}
// WHERE id = $1 with each id the client holds, as the client holds it, one query after the
// other (pg 8.23 deprecates queueing queries on a busy client)
async function lookups(db, held, what) {
  const wrong = [];
  for (const [n, id] of held) {
    const got = (await db.query(`SELECT n FROM orders WHERE id = $1`, [id])).rows.map((x) => x.n);
    if (got.length !== 1 || got[0] !== n) wrong.push([n, got]);
  }
  stat.lookups += held.size;
  ok(`WHERE id = $1 with each of the ${held.size} ids (${what}) finds exactly its row`, wrong.length === 0,
    wrong.length ? `${wrong.length} wrong, first: ${JSON.stringify(wrong.slice(0, 3))}` : '');
}
// Is this id (decimal text) exactly representable as a JavaScript Number (an IEEE double)?
// Decided with BigInt arithmetic only: below 2^53 always; above, only multiples of
// 2^(bit length - 53).
function exactAsDouble(text) {
  const v = BigInt(text);
  const bits = v.toString(2).length;
  return bits <= 53 || v % (1n << BigInt(bits - 53)) === 0n;
}

const SERVER_IDS = `SELECT n, id::text AS id_text FROM orders ORDER BY n`;
const DECODE = `SELECT DISTINCT d.worker_id FROM orders t CROSS JOIN LATERAL uid_decode(t.id) d`;

async function insertAll(db) {
  await db.query(`CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_next(), n int NOT NULL UNIQUE, note text)`);
  // --- docs snippet (node-postgres): the key of one row, then a batch in one statement
  const { rows: [order] } = await db.query(
    `INSERT INTO orders (n, note) VALUES ($1, $2) RETURNING id`, [0, 'one']);
  const ns = Array.from({ length: ROWS }, (_, i) => i + 1);
  const { rows: batch } = await db.query(
    `INSERT INTO orders (n, note) SELECT n, 'row ' || n FROM unnest($1::int[]) AS n RETURNING n, id`, [ns]);
  // ---
  eq(`INSERT ... SELECT unnest($1::int[]) RETURNING: ${ROWS} rows`, batch.length, ROWS);
  const held = new Map([[0, order.id], ...batch.map((r) => [r.n, r.id])]);
  stat.rows = held.size;
  return { order, held };
}

async function defaultLayout() {
  // pg's default: bigint (int8, OID 20) arrives as a string, exactly
  const db = new pg.Client();
  await db.connect();
  try {
    const { order, held } = await insertAll(db);
    eq('RETURNING id gives a string by default', typeof order.id, 'string');
    const server = (await db.query(SERVER_IDS)).rows;
    compareIds('strings (pg default)', held, server);
    await lookups(db, held, 'strings');
    eq('uid_decode($1) with a string id gives the configured worker id',
      (await db.query('SELECT worker_id FROM uid_decode($1)', [order.id])).rows[0].worker_id, WORKER_ID);
    eq('uid_decode(id) of every row gives the configured worker id',
      JSON.stringify((await db.query(DECODE)).rows.map((r) => r.worker_id)), JSON.stringify([WORKER_ID]));

    // The pitfall, as facts: Number()/parseInt() round every id that is not exactly a double.
    const shouldBreak = server.filter((r) => !exactAsDouble(r.id_text)).length;
    const brokenByNumber = server.filter((r) => BigInt(Number(r.id_text)) !== BigInt(r.id_text)).length;
    const brokenByParseInt = server.filter((r) => BigInt(parseInt(r.id_text, 10)) !== BigInt(r.id_text)).length;
    ok(`Number(id) corrupts exactly the ids that are not doubles: ${brokenByNumber} of ${server.length}`,
      brokenByNumber === shouldBreak && shouldBreak > 0, `expected ${shouldBreak} by BigInt arithmetic`);
    eq('parseInt(id) corrupts the same ids', brokenByParseInt, shouldBreak);
    // ... and sent back as a parameter (pg sends String(Number(id))), it finds its own row
    // only where that text happens to be the id's (a corrupted id whose shortest decimal form
    // ends in the same zeros), else another existing row or none
    let own = 0, other = 0, none = 0;
    for (const r of server) {
      const got = (await db.query(`SELECT id::text AS t FROM orders WHERE id = $1`, [Number(r.id_text)])).rows;
      if (got.length === 0) none++; else if (got[0].t === r.id_text) own++; else other++;
    }
    const sameText = server.filter((r) => String(Number(r.id_text)) === r.id_text).length;
    ok('WHERE id = $1 with Number(id) finds its own row only where String(Number(id)) is the id',
      own === sameText && other + none > 0,
      `${own} own row, ${other} a different existing row, ${none} no row, of ${server.length}`);

    // --- docs snippet (node-postgres): ids as BigInt
    const big = new pg.Client({
      types: { getTypeParser: (oid, format) => (oid === 20 ? BigInt : pg.types.getTypeParser(oid, format)) },
    });
    // ---
    await big.connect();
    try {
      const rows = (await big.query(`SELECT n, id FROM orders`)).rows;
      const heldBig = new Map(rows.map((r) => [r.n, r.id]));
      compareIds('BigInt type parser', heldBig, server);
      await lookups(big, heldBig, 'BigInt parameters');
    } finally {
      await big.end();
    }

    // JSON: numbers above 2^53 do not survive JSON.parse; strings do
    const asNum = JSON.parse((await db.query(
      `SELECT json_agg(json_build_object('n', n, 'id', id))::text AS j FROM orders`)).rows[0].j);
    const asText = JSON.parse((await db.query(
      `SELECT json_agg(json_build_object('n', n, 'id', id::text))::text AS j FROM orders`)).rows[0].j);
    eq('JSON.parse of ids sent as JSON numbers corrupts the same ids as Number()',
      asNum.filter((o) => BigInt(o.id) !== BigInt(server[o.n].id_text)).length, shouldBreak);
    compareIds('JSON.parse of ids sent as JSON strings', new Map(asText.map((o) => [o.n, o.id])), server);
    let thrown = '';
    try { JSON.stringify({ id: BigInt(order.id) }); } catch (e) { thrown = e.constructor.name; }
    eq('JSON.stringify of a BigInt id throws (convert to a string first)', thrown, 'TypeError');
  } finally {
    await db.end();
  }
}

async function js53Layout() {
  // --- docs snippet (node-postgres, js53 layout only): ids as plain Numbers
  const db = new pg.Client({
    types: { getTypeParser: (oid, format) => (oid === 20 ? Number : pg.types.getTypeParser(oid, format)) },
  });
  // ---
  await db.connect();
  try {
    const layout = (await db.query('SELECT * FROM snowflake_layout()')).rows[0];
    eq('snowflake_layout(): js53, 37 time bits, 6 worker bits, 10 sequence bits, 10 ms',
      [layout.name, layout.time_bits, layout.worker_bits, layout.sequence_bits, layout.unit_ms].join(','),
      'js53,37,6,10,10');
    // the largest id the layout can ever make: its last tick, worker and sequence
    const last = (await db.query(`SELECT uid_compose(time_field_ends - interval '10 ms', max_worker_id::int,
      max_sequence::int)::text AS id FROM snowflake_layout()`)).rows[0].id;
    eq(`the last id of js53's lifetime is 2^53 - 1 (${layout.time_field_ends.toISOString()})`, last, String(MAX_SAFE));
    const { order, held } = await insertAll(db);
    eq('RETURNING id gives a Number', typeof order.id, 'number');
    ok('every id is a safe integer (Number.isSafeInteger)', [...held.values()].every(Number.isSafeInteger),
      `${[...held.values()].filter((v) => !Number.isSafeInteger(v)).length} are not`);
    const max = (await db.query(`SELECT max(id)::text AS m FROM orders`)).rows[0].m;
    ok(`max(id) on the server is at most 2^53 - 1 = ${MAX_SAFE}`, BigInt(max) <= MAX_SAFE, `max(id) = ${max}`);
    const server = (await db.query(SERVER_IDS)).rows;
    compareIds('Numbers', held, server);
    await lookups(db, held, 'Numbers');
    eq('uid_decode($1) with a Number id gives the configured worker id',
      (await db.query('SELECT worker_id FROM uid_decode($1)', [order.id])).rows[0].worker_id, WORKER_ID);
    eq('uid_decode(id) of every row gives the configured worker id',
      JSON.stringify((await db.query(DECODE)).rows.map((r) => r.worker_id)), JSON.stringify([WORKER_ID]));
    const asNum = JSON.parse((await db.query(
      `SELECT json_agg(json_build_object('n', n, 'id', id))::text AS j FROM orders`)).rows[0].j);
    compareIds('JSON.parse of ids sent as JSON numbers', new Map(asNum.map((o) => [o.n, o.id])), server);
  } finally {
    await db.end();
  }
}

(mode === 'js53' ? js53Layout() : mode === 'default' ? defaultLayout() : Promise.reject(new Error(`usage: node test_pg.js default|js53, not ${mode}`)))
  .catch((e) => ok('unexpected exception', false, String(e && e.stack ? e.stack : e).replace(/\n/g, ' | ')))
  .finally(() => {
    console.log(`STAT: ${client}: rows=${stat.rows} ids_compared=${stat.compared} lookups=${stat.lookups} checks=${stat.passed + stat.failed} failed=${stat.failed}`);
    process.exitCode = stat.failed ? 1 : 0;
  });
