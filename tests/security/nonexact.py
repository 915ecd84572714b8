#!/usr/bin/env python3
"""tests/security/nonexact.py — the call sites of pg_idgen's stored expressions that a shadow could take.

Usage: nonexact.py report|plant SCHEMA -- PSQL-COMMAND...
  report        one line per call site: where, what it binds, the argument types it was called on
  plant SCHEMA  the statements that plant, in SCHEMA, an exact-match shadow of each site (run as
                the schema's owner, before a superuser installs or updates the extension)

A name or operator written without its schema resolves to pg_catalog's object when pg_catalog has
one matching the argument types exactly (pg_catalog is searched first). It can be taken over only
where the parser had to coerce an argument — an implicit cast, a polymorphic or a variadic
parameter: then a shadow with the exact argument types, in any schema on the path, wins. This
script finds exactly those sites, from the expressions PostgreSQL stored (pg_depend does not record
what pg_catalog objects an expression uses): views' rewrite rules, column defaults, constraints,
argument defaults, BEGIN ATOMIC bodies, index expressions and trigger conditions of the members.
Each such site must be written schema-qualified; a shadow planted for it before the install shows
whether it is (tests/security/audit.sql then finds the shadow bound wherever it is not).
"""
import subprocess
import sys

EXPRESSIONS = r"""
WITH ext AS (SELECT oid FROM pg_extension WHERE extname = 'pg_idgen'),
m AS (SELECT classid, objid FROM pg_depend, ext
      WHERE refclassid = 'pg_extension'::regclass AND refobjid = ext.oid AND deptype = 'e'),
rels AS (SELECT objid AS relid FROM m WHERE classid = 'pg_class'::regclass)
SELECT 'view ' || ev_class::regclass, ev_action::text FROM pg_rewrite WHERE ev_class IN (SELECT relid FROM rels)
UNION ALL SELECT 'default of ' || adrelid::regclass, adbin::text FROM pg_attrdef WHERE adrelid IN (SELECT relid FROM rels)
UNION ALL SELECT 'constraint ' || conname, conbin::text FROM pg_constraint
          WHERE conbin IS NOT NULL AND (conrelid IN (SELECT relid FROM rels)
                OR contypid IN (SELECT objid FROM m WHERE classid = 'pg_type'::regclass))
UNION ALL SELECT 'argument defaults of ' || p.oid::regprocedure, proargdefaults::text FROM pg_proc p
          WHERE proargdefaults IS NOT NULL AND p.oid IN (SELECT objid FROM m WHERE classid = 'pg_proc'::regclass)
UNION ALL SELECT 'body of ' || p.oid::regprocedure, prosqlbody::text FROM pg_proc p
          WHERE prosqlbody IS NOT NULL AND p.oid IN (SELECT objid FROM m WHERE classid = 'pg_proc'::regclass)
UNION ALL SELECT 'index ' || indexrelid::regclass, coalesce(indexprs::text, '') || ' ' || coalesce(indpred::text, '')
          FROM pg_index WHERE indrelid IN (SELECT relid FROM rels)
UNION ALL SELECT 'trigger ' || tgname, tgqual::text FROM pg_trigger
          WHERE tgqual IS NOT NULL AND tgrelid IN (SELECT relid FROM rels)
"""


def query(psql, sql):
    out = subprocess.run(psql + ["-AtX", "-F", "\x1f", "-R", "\x1e", "-c", "SET search_path = pg_catalog, pg_temp", "-c", sql],
                         capture_output=True, text=True, check=True).stdout
    return [r.split("\x1f") for r in out.split("\x1e") if r.strip() and r != "SET"]


# ---- pg_node_tree text: {NODE :field value ...}, lists ( ... ), datums [ ... ], <> for NULL
def tokens(s):
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c.isspace():
            i += 1
        elif c in "(){}":
            yield c
            i += 1
        else:
            j = i
            while j < n and not s[j].isspace() and s[j] not in "(){}":
                j += 2 if s[j] == "\\" else 1
            yield s[i:j]
            i = j


