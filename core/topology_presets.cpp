#include "core/topology_presets.hpp"

#include "core/param_count.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/assets.hpp"
#include "core/error.hpp"

namespace sharelens {
namespace {

constexpr std::string_view kNames[] = {"vanilla", "sequence",  "cycle",    "cycle-rev",
                                       "bulge",   "hierarchy", "universal"};
constexpr std::string_view kNotes[] = {
    "every layer its own weights",
    "consecutive layers share: floor(l U / L)",
    "blocks repeat in order: l mod U",
    "Takase & Kiyono: cycle, then the last U layers in reverse order",
    "our reading: ends unique, middle groups largest in the centre",
    "our reading: first layer unique, groups grow with depth",
    "one block for every layer",
};

[[noreturn]] void impossible(const std::string& what, const std::string& expected, const std::string& found,
                             const std::string& hint) {
  throw Error({.what = what, .where = "sharing preset", .expected = expected, .found = found, .hint = hint});
}

// Splits `total` items into weights.size() contiguous groups of size >= 1, proportional to weights, by
// largest remainder (ties to the earlier group).
std::vector<int64_t> proportionalSizes(int64_t total, const std::vector<double>& weights) {
  const int64_t groups = static_cast<int64_t>(weights.size());
  std::vector<int64_t> sizes(static_cast<size_t>(groups), 1);
  const int64_t spare = total - groups;
  const double sum = std::accumulate(weights.begin(), weights.end(), 0.0);
  std::vector<std::pair<double, int64_t>> remainders;
  int64_t given = 0;
  for (int64_t g = 0; g < groups; ++g) {
    const double exact = spare * weights[static_cast<size_t>(g)] / sum;
    const int64_t whole = static_cast<int64_t>(std::floor(exact));
    sizes[static_cast<size_t>(g)] += whole;
    given += whole;
    remainders.push_back({exact - static_cast<double>(whole), g});
  }
  std::stable_sort(remainders.begin(), remainders.end(), [](auto& a, auto& b) { return a.first > b.first; });
  for (int64_t i = 0; i < spare - given; ++i)
    ++sizes[static_cast<size_t>(remainders[static_cast<size_t>(i)].second)];
  return sizes;
}

std::vector<int64_t> fromSizes(const std::vector<int64_t>& sizes, int64_t firstBlock) {
  std::vector<int64_t> assign;
  for (size_t g = 0; g < sizes.size(); ++g)
    assign.insert(assign.end(), static_cast<size_t>(sizes[g]), firstBlock + static_cast<int64_t>(g));
  return assign;
}

}  // namespace

std::string_view patternName(SharingPattern p) {
  return kNames[static_cast<int>(p)];
}
std::string patternList() {
  std::string out;
  for (size_t i = 0; i < std::size(kAllPatterns); ++i)
    out += (i == 0                             ? ""
            : i + 1 == std::size(kAllPatterns) ? " or "
                                               : ", ") +
           std::string(patternName(kAllPatterns[i]));
  return out;
}

std::string_view patternNote(SharingPattern p) {
  return kNotes[static_cast<int>(p)];
}

std::optional<SharingPattern> parsePattern(std::string_view name) {
  for (SharingPattern p : kAllPatterns)
    if (patternName(p) == name) return p;
  return std::nullopt;
}

std::vector<int64_t> patternAssignment(SharingPattern pattern, int64_t L, int64_t U) {
  if (L < 1) impossible("no layers", ">= 1 layer", std::to_string(L), "increase n_layers");
  if (pattern == SharingPattern::Vanilla) U = L;
  if (pattern == SharingPattern::Universal) U = 1;
  if (U < 1 || U > L)
    impossible("unique blocks out of range", "1.." + std::to_string(L), std::to_string(U),
               "a pattern cannot have more unique blocks than layers");
  std::vector<int64_t> a(static_cast<size_t>(L));
  switch (pattern) {
    case SharingPattern::Vanilla:
    case SharingPattern::Universal:
    case SharingPattern::Sequence:
      for (int64_t l = 0; l < L; ++l)
        a[static_cast<size_t>(l)] = pattern == SharingPattern::Universal ? 0 : l * U / L;
      return a;
    case SharingPattern::Cycle:
      for (int64_t l = 0; l < L; ++l) a[static_cast<size_t>(l)] = l % U;
      return a;
    case SharingPattern::CycleRev: {
      // Takase & Kiyono (2023), Sec. 2: layers 1..M(ceil(N/M) - 1) cycle through the M blocks, the remaining
      // ones take them in reverse order. L = 12, U = 4: 0 1 2 3 0 1 2 3 3 2 1 0.
      const int64_t cycled = U * ((L + U - 1) / U - 1);
      for (int64_t l = 0; l < L; ++l) a[static_cast<size_t>(l)] = l < cycled ? l % U : U - 1 - (l - cycled);
      return a;
    }
    case SharingPattern::Bulge: {
      if (U < 3 || L < U)
        impossible("bulge needs U >= 3 and L >= U", "U >= 3", "U = " + std::to_string(U),
                   "use sequence or cycle for fewer unique blocks");
      std::vector<double> tent;
      const int64_t middle = U - 2;
      for (int64_t g = 0; g < middle; ++g) tent.push_back(static_cast<double>(std::min(g + 1, middle - g)));
      std::vector<int64_t> assign = {0};
      const auto inner = fromSizes(proportionalSizes(L - 2, tent), 1);
      assign.insert(assign.end(), inner.begin(), inner.end());
      assign.push_back(U - 1);
      return assign;
    }
    case SharingPattern::Hierarchy: {
      if (U < 2) impossible("hierarchy needs U >= 2", "U >= 2", "U = 1", "use universal for a single block");
      std::vector<double> growing;
      for (int64_t g = 0; g < U - 1; ++g) growing.push_back(static_cast<double>(g + 1));
      std::vector<int64_t> assign = {0};
      const auto rest = fromSizes(proportionalSizes(L - 1, growing), 1);
      assign.insert(assign.end(), rest.begin(), rest.end());
      return assign;
    }
  }
  return a;
}

std::vector<int64_t> interiorTieAssignment(int64_t L, int64_t k) {
  if (k < 0 || 2 * k >= L)
    impossible("interior FFN tying needs 0 <= k < L/2", "k in 0.." + std::to_string((L - 1) / 2),
               std::to_string(k), "k counts the unique layers kept at each end");
  std::vector<int64_t> a;
  for (int64_t l = 0; l < k; ++l) a.push_back(l);
  for (int64_t l = k; l < L - k; ++l) a.push_back(k);
  for (int64_t l = L - k; l < L; ++l) a.push_back(k + 1 + (l - (L - k)));
  return a;
}

Topology makePreset(const PresetSpec& spec) {
  Topology t;
  t.model = spec.base;
  const std::string& m = spec.depthMultiplier;
  if (m == "skinny") {
    // Table 3's skinny rows are about 2/3 of the width (768 -> 512, 1024 -> 672, 1280 -> 896) at 3-3.75x the
    // depth: ours keeps head_dim, takes 2/3 of the heads (KV heads in proportion, dividing them), scales the
    // FFN with the width, and triples the depth.
    t.model.layers = 3 * spec.base.layers;
    const int64_t heads =
        std::max<int64_t>(1, std::llround(2.0 * static_cast<double>(spec.base.heads) / 3.0));
    int64_t kv = std::max<int64_t>(1, std::llround(static_cast<double>(spec.base.kvHeads * heads) /
                                                   static_cast<double>(spec.base.heads)));
    while (heads % kv != 0) --kv;
    t.model.heads = heads;
    t.model.kvHeads = kv;
    t.model.dModel = spec.base.dModel * heads / spec.base.heads;
    t.model.ffn = std::max<int64_t>(8, std::llround(static_cast<double>(spec.base.ffn * heads) /
                                                    static_cast<double>(spec.base.heads) / 8.0) *
                                           8);
  } else {
    double factor = 1.0;
    try {
      size_t used = 0;
      factor = std::stod(m, &used);
      if (used != m.size()) throw std::invalid_argument(m);
    } catch (const std::exception&) {
      impossible("unknown depth multiplier", "1, 1.5, 3 or skinny", "'" + m + "'",
                 "pick one of the listed values");
    }
    if (factor < 1.0 || factor > 8.0)
      impossible("depth multiplier out of range", "1..8 or skinny", m, "depth multipliers grow the model");
    t.model.layers = std::max<int64_t>(
        1, static_cast<int64_t>(std::llround(static_cast<double>(spec.base.layers) * factor)));
  }
  // Table 3: half the reference's layers as unique blocks (skinny: half its own).
  const int64_t unique = !spec.parameterMatched ? spec.uniqueBlocks
                         : m == "skinny"        ? std::max<int64_t>(1, t.model.layers / 2)
                                                : std::max<int64_t>(1, spec.base.layers / 2);
  // U > L is refused by patternAssignment, never silently clamped.
  t.attention.assign = patternAssignment(spec.pattern, t.model.layers, unique);
  t.ffn.assign =
      spec.shareFfn ? t.attention.assign : patternAssignment(SharingPattern::Vanilla, t.model.layers, 0);
  const bool shared = t.attention.uniqueBlocks() < t.model.layers;
  t.attention.loraRank = shared ? spec.loraRank : 0;
  t.ffn.loraRank = shared && spec.shareFfn ? spec.loraRank : 0;
  t.embedding.tied = spec.tiedEmbeddings;
  t.provenance.pattern = std::string(patternName(spec.pattern));
  t.provenance.uniqueBlocks = t.attention.uniqueBlocks();
  t.provenance.depthMultiplier = m;
  t.provenance.note = std::string(patternNote(spec.pattern));
  t.name = std::string(patternName(spec.pattern)) + "-L" + std::to_string(t.model.layers) + "-U" +
           std::to_string(t.attention.uniqueBlocks()) + (m == "1" ? "" : "-x" + m);
  validateTopology(t, "preset " + t.name);
  if (spec.parameterMatched) {
    PresetSpec unshared;  // the reference: the vanilla preset of the base dims at the base depth
    unshared.pattern = SharingPattern::Vanilla;
    unshared.base = spec.base;
    unshared.tiedEmbeddings = spec.tiedEmbeddings;
    const ParamBudget budget = countParameters(makePreset(unshared));
    const bool skinny = m == "skinny";
    const std::string name = t.name + "-matched";
    t = solveLoraRank(t, skinny ? budget.total : budget.nonEmbedding, "layer",
                      skinny ? ParameterScope::Total : ParameterScope::NonEmbedding);
    t.name = name + "-r" + std::to_string(t.attention.loraRank);
    t.provenance.note += " Parameter-matched to the unshared " + std::to_string(spec.base.layers) +
                         "-layer model as [LRS] Table 3 builds it (U = L_base / 2, LoRA rank solved).";
  }
  return t;
}

Topology debugTopology() {
  PresetSpec spec;
  spec.pattern = SharingPattern::Cycle;
  spec.uniqueBlocks = 2;
  spec.base = ModelDims{.vocab = 512,
                        .dModel = 64,
                        .layers = 4,
                        .heads = 4,
                        .kvHeads = 2,
                        .headDim = 16,
                        .ffn = 160,
                        .context = 64};
  spec.loraRank = 4;
  Topology t = makePreset(spec);
  t.name = "debug";
  return t;
}

std::vector<std::filesystem::path> shippedTopologies() {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(assetsDirectory() / "topologies", ec), end; !ec && it != end;
       it.increment(ec))
    if (it->path().extension() == ".json") files.push_back(it->path());
  std::sort(files.begin(), files.end());
  return files;
}

Topology demoTopology() {
  return readTopologyFile(assetsDirectory() / "topologies" / "demo.json");
}

}  // namespace sharelens
