#!/usr/bin/env python3
"""scripts/check-imports.py — no import cycle between the files of src/ but shmem <-> wal.

Usage: scripts/check-imports.py [--graph] [--self-test] [SRC_DIR]
       (default: src; `make test-docs` runs --self-test, then the check of src/)

Offline, Python 3 standard library only. A node is a file (a module: src/a.rs is crate::a,
src/a/mod.rs is crate::a, src/a/b.rs is crate::a::b; a module written inline, such as
`mod tests { ... }`, belongs to its file). An edge A -> B means that A's code names B: a `use`
path (groups and `self` included), or a `crate::`/`super::`/`self::` path in the code, or a path
starting with the name of a child module. A path is cut at the longest prefix that is a module;
when that module is a `mod.rs` and the next name is one it re-exports (`pub use child::item`),
the edge goes to the child. Comments, strings and character literals are skipped; `mod x;`
declarations are not edges. External crates (pgrx, std, pg_idgen_core, ...) are ignored.

The check: the strongly connected components of the graph (Tarjan). Each component of more than
one file is an import cycle; the one allowed is {crate::shmem, crate::wal} (the WAL resource
manager's redo raises the shared state that reservations WAL-log). Any other cycle: exit status
1, one line per cycle with the files in it and, for each, the edge that closes it (file:line).
`--graph` prints every edge and the layer of every file (its height above the files it uses).
`--self-test` runs the check on small made-up trees first (a cycle through a `use` group, a
`super::` path and a re-export found; paths in comments, strings and an inline test module not
taken for edges; shmem <-> wal allowed) and fails if any verdict is wrong.
"""
import os
import re
import sys

ALLOWED = [frozenset({"crate::shmem", "crate::wal"})]


def module_of(src, path):
    rel = os.path.relpath(path, src)[:-3].split(os.sep)
    if rel[-1] in ("lib", "main") and len(rel) == 1:
        return "crate"
    if rel[-1] == "mod":
        rel = rel[:-1]
    return "::".join(["crate"] + rel)


def tokens(text):
    """Yield (kind, value, line) with kind in ident, punct; comments/strings/chars dropped."""
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c.isspace():
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    line += text[i] == "\n"
                    i += 1
        elif re.match(r'(b|c)?r(#*)"', text[i:i + 260]):
            m = re.match(r'(b|c)?r(#*)"', text[i:])
            end = '"' + m.group(2)
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            line += text.count("\n", i, j)
            i = j
        elif c == '"' or (c in "bc" and text.startswith('"', i + 1)):
            i += 1 if c == '"' else 2
            while i < n and text[i] != '"':
                if text[i] == "\\":
                    i += 1
                line += text[i] == "\n"
                i += 1
            i += 1
        elif c == "'" or (c == "b" and text.startswith("'", i + 1)):
            # a char literal ('x', '\n', '\u{..}', b'x') or a lifetime ('a)
            k = i + (1 if c == "'" else 2)
            m = re.match(r"(\\u\{[0-9a-fA-F]+\}|\\x[0-9a-fA-F]{2}|\\.|[^\\'])'", text[k:k + 12])
            if m:
                i = k + m.end()
            else:
                i = k
                while i < n and (text[i].isalnum() or text[i] == "_"):
                    i += 1
        elif c.isalpha() or c == "_":
            j = i
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            yield ("ident", text[i:j], line)
            i = j
        elif c.isdigit():
            j = i
            while j < n and (text[j].isalnum() or text[j] in "_."):
                j += 1
            i = j
        else:
            if text.startswith("::", i):
                yield ("punct", "::", line)
                i += 2
            else:
                yield ("punct", c, line)
                i += 1


def parse_use_tree(toks, k):
    """Parse a use tree starting at toks[k]; return (list of paths, next index)."""
    paths, prefix = [], []
    while k < len(toks):
        kind, v, _ = toks[k]
        if v == "{":
            k += 1
            while toks[k][1] != "}":
                sub, k = parse_use_tree(toks, k)
                paths += [prefix + p for p in sub]
                if toks[k][1] == ",":
                    k += 1
            return paths, k + 1
        if kind == "ident":
            prefix.append(v)
            k += 1
            if k < len(toks) and toks[k][1] == "::":
                k += 1
                continue
            if k < len(toks) and toks[k][1] == "as":
                k += 2
            return [prefix], k
        if v == "*":
            return [prefix], k + 1
        return [prefix], k
    return [prefix], k


