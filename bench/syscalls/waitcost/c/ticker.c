// ticker writes one byte to stdout every INTERVAL_US microseconds, COUNT
// times, timing each deadline by spinning on CLOCK_MONOTONIC so short
// intervals stay short. The reader under test is at the other end.
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: ticker COUNT INTERVAL_US\n");
		return 2;
	}
	long count = atol(argv[1]);
	long long step = atoll(argv[2]) * 1000;
	long long next = now_ns() + 100000000LL; // let the reader block first
	for (long i = 0; i < count; i++) {
		next += step;
		while (now_ns() < next)
			;
		if (write(1, "x", 1) != 1)
			return 1;
	}
	return 0;
}
