// Compressed checkpoints (issue 10): a Hugging Face checkpoint whose attention projections were replaced by
// MASA's Matrix PCA atoms and refined residuals, or by the SVD baseline's low-rank factors. The file keeps
// the family's own layout for everything else (embeddings, norms, FFN, biases, config.json, tokenizer) and
// stores each replaced matrix only in its compressed form -- nothing twice:
//
//   compressed.{p}.group{g}.atoms         [B_g, out, in]   Matrix PCA atoms D_s of projection p, layer group
//   g compressed.{p}.group{g}.coefficients  [|g|, B_g]       c_{l,s} = tr(D_s^T W_l) (F32), row = layer of
//   the group compressed.layers.{l}.{p}.B           [out, r]         the low-rank term B A of layer l's p:
//   compressed.layers.{l}.{p}.A           [r, in]          MASA's refined residual, or the SVD baseline's
//   factors
//
// so that W_l = sum_s c_{l,s} D_s + B_l A_l. The metadata key "sharelens.compressed" holds the record below
// (method, groups, atoms, ranks, target and achieved parameter counts, calibration, and the original tensors
// that were dropped with the layout to restore them). openModelView() applies the record to the family's
// view, so the analyses, the forward pass, eval and export-hf see each layer's effective matrices.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/json_util.hpp"
#include "core/model_view.hpp"

namespace sharelens {

inline constexpr const char* kCompressedMetadataKey = "sharelens.compressed";
inline constexpr const char* kCompressedSchema = "sharelens.compressed/1";

// (out, in) of an attention projection in canonical orientation: Q [H hd, d], K and V [KV hd, d], O [d, H
// hd].
std::pair<int64_t, int64_t> attentionShape(const ModelShape& shape, Proj p);

std::string compressedAtomsName(Proj p, int64_t group);
std::string compressedCoefficientsName(Proj p, int64_t group);
std::string compressedFactorName(int64_t layer, Proj p, char which);  // which: 'A' or 'B'

// An original tensor the compressed file no longer stores, and where each canonical matrix sat in it (GPT-2's
// packed c_attn holds Q, K and V as column blocks of a transposed [in, 3 out] tensor).
struct DroppedTensor {
  struct Part {
    int64_t layer = 0;
    Proj proj = Proj::Q;
    int64_t row0 = 0;  // first row of the canonical (out x in) matrix inside the canonical view of the tensor
    bool transposed = false;  // stored as canonical^T
  };
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<Part> parts;
};

struct CompressionRecord {
  std::string method;      // a name of kCompressionMethods (core/compression_methods.hpp)
  double targetRatio = 0;  // retained fraction of the compressed projections' parameters
  std::vector<Proj> projections;
  std::vector<std::vector<int64_t>> groups;    // layer groups (MASA); empty for svd
  std::vector<int64_t> atoms;                  // per group: B_g (MASA); empty for svd
  std::map<Proj, std::vector<int64_t>> ranks;  // per projection, per layer: rank of the B A term (0: none)
  std::vector<double> beta;        // per group: MASA's residual budget beta_g (0: not refined); empty for svd
  std::string budget;              // MASA: "exact" or "eq13"; empty when written before issue 36
  std::string allocation;          // MASA: "tail-energy" or "by-shape"; empty when written before issue 36
  int64_t originalParameters = 0;  // of the compressed projections, before
  int64_t targetParameters = 0;
  int64_t parameters = 0;  // stored for them now: atoms + coefficients + factors
  std::vector<DroppedTensor> dropped;
  Json calibration = Json::object();  // tokens, source, damping per layer
  std::string source;                 // the checkpoint compressed

  int64_t groupOf(int64_t layer) const;  // -1 when the layer is in no group
};

Json compressionRecordToJson(const CompressionRecord& r);
CompressionRecord compressionRecordFromJson(const Json& j, const std::string& where);
std::optional<CompressionRecord> compressionRecordOf(const Checkpoint& checkpoint);

// Replaces the compressed projections of `view` (built by the checkpoint's family, which found their original
// tensors missing) by their compressed expressions, checks every stored shape against the record (named
// errors), and files the new tensors under their roles (atoms and coefficients: masa; factors: lora).
void applyCompressionOverlay(const Checkpoint& checkpoint, ModelView& view);

// export-hf of a compressed checkpoint: the original layout again, every dropped tensor rebuilt from the
// compressed matrices it held (in its original dtype and orientation), the compressed tensors and the record
// removed, config.json and the tokenizer copied -- a plain checkpoint of the family that any tool loads.
void writeDecompressedCheckpoint(const Checkpoint& checkpoint, const ModelView& view,
                                 const std::filesystem::path& outDir);

}  // namespace sharelens
