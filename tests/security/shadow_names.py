#!/usr/bin/env python3
"""tests/security/shadow_names.py ROOT — the names a hostile role must shadow, read from the source.

Prints two lines: the function names, then the operators, that the extension's hand-written SQL
(sql/*.sql: install and update scripts, function bodies included) and the SQL inside the string
literals of src/ (what the library runs through SPI) write, qualified or not. tests/security/
plant.sql adds the names the catalog shows bound (tests/security/bound_names.sql) and keeps
those PostgreSQL knows. Nothing here is a hand list: a name the next release starts to use is
shadowed without anyone remembering to add it.
"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
# words followed by "(" that are SQL syntax, not function calls
KEYWORDS = set("""
all and any array as asc between by case cast check coalesce constraint create cross cube current
default delete desc distinct do each else end except exists extract filter for foreign from full
greatest grouping having if in inner insert intersect interval into is join key lateral least
left like limit not null nullif of offset on or order outer over overlay partition position
primary references returning returns right row rows select set setof similar some substring
table then trim union unique update using values varchar when where while window with within
numeric decimal char character bit timestamp time float double precision varying bigint integer
int smallint boolean text bytea jsonb json name oid regclass uuid
""".split())
func_re = re.compile(r'(?<![\w$.])(?:pg_catalog\s*\.\s*)?("?)([A-Za-z_][A-Za-z0-9_]*)\1\s*\(')
op_re = re.compile(r'OPERATOR\s*\(\s*(?:pg_catalog\s*\.\s*)?([+\-*/<>=~!@#%^&|`?]+)\s*\)|([+\-*/<>=~!@#%^&|`?]+)')
strip_comments = re.compile(r'--[^\n]*')


def scan(text, funcs, ops):
    text = strip_comments.sub(' ', text)
    for m in func_re.finditer(text):
        name = m.group(2).lower()
        if name not in KEYWORDS:
            funcs.add(name)
    for m in op_re.finditer(text):
        op = m.group(1) or m.group(2)
        # plpgsql assignment, named arguments, casts and the like are syntax, not operators
        if op in ('=>', ':=', '::') or len(op) > 3:
            continue
        ops.add(op)


funcs, ops = set(), set()
for f in sorted((root / "sql").glob("*.sql")):
    scan(f.read_text(), funcs, ops)
# SQL the library runs: string literals in src/ that read like SQL
lit = re.compile(r'(?:c?r#*"|c?")((?:[^"\\]|\\.)*)"', re.S)
sqlish = re.compile(r'\b(SELECT|INSERT|UPDATE|DELETE|CREATE|ALTER|DROP|WITH|PERFORM)\b')
for f in sorted((root / "src").rglob("*.rs")):
    for m in lit.finditer(f.read_text()):
        s = m.group(1)
        if sqlish.search(s):
            scan(s, funcs, ops)
print(" ".join(sorted(funcs)))
print(" ".join(sorted(ops)))
