// Gloo's process group where Gloo's headers are on the include path (Debian's libgloo-dev; a pip wheel of
// PyTorch defines USE_C10D_GLOO but ships only some of them); NCCL's where LibTorch is a CUDA build
// (trainer/CMakeLists.txt defines USE_C10D_NCCL) and NCCL's header is found (a pip wheel's is in the
// nvidia-nccl package: tests/tools/device_check.sh adds it).
#if __has_include(<gloo/algorithm.h>) && __has_include(<gloo/common/error.h>) && __has_include(<gloo/context.h>) && \
    __has_include(<gloo/rendezvous/store.h>) && __has_include(<gloo/transport/device.h>)
#define SHARELENS_HAVE_GLOO 1
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO 1  // ProcessGroupGloo.hpp is compiled only under it
#endif
#endif
#if defined(USE_C10D_NCCL) && !__has_include(<nccl.h>)
#undef USE_C10D_NCCL
#endif
#include "trainer/distributed.hpp"

#include <pthread.h>
#include <signal.h>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef SHARELENS_HAVE_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <cstdlib>
#include <exception>
#include <thread>

#include "core/error.hpp"
#include "core/hash.hpp"

namespace sharelens {
namespace {

constexpr int64_t kBucketFloats = (25 << 20) / 4;  // ~25 MB of float32 per all-reduce, as DDP's default

std::chrono::milliseconds millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? std::optional<std::string>(v) : std::nullopt;
}

int envInt(const char* name, int minimum, int maximum) {
  const std::string v = *env(name);
  try {
    size_t used = 0;
    const long value = std::stol(v, &used);
    if (used != v.size() || value < minimum || value > maximum) throw std::out_of_range(v);
    return static_cast<int>(value);
  } catch (const std::exception&) {
    throw Error(
        {.what = "bad launcher variable",
         .where = std::string("environment variable ") + name,
         .expected = "an integer in [" + std::to_string(minimum) + ", " + std::to_string(maximum) + "]",
         .found = "'" + v + "'"});
  }
}

}  // namespace

DistributedConfig distributedFromEnvironment() {
  DistributedConfig c;
  const bool torchrun = env("RANK") && env("WORLD_SIZE"),
             slurm = !torchrun && env("SLURM_PROCID") && env("SLURM_NTASKS");
  if (!torchrun && !slurm) return c;
  c.worldSize = envInt(torchrun ? "WORLD_SIZE" : "SLURM_NTASKS", 1, 65536);
  c.rank = envInt(torchrun ? "RANK" : "SLURM_PROCID", 0, c.worldSize - 1);
  const char* localRank = torchrun ? "LOCAL_RANK" : "SLURM_LOCALID";
  const char* localWorld = torchrun ? "LOCAL_WORLD_SIZE" : "SLURM_NTASKS_PER_NODE";
  c.localWorldSize = env(localWorld) ? envInt(localWorld, 1, c.worldSize) : 1;
  c.localRank = env(localRank) ? envInt(localRank, 0, c.localWorldSize - 1) : 0;
  if (const auto addr = env("MASTER_ADDR"))
    c.masterAddr = *addr;
  else if (c.worldSize > 1)
    throw Error({.what = "no rendezvous address",
                 .where = "environment variable MASTER_ADDR",
                 .found = "unset",
                 .hint = "set MASTER_ADDR (and MASTER_PORT) to rank 0's host, as torchrun does"});
  if (env("MASTER_PORT")) c.masterPort = envInt("MASTER_PORT", 1, 65535);
  if (env("SHARELENS_DIST_TIMEOUT")) c.timeoutSeconds = envInt("SHARELENS_DIST_TIMEOUT", 1, 86400);
  return c;
}

struct DistributedGroup::Bucket {
  torch::Tensor flat;  // the bucket's gradients, in the order of its parameters
  std::vector<size_t> params;
  int64_t pending = 0;  // parameters whose gradient has not arrived this step
  std::vector<bool> filled;
  c10::intrusive_ptr<c10d::Work> work;
};

namespace {

// Ctrl-C and SIGTERM held back from the calling thread while the ranks meet: delivered to it they interrupt
// the store's socket calls (EINTR, which c10d reports as an internal error, and its peer then as a socket
// timeout), so a stop asked for during the rendezvous killed the run instead of stopping it. Held, the signal
// goes to another thread (the CLI's progress thread, whose handler records the stop, or ends the process on a
// second signal) or waits until the rendezvous is over; threads c10d starts meanwhile inherit the mask.
class StopSignalsHeld {
 public:
  StopSignalsHeld() {
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, &m_previous);
  }
  ~StopSignalsHeld() { pthread_sigmask(SIG_SETMASK, &m_previous, nullptr); }
  StopSignalsHeld(const StopSignalsHeld&) = delete;
  StopSignalsHeld& operator=(const StopSignalsHeld&) = delete;