def parse(s):
    toks = list(tokens(s))
    pos = 0

    def value():
        nonlocal pos
        t = toks[pos]
        pos += 1
        if t == "{":
            node = {"_": toks[pos]}
            pos += 1
            while toks[pos] != "}":
                key = toks[pos]
                pos += 1
                if key.startswith(":") and toks[pos] not in ("}",) and not toks[pos].startswith(":"):
                    node[key[1:]] = value()
                elif key.startswith(":"):
                    node[key[1:]] = None
            pos += 1
            return node
        if t == "(":
            items = []
            while toks[pos] != ")":
                items.append(value())
            pos += 1
            return items
        if t == "[":
            while toks[pos] != "]":
                pos += 1
            pos += 1
            return None
        return None if t == "<>" else t

    out = []
    while pos < len(toks):
        out.append(value())
    return out


# implicit coercions: what the parser added; the type the site was "called on" is the one below
IMPLICIT = {"FUNCEXPR": "funcformat", "RELABELTYPE": "relabelformat", "COERCEVIAIO": "coerceformat",
            "ARRAYCOERCEEXPR": "coerceformat"}
RESULT_TYPE = {"VAR": "vartype", "CONST": "consttype", "PARAM": "paramtype", "FUNCEXPR": "funcresulttype",
               "OPEXPR": "opresulttype", "NULLIFEXPR": "opresulttype", "AGGREF": "aggtype", "WINDOWFUNC": "wintype",
               "RELABELTYPE": "resulttype", "COERCEVIAIO": "resulttype", "ARRAYCOERCEEXPR": "resulttype",
               "CASEEXPR": "casetype", "COALESCEEXPR": "coalescetype", "MINMAXEXPR": "minmaxtype",
               "ARRAYEXPR": "array_typeid", "ROWEXPR": "row_typeid", "FIELDSELECT": "resulttype",
               "SUBSCRIPTINGREF": "refrestype", "CASETESTEXPR": "typeId", "COERCETODOMAIN": "resulttype",
               "SQLVALUEFUNCTION": "type", "CONVERTROWTYPEEXPR": "resulttype"}
BOOLEAN = {"BOOLEXPR", "NULLTEST", "BOOLEANTEST", "SCALARARRAYOPEXPR", "DISTINCTEXPR", "ROWCOMPAREEXPR", "SUBLINK"}


def uncoerced(n):
    while isinstance(n, dict):
        if n["_"] == "TARGETENTRY":
            n = n.get("expr")
            continue
        if n["_"] == "COLLATEEXPR":
            n = n.get("arg")
            continue
        field = IMPLICIT.get(n["_"])
        if field is None or n.get(field) != "2":        # 2: COERCE_IMPLICIT_CAST
            break
        inner = n.get("args") if n["_"] == "FUNCEXPR" else n.get("arg")
        n = inner[0] if isinstance(inner, list) else inner
    return n


def type_of(n):
    n = uncoerced(n)
    if not isinstance(n, dict):
        return None
    if n["_"] in BOOLEAN:
        return "16"
    field = RESULT_TYPE.get(n["_"])
    return n.get(field) if field else None


def sites_of(tree, where, out):
    if isinstance(tree, list):
        for x in tree:
            sites_of(x, where, out)
        return
    if not isinstance(tree, dict):
        return
    t = tree["_"]
    args = tree.get("args") or []
    if t in ("OPEXPR", "DISTINCTEXPR", "NULLIFEXPR"):
        out.append((where, "op", tree["opno"], [type_of(a) for a in args], tree.get("opresulttype")))
    elif t == "SCALARARRAYOPEXPR":    # x op ANY (array): the operator sees the element type
        out.append((where, "op", tree["opno"], [type_of(args[0]), ("elem", type_of(args[1]))], "16"))
    elif t == "FUNCEXPR" and tree.get("funcformat") in ("0",):   # a call written as a call
        out.append((where, "fn", tree["funcid"], [type_of(a) for a in args], tree.get("funcresulttype")))
    elif t == "AGGREF":
        out.append((where, "agg", tree["aggfnoid"], [type_of(a) for a in args], tree.get("aggtype")))
    elif t == "WINDOWFUNC":
        out.append((where, "fn", tree["winfnoid"], [type_of(a) for a in args], tree.get("wintype")))
    elif t == "ROWCOMPAREEXPR":
        for o, l, r in zip(tree.get("opnos") or [], tree.get("largs") or [], tree.get("rargs") or []):
            out.append((where, "op", o, [type_of(l), type_of(r)], "16"))
    for k, v in tree.items():
        if k != "_":
            sites_of(v, where, out)


