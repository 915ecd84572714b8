"""asyncpg: the DEFAULT key through fetchval(... RETURNING id), a batch through executemany,
ids read back as ints, ids as parameters (ints; a str is refused), decoding in SQL."""
import asyncio

import asyncpg

from clientlib import DB, DECODE_SQL, HOST, PORT, ROWS, SERVER_IDS_SQL, USER, WORKER_ID, main

async def run(c):
    conn = await asyncpg.connect(host=HOST, port=PORT, user=USER, database=DB)
    try:
        await conn.execute("CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_next(),"
                           " n int NOT NULL UNIQUE, note text)")
        # --- docs snippet (asyncpg): the key of one row, then a batch
        order_id = await conn.fetchval(
            "INSERT INTO orders (n, note) VALUES ($1, $2) RETURNING id", 0, "one")
        await conn.executemany("INSERT INTO orders (n, note) VALUES ($1, $2)",
                               [(n, f"row {n}") for n in range(1, ROWS + 1)])
        # ---
        c.eq("fetchval(INSERT ... RETURNING id) gives an int", type(order_id), int)
        # executemany returns no rows: the batch's keys are read back (binary int8 -> int)
        held = {r["n"]: r["id"] for r in await conn.fetch("SELECT n, id FROM orders")}
        c.eq("fetchval's id is row 0's id", held.get(0), order_id)
        c.rows = len(held)
        c.eq("rows in the table after the batch", len(held), ROWS + 1)
        c.compare_ids("single + executemany", held,
                      await conn.fetch(SERVER_IDS_SQL.format(table="orders")))

        # every id as a parameter (an int): WHERE id = $1 finds exactly that row
        stmt = await conn.prepare("SELECT n FROM orders WHERE id = $1")
        misses = [(n, got) for n, i in held.items() if (got := await stmt.fetch(i)) != [(n,)]]
        c.lookups += len(held)
        c.ok(f"WHERE id = $1 with each of the {len(held)} ids (Python ints) finds exactly its row",
             not misses, f"{len(misses)} wrong, first: {misses[:3]}" if misses else "")

        # The pitfall: an id that arrives as text (JSON, a URL) is refused, not converted.
        # --- docs snippet (asyncpg): ids from text must become ints first
        id_from_json = str(order_id)
        row = await conn.fetchrow("SELECT n FROM orders WHERE id = $1", int(id_from_json))
        # ---
        c.eq("an id received as text, passed as int(text), finds its row", row["n"], 0)
        try:
            await conn.fetchrow("SELECT n FROM orders WHERE id = $1", id_from_json)
            c.ok("an id passed as a str is refused by asyncpg (DataError)", False,
                 "no error: asyncpg accepted a str for a bigint parameter")
        except asyncpg.exceptions.DataError as e:
            c.ok("an id passed as a str is refused by asyncpg (DataError)", True,
                 str(e).splitlines()[0])

        c.eq("uid_decode($1) of the single row's id gives the configured worker id",
             await conn.fetchval("SELECT worker_id FROM uid_decode($1)", order_id), WORKER_ID)
        c.eq("uid_decode(id) of every row gives the configured worker id",
             [tuple(r) for r in await conn.fetch(DECODE_SQL.format(table="orders"))], [(WORKER_ID,)])
    finally:
        await conn.close()


main("asyncpg", lambda c: asyncio.run(run(c)))