 private:
  sigset_t m_previous{};
};

}  // namespace

DistributedGroup::DistributedGroup(const DistributedConfig& config, torch::Device device)
    : m_config(config), m_scalar(at::TensorOptions().dtype(at::kDouble)) {
  const std::string where = "rank " + std::to_string(config.rank) + " of " + std::to_string(config.worldSize);
#ifdef USE_C10D_NCCL
  const bool nccl = device.is_cuda();
#else
  const bool nccl = false;
#endif
#ifndef SHARELENS_HAVE_GLOO
  if (!nccl)  // refused before the rendezvous, which would otherwise wait for the other ranks first
    throw Error(
        {.what = "distributed training is not available in this build",
         .where = where,
         .found = "LibTorch's headers without Gloo's" + std::string(device.is_cuda() ? " or NCCL's" : ""),
         .hint = "build against a LibTorch that ships them (Debian's libtorch-dev does)"});
#endif
  const StopSignalsHeld held;
  try {
    c10d::TCPStoreOptions store;
    store.port = static_cast<uint16_t>(config.masterPort);
    store.isServer = config.rank == 0;
    store.numWorkers = static_cast<size_t>(config.worldSize);
    store.waitWorkers = true;
    store.timeout = millis(config.timeoutSeconds);
    m_store = c10::make_intrusive<c10d::TCPStore>(config.masterAddr, store);
#ifdef USE_C10D_NCCL
    if (nccl) {
      // Blocking wait: a collective's wait() waits on the CPU and raises at the timeout, so a stopped peer
      // is fail()'s named Error rather than LibTorch's watchdog ending the process. (It costs the overlap of
      // the next step's launches with the last bucket's all-reduce; finish() waits for the buckets anyway.)
      // An explicit setting by the user is kept.
      ::setenv("TORCH_NCCL_BLOCKING_WAIT", "1", 0);
      auto options = c10d::ProcessGroupNCCL::Options::create();
      options->timeout = millis(config.timeoutSeconds);
      m_group = c10::make_intrusive<c10d::ProcessGroupNCCL>(m_store, config.rank, config.worldSize, options);
      m_backendName = "nccl";
      m_scalar = m_scalar.device(device);
      return;
    }
#endif
    (void)nccl;  // without NCCL, Gloo reduces CUDA tensors through host memory
#ifdef SHARELENS_HAVE_GLOO
    auto options = c10d::ProcessGroupGloo::Options::create(millis(config.timeoutSeconds));
    const bool loopback = config.masterAddr == "127.0.0.1" || config.masterAddr == "localhost";
    options->devices.push_back(loopback ? c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1")
                                        : c10d::ProcessGroupGloo::createDefaultDevice());
    options->threads = 2;
    m_group = c10::make_intrusive<c10d::ProcessGroupGloo>(m_store, config.rank, config.worldSize, options);
    m_backendName = "gloo";
#endif
  } catch (const c10::Error& e) {
    throw Error({.what = "could not join the distributed run",
                 .where = where,
                 .found = e.what_without_backtrace(),
                 .hint = "check that every rank was started with the same MASTER_ADDR:MASTER_PORT (" +
                         config.masterAddr + ":" + std::to_string(config.masterPort) +
                         ") and WORLD_SIZE, and that the port is free on rank 0"});
  }
}

DistributedGroup::~DistributedGroup() {
#if defined(USE_C10D_NCCL) && \
    (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4))
  // Shut down here (~ProcessGroupNCCL warns of a group never shut down, then does it itself); a failed
  // group is aborted instead, since shutting down waits for work a stopped peer never completes.
  if (auto* nccl = dynamic_cast<c10d::ProcessGroupNCCL*>(m_group.get())) try {
      if (m_failed)
        nccl->abort();
      else
        nccl->shutdown();
    } catch (const std::exception&) {  // being destroyed: nothing more to do for it
    }
#endif
}

void DistributedGroup::agree(const std::string& field, const std::string& value) {
  const std::string prefix = "agree/" + field + "/";
  std::vector<uint8_t> zero;
  std::string disagree;
  try {  // a rank that died before checking in leaves the others waiting for the store's timeout
    m_store->set(prefix + std::to_string(rank()), std::vector<uint8_t>(value.begin(), value.end()));
    zero = m_store->get(prefix + "0");
    for (int r = 1; r < worldSize(); ++r)
      if (m_store->get(prefix + std::to_string(r)) != zero)
        disagree += (disagree.empty() ? "" : ", ") + std::to_string(r);
  } catch (const std::exception& e) {
    fail(e);
  }
  if (!disagree.empty())
    throw Error(
        {.what = "the ranks disagree on the " + field,
         .where = "rank " + std::to_string(rank()),
         .expected = "the " + field + " of rank 0 (fingerprint " +
                     fnv1aHex(std::string(zero.begin(), zero.end())) + ")",
         .found = "a different one on rank(s) " + disagree,
         .hint = "start every rank with the same topology, corpus, tokenizer and run directory state"});
}

