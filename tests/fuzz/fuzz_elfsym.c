/* libFuzzer target: ELF symbol tables as the agent reads them from files a user chose (in a
 * memfd, read with pread into private memory, as from a real file). */
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "os/elfsym.h"

static int count(void *ctx, Elf *e, const char *name, const GElf_Sym *sym)
{
	uint64_t lo;

	(void)name, (void)sym;
	if (++*(int *)ctx == 1)
		(void)elfsym_first_load(e, &lo);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elfsym_limits lim = {1u << 20, 0};
	int fd = memfd_create("elf", MFD_CLOEXEC), n = 0;

	if (fd < 0)
		return 0;
	if (write(fd, data, size) == (ssize_t)size)
		(void)elfsym_foreach_fd(fd, &lim, count, &n);
	close(fd);
	return 0;
}
