// Gloo all-reduce over loopback (issue 12's communication cost): two processes (this one and a fork), one
// TCPStore rendezvous, and the bucketed gradient all-reduce that distributed training runs --
// DistributedGroup itself, on a parameter set the size of the benchmark model's gradients -- timed over
// repeated steps. Reports the time per step and the bus bandwidth 2 (n - 1) / n x bytes / time (the ring
// all-reduce's traffic). usage: bench_allreduce [--floats N] [--repeats R] [--json OUT]
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "core/atomic_file.hpp"
#include "core/json_util.hpp"
#include "trainer/distributed.hpp"
#include "trainer/torch_compat.hpp"

using namespace sharelens;

int main(int argc, char** argv) {
  int64_t floats = 11'700'000;  // bench_train's ~11.7M-parameter model
  int repeats = 10;
  std::string json;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--floats")) floats = std::stoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--repeats")) repeats = std::stoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--json")) json = argv[i + 1];
  }
  const int port = 29000 + static_cast<int>(::getpid() % 1000);
  const pid_t child = ::fork();
  DistributedConfig config;
  config.rank = child == 0 ? 1 : 0;
  config.worldSize = 2;
  config.localRank = config.rank;
  config.localWorldSize = 2;
  config.masterPort = port;
  const ComputeThreads computeThreads(1);
  DistributedGroup group(config, torch::kCPU);
  // Parameters shaped like a model's (matrices of ~0.3M floats) so that bucketing behaves as in training.
  std::vector<NamedParameter> params;
  for (int64_t left = floats; left > 0;) {
    const int64_t n = std::min<int64_t>(left, 320 * 864);
    params.push_back({"p" + std::to_string(params.size()), at::randn({n}).set_requires_grad(true)});
    left -= n;
  }
  group.attach(params);
  auto step = [&] {
    group.begin(0.5);
    for (NamedParameter& p : params)
      (p.tensor * 1.0f).sum().backward();  // the hooks fill and launch the buckets
    group.finish();
    for (NamedParameter& p : params) p.tensor.mutable_grad().zero_();
  };
  step();  // warm-up: connections, buffers
  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < repeats; ++r) step();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / repeats;
  if (child == 0) std::_Exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  const double bytes = static_cast<double>(floats) * 4.0;
  const double busBandwidth = 2.0 * (2 - 1) / 2.0 * bytes / seconds;
  std::printf(
      "all-reduce of %.1f MB of gradients over 2 ranks (Gloo, loopback): %.1f ms per step, bus bandwidth "
      "%.2f GB/s\n",
      bytes / 1e6, seconds * 1e3, busBandwidth / 1e9);
  if (!json.empty())
    writeFileAtomically(json, Json{{"floats", floats},
                                   {"bytes", bytes},
                                   {"seconds_per_step", seconds},
                                   {"bus_bandwidth_bytes_per_s", busBandwidth}}
                                      .dump(2) +
                                  "\n");
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
