#include "trainer/checkpoint_io.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>

#include "core/atomic_file.hpp"
#include "core/checkpoint.hpp"
#include "core/error.hpp"
#include "core/fault_injection.hpp"
#include "core/hf_export.hpp"
#include "core/naming.hpp"
#include "core/sharelens_names.hpp"
#include "trainer/torch_io.hpp"

namespace fs = std::filesystem;

namespace sharelens {
namespace {

// Counted for the crash-safety test's switch (core/fault_injection.hpp), which kills the second write.
std::atomic<int> g_checkpointWrites{0};

void maybeDie(const char* stage) {
  fault::maybeKillInCheckpoint(stage, g_checkpointWrites.load());
}

// Deletes a checkpoint directory so that no crash leaves it half deleted under its own name (its COMPLETE
// marker beside missing weights): renamed out of the listing first, to a temporary name that the next start
// removes (removeIncompleteCheckpoints), then deleted.
void removeCheckpointDirectory(const fs::path& dir) {
  const fs::path doomed =
      dir.parent_path() / (".tmp-drop-" + dir.filename().string() + "-" + std::to_string(::getpid()));
  fs::rename(dir, doomed);
  fsyncDirectory(dir.parent_path());
  fs::remove_all(doomed);
}

// Puts the complete directory `fresh` in the place of `existing` (re-saving a step: checkpoint-now at a save
// step). One atomic exchange where the filesystem has it (renameat2 RENAME_EXCHANGE), so no crash leaves the
// step without a complete checkpoint; elsewhere the old one is removed first and a crash between the two
// renames loses that one step, the earlier checkpoints still there.
void replaceCheckpointDirectory(const fs::path& fresh, const fs::path& existing) {
  if (::renameat2(AT_FDCWD, fresh.c_str(), AT_FDCWD, existing.c_str(), RENAME_EXCHANGE) == 0) {
    fsyncDirectory(existing.parent_path());
    fs::remove_all(fresh);  // now the old checkpoint, under the temporary name the next start removes
    return;
  }
  const int why = errno;
  if (why != EINVAL && why != ENOSYS && why != EOPNOTSUPP)  // a real failure: the old checkpoint stays
    throw fs::filesystem_error("cannot put the re-saved checkpoint in place", fresh, existing,
                               std::error_code(why, std::generic_category()));
  removeCheckpointDirectory(existing);
  fs::rename(fresh, existing);
}

}  // namespace

void writeTrainingCheckpoint(const fs::path& runDir, int64_t step, const SharedTransformer& model,
                             const AdamW& optimizer, const Json& state, const CheckpointRetention& keep,
                             int64_t checkpointEvery) {
  ++g_checkpointWrites;
  const fs::path final = checkpointDirectory(runDir, step);
  const fs::path temp =
      final.parent_path() / (".tmp-" + final.filename().string() + "-" + std::to_string(::getpid()));
  const Topology& topology = model.topology();
  const bool hfLayout = topology.isUnshared();
  const NamedTensors tensors = model.checkpointTensors(hfLayout);
  // The invariant every reader relies on: no checkpoint ever holds a non-finite value, whatever caused it.
  for (const auto& [name, tensor] : tensors)
    if (!tensor.isfinite().all().item<bool>())
      throw Error({.what = "refusing to write a checkpoint with non-finite weights",
                   .where = final.string() + ": tensor '" + name + "'",
                   .expected = "finite values",
                   .found = "NaN or Inf",
                   .hint =
                       "the previous checkpoint holds the last finite state: start a new run from it with a "
                       "lower learning rate (sharelens train --init CHECKPOINT --lr LR --out NEW_RUN)"});
  fs::create_directories(final.parent_path());
  fs::remove_all(temp);
  fs::create_directories(temp);
  try {
    const std::map<std::string, std::string> metadata = {
        {"format", "pt"},
        {names::kTopologyMetadataKey, topologyToJson(topology).dump()},
        {"sharelens.step", std::to_string(step)}};
    maybeDie("model");
    writeTensors(temp / "model.safetensors", tensors, metadata);
    if (hfLayout) writeFileAtomically(temp / "config.json", llamaConfigFor(topology).dump(2) + "\n");
    maybeDie("optim");
    NamedTensors optim = optimizer.stateTensors();
    for (const NamedParameter& p : model.parameters())
      if (!p.inCheckpoint) optim.emplace_back("param." + p.name, p.tensor.detach().to(at::kCPU).contiguous());
    writeTensors(temp / "optim.safetensors", optim,
                 {{"optimizer", "adamw"}, {"steps", std::to_string(optimizer.steps())}});
    maybeDie("state");
    writeFileAtomically(temp / "state.json", state.dump(2) + "\n");
    maybeDie("marker");
    writeFileAtomically(temp / kCompleteMarker, "step " + std::to_string(step) + "\n");
    fsyncDirectory(temp);
    maybeDie("rename");
    if (fs::exists(final))
      replaceCheckpointDirectory(temp, final);
    else
      fs::rename(temp, final);
    fsyncDirectory(final.parent_path());
  } catch (...) {  // a failed write (disk full, permissions) leaves no temporary directory behind
    std::error_code ec;
    fs::remove_all(temp, ec);
    throw;
  }

  std::vector<int64_t> steps;
  for (const CheckpointEntry& e : listCheckpoints(runDir)) steps.push_back(e.step);
  for (int64_t drop : checkpointsToDrop(steps, keep, checkpointEvery))
    removeCheckpointDirectory(checkpointDirectory(runDir, drop));
}

Json readTrainingCheckpoint(const CheckpointEntry& entry, SharedTransformer& model, AdamW& optimizer) {
  const Json state = readJsonFile(entry.dir / "state.json");
  std::map<std::string, torch::Tensor> params;
  for (auto& [name, tensor] : readTensors(entry.dir / "model.safetensors")) {
    const std::string internal = model.topology().isUnshared() ? internalNameOfHf(name) : name;
    params[internal.empty() ? name : internal] = tensor;
  }
  const auto optim = readTensors(entry.dir / "optim.safetensors");
  for (const auto& [name, tensor] : optim)
    if (startsWith(name, "param.")) params[name.substr(6)] = tensor;
  model.load(params, entry.dir.string());
  optimizer.loadState(optim,
                      JsonObject(state, (entry.dir / "state.json").string()).requireInt("optimizer_steps", 0),
                      (entry.dir / "optim.safetensors").string());
  return state;
}

void loadInitialWeights(SharedTransformer& model, const fs::path& path) {
  const auto ckpt = Checkpoint::open(resolveModelPath(path));
  const bool hf = model.topology().isUnshared();
  std::map<std::string, torch::Tensor> params;
  for (const std::string& name : ckpt->tensorNames()) {
    const std::string internal = hf ? internalNameOfHf(name) : name;
    if (internal.empty()) continue;  // buffers such as rotary_emb.inv_freq
    const TensorInfo& info = *ckpt->at(name).info;
    std::vector<float> values = ckpt->readFloat(name);
    params[internal] = at::from_blob(values.data(), info.shape, at::kFloat).clone();
  }
  model.load(params, ckpt->path().string());
}

int removeIncompleteCheckpoints(const fs::path& runDir) {
  int removed = 0;
  std::error_code ec;
  const fs::path dir = runDir / "checkpoints";
  if (!fs::is_directory(dir, ec)) return 0;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (startsWith(name, ".tmp-") || (startsWith(name, "step-") && !fs::exists(e.path() / kCompleteMarker))) {
      fs::remove_all(e.path(), ec);
      ++removed;
    }
  }
  return removed;
}

}  // namespace sharelens
