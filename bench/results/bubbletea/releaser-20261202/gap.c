#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sched.h>
static long long ns() {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}
int main(int c, char** v) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(atoi(v[1]), &s);
  sched_setaffinity(0, sizeof s, &s);
  if (c > 3) {
    struct sched_param p = {.sched_priority = 10};
    sched_setscheduler(0, SCHED_FIFO, &p);
  }
  double d = atof(v[2]);
  long long t0 = ns(), last = t0, n50 = 0, n100 = 0, n300 = 0, n1m = 0, mx = 0, tot = 0;
  for (;;) {
    long long now = ns(), g = now - last;
    last = now;
    if (g > 50000) {
      n50++;
      tot += g;
      if (g > 100000) n100++;
      if (g > 300000) n300++;
      if (g > 1000000) n1m++;
      if (g > mx) mx = g;
    }
    if (now - t0 > d * 1e9) break;
  }
  printf("cpu%s: gaps >50us %lld >100us %lld >300us %lld >1ms %lld max %.2f ms, in gaps %.1f ms of %.0f s\n", v[1], n50,
         n100, n300, n1m, mx / 1e6, tot / 1e6, d);
}
