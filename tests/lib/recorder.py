"""tests/lib/recorder.py — clients that record every value a server hands them, for the tests that
fault a group under load (tests/ha/load.py, tests/partition/load.py; tests/multimaster uses the
latter).

Each client is a thread running one statement after another on its own autocommit connection
until a stop file exists. A row the server returned is recorded at once (an acknowledged commit,
or a value handed out); nothing is retried inside a transaction, so nothing is recorded twice or
without the server's answer. After an error the client records its SQLSTATE (or the exception
class), closes its connection, waits 20 ms — doubled while errors last, at most 0.5 s, so that
clients do not fork hundreds of backends a second while no server can take them — and
reconnects. A progress file is rewritten every 0.2 s for the runner's waits.
"""
import os
import threading
import time

import psycopg


class Recorder:
    """values and errors of every client, under one lock; stops when any of `stop_files` exists"""

    def __init__(self, stop_files):
        self.stop_files = list(stop_files)
        self.values = []
        self.errors = []
        self.lock = threading.Lock()

    def stopped(self):
        return any(os.path.exists(s) for s in self.stop_files)

    def client(self, name, connect, call, on_connect=None):
        """Runs `call(conn, n)` (n = 0, 1, ...) on connections from `connect()` until stopped.

        call(conn, n, server) returns the tuple to record; on_connect(conn) returns what the
        client calls its server (its address, its port): passed to call, and kept with errors.
        """
        conn, server, n, pause = None, "-", 0, 0.02
        while not self.stopped():
            attempt, n = n, n + 1
            try:
                if conn is None:
                    conn = connect()
                    server = on_connect(conn) if on_connect else "-"
                row = call(conn, attempt, server)
                pause = 0.02
                with self.lock:
                    self.values.append(row)
            except psycopg.Error as e:
                code = getattr(e, "sqlstate", None) or type(e).__name__
                msg = (str(e).splitlines() or [""])[0][:200]
                with self.lock:
                    self.errors.append((time.time(), name, code, server, msg))
                try:
                    if conn is not None:
                        conn.close()
                except Exception:
                    pass
                conn, server = None, "-"
                time.sleep(pause)
                pause = min(pause * 2, 0.5)
        if conn is not None:
            try:
                conn.close()
            except Exception:
                pass

    def progress(self, path, line):
        """Rewrites `path` with line(values) every 0.2 s until stopped."""
        while not self.stopped():
            with self.lock:
                text = line(self.values)
            with open(path + ".tmp", "w") as f:
                f.write(text + "\n")
            os.replace(path + ".tmp", path)
            time.sleep(0.2)

    def run(self, clients, progress_path, progress_line):
        """clients: (name, connect, call, on_connect) tuples; returns when every one stopped."""
        threads = [threading.Thread(target=self.client, args=c) for c in clients]
        threads.append(threading.Thread(target=self.progress, args=(progress_path, progress_line)))
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def write(self, values_path, value_format, errors_path, error_format):
        with open(values_path, "w") as f:
            for v in self.values:
                f.write(value_format % v)
        with open(errors_path, "w") as f:
            for e in self.errors:
                f.write(error_format(e))