class File:
    def __init__(self, src, path):
        self.path = path
        self.module = module_of(src, path)
        self.is_dir_module = os.path.basename(path) in ("mod.rs", "lib.rs", "main.rs")
        with open(path, encoding="utf-8") as f:
            self.toks = list(tokens(f.read()))
        self.children = set()   # `mod x;` / `mod x { }` names
        self.reexports = {}     # name -> path (pub use child::...::name)
        self.uses = []          # (path list, line, inline depth)
        self.paths = []         # (path list, line, inline depth)
        self.scan()

    def scan(self):
        t, k, depth, inline = self.toks, 0, 0, []
        while k < len(t):
            kind, v, line = t[k]
            if v == "{":
                depth += 1
            elif v == "}":
                depth -= 1
                if inline and inline[-1] == depth:
                    inline.pop()
            if kind == "ident" and v == "mod" and k + 2 < len(t) and t[k + 1][0] == "ident":
                if t[k + 2][1] == ";" and not inline:
                    self.children.add(t[k + 1][1])
                elif t[k + 2][1] == "{":
                    inline.append(depth)
                    depth += 1
                    k += 3
                    continue
            if kind == "ident" and v == "use" and (k == 0 or t[k - 1][1] != "::"):
                public = k > 0 and (t[k - 1][1] == "pub" or t[k - 1][1] == ")")
                paths, k2 = parse_use_tree(t, k + 1)
                for p in paths:
                    self.uses.append((p, line, len(inline)))
                    if public and not inline and p and p[-1] not in ("self", "*"):
                        self.reexports[p[-1]] = p
                k = k2
                continue
            if kind == "ident" and (k == 0 or t[k - 1][1] != "::") and k + 1 < len(t) and t[k + 1][1] == "::":
                p, j = [v], k + 1
                while j + 1 < len(t) and t[j][1] == "::" and t[j + 1][0] == "ident":
                    p.append(t[j + 1][1])
                    j += 2
                self.paths.append((p, line, len(inline)))
                k = j
                continue
            k += 1


SELF_TESTS = [
    # (name, files, expected exit status, text the output must contain)
    ("cycle through a use group, a super:: path and a re-export", {
        "lib.rs": "mod a;\nmod b;\nmod shmem;\nmod wal;\nuse crate::b::f;\n",
        "a.rs": "use crate::b::{self, g as h};\n",
        "b/mod.rs": "mod c;\npub use c::f;\npub fn g() {}\n",
        "b/c.rs": "pub fn f() { super::super::a::x(); }\n",
        "shmem.rs": "use crate::wal;\n", "wal.rs": "fn f() { crate::shmem::g() }\n",
    }, 1, "import cycle of 3 files: a <-> b <-> b::c"),
    ("no edge from comments, strings, char literals, an inline test module", {
        "lib.rs": "mod a;\nmod b;\n",
        "a.rs": "use crate::b;\nfn f() { b::g(); }\n",
        "b.rs": "// crate::a::x\n/* super::a:: */ const S: &str = \"crate::a::y\";\n"
                "const R: &str = r#\"super::a::z\"#; const C: char = '\"'; fn l<'a>(x: &'a str) {}\n"
                "mod tests { use super::*; fn t() { super::g(); } }\npub fn g() {}\n",
    }, 0, "no import cycle in 3 files"),
    ("shmem <-> wal allowed", {
        "lib.rs": "mod shmem;\nmod wal;\n",
        "shmem.rs": "use crate::wal::redo;\n", "wal.rs": "use super::shmem;\n",
    }, 0, "but the allowed shmem <-> wal"),
]


