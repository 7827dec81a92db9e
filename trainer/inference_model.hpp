// A forward pass over a loaded checkpoint (trainer-internal: includes torch), built from the canonical
// model view plus the family's config semantics, with hooks that capture every layer's residual stream and
// attention maps. Families:
//   Llama / Mistral / SmolLM   RMSNorm, SwiGLU, RoPE (rope_theta; "llama3" and "linear" rope_scaling), GQA
//   Qwen2                      as Llama, with q/k/v biases
//   Gemma 3                    embeddings x sqrt(hidden); RMSNorm with (1 + w); RMS q/k norms; sandwich
//   norms;
//                              GeGLU (tanh GELU); query_pre_attn_scalar; sliding-window layers with their own
//                              RoPE base (rope_local_base_freq), global layers with rope_theta and its
//                              scaling
//   GPT-2                      learned positions, LayerNorm with bias, biased projections, tanh GELU MLP
//   Phi-3                      as Llama (fused weights split by the view); sliding_window on every layer;
//                              "longrope" rope_scaling (short factors up to the original context, long
//                              beyond)
//   ShareLens                  as Llama, each layer's effective matrices composed from the shared weights
#pragma once

#include <torch/types.h>

#include <functional>
#include <optional>
#include <vector>

#include "core/arch/family.hpp"
#include "core/checkpoint.hpp"
#include "core/model_view.hpp"

namespace sharelens {

// The FFN's activation as Hugging Face's ACT2FN names it: silu / swish; gelu (exact, erf); gelu_new,
// gelu_pytorch_tanh and gelu_fast (the tanh approximation); relu.
enum class Activation : uint8_t { Silu, GeluTanh, GeluErf, Relu };

struct ArchitectureParams {
  Family family = Family::Llama;
  ForwardTraits traits;                      // the family's (core/arch/family.hpp)
  Activation activation = Activation::Silu;  // config.json's, else the family's default
  double normEps = 1e-5;
  double ropeTheta = 10000.0;
  double ropeLocalTheta = 10000.0;  // Gemma 3 sliding-window layers
  std::string ropeScaling;          // "", "llama3", "linear" or "longrope"
  double ropeFactor = 1.0, lowFreqFactor = 1.0, highFreqFactor = 4.0, originalContext = 8192;
  // longrope (Phi-3's 128k models): per-frequency divisors, the short ones for windows of at most
  // originalContext tokens, the long ones beyond; cos and sin are scaled by ropeAttentionFactor.
  std::vector<double> shortFactors, longFactors;
  double ropeAttentionFactor = 1.0;
  double attentionScale = 0.0;      // 0: 1 / sqrt(head_dim)
  int64_t slidingWindow = 0;        // 0: none
  std::vector<bool> slidingLayers;  // per layer: sliding-window attention (Gemma 3; every layer of Phi-3)
};

ArchitectureParams architectureParams(const Checkpoint& checkpoint, const ModelView& view);

// The MASA paper's grouping probe: p_l = softmax(W_U h̄_l) for each block's mean output h̄_l (`means` [layers,
// d], double), W_U the output projection [V, d]; returns KL(p_l || p_{l+1}) for l = 0..layers-2. With
// `means` [samples, layers, d] (each sample's own mean), p_l is the average over samples of the samples'
// softmaxes, as the paper computes it ("average across samples"). The logits
// are computed in double a slice of the vocabulary at a time (a V x d double copy of W_U would not fit).
std::vector<double> meanStateKlDrift(const torch::Tensor& means, const torch::Tensor& outputTable);

// The lenses of that probe: "per-sample" (the paper's), "mean-state" (ours, one mean over all tokens) and
// "per-token" (the forward probe's per-token KL); anything else is a named error.
void checkLogitLens(const std::string& lens);
// What the probe takes from each window's mean block outputs `windowMeans` [windows, layers, d] of
// `windowTokens` tokens each: per-sample, the windows' means as they are; mean-state, their token-weighted
// mean [layers, d].
torch::Tensor lensMeans(const torch::Tensor& windowMeans, const std::vector<int64_t>& windowTokens,
                        const std::string& lens);

class InferenceModel {
 public:
  // Resident: every weight is loaded now (forward() needs it). Streamed: only the norms and position tables;
  // a layer's weights are read by loadLayer() and dropped by unloadLayer(), and the embedding and output head
  // are read a slice of rows at a time -- for passes that take many tokens through one layer at a time
  // (calibration, activations) in little more memory than one layer. A streamed model reads through
  // `checkpoint` and `view` later: both must outlive it.
  enum class Weights { Resident, Streamed };
  InferenceModel(const Checkpoint& checkpoint, const ModelView& view, torch::Device device,
                 Weights weights = Weights::Resident);

