// The canonical view of a decoder checkpoint, whatever family wrote it.
//
// Every weight matrix is in PyTorch Linear orientation, out x in:
//   Q  [n_heads * head_dim, hidden]      per head h: rows [h*hd, (h+1)*hd)      -> head_dim x hidden
//   K,V[n_kv_heads * head_dim, hidden]   per KV head j: rows [j*hd, (j+1)*hd)  -> head_dim x hidden
//   O  [hidden, n_heads * head_dim]      per head h: cols [h*hd, (h+1)*hd)      -> hidden x head_dim
//   Gate, Up [ffn, hidden]; Down [hidden, ffn]; embedding and output head [vocab, hidden].
//
// A matrix is a MatrixExpr: a sum of terms over stored tensors. A plain checkpoint has one term that is a
// slice of one tensor (transposed for GPT-2's Conv1D [in, out] storage); a ShareLens checkpoint expresses
// W_l = W_shared + B_l A_l (LoRA) or W_l = sum_s c_ls D_s (MASA) the same way. Nothing is read until
// materialize() is called.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/checkpoint.hpp"
#include "core/float_matrix.hpp"

namespace sharelens {

enum class Proj : uint8_t { Q, K, V, O, Gate, Up, Down };
inline constexpr int kProjCount = 7;
inline constexpr Proj kAllProjs[kProjCount] = {Proj::Q,    Proj::K,  Proj::V,   Proj::O,
                                               Proj::Gate, Proj::Up, Proj::Down};
std::string_view projName(Proj p);  // "q", "k", "v", "o", "gate", "up", "down"
std::optional<Proj> parseProj(std::string_view name);
bool isAttentionProj(Proj p);

// The architecture families, each read by one adapter (core/arch/family_*.cpp, listed in
// core/arch/family_list.def).
enum class Family : uint8_t {
#define SHARELENS_FAMILY(id, adapter) id,
#include "core/arch/family_list.def"
#undef SHARELENS_FAMILY
};
std::string_view familyName(Family f);  // its adapter's name: "llama", "phi3", ...

enum class TensorRole : uint8_t { Embedding, Position, Attention, Ffn, Norm, OutputHead, Lora, Masa, Other };
inline constexpr int kTensorRoleCount = 9;
std::string_view roleName(TensorRole r);

// rows x cols of one stored tensor, in canonical coordinates. For a rank-3 tensor, `batch` picks the
// matrix along dim 0 (MASA atoms [S, out, in]).
struct TensorSlice {
  std::string tensor;
  bool transposed = false;  // canonical = stored^T (stored [in, out])
  int64_t batch = -1;
  int64_t row0 = 0, rows = 0, col0 = 0, cols = 0;
};

// A scalar stored in a tensor at a flat element index (a MASA coefficient c_ls).
struct ScalarRef {
  std::string tensor;
  int64_t index = 0;
};

// scale * coefficient * left (* right), added into the result at (atRow, atCol): left is rows x k, right
// is k x cols. A term may cover only a block of the matrix (one head's rows, for instance).
struct MatrixTerm {
  float scale = 1.0f;
  std::optional<ScalarRef> coefficient;
  TensorSlice left;
  std::optional<TensorSlice> right;
  int64_t atRow = 0, atCol = 0;

  int64_t rows() const { return left.rows; }
  int64_t cols() const { return right ? right->cols : left.cols; }
};

struct MatrixExpr {
  int64_t rows = 0, cols = 0;
  std::vector<MatrixTerm> terms;  // the matrix is their sum; uncovered entries are zero

