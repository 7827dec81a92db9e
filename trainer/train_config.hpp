// Training hyper-parameters. Stored in run.json; every field has a default that trains the demo models.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/checkpoint_retention.hpp"
#include "core/json_util.hpp"

namespace sharelens {

struct TrainConfig {
  std::string corpus = "brown";  // a named corpus (core/corpus.hpp) or a directory of .txt files
  int64_t steps = 600;
  int64_t batchSize = 16;   // sequences of the topology's context length
  double lr = 3e-3;         // peak learning rate
  double minLrRatio = 0.1;  // cosine decays to lr * minLrRatio
  int64_t warmupSteps = 30;
  double weightDecay = 0.1;  // decoupled (AdamW); not applied to norms
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8;
  double gradClip = 1.0;
  int64_t evalEvery = 25;
  int64_t evalBatches = 8;
  int64_t checkpointEvery = 100;
  CheckpointRetention keepCheckpoints;  // log-spaced by default (core/checkpoint_retention.hpp)
  uint64_t seed = 1234;                 // the data order, and the initialisation unless initSeed is set
  uint64_t initSeed = 0;  // the model's initialisation; 0: `seed` (an experiment's A/A arm sets another)
  // Step s trains on batch s + dataOffset of the seed's stream: the post-training of a model pretrained for N
  // steps with this seed takes N, so it draws fresh batches (windows at other offsets of the same text)
  // instead of replaying the pretraining's.
  int64_t dataOffset = 0;
  int threads = 0;             // 0: all cores
  std::string device = "cpu";  // cpu or cuda (a CUDA build of LibTorch)
  int64_t maxConsecutiveNonFinite = 5;
  double validationFraction = 0.05;

  double learningRate(int64_t step) const;  // linear warmup to lr, cosine to lr * minLrRatio at `steps`
};

Json trainConfigToJson(const TrainConfig& c);
// Every field finite and in range (a NaN or negative learning rate never reaches the optimiser); throws a
// named Error ("WHERE.lr: out of range ...").
void validateTrainConfig(const TrainConfig& c, const std::string& where);
TrainConfig trainConfigFromJson(const Json& j, const std::string& where);

}  // namespace sharelens
