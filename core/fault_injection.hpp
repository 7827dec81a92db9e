// Fault injection for tests, in one place. Each switch is an environment variable a test sets on the
// process it starts; the code under test asks here whether to fail. Compiled in only when the build is
// configured with -DSHARELENS_FAULT_INJECTION=ON (dev.sh's builds, which run the tests); in a default
// (packaging) build every question answers "no fault" and the variables are never read.
//
//   SHARELENS_TEST_NONFINITE_STEPS     "7", "7,9" or "12-": training steps whose loss is made NaN
//                                      (trainer/training_run.cpp; Training.NonFinite* tests)
//   SHARELENS_TEST_OOM_STEPS           "4": training steps that run out of memory (std::bad_alloc before the
//                                      forward pass; trainer/training_run.cpp; Distributed.AnErrorInOneRank*,
//                                      Training.AnErrorInAStepSavesTheStepsBeforeIt)
//   SHARELENS_TEST_VALIDATION_OOM_STEPS "10": training steps whose validation runs out of memory
//                                      (trainer/training_run.cpp; Training.AnErrorInAStep*)
//   SHARELENS_TEST_UPDATE_FAIL_STEPS   "4": optimizer updates that run out of memory after writing the first
//                                      parameter, or before writing any where that parameter takes the
//                                      multi-tensor path (a GPU's) (trainer/optimizer.cpp;
//                                      Training.AnErrorInAStep*)
//   SHARELENS_TEST_KILL_IN_CHECKPOINT  model | optim | state | marker | rename: SIGKILL at that point of
//                                      the second checkpoint write (trainer/checkpoint_io.cpp;
//                                      Training.KilledCheckpointWrites*, tests/tools/probe_kill_resume.py)
//   SHARELENS_TEST_PAUSE_WAIT_DELAY_MS "500": a paused run sleeps this long after finding it must wait and
//                                      before it waits (trainer/training_run.cpp), the window in which a
//                                      stop's wake-up could be lost
//                                      (Training.AStopWhileAPausedRunGoesToSleep*)
//   SHARELENS_TEST_KILL_AFTER_SWEEP_POINT "2": SIGKILL once that many points of a compression sweep are
//                                      finished (app/workflows/compress.cpp; Compress.AKilledSweepResumes)
#pragma once

#include <cstdint>
#include <string_view>

namespace sharelens::fault {

// Whether this build has the switches at all; tests that need them skip, saying so, when it does not.
bool compiledIn();

// SHARELENS_TEST_NONFINITE_STEPS: should this step's loss be replaced by NaN?
bool nonFiniteLossAt(int64_t step);

// SHARELENS_TEST_OOM_STEPS: should this step run out of memory?
bool outOfMemoryAt(int64_t step);

// SHARELENS_TEST_VALIDATION_OOM_STEPS: should this step's validation run out of memory?
bool validationOutOfMemoryAt(int64_t step);

// SHARELENS_TEST_UPDATE_FAIL_STEPS: should the optimizer's update number `update` (1-based) fail half-way?
bool updateFailsAt(int64_t update);

// SHARELENS_TEST_KILL_IN_CHECKPOINT: SIGKILLs the process when `stage` is the one asked for and this is
// the process's second (or later) checkpoint write.
void maybeKillInCheckpoint(std::string_view stage, int checkpointWritesSoFar);

// SHARELENS_TEST_PAUSE_WAIT_DELAY_MS: sleeps that long (not at all when unset).
void delayBeforePauseWait();
// SHARELENS_TEST_KILL_AFTER_SWEEP_POINT: SIGKILLs the process when `pointsFinished` is the number asked for.
void maybeKillAfterSweepPoint(int pointsFinished);

}  // namespace sharelens::fault
