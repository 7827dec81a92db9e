// What `sharelens inspect` reports about a checkpoint, as one JSON document: files, config, every tensor,
// parameters by role, tied embeddings and the canonical per-layer view. The CLI prints it as text or
// writes it with --json; the GUI's Model view shows the same document.
#pragma once

#include "core/checkpoint.hpp"
#include "core/json_util.hpp"
#include "core/model_view.hpp"

namespace sharelens {

// Throws sharelens::Error when the checkpoint is malformed or its config contradicts its tensors. An
// unrecognised architecture is not an error: the report then has "family": null and no view.
Json inspectCheckpoint(const Checkpoint& checkpoint);
// A model view's shape as reports write it ("shape" in inspect and analyze reports).
Json modelShapeToJson(const ModelShape& shape);

// Human-readable rendering of the report.
std::string formatInspectReport(const Json& report);

}  // namespace sharelens