void DistributedGroup::attach(std::vector<NamedParameter>& params) {
  m_params = &params;
  m_slot.assign(params.size(), {0, 0});
  // Reverse order: the last parameters' gradients are the first that backward produces.
  int64_t used = kBucketFloats;
  for (size_t i = params.size(); i-- > 0;) {
    const int64_t n = params[i].tensor.numel();
    if (used + n > kBucketFloats && used > 0) {
      m_buckets.push_back(std::make_unique<Bucket>());
      used = 0;
    }
    Bucket& b = *m_buckets.back();
    m_slot[i] = {m_buckets.size() - 1, used};
    b.params.push_back(i);
    used += n;
  }
  for (auto& b : m_buckets) {
    int64_t floats = 0;
    for (size_t i : b->params) floats += params[i].tensor.numel();
    b->flat = at::zeros({floats}, params[b->params.front()].tensor.options().requires_grad(false));
    b->filled.assign(params.size(), false);
  }
  for (size_t i = 0; i < params.size(); ++i)
    params[i].tensor.register_hook([this, i](const torch::Tensor& grad) {
      const auto [bucket, offset] = m_slot[i];
      Bucket& b = *m_buckets[bucket];
      if (b.filled[i]) return;  // once per step per parameter
      b.flat.narrow(0, offset, grad.numel()).copy_(grad.reshape({-1}) * m_share);
      b.filled[i] = true;
      if (--b.pending == 0) launchReady();
    });
}

void DistributedGroup::begin(double share) {
  m_share = share;
  m_launched = 0;
  for (auto& b : m_buckets) {
    b->pending = static_cast<int64_t>(b->params.size());
    std::fill(b->filled.begin(), b->filled.end(), false);
    b->work.reset();
  }
}

template <class Start>
void DistributedGroup::complete(Start&& start) {
  try {
    start()->wait();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    fail(e);
  }
}

// Runs inside backward's hooks, where an exception would come out of backward() unnamed: a failed launch is
// kept, and finish() reports it.
void DistributedGroup::launchReady() {
  while (!m_launchFailure && m_launched < m_buckets.size() && m_buckets[m_launched]->pending == 0) {
    std::vector<torch::Tensor> tensors = {m_buckets[m_launched]->flat};
    try {
      m_buckets[m_launched]->work = m_group->allreduce(tensors);
    } catch (const std::exception&) {
      m_launchFailure = std::current_exception();
      return;
    }
    ++m_launched;
  }
}

void DistributedGroup::finish() {
  for (auto& b : m_buckets) {  // parameters that received no gradient this step contribute zeros
    for (size_t i : b->params)
      if (!b->filled[i]) {
        const auto [bucket, offset] = m_slot[i];
        b->flat.narrow(0, offset, (*m_params)[i].tensor.numel()).zero_();
        b->filled[i] = true;
        --b->pending;
      }
  }
  launchReady();
  if (m_launchFailure) {  // reported like any collective's failure
    try {
      std::rethrow_exception(m_launchFailure);
    } catch (const std::exception& e) {
      fail(e);
    }
  }
  for (auto& b : m_buckets) complete([&] { return b->work; });
  for (auto& b : m_buckets)
    for (size_t i : b->params) {
      torch::Tensor& p = (*m_params)[i].tensor;
      const torch::Tensor reduced = b->flat.narrow(0, m_slot[i].second, p.numel()).view(p.sizes());
      if (p.grad().defined())
        p.mutable_grad().copy_(reduced);
      else
        p.mutable_grad() = reduced.clone();
    }
}

void DistributedGroup::broadcastFromZero(std::vector<NamedParameter>& params, AdamW& optimizer) {
  std::vector<torch::Tensor> tensors;
  for (NamedParameter& p : params) tensors.push_back(p.tensor.detach());
  for (torch::Tensor& t : optimizer.stateTensorsForSync()) tensors.push_back(t);
  for (torch::Tensor& t : tensors) {  // one at a time: broadcast needs contiguous tensors, parameters are
    std::vector<torch::Tensor> one = {t};
    complete([&] { return m_group->broadcast(one); });
  }
  std::vector<torch::Tensor> steps = {at::full({1}, static_cast<double>(optimizer.steps()), m_scalar)};
  complete([&] { return m_group->broadcast(steps); });
  optimizer.setSteps(static_cast<int64_t>(steps[0].item<double>()));
}

