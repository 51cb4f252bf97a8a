// Runs argv[2..] while new IdlePollers spin (argv[1] == "new") or none ("none"); prints the pollers' CPU.
#include <sys/wait.h>
#include <unistd.h>
#include <cstdio>
#include <cstring>
#include <optional>
#include "wanlab/base/idle_poll.hpp"
int main(int argc, char** argv) {
  std::optional<wanlab::base::IdlePollers> pollers;
  if (!strcmp(argv[1], "new")) pollers.emplace();
  pid_t pid = fork();
  if (pid == 0) {
    execv(argv[2], argv + 2);
    _exit(127);
  }
  waitpid(pid, nullptr, 0);
  if (pollers) printf("pollers: %zu, %.2f CPU-s\n", pollers->count(), pollers->busy_ticks() / 100.0);
}
