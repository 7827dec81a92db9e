// Data parallelism on LibTorch's c10d (trainer-internal: includes torch). One DistributedGroup per rank:
// rendezvous through a TCPStore that rank 0 serves, collectives through ProcessGroupGloo (CPU tensors) or,
// for CUDA training on a LibTorch built with NCCL, ProcessGroupNCCL -- with a timeout on every operation so
// that no rank waits forever for one that died. A rank's death or a timeout ends the others' runs with a
// named Error naming the ranks that stopped (Gloo, tested). NCCL's one-rank group is tested on a GPU
// (test_distributed_group, through tests/tools/device_check.sh); a rank's death under NCCL is not (one GPU
// lent allows one rank): NCCL runs with TORCH_NCCL_BLOCKING_WAIT so that wait() raises at the timeout, as
// Gloo's does, instead of LibTorch's watchdog ending the process.
//
// Gradients: each parameter's gradient is copied, scaled by the rank's share of the global batch, into a flat
// bucket (about 25 MB) from an autograd hook the moment backward produces it, and a bucket's all-reduce (SUM)
// is launched as soon as it is complete -- overlapping the rest of backward, as DDP does -- always in the
// same bucket order on every rank (collectives are matched by order). finish() waits for the buckets and
// writes the summed gradients back. A shared weight is one parameter, so it is reduced once however many
// layers use it.
#pragma once

#include <torch/types.h>

#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "trainer/model.hpp"
#include "trainer/optimizer.hpp"
#include "trainer/run_controller.hpp"

#include <torch/version.h>

namespace c10d {
class Store;
class ProcessGroup;
class Backend;
}  // namespace c10d

namespace sharelens {

// LibTorch 2 made the Gloo and NCCL process groups backends of a ProcessGroup; their collectives kept their
// signatures, so either base serves.
#if TORCH_VERSION_MAJOR >= 2
using CollectiveBackend = c10d::Backend;
#else
using CollectiveBackend = c10d::ProcessGroup;
#endif

class DistributedGroup {
 public:
  // `device`: where this rank's weights and gradients live. On a GPU NCCL carries them where LibTorch has
  // it (and the scalar collectives' one-element tensors live there too: NCCL reduces only CUDA tensors),
  // Gloo otherwise, through host memory.
  DistributedGroup(const DistributedConfig& config, torch::Device device);
  std::string backendName() const { return m_backendName; }
  ~DistributedGroup();
  int rank() const { return m_config.rank; }
  int worldSize() const { return m_config.worldSize; }

  // Fails on every rank, naming the field and the ranks, unless every rank holds the same value (checked at
  // the start: topology, corpus, tokenizer, start step).
  void agree(const std::string& field, const std::string& value);

  // Gradient all-reduce: attach() once, then per step begin(share) before backward and finish() after it.
  // `share` = this rank's rows / the global batch's rows.
  void attach(std::vector<NamedParameter>& params);
  void begin(double share);
  void finish();

  // Rank 0's weights and optimizer state (and counters) to every rank, so all start from one state.
  void broadcastFromZero(std::vector<NamedParameter>& params, AdamW& optimizer);
  double broadcastFromZero(double value);
  std::vector<double> allGather(double value);  // every rank's value, by rank
  double sum(double value);
  // Debug: a hash of every weight, compared across ranks; a named Error when they differ.
  void checkWeightsAgree(const std::vector<NamedParameter>& params, int64_t step);
  // The step every rank has completed (the start step when joining), which a failure's message names.
  void atStep(int64_t step);

 private:
  // A collective's failure (a rank died, a timeout) as a named Error saying which ranks stopped, or, when
  // the backend refused the collective itself, saying that instead. Every
  // collective and store exchange of this group reports its own failure through it.
  [[noreturn]] void fail(const std::exception& cause);
  // The ranks that no longer answer after a collective failed.
  std::string stoppedRanks();
  struct Bucket;
  void launchReady();
  // Starts a collective and waits for it; a failure becomes fail()'s named Error.
  template <class Start>
  void complete(Start&& start);
  int64_t m_step = 0;                  // atStep's
  std::exception_ptr m_launchFailure;  // a gradient all-reduce that could not start in backward's hooks
  bool m_failed = false;               // fail() was called: the destructor aborts instead of shutting down
  DistributedConfig m_config;
  c10::intrusive_ptr<c10d::Store> m_store;
  c10::intrusive_ptr<CollectiveBackend> m_group;
  std::string m_backendName;
  at::TensorOptions m_scalar;  // a scalar collective's one-element float64 tensor: on the GPU for NCCL
  std::vector<NamedParameter>* m_params = nullptr;
  std::vector<std::unique_ptr<Bucket>> m_buckets;
  std::vector<std::pair<size_t, int64_t>> m_slot;  // parameter -> (bucket, offset)
  size_t m_launched = 0;                           // buckets launched this step, in order
  double m_share = 1.0;
};

}  // namespace sharelens
