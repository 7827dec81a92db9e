#include "app/cli/launcher.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <thread>

#include "core/error.hpp"
#include "core/machine.hpp"

namespace sharelens::cli {
namespace {

std::atomic<int> g_interrupts{0};  // Ctrl-Cs and SIGTERMs received
void onInterrupt(int) {
  ++g_interrupts;
}

std::string describe(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return std::string("was killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  return "stopped";
}

}  // namespace

int launchLocalRanks(int ranks, const std::vector<std::string>& args, double graceSeconds) {
  const std::string port = std::to_string(freeLoopbackPort("sharelens train --nproc"));
  std::vector<pid_t> children(static_cast<size_t>(ranks), -1);
  const pid_t launcher = ::getpid();
  for (int r = 0; r < ranks; ++r) {
    const pid_t pid = ::fork();
    if (pid < 0)
      throw Error(
          {.what = "cannot start a rank", .where = "sharelens train --nproc", .found = std::strerror(errno)});
    if (pid == 0) {
      // The ranks die with the launcher however it ends (SIGKILL included): SIGTERM stops a rank as Ctrl-C
      // does, saving the step it reached. If the launcher is already gone, the rank does not start.
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (::getppid() != launcher) std::_Exit(143);
      ::setenv("SHARELENS_LAUNCHER_PID", std::to_string(launcher).c_str(), 1);
      for (const auto& [name, value] : {std::pair{"RANK", std::to_string(r)},
                                        {"WORLD_SIZE", std::to_string(ranks)},
                                        {"LOCAL_RANK", std::to_string(r)},
                                        {"LOCAL_WORLD_SIZE", std::to_string(ranks)},
                                        {"MASTER_ADDR", std::string("127.0.0.1")},
                                        {"MASTER_PORT", port}})
        ::setenv(name, value.c_str(), 1);
      std::vector<char*> argv = {const_cast<char*>("sharelens")};
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv("/proc/self/exe", argv.data());
      std::_Exit(127);
    }
    children[static_cast<size_t>(r)] = pid;
  }
  struct sigaction action {
  }, previous{}, previousTerm{};
  action.sa_handler = onInterrupt;
  ::sigaction(SIGINT, &action, &previous);
  ::sigaction(SIGTERM, &action, &previousTerm);  // the launcher's own SIGTERM reaches the ranks as a Ctrl-C
  int running = ranks, failedRank = -1, failedStatus = 0, exitStatus = 0;
  std::chrono::steady_clock::time_point stopping{};
  int forwarded = 0;
  while (running > 0) {
    // Each Ctrl-C or SIGTERM is passed on: the first stops every rank at the same step and rank 0 saves it;
    // one a second or more later ends the ranks at once (progress_printer's rule, in each rank, which also
    // takes a terminal's Ctrl-C reaching a rank both directly and through here as one).
    for (const int received = g_interrupts.load(); forwarded < received; ++forwarded)
      for (pid_t pid : children)
        if (pid > 0) ::kill(pid, SIGINT);
    int status = 0;
    const pid_t done = ::waitpid(-1, &status, WNOHANG);
    if (done > 0) {
      const auto it = std::find(children.begin(), children.end(), done);
      const int rank = static_cast<int>(it - children.begin());
      *it = -1;
      --running;
      const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      if (!ok && failedRank < 0 && g_interrupts.load() == 0) {
        failedRank = rank;
        failedStatus = status;
        exitStatus = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
        for (pid_t pid : children)
          if (pid > 0) ::kill(pid, SIGTERM);
        stopping = std::chrono::steady_clock::now();
      } else if (!ok && exitStatus == 0) {
        exitStatus = WIFEXITED(status) ? WEXITSTATUS(status) : 130;
      }
      continue;
    }
    if (failedRank >= 0 &&
        std::chrono::steady_clock::now() - stopping > std::chrono::duration<double>(graceSeconds))
      for (pid_t pid : children)
        if (pid > 0) ::kill(pid, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::sigaction(SIGINT, &previous, nullptr);
  ::sigaction(SIGTERM, &previousTerm, nullptr);
  if (failedRank >= 0) {
    std::cerr
        << "error: "
        << Error({.what = "rank " + std::to_string(failedRank) + " " + describe(failedStatus) +
                          "; the other ranks were stopped",
                  .where = "sharelens train --nproc " + std::to_string(ranks),
                  .hint =
                      "add --resume to continue from the newest complete checkpoint (from the start if none "
                      "was written yet), with any --nproc"})
               .what()
        << "\n";
    return exitStatus == 0 ? 1 : exitStatus;
  }
  return exitStatus;
}

void endWithLauncher(double graceSeconds) {
  const char* launcher = std::getenv("SHARELENS_LAUNCHER_PID");
  if (!launcher) return;
  const pid_t pid = static_cast<pid_t>(std::atol(launcher));
  std::thread([pid, graceSeconds] {
    while (::getppid() == pid) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    std::this_thread::sleep_for(std::chrono::duration<double>(graceSeconds));
    std::fprintf(stderr,
                 "error: the --nproc launcher died and this rank did not stop within %.0f s; ending it\n",
                 graceSeconds);
    std::_Exit(143);
  }).detach();
}

}  // namespace sharelens::cli
