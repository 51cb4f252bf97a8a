// N periodic processes (every 10 ms: wake, do a fixed amount of work) for S seconds.
// Prints their total CPU seconds (rusage), the /proc/stat busy share over the run, and wake lateness p50/p99.
#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
static long now_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000L + t.tv_nsec;
}
static void stat(uint64_t& busy, uint64_t& total) {
  std::ifstream f("/proc/stat");
  std::string cpu;
  f >> cpu;
  uint64_t v[10] = {};
  for (auto& x : v) f >> x;
  total = 0;
  for (auto x : v) total += x;
  busy = total - v[3] - v[4];
}
int main(int argc, char** argv) {
  int n = atoi(argv[1]);
  long seconds = atol(argv[2]);
  long iters = atol(argv[3]);
  const char* cg = argc > 4 ? argv[4] : nullptr;
  uint64_t b0, t0, b1, t1;
  stat(b0, t0);
  long start = now_ns() + 100000000L;
  std::vector<int> fds;
  for (int i = 0; i < n; ++i) {
    int p[2];
    pipe(p);
    pid_t pid = fork();
    if (pid == 0) {
      if (cg) {
        std::ofstream(std::string(cg) + "/cgroup.procs") << getpid() << std::flush;
      }
      long next = start + i * (10000000L / n);
      volatile uint64_t h = 1;
      while (next < start + seconds * 1000000000L) {
        timespec t{next / 1000000000L, next % 1000000000L};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, nullptr);
        long late = now_ns() - next;
        write(p[1], &late, sizeof late);
        for (long k = 0; k < iters; ++k) h = (h ^ k) * 1099511628211ull;
        next += 10000000L;
      }
      _exit(0);
    }
    close(p[1]);
    fds.push_back(p[0]);
  }
  std::vector<long> late;
  for (int fd : fds) {
    long l;
    while (read(fd, &l, sizeof l) == sizeof l) late.push_back(l);
  }
  while (wait(nullptr) > 0) {
  }
  stat(b1, t1);
  rusage ru;
  getrusage(RUSAGE_CHILDREN, &ru);
  double cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
  std::sort(late.begin(), late.end());
  printf("workers' CPU %.2f s; /proc/stat busy %.1f%% of %.0f CPU-s; late p50 %.3f ms p99 %.3f ms\n", cpu,
         100.0 * (b1 - b0) / (t1 - t0), (t1 - t0) / 100.0, late[late.size() / 2] / 1e6,
         late[late.size() * 99 / 100] / 1e6);
}
