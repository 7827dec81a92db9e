// `sharelens train --nproc N`: this program started N times as the local ranks of one distributed run (the
// environment torchrun would give them: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT on a free loopback port). The launcher waits for them; when one fails it stops the others
// (SIGTERM, then SIGKILL after `graceSeconds`) and says which rank failed and how; Ctrl-C is passed on to
// every rank, which stop cleanly.
#pragma once

#include <string>
#include <vector>

namespace sharelens::cli {

// `args`: the command line after the program name, without --nproc. Returns the exit status for the launcher.
int launchLocalRanks(int ranks, const std::vector<std::string>& args, double graceSeconds);

// Called by a rank: when this launcher started it (SHARELENS_LAUNCHER_PID), a watcher ends the rank
// `graceSeconds` after the launcher died if it has not stopped by then. The launcher's death sends the rank
// SIGTERM (PR_SET_PDEATHSIG), which stops it after its step with a checkpoint; a rank waiting at the
// rendezvous for a peer that already stopped never polls for that stop, and would wait out --dist-timeout.
void endWithLauncher(double graceSeconds);

}  // namespace sharelens::cli
