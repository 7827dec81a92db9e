// Time this process spent stopped from outside: SIGSTOP or SIGTSTP (Ctrl-Z, a job scheduler, `kill -STOP` on
// a shared machine), then SIGCONT. Training time excludes it (trainer/training_run.cpp), as it excludes the
// GUI's pause. A stopped process cannot see the stop begin (SIGSTOP cannot be caught), so it is measured from
// its two ends:
// - a heartbeat thread notes the time every kOutsideStopTick; a stopped process's threads all stand still,
//   the heartbeat's too;
// - a SIGCONT handler counts the time since the last heartbeat, less one tick, as stopped when the last
//   heartbeat is more than two ticks old: at most one tick short of the stop; nothing for a SIGCONT that
//   ended no stop, nor for a stop of under a tick or two.
// A heartbeat that finds the last one more than two ticks old leaves it for a few ticks, for the SIGCONT that
// may be on its way (another thread may handle the signal after the heartbeat's thread went on); a late
// heartbeat with no SIGCONT (a starved, niced process) is not a stop.
// The thread and the handler start on the first call; a SIGCONT handler installed before then is called
// from ours.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace sharelens {

// The heartbeat's period: the measurement's resolution, and how much shorter than the stop it may come out.
inline constexpr std::chrono::milliseconds kOutsideStopTick{100};

// Seconds this process has been stopped from outside since the first call (0 on the first call; monotone;
// thread-safe). A stop counts from the moment its SIGCONT is handled, as the process goes on; a call that
// finds the heartbeat stale waits up to a tick for that handler, which may run on another thread.
double secondsStoppedFromOutside();

// SIGCONTs this process has handled since the first call of secondsStoppedFromOutside().
uint64_t outsideContinuations();

// Seconds since it was started (or restarted), less the time this process was stopped from outside meanwhile:
// the time it could run.
class RunningStopwatch {
 public:
  RunningStopwatch() { restart(); }
  void restart() {
    m_started = std::chrono::steady_clock::now();
    m_stoppedAtStart = secondsStoppedFromOutside();
  }
  double seconds() const {  // never below 0: a stop counted a tick long cannot make time run backwards
    const double stopped = secondsStoppedFromOutside() - m_stoppedAtStart;
    return std::max(
        0.0, std::chrono::duration<double>(std::chrono::steady_clock::now() - m_started).count() - stopped);
  }

 private:
  std::chrono::steady_clock::time_point m_started;
  double m_stoppedAtStart = 0;
};

}  // namespace sharelens