double DistributedGroup::broadcastFromZero(double value) {
  std::vector<torch::Tensor> t = {at::full({1}, value, m_scalar)};
  complete([&] { return m_group->broadcast(t); });
  return t[0].item<double>();
}

std::vector<double> DistributedGroup::allGather(double value) {
  std::vector<torch::Tensor> input = {at::full({1}, value, m_scalar)};
  std::vector<std::vector<torch::Tensor>> output(1);
  for (int r = 0; r < worldSize(); ++r) output[0].push_back(at::zeros({1}, m_scalar));
  complete([&] { return m_group->allgather(output, input); });
  std::vector<double> out;
  for (const torch::Tensor& t : output[0]) out.push_back(t.item<double>());
  return out;
}

double DistributedGroup::sum(double value) {
  std::vector<torch::Tensor> t = {at::full({1}, value, m_scalar)};
  complete([&] { return m_group->allreduce(t); });
  return t[0].item<double>();
}

void DistributedGroup::checkWeightsAgree(const std::vector<NamedParameter>& params, int64_t step) {
  Fnv1a h;
  for (const NamedParameter& p : params) {
    const torch::Tensor c = p.tensor.detach().to(at::kCPU).contiguous();
    h.update(c.data_ptr(), static_cast<size_t>(c.numel() * c.element_size()));
  }
  const std::string hex = h.hex();
  const double low = static_cast<double>(
      std::stoull(hex.substr(hex.size() - 12), nullptr, 16));  // 48 bits, exact in a double
  const std::vector<double> all = allGather(low);
  for (int r = 1; r < worldSize(); ++r)
    if (all[static_cast<size_t>(r)] != all[0])
      throw Error(
          {.what = "the ranks' weights have diverged",
           .where = "step " + std::to_string(step),
           .expected = "identical weights on every rank",
           .found = "rank " + std::to_string(r) + " differs from rank 0",
           .hint =
               "a non-deterministic kernel or a rank that skipped an update; report this with the command"});
}

void DistributedGroup::atStep(int64_t step) {
  m_step = step;
}

// After a failed collective the ranks still alive check in on the store; the ones that do not within a few
// seconds are the ones that stopped. The key carries no step: one collective can complete on one rank and
// fail on another, which then checks in a step later. A group fails once (fail() ends the process's run).
// Rank 0 serves the store: when it is gone, that is the answer.
std::string DistributedGroup::stoppedRanks() {
  std::string out;
  try {
    const std::string prefix = "alive/";
    const std::string me = "1";
    m_store->set(prefix + std::to_string(rank()), std::vector<uint8_t>(me.begin(), me.end()));
    std::this_thread::sleep_for(std::chrono::seconds(3));
    for (int r = 0; r < worldSize(); ++r)
      if (!m_store->check({prefix + std::to_string(r)})) out += (out.empty() ? "" : ", ") + std::to_string(r);
  } catch (const std::exception&) {
    return "0 (its store no longer answers)";
  }
  return out;
}

void DistributedGroup::fail(const std::exception& cause) {
  m_failed = true;
  std::string what = cause.what();
  if (const auto* c = dynamic_cast<const c10::Error*>(&cause)) what = c->what_without_backtrace();
  if (what.size() > 300) what = what.substr(0, 300) + "...";
  const std::string where = "rank " + std::to_string(rank()) + ", after step " + std::to_string(m_step);
  // A collective the backend refused (a tensor it cannot carry, a wrong type) fails alike on every rank and
  // on every resume: this build's error, not a stopped rank -- no use waiting for the others to check in.
  if (dynamic_cast<const c10::ValueError*>(&cause) || dynamic_cast<const c10::TypeError*>(&cause) ||
      dynamic_cast<const c10::NotImplementedError*>(&cause))
    throw Error({.what = "the " + m_backendName + " backend refused a collective",
                 .where = where,
                 .found = what,
                 .hint = "an error in this build, not a stopped rank: resuming fails the same way; report it "
                         "with the command"});
  const std::string stopped = stoppedRanks();
  throw Error({.what = stopped.empty() ? "a collective failed while every rank still answers (a timeout, or "
                                         "this rank's own error)"
                                       : "a collective failed: another rank stopped",
               .where = where,
               .found = what + "; ranks that stopped: " + (stopped.empty() ? "none" : stopped),
               .hint = "`sharelens train --resume --out DIR` continues from the newest complete checkpoint "
                       "(from the start if none was written yet), with any number of ranks"});
}

}  // namespace sharelens