  static MatrixExpr fromTensor(std::string tensor, int64_t rows, int64_t cols, bool transposed = false);
  MatrixExpr sliceRows(int64_t row0, int64_t count) const;
  MatrixExpr sliceCols(int64_t col0, int64_t count) const;
  std::vector<std::string> tensorNames() const;
  bool isPlainTensor() const;    // one unscaled term, a whole stored 2-D tensor
  std::string describe() const;  // "model.layers.0.self_attn.q_proj.weight[0:64, :]" style
};

// Reads (and, for sums and products, computes) the matrix. Checks every slice against the stored shape.
FloatMatrix materialize(const Checkpoint& checkpoint, const MatrixExpr& expr);
// materialize(), then a named Error (file, tensor slice, position) if any value is NaN or Inf: what every
// analysis and forward pass reads its weights through, so LAPACK never meets a NaN.
FloatMatrix materializeFinite(const Checkpoint& checkpoint, const MatrixExpr& expr);

struct ModelShape {
  int64_t vocab = 0;
  int64_t hidden = 0;
  int64_t layers = 0;
  int64_t heads = 0;    // query heads; 0 when unknown (no config.json)
  int64_t kvHeads = 0;  // key/value heads (GQA); 0 when unknown
  int64_t headDim = 0;  // 0 when unknown
  int64_t ffn = 0;
  int64_t context = 0;
  bool tiedEmbeddings = false;
  bool gatedFfn = true;  // SwiGLU (gate, up, down); false for GPT-2 (up, down)
};

// A contiguous run of a 1-D tensor (a bias, or one third of GPT-2's packed c_attn bias).
struct VectorSlice {
  std::string tensor;
  int64_t offset = 0;
  int64_t length = 0;
};
std::vector<float> materialize(const Checkpoint& checkpoint, const VectorSlice& slice);

// Where each normalisation sits in a block. Llama: AttnIn, FfnIn. Gemma 3: all six. GPT-2: AttnIn, FfnIn
// (LayerNorm with bias).
enum class NormSlot : uint8_t { AttnIn, AttnOut, FfnIn, FfnOut, QNorm, KNorm };
inline constexpr int kNormSlotCount = 6;
std::string_view normSlotName(NormSlot slot);

struct NormRef {
  std::string weight;
  std::optional<std::string> bias;  // LayerNorm bias (GPT-2); RMSNorm has none
};

struct LayerView {
  int64_t index = 0;
  std::array<std::optional<MatrixExpr>, kProjCount> proj;
  std::array<std::optional<VectorSlice>, kProjCount> bias;  // Qwen2: q, k, v; GPT-2: all
  std::array<std::optional<NormRef>, kNormSlotCount> norm;

  bool has(Proj p) const { return proj[static_cast<int>(p)].has_value(); }
  const std::optional<NormRef>& normAt(NormSlot s) const { return norm[static_cast<int>(s)]; }
  const MatrixExpr& at(Proj p) const;
  std::vector<std::string_view> rolesFound() const;  // {"q", "k", ...} of the present projections
};

struct ModelView {
  std::string source;  // the path the checkpoint came from
  Family family = Family::Llama;
  std::string modelType;  // config.json model_type, or the family name when inferred
  ModelShape shape;
  std::optional<MatrixExpr> embedding;          // vocab x hidden
  std::optional<MatrixExpr> outputHead;         // vocab x hidden; equal to embedding when tied
  std::optional<MatrixExpr> positionEmbedding;  // GPT-2's learned positions [context, hidden]
  std::optional<NormRef> finalNorm;
  std::vector<LayerView> layers;

  std::map<std::string, TensorRole> roles;  // every claimed tensor and its role
  std::vector<std::string> missing;         // expected by the family, absent from the checkpoint
  std::vector<std::string> unexpected;      // present but not understood
  std::vector<std::string> ignored;         // known non-parameters (attention mask buffers, vision tower)
  std::vector<std::string> notes;           // things the user should know ("no config.json: heads unknown")

  int64_t headCount(Proj p) const;  // Q, O: heads; K, V: kvHeads; 0 for FFN projections
  // Per-head matrix (GQA-aware): Q/K/V give head_dim x hidden, O gives hidden x head_dim.
  MatrixExpr headMatrix(int64_t layer, Proj p, int64_t head) const;
  bool hasHeads() const { return shape.heads > 0 && shape.headDim > 0; }
};

struct RoleCounts {
  std::array<int64_t, kTensorRoleCount> params{};
  int64_t total = 0;
  int64_t of(TensorRole r) const { return params[static_cast<int>(r)]; }
};
RoleCounts countParameters(const Checkpoint& checkpoint, const ModelView& view);

}  // namespace sharelens
