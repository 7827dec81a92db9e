// sharelens diff A B [--top N] [--json FILE]
// Tensor by tensor, how checkpoint B differs from A (core/checkpoint_diff.hpp): the most changed first.
#include <cmath>
#include <cstdio>

#include "app/cli/commands.hpp"
#include "core/atomic_file.hpp"
#include "core/checkpoint_diff.hpp"
#include "core/run_dir.hpp"

namespace sharelens::cli {
namespace {

// JSON has no NaN or infinity: null, as the other reports write them.
Json number(double v) {
  return std::isfinite(v) ? Json(v) : Json(nullptr);
}

Json toJson(const CheckpointDifference& d, const std::string& a, const std::string& b) {
  Json tensors = Json::array();
  for (const TensorDifference& t : d.tensors)
    tensors.push_back({{"name", t.name},
                       {"shape", t.shape},
                       {"relative_frobenius", number(t.relative)},
                       {"cosine", number(t.cosine)},
                       {"max_abs", number(t.maxAbs)},
                       {"norm_a", number(t.normA)},
                       {"norm_b", number(t.normB)}});
  return {{"a", a},
          {"b", b},
          {"tensors", tensors},
          {"only_in_a", d.onlyInA},
          {"only_in_b", d.onlyInB},
          {"shape_mismatch", d.shapeMismatch}};
}

}  // namespace

int runDiff(Args& args) {
  const std::string a = args.positional("A (a checkpoint, model directory or run)");
  const std::string b = args.positional("B (the same)");
  const auto top = args.integer("top", 1, 1'000'000).value_or(30);
  const auto jsonOut = args.option("json");
  args.finish();
  const auto first = Checkpoint::open(resolveModelPath(a));
  const auto second = Checkpoint::open(resolveModelPath(b));
  const CheckpointDifference d = diffCheckpoints(*first, *second);
  std::printf("%zu tensors compared, the most changed first (||A - B||_F / ||A||_F, cosine, max |A - B|):\n",
              d.tensors.size());
  for (size_t i = 0; i < d.tensors.size() && static_cast<int64_t>(i) < top; ++i) {
    const TensorDifference& t = d.tensors[i];
    std::printf("  %-48s %10.4g  %8.5f  %10.4g\n", t.name.c_str(), t.relative, t.cosine, t.maxAbs);
  }
  if (static_cast<int64_t>(d.tensors.size()) > top)
    std::printf("  ... %lld more (--top N, or --json FILE for all)\n",
                static_cast<long long>(static_cast<int64_t>(d.tensors.size()) - top));
  for (const auto& [what, names] :
       {std::pair{"only in A", &d.onlyInA}, {"only in B", &d.onlyInB}, {"of other shapes", &d.shapeMismatch}})
    if (!names->empty()) {
      std::printf("%zu tensors %s:", names->size(), what);
      for (size_t i = 0; i < names->size() && i < 10; ++i)
        std::printf("%s %s", i ? "," : "", (*names)[i].c_str());
      std::printf("%s\n", names->size() > 10 ? ", ..." : "");
    }
  if (jsonOut) writeFileAtomically(*jsonOut, toJson(d, a, b).dump(2) + "\n");
  return 0;
}

}  // namespace sharelens::cli
