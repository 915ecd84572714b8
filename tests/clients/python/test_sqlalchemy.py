"""SQLAlchemy 2 ORM (psycopg 3 driver): the key from server_default=func.snowflake_next(),
marked monotonic=True (SQLAlchemy 2.1) so that a flush of many objects is batched
("insertmanyvalues": one INSERT ... RETURNING per page of rows, the returned keys matched to the
objects by sorting them); without the mark every object is its own INSERT; autoincrement=True
would turn the column into a BIGSERIAL. Ids as parameters, decoding in SQL, every id compared."""
import math

from sqlalchemy import BigInteger, Integer, String, URL, create_engine, event, func, select, text
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column
from sqlalchemy.schema import CreateTable

from clientlib import DB, DECODE_SQL, DEFAULT_SQL, HOST, PORT, ROWS, SERVER_IDS_SQL, USER, \
    WORKER_ID, main


class Base(DeclarativeBase):
    pass


# --- docs snippet (SQLAlchemy)
class Order(Base):
    __tablename__ = "orders"
    # monotonic=True (new in 2.1): ids of one INSERT grow in row order, so a flush of many
    # objects is batched; never autoincrement=True (that makes the column a BIGSERIAL)
    id: Mapped[int] = mapped_column(
        BigInteger, primary_key=True, server_default=func.snowflake_next(monotonic=True))
    n: Mapped[int] = mapped_column(Integer, unique=True)
    note: Mapped[str | None] = mapped_column(String)
# ---


class OrderUnmarked(Base):
    """The pitfall: the same default without monotonic=True is flushed one INSERT per object."""
    __tablename__ = "orders_unmarked"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True,
                                    server_default=func.snowflake_next())
    n: Mapped[int] = mapped_column(Integer, unique=True)


class OrderAutoincrement(Base):
    """The pitfall: autoincrement=True silently replaces the DEFAULT by a BIGSERIAL."""
    __tablename__ = "orders_autoincrement"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True,
                                    server_default=func.snowflake_next(monotonic=True))


UNMARKED_ROWS = 200   # enough to count the statements, few enough to be cheap one by one


def body(c):
    engine = create_engine(URL.create("postgresql+psycopg", username=USER, host=HOST, port=PORT,
                                      database=DB))
    inserts = []
    event.listen(engine, "before_cursor_execute",
                 lambda conn, cur, stmt, *a: inserts.append(stmt)
                 if stmt.lstrip().upper().startswith("INSERT") else None)
    Base.metadata.create_all(engine, tables=[Order.__table__, OrderUnmarked.__table__])
    with engine.connect() as conn:
        c.eq("the table's id DEFAULT is snowflake_next()",
             conn.execute(text(DEFAULT_SQL.format(table=Order.__tablename__))).scalar(),
             "snowflake_next()")

    with Session(engine) as s:
        # --- docs snippet (SQLAlchemy): the key after a flush; a batch of objects
        order = Order(n=0, note="one")
        s.add(order)
        s.flush()                    # INSERT ... RETURNING id: order.id is set
        batch = [Order(n=n, note=f"row {n}") for n in range(1, ROWS + 1)]
        s.add_all(batch)
        s.commit()
        # ---
        c.eq("the flushed object's id is an int", type(order.id), int)
        page = engine.dialect.insertmanyvalues_page_size
        c.eq(f"{ROWS} objects flushed in {math.ceil(ROWS / page)} batched INSERTs "
             f"(1 for the single object)", len(inserts), 1 + math.ceil(ROWS / page))
        held = {o.n: o.id for o in [order] + batch}
        c.rows = len(held)
        s.refresh(order)             # a fresh SELECT gives the same id
        c.eq("refresh() gives the flushed id", order.id, held[0])
        c.compare_ids("flush + batched flush", held,
                      s.execute(text(SERVER_IDS_SQL.format(table=Order.__tablename__))).all())

        # every id as a bound parameter; a Core select(), so the identity map is not consulted
        misses = []
        for n, i in held.items():
            got = s.execute(select(Order.n).where(Order.id == i)).scalars().all()
            if got != [n]:
                misses.append((n, got))
        c.lookups += len(held)
        c.ok(f"select(Order.n).where(Order.id == id) with each of the {len(held)} ids finds "
             "exactly its row", not misses,
             f"{len(misses)} wrong, first: {misses[:3]}" if misses else "")

        c.eq("func.uid_decode(id) of the single object's id gives the configured worker id",
             s.execute(select(text("worker_id")).select_from(func.uid_decode(order.id))).scalar(),
             WORKER_ID)
        c.eq("uid_decode(id) of every row gives the configured worker id",
             s.execute(text(DECODE_SQL.format(table=Order.__tablename__))).all(), [(WORKER_ID,)])

        # pitfall 1: unmarked server default -> one INSERT per object (still correct ids)
        inserts.clear()
        unmarked = [OrderUnmarked(n=n) for n in range(1, UNMARKED_ROWS + 1)]
        s.add_all(unmarked)
        s.commit()
        c.eq(f"without monotonic=True, {UNMARKED_ROWS} objects take {UNMARKED_ROWS} INSERTs",
             len(inserts), UNMARKED_ROWS)
        c.compare_ids("unmarked server default", {o.n: o.id for o in unmarked},
                      s.execute(text(SERVER_IDS_SQL.format(
                          table=OrderUnmarked.__tablename__))).all())

    # pitfall 2: autoincrement=True -> BIGSERIAL, the DEFAULT is gone from the DDL
    ddl = str(CreateTable(OrderAutoincrement.__table__).compile(dialect=postgresql.dialect()))
    c.ok("autoincrement=True renders BIGSERIAL instead of DEFAULT snowflake_next()",
         "BIGSERIAL" in ddl and "snowflake_next" not in ddl, " ".join(ddl.split()))
    ddl = str(CreateTable(Order.__table__).compile(dialect=postgresql.dialect()))
    c.ok("the recommended mapping renders DEFAULT snowflake_next()",
         "DEFAULT snowflake_next()" in ddl and "SERIAL" not in ddl, " ".join(ddl.split()))
    engine.dispose()


main("sqlalchemy", body)
