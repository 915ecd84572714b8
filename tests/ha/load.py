"""tests/ha/load.py — clients of a Patroni group under failover; every value handed out is recorded.

Usage: load.py DSN OUTDIR [--inserters N] [--selectors N]
  Runs until OUTDIR/stop exists. DSN names every node with target_session_attrs=read-write, so
  each (re)connection reaches the current leader.
  inserter i: INSERT INTO ha_ids (client) VALUES (...) RETURNING id, seg, inet_server_port()
              (id DEFAULT snowflake_next(), seg DEFAULT segment_next('ha_ins'); autocommit: a row
              returned is an acknowledged commit)
  selector i: SELECT snowflake_next(), segment_next('ha_sel'), inet_server_port()
  The clients, their error handling and the files are tests/lib/recorder.py's (a value recorded
  only when the server returned it; after an error: reconnect, libpq trying the hosts in order,
  with a growing pause).
Output (written at stop): OUTDIR/values.tsv, one line per value handed out:
  kind (ins|sel)  snowflake id  segment value  server port  receive time (unix s)
OUTDIR/errors.tsv: time, client, SQLSTATE (or the exception class), first line of the message.
OUTDIR/progress (rewritten every 0.2 s): "<values> <port>:<count>..." for the runner's waits.
"""
import os
import sys
import time

import psycopg

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from recorder import Recorder  # noqa: E402

DSN, OUT = sys.argv[1], sys.argv[2]
opts = dict(zip(sys.argv[3::2], sys.argv[4::2]))
N_INS = int(opts.get("--inserters", 3))
N_SEL = int(opts.get("--selectors", 2))
rec = Recorder([os.path.join(OUT, "stop")])


def connect():
    return psycopg.connect(DSN, autocommit=True)


def caller(kind, i):
    """client i of kind (ins|sel): its call, recording (kind, id, seg, server port, time)"""
    name = f"{kind}{i}"
    if kind == "ins":
        sql = "INSERT INTO ha_ids (client) VALUES (%s) RETURNING id, seg, inet_server_port()"
        args = (name,)
    else:
        sql = "SELECT snowflake_next(), segment_next('ha_sel'), inet_server_port()"
        args = None

    def call(conn, n, server):
        row = conn.execute(sql, args).fetchone()
        return (kind, row[0], row[1], row[2], time.time())

    return (name, connect, call, None)


def progress_line(values):
    return f"{len(values)} {values[-1][3] if values else 0}"


rec.run([caller("ins", i) for i in range(N_INS)] + [caller("sel", i) for i in range(N_SEL)],
        os.path.join(OUT, "progress"), progress_line)
rec.write(os.path.join(OUT, "values.tsv"), "%s\t%d\t%d\t%d\t%.6f\n",
          os.path.join(OUT, "errors.tsv"),
          lambda e: "%.6f\t%s\t%s\t%s\n" % (e[0], e[1], e[2], e[4].replace("\t", " ")))
