/* scrub: write N MiB (default 64) of fresh anonymous memory, then exit.
   After rmmod, the pages the modules' code occupied go back to the page
   allocator; QEMU (TCG) still holds translated blocks for them, and the
   first write to each such page, by whoever gets it next, makes QEMU
   invalidate them. Run after a module change, this pays that inside an
   untimed step. */
#include <stdlib.h>
#include <sys/mman.h>
int main(int argc, char **argv) {
	size_t n = (argc > 1 ? strtoul(argv[1], 0, 10) : 64) << 20;
	char *p = mmap(0, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 1;
	for (size_t i = 0; i < n; i += 4096)
		p[i] = 1;
	return 0;
}
