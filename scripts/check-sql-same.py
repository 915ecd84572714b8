#!/usr/bin/env python3
"""scripts/check-sql-same.py — two install scripts rendered by pgrx hold the same statements.

Usage: scripts/check-sql-same.py EXPECTED ACTUAL      (make test-sql)
       scripts/check-sql-same.py --self-test EXPECTED (a changed, a missing and an extra statement
                                                       are each reported as a difference)

pgrx renders an install script as blocks, each between `/* <begin connected objects> */` and
`/* </end connected objects> */`, in an order its dependency graph allows; that order is not
stable from one rendering to the next (the same library rendered twice may list two independent
blocks the other way round). So the scripts are compared as multisets of blocks: the same blocks,
each as many times, byte for byte; the order is pgrx's to choose. Exit 0 when they are the same,
1 (with the blocks that differ) when not.
"""
import collections
import sys

BEGIN = "/* <begin connected objects> */\n"


def blocks(text):
    """The blocks of an install script (the text before the first one is a block too)."""
    return collections.Counter(text.split(BEGIN))


def differences(expected, actual):
    """(missing, extra): the blocks of `expected` not in `actual`, and the other way round."""
    e, a = blocks(expected), blocks(actual)
    return list((e - a).elements()), list((a - e).elements())


def head(block):
    lines = [l for l in block.splitlines() if l.strip() and not l.startswith("--")]
    return (lines[0] if lines else block.strip())[:160]


def compare(expected_path, actual_path):
    with open(expected_path, encoding="utf-8") as f:
        expected = f.read()
    with open(actual_path, encoding="utf-8") as f:
        actual = f.read()
    missing, extra = differences(expected, actual)
    if not missing and not extra:
        n = sum(blocks(expected).values()) - 1
        print(f"the same {n} blocks of statements ({expected_path}, {actual_path})")
        return 0
    for b in missing:
        print(f"only in {expected_path}: {head(b)}")
    for b in extra:
        print(f"only in {actual_path}: {head(b)}")
    return 1


def self_test(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    parts = text.split(BEGIN)
    assert len(parts) > 3, f"{path}: too few blocks to test with"
    # the same blocks in another order: the same
    shuffled = BEGIN.join([parts[0]] + parts[:0:-1])
    assert differences(text, shuffled) == ([], []), "reordered blocks were reported as different"
    # one statement changed (an argument type of a function), one block missing, one extra
    i = next(k for k, p in enumerate(parts) if "CREATE FUNCTION" in p and "pg_catalog.int8" in p)
    changed = parts.copy()
    changed[i] = changed[i].replace("pg_catalog.int8", "pg_catalog.int4", 1)
    for name, other in (("changed", changed), ("missing", parts[:-1]), ("extra", parts + [parts[-1]])):
        missing, extra = differences(text, BEGIN.join(other))
        assert missing or extra, f"a {name} block was not reported"
    print("self-test: reordered blocks are the same; a changed, a missing and an extra block differ")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--self-test":
        sys.exit(self_test(sys.argv[2]))
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(compare(sys.argv[1], sys.argv[2]))
