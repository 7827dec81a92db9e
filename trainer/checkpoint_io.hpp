// Training checkpoints in a run directory: checkpoints/step-NNNNNNN/ holding model.safetensors (the
// checkpoint others open), optim.safetensors (AdamW moments and training-only parameters), state.json, and
// last the COMPLETE marker. The directory is built under a hidden temporary name and renamed into place
// after the marker is on disk, so a kill at any moment leaves either the previous checkpoints or a complete
// new one; leftovers are removed on the next start.
#pragma once

#include <filesystem>

#include "core/checkpoint_retention.hpp"
#include "core/json_util.hpp"
#include "core/run_dir.hpp"
#include "trainer/optimizer.hpp"

namespace sharelens {

void writeTrainingCheckpoint(const std::filesystem::path& runDir, int64_t step,
                             const SharedTransformer& model, const AdamW& optimizer, const Json& state,
                             const CheckpointRetention& keep, int64_t checkpointEvery);

// Restores model and optimizer; returns state.json.
Json readTrainingCheckpoint(const CheckpointEntry& entry, SharedTransformer& model, AdamW& optimizer);

// Post-training: copies a checkpoint's weights into a model built from its topology (topologyOfCheckpoint):
// ShareLens names as they are, Hugging Face Llama names mapped to them. Every parameter must be found with
// its shape; a named Error otherwise.
void loadInitialWeights(SharedTransformer& model, const std::filesystem::path& checkpoint);

// Removes temporary checkpoint directories a killed run left behind; returns how many.
int removeIncompleteCheckpoints(const std::filesystem::path& runDir);

}  // namespace sharelens
