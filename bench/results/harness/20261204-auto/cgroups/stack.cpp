// Do periodic tasks that together need more than one CPU wake late beside
// SCHED_IDLE spinners (which keep a CPU from going idle and pulling a waiting task)?
// usage: stack THREADS PERIOD_US WORK_US SECONDS POLL(0|1)
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>
static long now_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000L + t.tv_nsec;
}
int main(int argc, char** argv) {
  int threads = atoi(argv[1]);
  long period = atol(argv[2]) * 1000, work = atol(argv[3]) * 1000;
  long seconds = atol(argv[4]);
  bool poll = atoi(argv[5]);
  std::atomic<bool> stop{false};
  std::vector<std::thread> pollers;
  if (poll)
    for (int cpu = 0; cpu < (int)sysconf(_SC_NPROCESSORS_ONLN); ++cpu)
      pollers.emplace_back([&, cpu] {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        pthread_setaffinity_np(pthread_self(), sizeof one, &one);
        sched_param none{};
        pthread_setschedparam(pthread_self(), SCHED_IDLE, &none);
        while (!stop.load(std::memory_order_relaxed)) __builtin_ia32_pause();
      });
  std::vector<std::vector<long>> late(threads);
  std::vector<std::thread> workers;
  long start = now_ns() + 100000000L;
  for (int i = 0; i < threads; ++i)
    workers.emplace_back([&, i] {
      long next = start + i * (period / threads);
      while (next < start + seconds * 1000000000L) {
        timespec t{next / 1000000000L, next % 1000000000L};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, nullptr);
        long woke = now_ns();
        late[i].push_back(woke - next);
        while (now_ns() - woke < work) {
        }
        next += period;
      }
    });
  for (auto& w : workers) w.join();
  stop = true;
  for (auto& p : pollers) p.join();
  std::vector<long> all;
  for (auto& l : late) all.insert(all.end(), l.begin(), l.end());
  std::sort(all.begin(), all.end());
  double sum = 0;
  for (long l : all) sum += l;
  printf(
      "threads %d period %ld us work %ld us poll %d: wake-ups %zu, late p50 %.1f us p99 %.1f us max %.1f ms, late/work "
      "%.2f%%\n",
      threads, period / 1000, work / 1000, poll, all.size(), all[all.size() / 2] / 1e3,
      all[all.size() * 99 / 100] / 1e3, all.back() / 1e6, 100 * sum / (all.size() * (double)work));
}
