"""tests/citus/load.py — clients inserting into a Citus cluster through every node with every
insert form; every value a node handed back is recorded (tests/lib/recorder.py).

Usage: load.py OUTDIR NAME=DSN...   (runs until OUTDIR/stop exists)
  For each node NAME, one client per form (autocommit: a returned row is an acknowledged commit),
  into the distributed table ct (id DEFAULT snowflake_next(), seg DEFAULT segment_next('cseg'),
  kv = keyed_next('cks', k) where the form can compute it):
    single   INSERT ... VALUES (one row) RETURNING
    multi    INSERT ... VALUES (10 rows) RETURNING
    prep     the single-row INSERT as a server-side prepared statement under
             plan_cache_mode = force_generic_plan (every execution after the first runs the generic
             plan: the DEFAULTs must still be evaluated per row)
    copy     COPY ct (k, node, client, form, batch) FROM STDIN, 200 rows (no RETURNING: recorded as
             the batch and its row count once COPY returned)
    isel     INSERT ... SELECT ... FROM generate_series(1, 25) RETURNING (a local source)
    dist     INSERT ... SELECT ... FROM src RETURNING (src is a distributed table of 16 rows, so
             the SELECT and its DEFAULTs run where src's shards are)
Output at stop: OUTDIR/values.NAME.tsv (one line per value: node client form id seg k kv batch;
-1 for none), OUTDIR/copies.NAME.tsv (node client batch rows), OUTDIR/errors.NAME.tsv;
OUTDIR/progress.NAME: the number of values (rows) recorded so far.
"""
import os
import sys
import threading
import time

import psycopg

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from recorder import Recorder  # noqa: E402

OUT = sys.argv[1]
NODES = [a.split("=", 1) for a in sys.argv[2:]]
TAG = "-".join(n for n, _ in NODES)
copies = []
copies_lock = threading.Lock()

COLS = "(k, kv, node, client, form, batch)"
RET = "RETURNING id, seg, k, COALESCE(kv, -1), batch"


def connect_to(dsn):
    def connect():
        c = psycopg.connect(dsn, autocommit=True, connect_timeout=3)
        c.execute("SET statement_timeout = '20s'")
        return c
    return connect


def rows(node, client, form, res):
    return [(node, client, form) + tuple(r) for r in res]


def make_call(node, form):
    client = f"{node}.{form}"

    def call(conn, n, server):
        time.sleep(0.01)   # 24 clients on a few cores: the faults, not the throughput, are tested
        k = n % 4
        if form == "single":
            res = conn.execute(f"INSERT INTO ct {COLS} VALUES (%s, keyed_next('cks', %s), %s, %s, %s, %s) {RET}",
                               (k, k, node, client, form, n)).fetchall()
        elif form == "multi":
            vals = ", ".join(f"({(n + i) % 4}, keyed_next('cks', {(n + i) % 4}), %s, %s, %s, %s)" for i in range(10))
            res = conn.execute(f"INSERT INTO ct {COLS} VALUES {vals} {RET}", (node, client, form, n) * 10).fetchall()
        elif form == "prep":
            res = conn.execute(f"INSERT INTO ct {COLS} VALUES (%s, keyed_next('cks', %s), %s, %s, %s, %s) {RET}",
                               (k, k, node, client, form, n), prepare=True).fetchall()
        elif form == "copy":
            with conn.cursor() as cur:
                with cur.copy("COPY ct (k, node, client, form, batch) FROM STDIN") as cp:
                    for i in range(200):
                        cp.write_row(((n + i) % 4, node, client, form, n))
                done = cur.rowcount
            with copies_lock:
                copies.append((node, client, n, done))
            return [(node, client, form, -1, -1, -1, -1, n)]
        elif form == "isel":
            res = conn.execute(f"INSERT INTO ct {COLS} SELECT g %% 4, keyed_next('cks', g %% 4), %s, %s, %s, %s "
                               f"FROM generate_series(1, 25) g {RET}", (node, client, form, n)).fetchall()
        else:  # dist
            res = conn.execute(f"INSERT INTO ct {COLS} SELECT s.k, keyed_next('cks', s.k), %s, %s, %s, %s "
                               f"FROM src s {RET}", (node, client, form, n)).fetchall()
        return rows(node, client, form, res)
    return call


def on_connect(form):
    def setup(conn):
        if form == "prep":   # every execution after the first: the generic plan
            conn.execute("SET plan_cache_mode = force_generic_plan")
        return "-"
    return setup


# a call returns the list of rows of one statement: recorded as one item
rec = Recorder([os.path.join(OUT, "stop")])
FORMS = ["single", "multi", "prep", "copy", "isel", "dist"]
clients = [(f"{node}.{form}", connect_to(dsn), make_call(node, form), on_connect(form))
           for node, dsn in NODES for form in FORMS]
rec.run(clients, os.path.join(OUT, f"progress.{TAG}"),
        lambda v: str(sum(len(r) for r in v)))
with open(os.path.join(OUT, f"values.{TAG}.tsv"), "w") as f:
    for batch in rec.values:
        for r in batch:
            f.write("\t".join(str(x) for x in r) + "\n")
with open(os.path.join(OUT, f"copies.{TAG}.tsv"), "w") as f:
    for c in copies:
        f.write("\t".join(str(x) for x in c) + "\n")
with open(os.path.join(OUT, f"errors.{TAG}.tsv"), "w") as f:
    for e in rec.errors:
        f.write("%.3f\t%s\t%s\t%s\t%s\n" % e)
