#!/usr/bin/env python3
"""scripts/check-links.py — every relative link and #anchor of the documentation resolves.

Usage: scripts/check-links.py [FILE_OR_DIR...]     (default: README.md docs/; `make test-docs`)

For each Markdown file given (directories: their *.md, recursively), every inline link
`[text](target)` and reference definition `[name]: target` outside code is checked, offline:
  * a relative target must exist (relative to the linking file);
  * a `#anchor` (alone: in the same file; after a .md target: in that file) must be one of the
    anchors GitHub gives that file's headings, or an explicit `<a name|id="...">`.
Links with a scheme (https:, mailto:, ...) are not fetched. Exit status 1 and one line per broken
link (file:line: target: reason) when anything does not resolve.

GitHub's heading anchors (github-slugger): the heading's rendered text, lower-cased, every
character that is not a letter, digit, `_`, `-` or space removed, each space replaced by `-`;
a repeated anchor in one file gets `-1`, `-2`, ... appended.
"""
import os
import re
import sys

FENCE = re.compile(r'^\s{0,3}(```|~~~)')
HEADING = re.compile(r'^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$')
CODE_SPAN = re.compile(r'(`+)(.+?)\1')
INLINE_LINK = re.compile(r'!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)')
REF_DEF = re.compile(r'^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$')
HTML_ANCHOR = re.compile(r'<a\s+(?:name|id)="([^"]+)"', re.I)
SCHEME = re.compile(r'^[a-zA-Z][a-zA-Z0-9+.-]*:')


def prose_lines(path):
    """(line number, text) of the lines outside fenced code blocks."""
    fence = None
    with open(path, encoding='utf-8') as f:
        for n, line in enumerate(f, 1):
            m = FENCE.match(line)
            if m:
                if fence is None:
                    fence = m.group(1)
                elif m.group(1) == fence:
                    fence = None
                continue
            if fence is None:
                yield n, line.rstrip('\n')


def rendered(text):
    """The text of a heading as GitHub renders it: code spans, links and emphasis unwrapped."""
    parts = CODE_SPAN.split(text)   # prose, fence, code, fence, code, ..., prose
    out = []
    for i in range(0, len(parts), 3):
        prose = re.sub(r'!?\[([^\]]*)\]\([^)]*\)', r'\1', parts[i])
        prose = re.sub(r'<[^>]+>', '', prose)
        out.append(re.sub(r'(\*+|(?<!\w)_+|_+(?!\w))', '', prose))
        if i + 2 < len(parts):
            out.append(parts[i + 2])
    return ''.join(out)


def slug(text):
    text = rendered(text).strip().lower()
    text = ''.join(c for c in text if c.isalnum() or c in '_- ')
    return text.replace(' ', '-')


_anchors = {}


def anchors(path):
    path = os.path.normpath(path)
    if path not in _anchors:
        seen = {}
        found = set()
        for _, line in prose_lines(path):
            for a in HTML_ANCHOR.findall(line):
                found.add(a)
            m = HEADING.match(line)
            if not m:
                continue
            base = slug(m.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else '%s-%d' % (base, n))
        _anchors[path] = found
    return _anchors[path]


def links(path):
    for n, line in prose_lines(path):
        m = REF_DEF.match(line)
        if m:
            yield n, m.group(1)
            continue
        plain = CODE_SPAN.sub(lambda m: ' ' * len(m.group(0)), line)
        for m in INLINE_LINK.finditer(plain):
            yield n, m.group(2)


def check(path):
    problems, count = [], 0
    for n, target in links(path):
        if not target or SCHEME.match(target):
            continue
        count += 1
        file_part, _, anchor = target.partition('#')
        dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
        if not os.path.exists(dest):
            problems.append('%s:%d: %s: no such file %s' % (path, n, target, dest))
            continue
        if anchor:
            if not dest.endswith('.md') or os.path.isdir(dest):
                problems.append('%s:%d: %s: an anchor into a file that is not Markdown' % (path, n, target))
            elif anchor not in anchors(dest):
                problems.append('%s:%d: %s: no heading with anchor #%s in %s' % (path, n, target, anchor, dest))
    return problems, count


def main(args):
    args = args or ['README.md', 'docs']
    files = []
    for a in args:
        if os.path.isdir(a):
            for root, _, names in os.walk(a):
                files += [os.path.join(root, x) for x in sorted(names) if x.endswith('.md')]
        elif os.path.exists(a):
            files.append(a)
        else:
            print('check-links: no such file or directory: %s' % a, file=sys.stderr)
            return 2
    problems, total = [], 0
    for f in sorted(files):
        p, c = check(f)
        problems += p
        total += c
    for p in problems:
        print(p)
    if problems:
        print('FAIL: %d of %d relative links in %d files do not resolve' % (len(problems), total, len(files)))
        return 1
    print('PASS: all %d relative links in %d files resolve' % (total, len(files)))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
