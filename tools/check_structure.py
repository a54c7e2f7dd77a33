#!/usr/bin/python3
"""Check the code's structure against docs/architecture.md (run by `make check-structure`).

Fails, saying where, on:
  - an include cycle among modules (a module is user/LAYER/NAME.c and .h; the private header
    NAME_int.h of a split module counts as the module NAME itself);
  - an include from one layer into another that the "may use" table in docs/architecture.md
    does not allow (the table is read from the doc, so the doc and this check cannot drift);
  - an I/O header or call (open, read, mmap, a socket, a signal, the clock, randomness...) in a
    layer the table marks pure (its code takes its inputs as arguments and returns its effects;
    the owner of a table that holds descriptors releases them through a hook it sets; writing
    into a stream the caller gives, fprintf/fwrite, is formatting, and allowed);
  - a function a module's header declares whose name does not start with one of the module's
    prefixes: NAME_ (or NAME itself) for user/LAYER/NAME.h, or those the prefix table in docs/architecture.md
    gives it (a prefix ends with "_"; an entry without one is a whole name). A name belongs to
    the module of its longest matching prefix, so `ctl_client_open` is ctl_client's even though
    agent/ctl owns `ctl_`; a prefix given to two modules fails too;
  - a link out of the repository (`../`) in docs/architecture.md, which a clone does not have;
  - a C, header or BPF file over 1,000 lines.
Stdlib only; run from the repository root (or pass it as the first argument).
"""
import os
import subprocess
import re
import sys

MAX_LINES = 1000
INCLUDE = re.compile(r'^\s*#\s*include\s+"([A-Za-z0-9_]+)/([A-Za-z0-9_]+)\.h"')
# a row of the layer table: | `agent` | `lib`, `os`, ... | pure? |  ("nothing" for none)
RULE_ROW = re.compile(r'^\|\s*`([a-z]+)`\s*\|([^|]*)\|(?:\s*(yes|no)\s*\|)?')
# what a pure layer may not include or call: its inputs come as arguments, its effects go back
IO_HEADERS = {'unistd.h', 'fcntl.h', 'sys/mman.h', 'sys/socket.h', 'sys/stat.h', 'sys/ioctl.h',
              'sys/epoll.h', 'sys/timerfd.h', 'sys/signalfd.h', 'sys/file.h', 'dirent.h',
              'netdb.h', 'sys/random.h', 'time.h', 'sys/time.h', 'poll.h', 'curl/curl.h'}
IO_CALLS = ('open', 'openat', 'read', 'write', 'pread', 'pwrite', 'close', 'fopen', 'fdopen',
            'freopen', 'fread', 'fgets', 'mmap', 'munmap', 'socket', 'bind', 'connect',
            'accept', 'send', 'recv', 'sendto', 'recvfrom', 'sendmsg', 'recvmsg', 'ioctl',
            'kill', 'raise', 'getpid', 'getuid', 'geteuid', 'stat', 'fstat', 'lstat', 'opendir',
            'readdir', 'unlink', 'rename', 'fsync', 'clock_gettime', 'time', 'gettimeofday',
            'getrandom', 'randombytes_buf', 'randombytes_uniform', 'randombytes_random', 'syscall',
            'usleep', 'nanosleep', 'sleep', 'system', 'popen', 'getenv', 'printf', 'puts')
IO_CALL = re.compile(r'(?<![\w.>])(%s)\s*\(' % '|'.join(IO_CALLS))
SYS_INCLUDE = re.compile(r'^\s*#\s*include\s+<([^>]+)>')
COMMENT_OR_STRING = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'',
                               re.S)
SKIP_DIRS = {'.git', 'build'}
# a row of the prefix table: | `lib/decide_policy` | `dp_` ... |
PREFIX_ROW = re.compile(r'^\|\s*`([a-z]+/[a-z0-9_]+)`\s*\|([^|]*)\|')
# a function a header declares: at the start of a line, not static, not a macro or typedef
DECL = re.compile(r'^(?!static\b|typedef\b|#|return\b)[A-Za-z_][\w \t*]*?\b([A-Za-z_]\w*)\s*'
                  r'\([^;{}]*\)\s*;', re.M | re.S)
C_COMMENT = re.compile(r'/\*.*?\*/|//[^\n]*', re.S)


def module_of(layer, name):
    if name.endswith('_int'):
        name = name[: -len('_int')]
    return layer + '/' + name