def self_test():
    import contextlib
    import io
    import tempfile
    failed = 0
    for name, tree, want_rc, want_text in SELF_TESTS:
        with tempfile.TemporaryDirectory() as d:
            for rel, text in tree.items():
                os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
                with open(os.path.join(d, rel), "w", encoding="utf-8") as f:
                    f.write(text)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                rc = main([d])
            ok = rc == want_rc and want_text in out.getvalue()
            failed += not ok
            print(f"self-test {'ok' if ok else 'FAILED'}: {name}" + ("" if ok else f" (exit {rc}):\n{out.getvalue()}"))
    return failed == 0


def main(argv):
    show = "--graph" in argv
    if "--self-test" in argv and not self_test():
        return 1
    args = [a for a in argv if not a.startswith("--")]
    src = args[0] if args else "src"
    files = {}
    for root, _, names in os.walk(src):
        for name in sorted(names):
            if name.endswith(".rs"):
                f = File(src, os.path.join(root, name))
                files[f.module] = f
    modules = set(files)

    def resolve(f, path, inline_depth, is_use):
        """The module a path names (or None: external, or the file itself)."""
        if not path:
            return None
        base = f.module.split("::")
        head, rest = path[0], list(path[1:])
        if head == "crate":
            cur = ["crate"]
        elif head in ("self", "super"):
            cur = list(base)
            rest = [head] + rest
            while rest and rest[0] in ("self", "super"):
                if rest.pop(0) == "super":
                    if inline_depth:
                        inline_depth -= 1
                    else:
                        cur = cur[:-1]
        elif head in f.children:
            cur, rest = list(base), [head] + rest
        else:
            return None  # an external crate, a type, a variant, a local module alias
        # longest prefix that is a module
        while rest and "::".join(cur + [rest[0]]) in modules:
            cur.append(rest.pop(0))
        target = "::".join(cur)
        if target not in files:
            return None
        tf = files[target]
        if rest and tf.is_dir_module and rest[0] in tf.reexports and tf is not f:
            inner = resolve(tf, tf.reexports[rest[0]], 0, True)
            if inner:
                target = inner
        return None if target == f.module else target

    edges = {}  # (a, b) -> first (path, line)
    for f in files.values():
        for p, line, depth in f.uses + f.paths:
            t = resolve(f, p, depth, True)
            if t:
                edges.setdefault((f.module, t), (f.path, line))
    graph = {m: sorted({b for (a, b) in edges if a == m}) for m in modules}

    # Tarjan's strongly connected components
    index, low, on, stack, comps, counter = {}, {}, set(), [], [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            comps.append(comp)

    for m in sorted(modules):
        if m not in index:
            visit(m)

    if show:
        height = {}

        def h(m, seen=()):
            if m in height:
                return height[m]
            if m in seen:
                return 0
            height[m] = 1 + max([h(w, seen + (m,)) for w in graph[m]] or [-1])
            return height[m]

        for (a, b), (path, line) in sorted(edges.items()):
            print(f"{a} -> {b}    ({path}:{line})")
        for m in sorted(modules, key=lambda m: (h(m), m)):
            print(f"layer {h(m):2}  {m}")

    bad = [sorted(c) for c in comps if len(c) > 1 and frozenset(c) not in ALLOWED]
    allowed = [sorted(c) for c in comps if len(c) > 1 and frozenset(c) in ALLOWED]
    nedges = len(edges)
    if bad:
        for c in bad:
            members = set(c)
            print(f"import cycle of {len(c)} files: {' <-> '.join(m.replace('crate::', '') for m in c)}")
            for (a, b), (path, line) in sorted(edges.items()):
                if a in members and b in members:
                    print(f"    {a.replace('crate::', '')} -> {b.replace('crate::', '')}    {path}:{line}")
        print(f"check-imports: {len(bad)} import cycle(s) besides shmem <-> wal "
              f"({len(files)} files, {nedges} edges)")
        return 1
    print(f"check-imports: no import cycle in {len(files)} files of {src}/ ({nedges} edges) "
          f"but the allowed {', '.join(' <-> '.join(m.replace('crate::', '') for m in c) for c in allowed) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
