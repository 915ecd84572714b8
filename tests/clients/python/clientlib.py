"""Shared harness of the Python client tests (tests/clients/python/*.py).

run.sh exports tests/clients/expect.env and the connection (PGHOST, PGPORT, PGUSER,
PGDATABASE); every check prints one line naming the client and the check, so a failure in
the layer's log says which library broke what:
    PASS: psycopg: bulk insert 10000 rows: every RETURNING id equals the server's id::text
    FAIL: django: ...: <what was wrong>
finish() prints a STAT line (rows inserted, ids compared) and exits 1 if any check failed.
"""
import os
import sys
import traceback

ROWS = int(os.environ["CLIENT_ROWS"])
WORKER_ID = int(os.environ["CLIENT_WORKER_ID"])
HOST = os.environ["PGHOST"]
PORT = int(os.environ["PGPORT"])
USER = os.environ["PGUSER"]
DB = os.environ["PGDATABASE"]

# Every test table: n numbers the rows the client inserted, so the id the client holds for row
# n can be matched with the server's id::text of row n.
SERVER_IDS_SQL = "SELECT n, id::text FROM {table} ORDER BY n"
DECODE_SQL = "SELECT DISTINCT d.worker_id FROM {table} t CROSS JOIN LATERAL uid_decode(t.id) d"
DEFAULT_SQL = ("SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d JOIN pg_attribute a"
               " ON a.attrelid = d.adrelid AND a.attnum = d.adnum"
               " WHERE d.adrelid = '{table}'::regclass AND a.attname = 'id'")


def short(value, limit=120):
    r = repr(value)
    return r if len(r) <= limit else r[:limit] + f"... ({len(r)} chars)"


class Checks:
    def __init__(self, client):
        self.client = client
        self.passed = 0
        self.failed = 0
        self.rows = 0          # rows this client inserted
        self.compared = 0      # ids compared with the server's id::text
        self.lookups = 0       # WHERE id = <parameter> lookups

    def ok(self, check, cond, detail=""):
        if cond:
            self.passed += 1
            print(f"PASS: {self.client}: {check}" + (f" ({detail})" if detail else ""), flush=True)
        else:
            self.failed += 1
            print(f"FAIL: {self.client}: {check}: {detail or 'false'}", flush=True)
        return cond

    def eq(self, check, got, want):
        return self.ok(check, got == want,
                       short(got) if got == want else f"got {short(got)}, want {short(want)}")

    def raises(self, check, exc_type, fn):
        """fn() must raise exc_type (a documented pitfall that docs/clients.md works around)."""
        try:
            fn()
        except exc_type as e:
            return self.ok(check, True, f"{type(e).__name__}: {str(e).splitlines()[0]}")
        except Exception as e:  # noqa: BLE001 - any other error is a failure of the check
            return self.ok(check, False, f"raised {type(e).__name__}: {e}, want {exc_type.__name__}")
        return self.ok(check, False, f"no {exc_type.__name__} raised")

    def compare_ids(self, check, held, server_rows):
        """held: {n: id as the client holds it}; server_rows: [(n, id::text)] of the whole table.
        Every id is compared exactly: the client's decimal text of it against the server's."""
        server = {int(n): text for n, text in server_rows}
        bad = [(n, held.get(n), server.get(n)) for n in sorted(set(held) | set(server))
               if n not in held or n not in server or str(held[n]) != server[n]]
        self.compared += len(held)
        types = sorted({type(v).__name__ for v in held.values()})
        return self.ok(f"{check}: {len(held)} ids equal the server's id::text exactly",
                       not bad and len(held) == len(server) and len(held) > 0,
                       f"types {types}" if not bad else
                       f"{len(bad)} of {len(server)} differ, first (n, client, server): {bad[:3]}")

    def finish(self):
        print(f"STAT: {self.client}: rows={self.rows} ids_compared={self.compared} "
              f"lookups={self.lookups} checks={self.passed + self.failed} failed={self.failed}",
              flush=True)
        sys.exit(1 if self.failed else 0)


def main(client, body):
    """Runs body(checks); an exception is a failed check named after the client, not a crash."""
    c = Checks(client)
    try:
        body(c)
    except Exception:  # noqa: BLE001
        c.ok("unexpected exception", False, traceback.format_exc().strip().replace("\n", " | "))
    c.finish()
