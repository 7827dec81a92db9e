// Background jobs for the GUI (DESIGN.md section 2): a small pool of std::jthreads, each job with a name,
// progress and a stop source. A job's work returns a completion that the UI thread runs when it drains the
// mailbox once per frame (the only place results reach UI state), so no lock is ever held across a frame.
// Every job ends as a value -- ok, cancelled or failed(error) -- handed to its `finished` callback on the UI
// thread, so whoever waits for it (a view saying "computing ...") always learns how it ended.
#pragma once

#include <array>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "core/task.hpp"

namespace sharelens::gui {

class JobSystem {
 public:
  using Completion = std::function<void()>;
  using Work = std::function<Completion(const TaskContext&)>;
  enum class Status { Ok, Cancelled, Failed };
  using Finished = std::function<void(Status, const std::string& error)>;
  using ErrorHandler = std::function<void(const std::string& job, const std::string& message)>;

  // Three lanes, each with its own workers: analyses (seconds to minutes; what the views wait for), long
  // jobs (experiments, compression sweeps: hours), so that a long job never holds the workers the views'
  // "computing ..." wait on, and files (Save As: a figure rendered by Cairo, a CSV table), so that a save is
  // written at once, off the UI thread, whatever is computing. Long jobs, and saves, queue behind each other
  // on their lane's one worker.
  enum class Lane { Analysis, Long, Files };
  static constexpr size_t kLanes = 3;
  // Quiet: a refresh the view repeats on its own (the Experiments view's report, about once a second),
  // which the job bar does not list -- its line would come and go each second and move the views with it.
  enum class Shown { InJobBar, Quiet };
  JobSystem(int workers, std::function<void()> wakeUi, ErrorHandler onError);  // workers: the analysis lane's
  ~JobSystem();                                                                // cancels everything and joins
  JobSystem(const JobSystem&) = delete;
  JobSystem& operator=(const JobSystem&) = delete;

  // `finished` (optional) runs on the UI thread once the job has ended, after its completion when it
  // succeeded.
  uint64_t submit(std::string name, Work work, Finished finished = {}, Lane lane = Lane::Analysis,
                  Shown shown = Shown::InJobBar);
  void cancel(uint64_t id);
  // Every job but the Files lane's: a save the user asked for is written, even when the app exits (the
  // destructor cancels the rest, then joins the Files worker once it has written every queued save).
  void cancelAll();
  void drainCompletions();  // UI thread, once per frame

  struct Info {
    uint64_t id;
    std::string name, stage;
    double fraction;
    bool started;
    bool cancellable;  // false for a save being written: Cairo cannot stop halfway, and the file is wanted
  };
  std::vector<Info> jobs() const;  // queued and running, but for the quiet ones: what the job bar lists
  bool idle() const;
  bool laneIdle(Lane lane) const;  // nothing of that lane queued or running but for quiet jobs

 private:
  struct Job {
    uint64_t id;
    std::string name;
    Work work;
    Finished finished;
    std::stop_source stop;
    TaskProgress progress;
    bool started = false;
    Lane lane = Lane::Analysis;
    Shown shown = Shown::InJobBar;
  };
  static constexpr int kLongWorkers = 1, kFilesWorkers = 1;
  void workerLoop(std::stop_token stop, Lane lane);

  std::function<void()> m_wake;
  ErrorHandler m_onError;
  mutable std::mutex m_mutex;
  std::array<std::condition_variable_any, kLanes> m_ready;       // by Lane
  std::array<std::deque<std::shared_ptr<Job>>, kLanes> m_queue;  // by Lane
  std::vector<std::shared_ptr<Job>> m_running;
  std::vector<Completion> m_completions;
  uint64_t m_next = 1;
  std::vector<std::jthread> m_workers;
};

}  // namespace sharelens::gui
