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
int cmp(const void* a, const void* b) {
  long long x = *(long long*)a, y = *(long long*)b;
  return x < y ? -1 : x > y;
}
int main(int c, char** v) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(atoi(v[1]), &s);
  sched_setaffinity(0, sizeof s, &s);
  int n = atoi(v[2]);
  long long* l = malloc(n * 8);
  for (int i = 0; i < n; i++) {
    long long t = ns() + 1000000;
    struct timespec ts = {t / 1000000000LL, t % 1000000000LL};
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, 0);
    l[i] = ns() - t;
  }
  qsort(l, n, 8, cmp);
  int over1 = 0;
  for (int i = 0; i < n; i++)
    if (l[i] > 1000000) over1++;
  printf("cpu%s: wake late p50 %.0f us p99 %.0f us max %.2f ms, >1ms %d of %d\n", v[1], l[n / 2] / 1e3,
         l[n * 99 / 100] / 1e3, l[n - 1] / 1e6, over1, n);
}
