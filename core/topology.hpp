// A sharing topology (schema "sharelens.topology/1"): the model's shape and every way its weights are
// shared. The trainer builds a LibTorch model from it, core/param_count.hpp counts it, the GUI's designer
// edits it. DESIGN.md sections 3-5 define the patterns; this file defines the data and its validation.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/json_util.hpp"
#include "core/model_view.hpp"

namespace sharelens {

inline constexpr const char* kTopologySchema = "sharelens.topology/1";

struct ModelDims {
  int64_t vocab = 4096;
  int64_t dModel = 256;
  int64_t layers = 8;
  int64_t heads = 8;
  int64_t kvHeads = 4;
  int64_t headDim = 32;  // dModel / heads unless set otherwise
  int64_t ffn = 688;
  int64_t context = 256;
  double ropeTheta = 10000.0;
  double normEps = 1e-5;
};

// Layer -> unique block assignment, with per-layer LoRA on blocks that several layers share.
struct BlockSharing {
  std::vector<int64_t> assign;  // size = layers, values in [0, uniqueBlocks())
  int64_t loraRank = 0;         // 0: strict sharing
  int64_t uniqueBlocks() const;
  // Layers using the same block as `layer` (including it).
  int64_t usersOf(int64_t block) const;
};

enum class HeadSharingMode : uint8_t { None, SharedBase, QkvShared };
std::string_view headSharingName(HeadSharingMode m);

// Within an attention block: W_i = W_base + A_i B_i for every head i (A_i: head_dim x r, B_i: r x d_model).
// SharedBase: one base per projection in `projections` (q, k, v); QkvShared: one base for Q, K and V with
// per-projection, per-head LoRA. r = 0 makes the heads identical.
struct HeadSharing {
  HeadSharingMode mode = HeadSharingMode::None;
  int64_t loraRank = 0;
  std::vector<Proj> projections = {Proj::Q, Proj::K, Proj::V};
};

// MASA: W_l^p = sum_s c_{l,s} D_s^{(g)} for the projections listed; atoms per layer group g.
struct Masa {
  bool enabled = false;
  std::vector<Proj> projections = {Proj::Q, Proj::K, Proj::V, Proj::O};
  int64_t atoms = 4;                         // S per group
  std::vector<std::vector<int64_t>> groups;  // empty: one group of every layer
  bool mlpCoefficients = false;              // c_l = MLP(e_l): block embedding -> 3-layer MLP
  int64_t blockEmbeddingDim = 16;
  int64_t mlpHidden = 64;
  std::vector<std::vector<int64_t>> effectiveGroups(int64_t layers) const;
};

// Tied: one table for input and output (logits = h (E P)^T when factorised). Untied and factorised: the input
// is E P and the output head U Q has its own factors of the same rank r_e, so "untied at r" holds as many
// embedding parameters as "tied at 2r" (the low-rank sharing paper's comparison).
struct Embedding {
  bool tied = true;
  int64_t factorRank = 0;  // r_e > 0: E (V x r_e) P (r_e x d); 0: a plain V x d table
};

// A DirectShare tie (head-wise shareable attention): the target unit reuses the source unit's W_q, W_k and
// W_v. A unit is a head with its own K and V (MHA), or a KV group -- its n_heads / n_kv_heads query heads,
// its key head and value head -- under GQA/MQA; `unit` indexes units within a layer (0 .. n_kv_heads - 1).
struct HeadTie {
  int64_t targetLayer = 0, targetUnit = 0;  // gives up its Q, K and V rows
  int64_t sourceLayer = 0, sourceUnit = 0;  // an earlier layer's unit, kept
};

// PostShare (Eq. 4-5): loss += gamma * L_w, L_w = (1/|N|) sum over the pairs of sum over p in {q, k, v} of
// ||W_p(target) - W_p(source)||_F. The pairs are soft ties: the weights stay separate until shared.
struct PostShare {
  double gamma = 0.0;
  std::vector<HeadTie> pairs;
};

// Where a topology came from (a preset and its parameters), kept for the UI and the record.
struct Provenance {
  std::string pattern;  // "cycle", "bulge", ...; "custom" once edited
  int64_t uniqueBlocks = 0;
  std::string depthMultiplier = "1";
  std::string note;
};

struct Topology {
  std::string name = "untitled";
  ModelDims model;
  Embedding embedding;
  BlockSharing attention;
  BlockSharing ffn;
  HeadSharing headSharing;
  Masa masa;
  std::vector<HeadTie> tiedHeads;  // DirectShare: hard ties
  PostShare postShare;
  Provenance provenance;

  bool masaCovers(Proj p) const;
  bool isUnshared() const;  // vanilla: every block used once, nothing else shared -> saved in HF layout
};

// Throws sharelens::Error naming the field (e.g. "topology.json: attention.assign[3]") on the first problem.
void validateTopology(const Topology& topology, const std::string& where = "topology");
// What a valid topology's user should know: settings that cost parameters without adding capacity (a
// per-head LoRA rank of head_dim or more: [LRS, Eq. 1], rank(A_i B_i) <= min(r, d_head)).
std::vector<std::string> topologyNotes(const Topology& topology);

Json topologyToJson(const Topology& topology);
Topology topologyFromJson(const Json& json, const std::string& where);  // validates
Topology readTopologyFile(const std::filesystem::path& path);
void writeTopologyFile(const Topology& topology, const std::filesystem::path& path);

// Per-head projection row layout: number of heads of a projection (Q: heads, K/V: kvHeads).
// A checkpoint's shape as topology dimensions, with the context to train or run at (RoPE and norm constants
// keep their defaults: they come from the config, not the tensors).
ModelDims modelDimsOf(const ModelShape& shape, int64_t context);
int64_t headsOf(const ModelDims& dims, Proj p);

// DirectShare units in a topology's tensors. With tied units, a layer's Q, K and V are stored compactly: only
// its untied units' rows, in unit order; a tied unit's rows are its source unit's rows in the source layer.
int64_t unitRows(const ModelDims& dims, Proj p);  // Q: (heads / kv_heads) x head_dim; K, V: head_dim
const HeadTie* tieOf(const Topology& t, int64_t layer, int64_t unit);
int64_t tiedUnitsIn(const Topology& t, int64_t layer);
bool storesCompactRows(const Topology& t, Proj p);  // tied units exist and p is Q, K or V
int64_t compactUnitIndex(const Topology& t, int64_t layer, int64_t unit);  // its place among the stored units
// {out, in} of a projection's full matrix (Q: heads*head_dim x d_model, down: d_model x ffn, ...).
std::pair<int64_t, int64_t> projShape(const ModelDims& dims, Proj p);

}  // namespace sharelens
