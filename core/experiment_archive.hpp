// An experiment's results archive: what its report needs of each finished run and nothing a run resumes from
// (no checkpoint, no tokenizer), small enough to commit beside the report (docs/claims/results/). An
// experiment longer than one session on a machine then continues from a fresh clone: the runner takes every
// finished run the archive holds before it trains, and copies each run into the archive as it finishes.
//
//   ARCHIVE/experiment.json             the experiment as the runner resolved it (the same identity check)
//   ARCHIVE/<arm>/seed-<s>/run.json     the run's record (topology, hyper-parameters, fingerprints)
//                         eval.json     or failed.json: what makes the run finished (eval.json on one
//                                       line, its per-window sums left empty: the report reads the
//                                       per-document ones)
//                         derived.json  a derived arm's method and unique parameters
//                         metrics.jsonl its validation points and its last line only (tokens, elapsed)
//                         <post-training runs of a derived arm, two levels down: run.json, metrics.jsonl>
#pragma once

#include <filesystem>

namespace sharelens {

// Whether RUN holds a finished run's result (eval.json or failed.json).
bool isFinishedExperimentRun(const std::filesystem::path& runDir);

// Copies the finished run RUN into ARCHIVE_RUN (what the header lists; an older copy there is replaced, file
// by file, each written whole). Throws a named Error when RUN is not finished.
void archiveExperimentRun(const std::filesystem::path& runDir, const std::filesystem::path& archiveRunDir);

// Copies the archived run ARCHIVE_RUN into RUN, first removing what RUN holds (an unfinished run's partial
// training: the archived run is finished). Throws a named Error when ARCHIVE_RUN is not a finished run.
void restoreExperimentRun(const std::filesystem::path& archiveRunDir, const std::filesystem::path& runDir);

// metrics.jsonl as the archive keeps it: the lines with a finite validation loss, and the last complete
// point (the run's tokens and training time); events and a torn last line are left out.
std::string thinnedMetrics(const std::string& metricsJsonl);

}  // namespace sharelens
