// Bursts: N processes (not pinned) wake at the same instant every PERIOD ms and each does a fixed
// amount of work (ITERS hash steps). Prints the p50/p99/max of (work done - burst start), all bursts,
// and the processes' CPU. Usage: burst N PERIOD_MS ITERS SECONDS [CGROUP]
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>
static long now_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000L + t.tv_nsec;
}
int main(int argc, char** argv) {
  int n = atoi(argv[1]);
  long period = atol(argv[2]) * 1000000L;
  long iters = atol(argv[3]);
  long seconds = atol(argv[4]);
  const char* cg = argc > 5 ? argv[5] : nullptr;
  long start = now_ns() + 200000000L;
  std::vector<int> fds;
  for (int i = 0; i < n; ++i) {
    int p[2];
    if (pipe(p)) return 1;
    if (fork() == 0) {
      if (cg) std::ofstream(std::string(cg) + "/cgroup.procs") << getpid() << std::flush;
      volatile uint64_t h = 1;
      for (long next = start; next < start + seconds * 1000000000L; next += period) {
        timespec t{next / 1000000000L, next % 1000000000L};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, nullptr);
        for (long k = 0; k < iters; ++k) h = (h ^ k) * 1099511628211ull;
        long done = now_ns() - next;
        if (write(p[1], &done, sizeof done) < 0) _exit(1);
      }
      _exit(0);
    }
    close(p[1]);
    fds.push_back(p[0]);
  }
  std::vector<long> done;
  for (int fd : fds) {
    long d;
    while (read(fd, &d, sizeof d) == sizeof d) done.push_back(d);
  }
  while (wait(nullptr) > 0) {
  }
  rusage ru;
  getrusage(RUSAGE_CHILDREN, &ru);
  std::sort(done.begin(), done.end());
  printf("%d processes, bursts every %ld ms: done after p50 %.2f ms, p99 %.2f ms, max %.2f ms; CPU %.2f s\n", n,
         period / 1000000, done[done.size() / 2] / 1e6, done[done.size() * 99 / 100] / 1e6, done.back() / 1e6,
         ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
}
