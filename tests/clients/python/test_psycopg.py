"""psycopg 3: the DEFAULT key through RETURNING, a batch through executemany(returning=True),
ids as parameters, decoding in SQL, every id compared with the server's id::text."""
import psycopg

from clientlib import DB, DECODE_SQL, HOST, PORT, ROWS, SERVER_IDS_SQL, USER, WORKER_ID, main

def body(c):
    with psycopg.connect(host=HOST, port=PORT, user=USER, dbname=DB, autocommit=True) as conn:
        conn.execute("CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_next(),"
                     " n int NOT NULL UNIQUE, note text)")
        held = {}

        # --- docs snippet (psycopg): the key of one row
        cur = conn.execute("INSERT INTO orders (n, note) VALUES (%s, %s) RETURNING id", (0, "one"))
        order_id = cur.fetchone()[0]  # a Python int: exact, no size limit
        # ---
        c.eq("single INSERT ... RETURNING id gives an int", type(order_id), int)
        held[0] = order_id

        # --- docs snippet (psycopg): a batch, keys in input order
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO orders (n, note) VALUES (%s, %s) RETURNING n, id",
                            [(n, f"row {n}") for n in range(1, ROWS + 1)], returning=True)
            batch = []
            while True:
                batch.append(cur.fetchone())
                if not cur.nextset():
                    break
        # ---
        c.ok("executemany(returning=True): one RETURNING row per parameter set, in order",
             [n for n, _ in batch] == list(range(1, ROWS + 1)), f"{len(batch)} rows")
        held.update(dict(batch))
        c.rows = len(held)

        c.compare_ids("single + bulk insert", held,
                      conn.execute(SERVER_IDS_SQL.format(table="orders")).fetchall())

        # every id as a parameter: WHERE id = %s finds exactly that row (one pipeline)
        misses = []
        with conn.pipeline():
            curs = [(n, conn.execute("SELECT n FROM orders WHERE id = %s", (i,)))
                    for n, i in held.items()]
        for n, cur in curs:
            rows = cur.fetchall()
            if rows != [(n,)]:
                misses.append((n, rows))
        c.lookups += len(curs)
        c.ok(f"WHERE id = %s with each of the {len(curs)} ids finds exactly its row", not misses,
             f"{len(misses)} wrong, first: {misses[:3]}" if misses else "")

        c.eq("uid_decode(%s) of the single row's id gives the configured worker id",
             conn.execute("SELECT worker_id FROM uid_decode(%s)", (order_id,)).fetchone()[0],
             WORKER_ID)
        c.eq("uid_decode(id) of every row gives the configured worker id",
             conn.execute(DECODE_SQL.format(table="orders")).fetchall(), [(WORKER_ID,)])


main("psycopg", body)
