#include "watch/ustack.h"

#include <elfutils/libdwfl.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

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
	static char *debuginfo_path;
	static const Dwfl_Callbacks cb = {
	    .find_elf = dwfl_linux_proc_find_elf,
	    .find_debuginfo = dwfl_standard_find_debuginfo,
	    .debuginfo_path = &debuginfo_path,
	};
	struct walk w = {.out = out, .max = max};
	int r;

	w.dwfl = dwfl_begin(&cb);
	if (!w.dwfl) {
		snprintf(err, errlen, "libdwfl: %s", dwfl_errmsg(-1));
		return -ENOMEM;
	}
	if (dwfl_linux_proc_report(w.dwfl, pid) || dwfl_report_end(w.dwfl, NULL, NULL) ||
	    dwfl_linux_proc_attach(w.dwfl, pid, false)) {
		snprintf(err, errlen, "attach to %d: %s", pid, dwfl_errmsg(-1));
		dwfl_end(w.dwfl);
		return -EPERM;
	}
	r = dwfl_getthreads(w.dwfl, on_thread, &w);
	(void)r;
	dwfl_end(w.dwfl); /* detaches */
	return w.n;
}