  struct Trace {
    std::vector<torch::Tensor> residual;   // layers + 1 tensors [B, T, d]: embeddings, then after each layer
    std::vector<torch::Tensor> attention;  // layers tensors [B, H, T, T] (when asked for)
    // Called per layer with the input Q, K and V share (the normed residual, [B, T, d]) and the input of O
    // (the heads' outputs, [B, T, H hd]) -- what calibration accumulates. Optional.
    std::function<void(int64_t layer, const torch::Tensor& attentionInput, const torch::Tensor& outputInput)>
        tap;
  };

  // tokens [B, T] int64 -> final hidden states [B, T, d] (after the last layer, before the final norm).
  // Resident only.
  torch::Tensor forward(const torch::Tensor& tokens, Trace* trace = nullptr,
                        bool captureAttention = false) const;
  // The same in pieces (both modes): the embeddings of `tokens` [B, T] -> [B, T, d] (appended to
  // trace->residual), then block `layer` on x [B, T, d] (its output appended; the tap called; a streamed
  // layer must be loaded).
  torch::Tensor embed(const torch::Tensor& tokens, Trace* trace = nullptr) const;
  // `ids` cut into consecutive windows of `window` tokens (the last may be shorter), each embedded as its own
  // sequence: [1, n, d] each -- the start of a pass that advances many windows a layer at a time.
  std::vector<torch::Tensor> embedWindows(const std::vector<int>& ids, int64_t window) const;
  torch::Tensor runLayer(int64_t layer, const torch::Tensor& x, Trace* trace = nullptr,
                         bool captureAttention = false) const;
  void loadLayer(int64_t layer);    // streamed: read layer's weights (no-op when resident)
  void unloadLayer(int64_t layer);  // streamed: drop them again
  // The MASA grouping probe on block outputs averaged over tokens (`means` [layers, d], or [samples, layers,
  // d] for the paper's average of the samples' distributions): meanStateKlDrift()
  // with this model's output projection (a streamed model reads it a slice at a time).
  std::vector<double> klDriftOfMeans(const torch::Tensor& means) const;
  // The logit lens: the final norm and the output head applied to any residual stream [.., d] -> [.., V]
  // (a streamed model reads the head a slice at a time, on every call).
  torch::Tensor logits(const torch::Tensor& hidden) const;

  int64_t layers() const { return static_cast<int64_t>(m_layers.size()); }
  int64_t heads() const { return m_shape.heads; }
  int64_t context() const { return m_shape.context; }
  int64_t vocab() const { return m_shape.vocab; }
  const torch::Tensor& embeddingTable() const { return m_embedding; }  // [V, d]
  const torch::Tensor& outputTable() const { return m_outputHead; }  // [V, d]; the embedding itself when tied
  // Replaces the token embedding and output head (the same tensor for a tied model).
  void setEmbeddingTables(torch::Tensor embedding, torch::Tensor outputHead) {
    m_embedding = std::move(embedding);
    m_outputHead = std::move(outputHead);
  }
  torch::Device device() const { return m_device; }
  const ArchitectureParams& params() const { return m_params; }

 private:
  struct Norm {
    torch::Tensor weight, bias;  // bias: LayerNorm only
  };
  struct Layer {
    torch::Tensor q, k, v, o, gate, up, down;  // [out, in]
    torch::Tensor bq, bk, bv, bo, bup, bdown;  // optional
    std::optional<Norm> attnIn, attnOut, ffnIn, ffnOut, qNorm, kNorm;
    torch::Tensor cos, sin;  // [context, head_dim] for this layer's RoPE
    bool sliding = false;
  };
  struct RopeTables {
    torch::Tensor cos, sin;  // [positions, head_dim]
  };

  torch::Tensor norm(const torch::Tensor& x, const Norm& n) const;
  const MatrixExpr& outputHeadView() const;  // W_U in the checkpoint: the embedding itself when tied
  // Streamed: W_U read a slice of rows at a time ([n, d] float on `device`), its pages dropped after each.
  void forEachOutputHeadSlice(torch::Device device,
                              const std::function<void(const torch::Tensor&)>& use) const;
  void loadWeights(Layer& layer, const LayerView& view) const;
  void checkTokenIds(const torch::Tensor& tokens) const;  // every id in [0, vocab), else a named error
  void checkWindow(int64_t tokens) const;
  torch::Tensor attention(const Layer& layer, const torch::Tensor& h, torch::Tensor* probs,
                          torch::Tensor* outputInput) const;
  torch::Tensor mlp(const Layer& layer, const torch::Tensor& h) const;

  static constexpr int64_t kMaxRopeTable = 32768;  // positions with RoPE tables (min(context, this))

  const Checkpoint& m_ckpt;
  const ModelView& m_view;
  Weights m_mode;
  ModelShape m_shape;
  int64_t m_ropeLength = 0;
  RopeTables m_longRope;  // longrope's tables for windows longer than its original context; else undefined
  ArchitectureParams m_params;
  torch::Device m_device;
  torch::Tensor m_embedding, m_positions, m_outputHead;
  Norm m_finalNorm;
  std::vector<Layer> m_layers;
};

}  // namespace sharelens