def main():
    if "--" not in sys.argv:
        sys.exit(__doc__)
    cut = sys.argv.index("--")
    mode, rest, psql = sys.argv[1], sys.argv[2:cut], sys.argv[cut + 1:]
    found = []
    for where, tree in query(psql, EXPRESSIONS):
        if tree.strip():
            sites_of(parse(tree), where, found)
    ops = {r[0]: r for r in query(psql, "SELECT o.oid, o.oprnamespace::regnamespace, o.oprname, o.oid::regoperator, o.oprleft, o.oprright FROM pg_operator o")}
    fns = {r[0]: r for r in query(psql, "SELECT p.oid, p.pronamespace::regnamespace, p.proname, p.oid::regprocedure, array_to_string(p.proargtypes::oid[], ' ') FROM pg_proc p")}
    types = {r[0]: r for r in query(psql, "SELECT oid, format_type(oid, NULL), typelem FROM pg_type")}
    seen = {}
    for where, kind, oid, src, result in found:
        src = [types.get(s[1], (None, None, None))[2] if isinstance(s, tuple) else s for s in src]
        # a literal is of type unknown until resolved; text is what it would match first
        src = ["25" if s == "705" else s for s in src]
        if kind == "op":
            _, nsp, name, desc, left, right = ops[oid]
            declared = [x for x in (left, right) if x != "0"]
        else:
            _, nsp, name, desc, declared = fns[oid]
            declared = declared.split()
        if nsp != "pg_catalog" or src == declared or None in src or "0" in src:
            continue
        key = (kind, name, tuple(src))
        seen.setdefault(key, (where, desc, result))
    if mode == "report":
        for (kind, name, src), (where, desc, _) in sorted(seen.items()):
            print(f"{where}: {desc} called on ({', '.join(types[s][1] for s in src)})")
    elif mode == "plant":
        schema = rest[0]
        for i, ((kind, name, src), (where, desc, result)) in enumerate(sorted(seen.items())):
            argl = ", ".join(types[s][1] for s in src)
            res = types[result][1] if result in types else "bool"
            hit = f"PERFORM public.hostile_hit('{kind} {name}({argl})');"
            if kind == "op":
                print(f'CREATE FUNCTION "{schema}".hostile_exact_{i}({argl}) RETURNS {res} LANGUAGE plpgsql AS $b$ BEGIN {hit} RETURN NULL; END $b$;')
                sides = f"LEFTARG = {types[src[0]][1]}, RIGHTARG = {types[src[1]][1]}" if len(src) == 2 else f"RIGHTARG = {types[src[0]][1]}"
                print(f'CREATE OPERATOR "{schema}".{name} ({sides}, FUNCTION = "{schema}".hostile_exact_{i});')
            elif kind == "agg" and len(src) == 1:
                print(f'CREATE FUNCTION "{schema}".hostile_exact_{i}({res}, {argl}) RETURNS {res} LANGUAGE plpgsql AS $b$ BEGIN {hit} RETURN NULL; END $b$;')
                print(f'CREATE AGGREGATE "{schema}"."{name}"({argl}) (SFUNC = "{schema}".hostile_exact_{i}, STYPE = {res});')
            elif kind == "fn":
                print(f'CREATE FUNCTION "{schema}"."{name}"({argl}) RETURNS {res} LANGUAGE plpgsql AS $b$ BEGIN {hit} RETURN NULL; END $b$;')
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
