#!/usr/bin/python3
"""tools/check_structure.py on small made-up trees: it passes a clean one and fails, saying
where, on each rule it checks (run by `make check-structure` before it checks the tree)."""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, '..', '..', 'tools', 'check_structure.py')
DOC = '''# made-up tree
<!-- layer-rules:begin -->
| layer | may use | pure |
| --- | --- | --- |
| `lib` | nothing | yes |
| `os` | `lib` | no |
<!-- layer-rules:end -->
'''
PREFIXES = '''
<!-- prefixes:begin -->
| module | prefixes |
| --- | --- |
| `os/b` | `bx_`, `b_only` |
<!-- prefixes:end -->
'''
CLEAN = {
    'docs/architecture.md': DOC + PREFIXES,
    'user/lib/a.h': 'int a_sum(int x);\nstatic inline int q(void) { return 0; }\n'
                    '/* int zz_commented(void); */\nstruct a_s { int (*cb)(void *ctx); };\n',
    'user/lib/a_b.h': 'int a_b(void);\nint a_b_twice(int x,\n\t\tint y);\n',
    'user/os/b.h': 'int b_read(void);\nint bx_more(void);\nint b_only(void);\n',
    'user/lib/a.c': '#include "lib/a.h"\n#include <stdio.h>\n'
                    '/* read(fd) is named here, "open(" there: not calls */\n'
                    'int a_sum(int x) { char s[8]; return snprintf(s, 8, "read(%d", x); }\n',
    'user/os/b.c': '#include "lib/a.h"\n#include <unistd.h>\n'
                   'int b_read(void) { char c; return (int)read(0, &c, 1) + a_sum(1); }\n',
}
CASES = [
    ('an I/O call in a pure layer', {'user/lib/c.c': 'int c_f(void) { return close(3); }\n'},
     'user/lib/c.c:1: calls close()'),
    ('an I/O header in a pure layer', {'user/lib/c.c': '#include <fcntl.h>\n'},
     'user/lib/c.c:1: includes <fcntl.h>'),
    ('an include cycle', {'user/os/d.c': '#include "os/e.h"\n', 'user/os/d.h': '',
                          'user/os/e.c': '#include "os/d.h"\n', 'user/os/e.h': ''},
     'include cycle among os/d os/e'),
    ('a layer the table does not allow', {'user/lib/f.c': '#include "os/b.h"\n'},
     'layer lib uses os'),
    ('a layer with no row', {'user/zzz/g.c': ''}, 'layer user/zzz/ has no row'),
    ('a file over 1,000 lines', {'user/os/h.c': '\n' * 1001}, 'user/os/h.c: 1001 lines'),
    ('a function outside its module\'s prefixes', {'user/os/b.h': 'int c_read(void);\n'},
     'user/os/b.h:1: c_read() is declared by os/b but no module has its prefix'),
    ('a function under another module\'s prefix',
     {'user/os/b.h': 'int b_read(void);\nstruct x *a_make(int n,\n\tint m);\n'},
     'user/os/b.h:2: a_make() is declared by os/b but its prefix a_ is lib/a\'s'),
    ('a longer prefix wins: a_b_ is lib/a_b\'s', {'user/lib/a.h': 'int a_b_sum(void);\n'},
     'a_b_sum() is declared by lib/a but its prefix a_b_ is lib/a_b\'s'),
    ('a prefix given to two modules',
     {'docs/architecture.md': DOC + PREFIXES.replace('| `os/b` |', '| `lib/a` | `bx_` |\n| `os/b` |')},
     'prefix bx_ given to both'),
    ('a prefix table row of no module',
     {'docs/architecture.md': DOC + PREFIXES.replace('| `os/b` |', '| `os/zz` | `zz_` |\n| `os/b` |')},
     'names module os/zz, which has no header'),
    ('a link out of the repository',
     {'docs/architecture.md': DOC + PREFIXES + 'see ../shared/x.md\n'},
     'a link out of the repository'),
]


def run(files):
    with tempfile.TemporaryDirectory() as root:
        for path, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
            with open(os.path.join(root, path), 'w') as f:
                f.write(text)
        p = subprocess.run([sys.executable, CHECK, root], capture_output=True, text=True,
                           timeout=60)
        return p.returncode, p.stdout + p.stderr


def main():
    failed = 0
    rc, out = run(CLEAN)
    if rc != 0:
        print('FAIL: the clean tree: rc=%d\n%s' % (rc, out))
        failed += 1
    else:
        print('ok: the clean tree passes')
    for name, extra, want in CASES:
        rc, out = run(dict(CLEAN, **extra))
        if rc == 1 and want in out:
            print('ok: fails on %s (%s)' % (name, want))
        else:
            print('FAIL: %s: rc=%d, wanted "%s" in:\n%s' % (name, rc, want, out))
            failed += 1
    print('check-structure self-test: %d passed, %d failed' % (len(CASES) + 1 - failed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
