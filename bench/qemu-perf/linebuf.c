/* LD_PRELOAD shim: stdout line-buffered (what stdbuf -oL does), so that
   cmtime's step lines reach a file as each step starts. */
#include <stdio.h>
__attribute__((constructor)) static void linebuf(void) { setvbuf(stdout, NULL, _IOLBF, 0); }
