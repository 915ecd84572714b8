"""Django 5 ORM (psycopg 3 backend): the key from db_default=Func(function="snowflake_next"),
set on the object by create()/save() (INSERT ... RETURNING); bulk_create() leaves such keys
unset (the object holds a DatabaseDefault), so the batch takes its keys from the server first
(SELECT snowflake_next() FROM generate_series) and bulk-inserts them explicitly.
Ids as parameters, decoding in SQL, every id compared with the server's id::text."""
import django
from django.conf import settings

from clientlib import DB, DECODE_SQL, DEFAULT_SQL, HOST, PORT, ROWS, SERVER_IDS_SQL, USER, \
    WORKER_ID, main

settings.configure(
    DATABASES={"default": {"ENGINE": "django.db.backends.postgresql", "HOST": HOST,
                           "PORT": PORT, "USER": USER, "NAME": DB}},
    INSTALLED_APPS=[], USE_TZ=True)
django.setup()

from django.db import connection, models  # noqa: E402 (after settings.configure)
from django.db.models import Func  # noqa: E402
from django.db.models.expressions import DatabaseDefault  # noqa: E402


# --- docs snippet (Django)
class Order(models.Model):
    id = models.BigIntegerField(
        primary_key=True,
        db_default=Func(function="snowflake_next", output_field=models.BigIntegerField()))
    n = models.IntegerField(unique=True)
    note = models.TextField(null=True)

    class Meta:
        app_label = "shop"
        db_table = "orders"


def bulk_create_with_ids(model, objs, batch_size=1000):
    """bulk_create() does not read back keys made by a db_default: take them from the
    server first, one query for the whole batch, then insert them explicitly."""
    with connection.cursor() as cur:
        cur.execute("SELECT snowflake_next() FROM generate_series(1, %s)", [len(objs)])
        for obj, (new_id,) in zip(objs, cur.fetchall()):
            obj.pk = new_id
    return model.objects.bulk_create(objs, batch_size=batch_size)
# ---


def body(c):
    with connection.schema_editor() as editor:   # what a migration runs for this model
        editor.create_model(Order)
    with connection.cursor() as cur:
        cur.execute(DEFAULT_SQL.format(table=Order._meta.db_table))
        c.eq("the table's id DEFAULT is snowflake_next()", cur.fetchone()[0], "snowflake_next()")

    # --- docs snippet (Django): create() and save() set the key
    order = Order.objects.create(n=0, note="one")   # INSERT ... RETURNING "id"
    # ---
    c.eq("create() sets the key to an int", type(order.pk), int)
    order.refresh_from_db()
    held = {0: order.pk}

    # the pitfall: plain bulk_create() leaves the keys unset
    plain = Order.objects.bulk_create([Order(n=-n) for n in range(1, 4)])
    c.ok("plain bulk_create() leaves db_default keys unset (DatabaseDefault, not an int)",
         all(isinstance(o.pk, DatabaseDefault) for o in plain),
         f"pk types: {sorted({type(o.pk).__name__ for o in plain})}")
    Order.objects.filter(n__lt=0).delete()

    # --- docs snippet (Django): a batch with its keys
    batch = bulk_create_with_ids(Order, [Order(n=n, note=f"row {n}") for n in range(1, ROWS + 1)])
    # ---
    c.ok(f"bulk_create_with_ids(): all {ROWS} objects hold int keys",
         len(batch) == ROWS and all(type(o.pk) is int for o in batch),
         f"pk types: {sorted({type(o.pk).__name__ for o in batch})}")
    held.update({o.n: o.pk for o in batch})
    c.rows = len(held)
    with connection.cursor() as cur:
        cur.execute(SERVER_IDS_SQL.format(table=Order._meta.db_table))
        c.compare_ids("create() + bulk_create_with_ids()", held, cur.fetchall())

    misses = []
    for n, i in held.items():
        got = list(Order.objects.filter(pk=i).values_list("n", flat=True))
        if got != [n]:
            misses.append((n, got))
    c.lookups += len(held)
    c.ok(f"Order.objects.filter(pk=id) with each of the {len(held)} ids finds exactly its row",
         not misses, f"{len(misses)} wrong, first: {misses[:3]}" if misses else "")

    with connection.cursor() as cur:
        cur.execute("SELECT worker_id FROM uid_decode(%s)", [order.pk])
        c.eq("uid_decode(%s) of the created object's id gives the configured worker id",
             cur.fetchone()[0], WORKER_ID)
        cur.execute(DECODE_SQL.format(table=Order._meta.db_table))
        c.eq("uid_decode(id) of every row gives the configured worker id",
             cur.fetchall(), [(WORKER_ID,)])


main("django", body)
