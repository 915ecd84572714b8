"""tests/partition/load.py — clients on one side of a partition; every value handed out is recorded.

Usage: load.py DSN OUTDIR NAME [--inserters N] [--selectors N] [--what snowflake|all]
               [--keyed SPACE|none]
  Runs until OUTDIR/stop exists (or OUTDIR/stop.NAME). DSN may name several hosts with
  target_session_attrs=read-write: each (re)connection reaches a writable server it can reach.
  --what all (default):
    inserter: INSERT INTO pt_ids (client, k, kv) VALUES (name, k, keyed_next('pt', k))
              RETURNING id, seg, kv   (id DEFAULT snowflake_next(), seg DEFAULT
              segment_next('pt_ins'); autocommit: a row returned is an acknowledged commit;
              k cycles over 4 keys)
    selector: SELECT snowflake_next(), segment_next('pt_sel'), keyed_next('pt', k)
  --what snowflake: SELECT snowflake_next() only (nodes that share nothing but a worker id)
  --what segment:TAG: SELECT snowflake_next(), segment_next(TAG) (a registry-owned tag of a fleet)
  --what keyed:SPACE: SELECT snowflake_next(), keyed_next(SPACE, k) (segment recorded as -1)
  --keyed SPACE: the keyed space of --what all (default pt); none: kv NULL (recorded -1, key -1)
  (tests/multimaster/run.sh uses this script too: one load.py per node, NAME the node)
  The clients, their error handling and the files are tests/lib/recorder.py's (a value recorded
  only when the server returned it; after an error: reconnect, with a growing pause).
  connect_timeout 2 s, and a statement_timeout of 10 s: a call blocked behind a partition (a
  synchronous standby cut off) ends with 57014 and is recorded as an error.
Output (written at stop): OUTDIR/values.NAME.tsv, one line per value handed out:
  client  kind (ins|sel)  snowflake id  segment value  key  keyed value  server address  time
  (segment/key/keyed are -1 with --what snowflake)
OUTDIR/errors.NAME.tsv: time, client, SQLSTATE (or the exception class), server address the
client last used, first line of the message.
OUTDIR/progress.NAME (rewritten every 0.2 s): "<values> <last server address> <last value time>".
"""
import os
import sys
import time

import psycopg

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from recorder import Recorder  # noqa: E402

DSN, OUT, NAME = sys.argv[1], sys.argv[2], sys.argv[3]
opts = dict(zip(sys.argv[4::2], sys.argv[5::2]))
N_INS = int(opts.get("--inserters", 2))
N_SEL = int(opts.get("--selectors", 1))
WHAT = opts.get("--what", "all")
KEYED = opts.get("--keyed", "pt")
rec = Recorder([os.path.join(OUT, "stop"), os.path.join(OUT, "stop." + NAME)])


def connect():
    return psycopg.connect(DSN, autocommit=True, connect_timeout=2,
                           options="-c statement_timeout=10000")


def server_address(conn):
    return conn.execute("SELECT host(inet_server_addr())").fetchone()[0] or "local"


def caller(kind, i):
    """client i of kind (ins|sel): its call, recording
    (client, kind, id, seg, key, kv, server address, time)"""
    name = f"{NAME}.{kind}{i}"

    def call(conn, n, addr):
        k = (i * 7 + n) % 4
        if WHAT.startswith("segment:"):
            row = conn.execute("SELECT snowflake_next(), segment_next(%s), -1",
                               (WHAT[8:],)).fetchone()
            k = -1
        elif WHAT.startswith("keyed:"):
            row = conn.execute("SELECT snowflake_next(), -1, keyed_next(%s, %s)",
                               (WHAT[6:], k)).fetchone()
        elif WHAT == "snowflake":
            row = (conn.execute("SELECT snowflake_next()").fetchone()[0], -1, -1)
            k = -1
        elif KEYED == "none":
            k = -1
            if kind == "ins":
                row = conn.execute(
                    "INSERT INTO pt_ids (client) VALUES (%s) RETURNING id, seg, -1",
                    (name,)).fetchone()
            else:
                row = conn.execute(
                    "SELECT snowflake_next(), segment_next('pt_sel'), -1").fetchone()
        elif kind == "ins":
            row = conn.execute(
                "INSERT INTO pt_ids (client, k, kv) VALUES (%s, %s, keyed_next(%s, %s)) "
                "RETURNING id, seg, kv", (name, k, KEYED, k)).fetchone()
        else:
            row = conn.execute(
                "SELECT snowflake_next(), segment_next('pt_sel'), keyed_next(%s, %s)",
                (KEYED, k)).fetchone()
        return (name, kind, row[0], row[1], k, row[2], addr, time.time())

    return (name, connect, call, server_address)


def progress_line(values):
    last = values[-1] if values else None
    return f"{len(values)} {last[6] if last else '-'} {last[7] if last else 0}"


rec.run([caller("ins", i) for i in range(N_INS)] + [caller("sel", i) for i in range(N_SEL)],
        os.path.join(OUT, "progress." + NAME), progress_line)
rec.write(os.path.join(OUT, f"values.{NAME}.tsv"), "%s\t%s\t%d\t%d\t%d\t%d\t%s\t%.6f\n",
          os.path.join(OUT, f"errors.{NAME}.tsv"),
          lambda e: "%.6f\t%s\t%s\t%s\t%s\n" % (e[0], e[1], e[2], e[3], e[4].replace("\t", " ")))
