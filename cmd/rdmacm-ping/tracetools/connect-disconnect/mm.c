#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e6+t.tv_nsec/1e3;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(){enum{N=400};void*p[N];double m[N],u[N];
for(int i=0;i<N;i++){double t=now();p[i]=mmap(0,4096,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS|MAP_POPULATE,-1,0);m[i]=now()-t;}
for(int i=0;i<N;i++){double t=now();munmap(p[i],4096);u[i]=now()-t;}
double g[N];for(int i=0;i<N;i++){double t=now();syscall(SYS_getppid);g[i]=now()-t;}
qsort(m,N,8,cmp);qsort(u,N,8,cmp);qsort(g,N,8,cmp);
printf("c  mmap med %.1f munmap med %.1f p25 %.1f getppid med %.1f\n",m[N/2],u[N/2],u[N/4],g[N/2]);}
