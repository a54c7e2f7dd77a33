#include "watch/ustack.h"

#include <elfutils/libdwfl.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/maps.h"
#include "os/elfsym.h"
#include "os/mapfile.h"
#include "os/procmem.h"

#define MODULE_SIZE_MAX (8ull << 30)

/* The process being unwound (ustack_process is not reentrant: one walk at a time). */
static struct procmem *cur;

/*
 * libdwfl's find_elf, made safe: libdwfl's own opens the module's path (a FIFO there blocks it
 * for ever) and maps the file (a truncation is a SIGBUS). Here the file the process maps is
 * opened (os/mapfile.h) and read into private memory (ELF_C_READ). Modules without a path
 * ([vdso]) are read from the process's memory by libdwfl.
 */
static int safe_find_elf(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base,
			 char **file_name, Elf **elfp)
{
	char line[4096 + 256];
	int fd = -1, mfd;
	FILE *f;

	if (!cur || name[0] != '/')
		return dwfl_linux_proc_find_elf(mod, userdata, name, base, file_name, elfp);
	mfd = procmem_openat(cur, "maps", 0);
	f = mfd >= 0 ? fdopen(mfd, "re") : NULL;
	if (!f) {
		if (mfd >= 0)
			close(mfd);
		return -1;
	}
	while (fd < 0 && fgets(line, sizeof(line), f)) {
		size_t len = strlen(line);
		struct maps_entry m;
		struct stat st;

		if (len && line[len - 1] == '\n')
			line[--len] = 0;
		if (maps_parse_line(line, len, &m) || m.path_len != strlen(name) ||
		    memcmp(m.path, name, m.path_len))
			continue;
		fd = mapfile_open(cur->dirfd, &m, MODULE_SIZE_MAX, &st);
	}
	fclose(f);
	if (fd < 0)
		return -1;
	if (elfsym_begin(fd, elfp, NULL) < 0) { /* bounded before libelf reads it */
		close(fd);
		return -1;
	}
	*file_name = strdup(name);
	return fd;
}

struct walk {
	Dwfl *dwfl;
	struct ustack_thread *out;
	int max, n;
};

static int on_frame(Dwfl_Frame *state, void *arg)
{
	struct ustack_thread *t = arg;
	Dwarf_Addr pc, adj;
	bool activation;
	Dwfl_Module *m;
	const char *sym = NULL, *mod = NULL;
	GElf_Off off = 0;
	GElf_Sym s;

	if (!dwfl_frame_pc(state, &pc, &activation))
		return DWARF_CB_ABORT;
	adj = activation ? pc : pc - 1;
	m = dwfl_addrmodule(dwfl_thread_dwfl(dwfl_frame_thread(state)), adj);
	if (m) {
		sym = dwfl_module_addrinfo(m, adj, &off, &s, NULL, NULL, NULL);
		mod = dwfl_module_info(m, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
		if (mod && strrchr(mod, '/'))
			mod = strrchr(mod, '/') + 1;
	}
	if (sym)
		snprintf(t->frame[t->n], sizeof(t->frame[0]), "%s+0x%" PRIx64 " (%s)", sym,
			 (uint64_t)off, mod ? mod : "?");
	else
		snprintf(t->frame[t->n], sizeof(t->frame[0]), "0x%" PRIx64 " (%s)", (uint64_t)pc,
			 mod ? mod : "?");
	return ++t->n < USTACK_DEPTH ? DWARF_CB_OK : DWARF_CB_ABORT;
}

static int on_thread(Dwfl_Thread *thread, void *arg)
{
	struct walk *w = arg;
	struct ustack_thread *t;

	if (w->n >= w->max)
		return DWARF_CB_ABORT;
	t = &w->out[w->n++];
	t->tid = (int)dwfl_thread_tid(thread);
	t->n = 0;
	dwfl_thread_getframes(thread, on_frame, t); /* a partial stack is still worth showing */
	return DWARF_CB_OK;
}

int ustack_process(int pid, struct ustack_thread *out, int max, char *err, int errlen)
{
	/* separate debug files only from root's /usr/lib/debug, never next to a user's file */
	static char *debuginfo_path = "/usr/lib/debug";
	static const Dwfl_Callbacks cb = {
	    .find_elf = safe_find_elf,
	    .find_debuginfo = dwfl_standard_find_debuginfo,
	    .debuginfo_path = &debuginfo_path,
	};
	struct walk w = {.out = out, .max = max};
	struct procmem pm;
	int r;

	r = procmem_open(&pm, pid, -1);
	if (r < 0) {
		snprintf(err, errlen, "open %d: %s", pid, strerror(-r));
		return r;
	}
	w.dwfl = dwfl_begin(&cb);
	if (!w.dwfl) {
		procmem_close(&pm);
		snprintf(err, errlen, "libdwfl: %s", dwfl_errmsg(-1));
		return -ENOMEM;
	}
	cur = &pm;
	if (dwfl_linux_proc_report(w.dwfl, pid) || dwfl_report_end(w.dwfl, NULL, NULL) ||
	    dwfl_linux_proc_attach(w.dwfl, pid, false)) {
		snprintf(err, errlen, "attach to %d: %s", pid, dwfl_errmsg(-1));
		dwfl_end(w.dwfl);
		cur = NULL;
		procmem_close(&pm);
		return -EPERM;
	}
	r = dwfl_getthreads(w.dwfl, on_thread, &w);
	(void)r;
	dwfl_end(w.dwfl); /* detaches */
	cur = NULL;
	procmem_close(&pm);
	return w.n;
}
