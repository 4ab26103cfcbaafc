#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e6+t.tv_nsec/1e3;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(int argc,char**argv){enum{N=400};int pages=atoi(argv[1]);void*p[N];double u[N];
volatile char*buf=malloc((size_t)pages*4096+4096);for(long i=0;i<(long)pages*4096;i+=4096)buf[i]=1;
for(int i=0;i<N;i++)p[i]=mmap(0,4096,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS|MAP_POPULATE,-1,0);
long s=0;
for(int i=0;i<N;i++){for(long j=0;j<(long)pages*4096;j+=4096)s+=buf[j];double t=now();munmap(p[i],4096);u[i]=now()-t;}
qsort(u,N,8,cmp);printf("touch %4d pages between calls: munmap med %.1f p25 %.1f (%ld)\n",pages,u[N/2],u[N/4],s);}
