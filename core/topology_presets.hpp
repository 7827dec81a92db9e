// Sharing-pattern presets (DESIGN.md section 5), generated from (pattern, L, U, depth multiplier).
//   Vanilla   assign[l] = l (U = L)         Universal  all 0 (U = 1)
//   Sequence  floor(l U / L)                Cycle      l mod U
//   CycleRev  the first U (ceil(L/U) - 1) layers cycle (l mod U), the rest count down from U-1
//             (Takase & Kiyono): L = 12, U = 4 gives 0 1 2 3 0 1 2 3 3 2 1 0
//   Bulge     first and last layers unique; the middle L-2 layers in U-2 contiguous groups whose sizes follow
//             a tent, largest in the centre (U >= 3)
//   Hierarchy first layer unique; the other L-1 layers in U-1 contiguous groups whose sizes grow linearly
//             with depth (U >= 2)
// Bulge and Hierarchy are our readings of the papers' figure-only descriptions; the UI and each topology's
// provenance note say so. Depth multipliers keep U fixed and grow L; "skinny" triples L at 2/3 of the heads
// (head_dim kept, so d_model narrows to 2/3), the FFN scaled with the width (makePreset).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/topology.hpp"

namespace sharelens {

enum class SharingPattern : uint8_t { Vanilla, Sequence, Cycle, CycleRev, Bulge, Hierarchy, Universal };
inline constexpr SharingPattern kAllPatterns[] = {
    SharingPattern::Vanilla, SharingPattern::Sequence,  SharingPattern::Cycle,    SharingPattern::CycleRev,
    SharingPattern::Bulge,   SharingPattern::Hierarchy, SharingPattern::Universal};
std::string_view patternName(SharingPattern p);  // "vanilla", "sequence", "cycle", "cycle-rev", ...
std::optional<SharingPattern> parsePattern(std::string_view name);
std::string patternList();                       // "vanilla, sequence, ... or universal" (for messages)
std::string_view patternNote(SharingPattern p);  // one line for the UI

// Throws a named Error for impossible combinations (U > L, Bulge with U < 3, ...).
std::vector<int64_t> patternAssignment(SharingPattern pattern, int64_t layers, int64_t unique);

// FFN tying of the interior layers: layers [k, L-k) share one FFN block, the k first and k last are unique.
std::vector<int64_t> interiorTieAssignment(int64_t layers, int64_t k);

struct PresetSpec {
  SharingPattern pattern = SharingPattern::Cycle;
  int64_t uniqueBlocks = 4;
  std::string depthMultiplier = "1";  // "1", "1.5", "3", "skinny"
  ModelDims base;                     // dims before the depth multiplier
  int64_t loraRank = 8;               // per-layer LoRA on shared blocks
  bool shareFfn = true;               // FFN follows the same pattern (else unique per layer)
  bool tiedEmbeddings = true;
  // [LRS] Table 3 ("All configurations are parameter-matched"), as we read it -- the paper states neither U
  // nor how r is solved; this reading reproduces its printed ranks in 9 of 10 rows: the unique blocks are
  // half the reference's layers (U = L_base / 2; skinny: half its own layers), every layer carries LoRA on
  // its attention and FFN, and the rank is solved so the model has the parameters of the unshared reference
  // (`base` at its own depth): non-embedding parameters at the same width, all parameters for skinny, whose
  // smaller embeddings free budget as in the paper's skinny rows. uniqueBlocks and loraRank are then
  // ignored.
  bool parameterMatched = false;
};

Topology makePreset(const PresetSpec& spec);

// The tiny debug preset (a few hundred thousand parameters; tests and smoke runs).
Topology debugTopology();

// The topologies ShareLens ships, assets/topologies/*.json sorted by name: one per sharing pattern at the
// demo's width with L = 12, U = 4 (written by tests/tools/make_topology_assets.sh) and the demo pair's
// design.
std::vector<std::filesystem::path> shippedTopologies();

// The demo pair's design and the default width of `topology` and the Designer: assets/topologies/demo.json
// (Cycle, L = 6, U = 3, d_model 128). Throws a named Error when the file is missing or invalid.
Topology demoTopology();

}  // namespace sharelens