def table_rows(doc, marker, row):
    """The matches of row among the lines between <!-- MARKER:begin --> and <!-- MARKER:end -->
    in doc (docs/architecture.md)."""
    inside = False
    with open(doc, encoding='utf-8') as f:
        for line in f:
            if marker + ':begin' in line:
                inside = True
            elif marker + ':end' in line:
                return
            elif inside:
                m = row.match(line)
                if m:
                    yield m


def read_rules(doc, pure=None):
    """The layer table between the markers in docs/architecture.md: layer -> allowed layers
    (and, into pure, the layers marked pure)."""
    rules = {}
    for m in table_rows(doc, 'layer-rules', RULE_ROW):
        rules[m.group(1)] = set(re.findall(r'`([a-z]+)`', m.group(2)))
        if pure is not None and m.group(3) == 'yes':
            pure.add(m.group(1))
    return rules


def impure(root, layer):
    """Each I/O include and call in the files of a pure layer: 'file:line: what'."""
    d = os.path.join(root, 'user', layer)
    for fn in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        if not fn.endswith(('.c', '.h')):
            continue
        path = os.path.join('user', layer, fn)
        with open(os.path.join(root, path), encoding='utf-8', errors='replace') as f:
            text = f.read()
        for no, line in enumerate(text.split('\n'), 1):
            m = SYS_INCLUDE.match(line)
            if m and m.group(1) in IO_HEADERS:
                yield '%s:%d: includes <%s>' % (path, no, m.group(1))
        # comments and strings blanked, line breaks kept, so line numbers stay right
        code = COMMENT_OR_STRING.sub(lambda m: re.sub(r'[^\n]', ' ', m.group(0)), text)
        for no, line in enumerate(code.split('\n'), 1):
            if line.lstrip().startswith('#'):
                continue
            for m in IO_CALL.finditer(line):
                yield '%s:%d: calls %s()' % (path, no, m.group(1))


def read_prefixes(doc):
    """The prefix table between the markers in docs/architecture.md: module -> [prefix]."""
    table = {}
    for m in table_rows(doc, 'prefixes', PREFIX_ROW):
        table.setdefault(m.group(1), []).extend(re.findall(r'`([A-Za-z_]\w*)`', m.group(2)))
    return table


def prefix_errors(root, doc):
    """Exported names outside their module's prefixes, and prefixes given twice."""
    table, errors, owner, decls = read_prefixes(doc), [], {}, []
    for layer in sorted(os.listdir(os.path.join(root, 'user'))):
        d = os.path.join(root, 'user', layer)
        if not os.path.isdir(d):
            continue
        for fn in sorted(os.listdir(d)):
            base, ext = os.path.splitext(fn)
            if ext != '.h':
                continue
            mod = module_of(layer, base)
            if mod not in owner.values():
                base = mod.split('/')[1]
                for p in [base + '_', base] + table.get(mod, []):
                    if p in owner and owner[p] != mod:
                        errors.append('prefix %s given to both %s and %s' % (p, owner[p], mod))
                    owner.setdefault(p, mod)
            path = os.path.join('user', layer, fn)
            with open(os.path.join(root, path), encoding='utf-8', errors='replace') as f:
                text = C_COMMENT.sub(lambda m: '\n' * m.group(0).count('\n'), f.read())
            for m in DECL.finditer(text):
                decls.append((path, text.count('\n', 0, m.start(1)) + 1, mod, m.group(1)))
    for mod in sorted(set(table) - set(owner.values())):
        errors.append('%s: the prefix table names module %s, which has no header' % (doc, mod))
    for path, no, mod, name in decls:
        best = max((p for p in owner if name == p or (p.endswith('_') and
                                                       name.startswith(p))),
                   key=len, default=None)
        if owner.get(best) != mod:
            errors.append('%s:%d: %s() is declared by %s but %s (give it one of %s\'s '
                          'prefixes: %s; or a row in the prefix table of %s)' %
                          (path, no, name, mod,
                           'its prefix %s is %s\'s' % (best, owner[best]) if best
                           else 'no module has its prefix', mod,
                           ', '.join(p for p in owner if owner[p] == mod and p.endswith('_')),
                           doc))
    return errors


def outside_links(doc):
    """Lines of the doc that point out of the repository."""
    with open(doc, encoding='utf-8') as f:
        for no, line in enumerate(f, 1):
            if '../' in line:
                yield no


