"""tests/ha/load.py — clients of a Patroni group under failover; every value handed out is recorded.

Usage: load.py DSN OUTDIR [--inserters N] [--selectors N]
  Runs until OUTDIR/stop exists. DSN names every node with target_session_attrs=read-write, so
  each (re)connection reaches the current leader.
  inserter i: INSERT INTO ha_ids (client) VALUES (...) RETURNING id, seg, inet_server_port()
              (id DEFAULT snowflake_next(), seg DEFAULT segment_next('ha_ins'); autocommit: a row
              returned is an acknowledged commit)
  selector i: SELECT snowflake_next(), segment_next('ha_sel'), inet_server_port()
  After an error the client closes its connection, waits (20 ms, doubled while errors last, at
  most 0.5 s) and reconnects (libpq tries the hosts in order); nothing is retried inside a
  transaction, so a value is recorded only when the server returned it.
Output (written at stop): OUTDIR/values.tsv, one line per value handed out:
  kind (ins|sel)  snowflake id  segment value  server port  receive time (unix s)
OUTDIR/errors.tsv: time, client, SQLSTATE (or the exception class), first line of the message.
OUTDIR/progress (rewritten every 0.2 s): "<values> <port>:<count>..." for the runner's waits.
"""
import os
import sys
import threading
import time

import psycopg

DSN, OUT = sys.argv[1], sys.argv[2]
opts = dict(zip(sys.argv[3::2], sys.argv[4::2]))
N_INS = int(opts.get("--inserters", 3))
N_SEL = int(opts.get("--selectors", 2))
STOP = os.path.join(OUT, "stop")

values = []          # (kind, id, seg, port, t)
errors = []          # (t, client, code, message)
lock = threading.Lock()


def client(kind, i):
    name = f"{kind}{i}"
    if kind == "ins":
        sql = "INSERT INTO ha_ids (client) VALUES (%s) RETURNING id, seg, inet_server_port()"
        args = (name,)
    else:
        sql = "SELECT snowflake_next(), segment_next('ha_sel'), inet_server_port()"
        args = None
    conn = None
    pause = 0.02   # after an error; doubled up to 0.5 s while errors last, so that five clients do
                   # not fork hundreds of backends a second on the standbys while no leader runs
    while not os.path.exists(STOP):
        try:
            if conn is None:
                conn = psycopg.connect(DSN, autocommit=True)
            row = conn.execute(sql, args).fetchone()
            t = time.time()
            pause = 0.02
            with lock:
                values.append((kind, row[0], row[1], row[2], t))
        except psycopg.Error as e:
            code = getattr(e, "sqlstate", None) or type(e).__name__
            msg = (str(e).splitlines() or [""])[0][:200]
            with lock:
                errors.append((time.time(), name, code, msg))
            try:
                if conn is not None:
                    conn.close()
            except Exception:
                pass
            conn = None
            time.sleep(pause)
            pause = min(pause * 2, 0.5)
    if conn is not None:
        conn.close()


def progress():
    path = os.path.join(OUT, "progress")
    while not os.path.exists(STOP):
        with lock:
            n = len(values)
            per = {}
            for v in values[-2000:]:
                per[v[3]] = per.get(v[3], 0) + 1
            last = values[-1][3] if values else 0
        with open(path + ".tmp", "w") as f:
            f.write(f"{n} {last}\n")
        os.replace(path + ".tmp", path)
        time.sleep(0.2)


threads = [threading.Thread(target=client, args=("ins", i)) for i in range(N_INS)]
threads += [threading.Thread(target=client, args=("sel", i)) for i in range(N_SEL)]
threads.append(threading.Thread(target=progress))
for t in threads:
    t.start()
for t in threads:
    t.join()
with open(os.path.join(OUT, "values.tsv"), "w") as f:
    for v in values:
        f.write("%s\t%d\t%d\t%d\t%.6f\n" % v)
with open(os.path.join(OUT, "errors.tsv"), "w") as f:
    for e in errors:
        f.write("%.6f\t%s\t%s\t%s\n" % (e[0], e[1], e[2], e[3].replace("\t", " ")))
