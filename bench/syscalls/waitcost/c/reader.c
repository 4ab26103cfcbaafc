// reader reads COUNT bytes from stdin, one blocking read(2) each: the C
// baseline, one syscall per wait.
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
	long count = argc > 1 ? atol(argv[1]) : 0;
	char b;
	for (long i = 0; i < count; i++)
		if (read(0, &b, 1) != 1)
			return 1;
	return 0;
}