def scan_user(root):
    """Module graph and layer edges of user/: {module: {module: first 'file:line'}}."""
    graph = {}
    for layer in sorted(os.listdir(os.path.join(root, 'user'))):
        d = os.path.join(root, 'user', layer)
        if not os.path.isdir(d):
            continue
        for fn in sorted(os.listdir(d)):
            base, ext = os.path.splitext(fn)
            if ext not in ('.c', '.h'):
                continue
            mod = module_of(layer, base)
            edges = graph.setdefault(mod, {})
            path = os.path.join('user', layer, fn)
            with open(os.path.join(root, path), encoding='utf-8', errors='replace') as f:
                for no, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    dep = module_of(m.group(1), m.group(2))
                    if dep != mod:
                        edges.setdefault(dep, '%s:%d' % (path, no))
    return graph


def cycles(graph):
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, {}))))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in graph:
                    continue
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, {})))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def source_files(root):
    """The C and header files of the source tree: git's list where there is one (build
    folders, whatever their name, hold generated files), else a walk that skips build*."""
    try:
        out = subprocess.run(['git', '-C', root, 'ls-files', '-z', '--', '*.c', '*.h'],
                             capture_output=True, check=True).stdout
        return sorted(os.path.join(root, x) for x in out.decode().split('\0') if x)
    except (OSError, subprocess.CalledProcessError):
        found = []
        for d, dirs, files in os.walk(root):
            dirs[:] = sorted(x for x in dirs
                             if x not in SKIP_DIRS and not x.startswith(('build', '.')))
            found += [os.path.join(d, fn) for fn in sorted(files) if fn.endswith(('.c', '.h'))]
        return found


def long_files(root):
    for p in source_files(root):
        if not os.path.isfile(p):
            continue
        with open(p, 'rb') as f:
            n = sum(1 for _ in f)
        if n > MAX_LINES:
            yield os.path.relpath(p, root), n


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else '.'
    doc = os.path.join(root, 'docs', 'architecture.md')
    errors, pure = [], set()
    rules = read_rules(doc, pure)
    if not rules:
        errors.append('%s: no layer table between <!-- layer-rules:begin --> and '
                      '<!-- layer-rules:end -->' % doc)
    graph = scan_user(root)
    for comp in cycles(graph):
        ring = ', '.join('%s -> %s (%s)' % (a, b, graph[a][b])
                         for a in comp for b in sorted(graph[a]) if b in comp)
        errors.append('include cycle among %s: %s' % (' '.join(comp), ring))
    # the public headers (include/ftbpf) are usable by every layer
    layers = {m.split('/')[0] for m in graph}
    for layer in sorted(layers - set(rules)):
        if rules:
            errors.append('layer user/%s/ has no row in the layer table of %s' % (layer, doc))
    for mod in sorted(graph):
        a = mod.split('/')[0]
        for dep, where in sorted(graph[mod].items()):
            b = dep.split('/')[0]
            if a == b or b == 'ftbpf' or a not in rules:
                continue
            if b not in rules.get(a, set()):
                errors.append('%s: layer %s uses %s (%s), which docs/architecture.md does not '
                              'allow (%s may use: %s)' % (where, a, b, dep, a,
                                                          ', '.join(sorted(rules[a])) or
                                                          'nothing'))
    for comp in cycles({a: {b: '' for b in used} for a, used in rules.items()}):
        errors.append('the layer table in %s has a cycle: %s' % (doc, ' '.join(comp)))
    for layer in sorted(pure):
        for where in impure(root, layer):
            errors.append('%s, in layer %s, which docs/architecture.md marks pure: do the I/O '
                          'in a layer that may (os, agent) and pass its result in' % (where, layer))
    errors.extend(prefix_errors(root, doc))
    for no in outside_links(doc):
        errors.append('%s:%d: a link out of the repository (a clone does not have it)' % (doc, no))
    for path, n in long_files(root):
        errors.append('%s: %d lines (at most %d: split it by concern)' % (path, n, MAX_LINES))
    for e in errors:
        print('check-structure: ' + e, file=sys.stderr)
    if errors:
        print('check-structure: FAILED (%d problem(s))' % len(errors), file=sys.stderr)
        return 1
    print('check-structure: ok (%d modules, no include cycle, layers as documented, no I/O in '
          'the pure layers (%s), every function under its module\'s prefix, no file over %d '
          'lines)' % (len(graph), ', '.join(sorted(pure)), MAX_LINES))
    return 0


if __name__ == '__main__':
    sys.exit(main())
