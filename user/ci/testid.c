/* pytest test ids (see testid.h). */
#include "ci/testid.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* dir/name is a regular file (not a link) that holds section (NULL: any content). */
static int ini_has(const char *dir, const char *name, const char *section)
{
	char path[4096], buf[65536];
	struct stat st;
	ssize_t n;
	int fd;

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
		return 0;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return 0;
	}
	n = section ? read(fd, buf, sizeof(buf) - 1) : 0;
	close(fd);
	if (!section)
		return 1;
	if (n <= 0)
		return 0;
	buf[n] = 0;
	return strstr(buf, section) != NULL;
}

/* pytest's ini files, in its order of precedence */
static int is_rootdir(const char *dir)
{
	return ini_has(dir, "pytest.ini", NULL) || ini_has(dir, ".pytest.ini", NULL) ||
	       ini_has(dir, "pyproject.toml", "[tool.pytest.ini_options]") ||
	       ini_has(dir, "tox.ini", "[pytest]") || ini_has(dir, "setup.cfg", "[tool:pytest]");
}

/* file is dir/... (dir "/" holds every absolute path) */
static int under(const char *file, const char *dir)
{
	size_t n = strlen(dir);

	if (!n)
		return 0;
	if (!strcmp(dir, "/"))
		return file[0] == '/';
	return !strncmp(file, dir, n) && file[n] == '/';
}

void testid_rootdir(const char *file, const char *cwd, char *out, size_t len)
{
	char dir[4096];
	char *slash;

	if (!len)
		return;
	out[0] = 0;
	if (!file || file[0] != '/' || strlen(file) >= sizeof(dir))
		return;
	snprintf(dir, sizeof(dir), "%s", file);
	slash = strrchr(dir, '/');
	*(slash == dir ? slash + 1 : slash) = 0; /* the file's directory */
	for (;;) {
		if (is_rootdir(dir)) {
			snprintf(out, len, "%s", dir);
			return;
		}
		if (!strcmp(dir, "/"))
			break;
		slash = strrchr(dir, '/');
		*(slash == dir ? slash + 1 : slash) = 0;
	}
	if (cwd && under(file, cwd)) {
		snprintf(out, len, "%s", cwd);
		return;
	}
	snprintf(dir, sizeof(dir), "%s", file);
	slash = strrchr(dir, '/');
	*(slash == dir ? slash + 1 : slash) = 0;
	snprintf(out, len, "%s", dir);
}

void testid_make(const char *file, const char *func, const char *rootdir, char *out, size_t len)
{
	const char *rel = file;

	if (rootdir && under(file, rootdir))
		rel = file + strlen(rootdir) + (strcmp(rootdir, "/") != 0);
	snprintf(out, len, "%s::%s", rel, func);
}

void testid_junit(const char *id, char *classname, size_t clen, char *name, size_t nlen)
{
	const char *sep = strstr(id, "::"), *last = sep;
	size_t o = 0;

	if (!clen || !nlen)
		return;
	for (const char *p = sep; p && (p = strstr(p + 2, "::"));)
		last = p;
	if (!sep) { /* not a test id: all of it the name */
		snprintf(classname, clen, "ftbpf-ci");
		snprintf(name, nlen, "%s", id);
		return;
	}
	snprintf(name, nlen, "%s", last + 2);
	/* the file's path with dots for slashes and no ".py", then any classes */
	for (const char *p = id; p < last && o + 1 < clen; p++) {
		if (p + 3 == sep && !strncmp(p, ".py", 3)) {
			p += 2;
			continue;
		}
		if (!strncmp(p, "::", 2)) {
			classname[o++] = '.';
			p++;
			continue;
		}
		classname[o++] = *p == '/' ? '.' : *p;
	}
	classname[o] = 0;
}
