#include "core/hf_export.hpp"

#include "core/arch/family.hpp"
#include "core/atomic_file.hpp"
#include "core/compressed_checkpoint.hpp"
#include "core/error.hpp"
#include "core/sharelens_names.hpp"

namespace fs = std::filesystem;

namespace sharelens {

Json llamaConfigFor(const Topology& t) {
  const ModelDims& m = t.model;
  return {{"architectures", {"LlamaForCausalLM"}},
          {"attention_bias", false},
          {"attention_dropout", 0.0},
          {"bos_token_id", 1},
          {"eos_token_id", 2},
          {"head_dim", m.headDim},
          {"hidden_act", "silu"},
          {"hidden_size", m.dModel},
          {"initializer_range", 0.02},
          {"intermediate_size", m.ffn},
          {"max_position_embeddings", m.context},
          {"mlp_bias", false},
          {"model_type", "llama"},
          {"num_attention_heads", m.heads},
          {"num_hidden_layers", m.layers},
          {"num_key_value_heads", m.kvHeads},
          {"rms_norm_eps", m.normEps},
          {"rope_scaling", nullptr},
          {"rope_theta", m.ropeTheta},
          {"tie_word_embeddings", t.embedding.tied},
          {"torch_dtype", "float32"},
          {"vocab_size", m.vocab}};
}

Topology topologyOfCheckpoint(const Checkpoint& ckpt, const ModelView& view, int64_t maxContext) {
  Topology t;
  if (auto it = ckpt.metadata().find(names::kTopologyMetadataKey);
      it != ckpt.metadata().end() && view.family == Family::ShareLens) {
    t = topologyFromJson(parseJsonStrict(it->second, "topology metadata"),
                         ckpt.path().string() + ": topology");
  } else {
    const bool llama = view.family == Family::Llama;
    bool biases = false;
    for (const LayerView& l : view.layers)
      for (const auto& b : l.bias) biases = biases || b.has_value();
    if (!llama || biases || !view.shape.gatedFfn || !view.hasHeads())
      throw Error(
          {.what = "only Llama-layout and ShareLens checkpoints can be post-trained",
           .where = ckpt.path().string(),
           .expected = "a Llama-style decoder (RMSNorm, SwiGLU, RoPE, no biases)",
           .found = std::string(familyName(view.family)) + (biases ? " with biases" : ""),
           .hint = "Qwen2, Gemma 3 and GPT-2 checkpoints can be analysed and evaluated, not post-trained"});
    const ModelShape& s = view.shape;
    t.name = ckpt.directory().filename().string();
    t.model = modelDimsOf(s, s.context > 0 ? s.context : maxContext);
    if (ckpt.config()) {
      const JsonObject c(*ckpt.config(), ckpt.configPath()->string());
      t.model.ropeTheta = c.optionalNumber("rope_theta").value_or(10000.0);
      t.model.normEps = c.optionalNumber("rms_norm_eps").value_or(1e-6);
      if (const auto act = c.optionalString("hidden_act"); act && *act != "silu" && *act != "swish")
        c.fail("hidden_act", "ShareLens trains SwiGLU models (SiLU gate)", "silu", "'" + *act + "'",
               "post-training would train another model than these weights belong to; evaluate it instead");
      if (c.has("rope_scaling") && !c.raw()["rope_scaling"].is_null())
        throw Error(
            {.what = "RoPE scaling is not supported for post-training",
             .where = ckpt.configPath()->string() + " field 'rope_scaling'",
             .hint = "post-train a model without rope_scaling, or evaluate this one without training"});
      // A window the forward pass applies (Mistral's) but ShareLens's trainer does not: post-training would
      // train full causal attention, and the evaluation of the result would mask it.
      const auto window = everyLayerSlidingWindow(view, c.raw(), ckpt.configPath()->string());
      if (window && *window < std::min(t.model.context, maxContext))
        throw Error({.what = "sliding-window attention is not supported for post-training",
                     .where = ckpt.configPath()->string() + " field 'sliding_window'",
                     .expected = "no window, or one at least the training context (" +
                                 std::to_string(std::min(t.model.context, maxContext)) + " tokens)",
                     .found = std::to_string(static_cast<int64_t>(*window)),
                     .hint = "evaluate this model without training, or post-train with a shorter context"});
    }
    for (int64_t l = 0; l < s.layers; ++l) t.attention.assign.push_back(l);
    t.ffn.assign = t.attention.assign;
    t.embedding.tied = s.tiedEmbeddings;
    t.provenance = {"vanilla", s.layers, "1", "from " + ckpt.path().string()};
  }
  t.model.context = std::min(t.model.context, maxContext);
  validateTopology(t, ckpt.path().string() + ": topology");
  return t;
}

namespace {

// The config.json of what exportHfLlama writes. A Llama-family checkpoint is the same model in float32: its
// own config (RoPE base and scaling, norm epsilon, special tokens, activation) with the dtype and tying of
// what is written. A ShareLens one gets the Llama config of its shape and its topology's RoPE and norm.
Json exportedConfig(const Checkpoint& ckpt, const ModelView& view) {
  if (view.family == Family::Llama && ckpt.config() && ckpt.config()->is_object()) {
    Json config = *ckpt.config();
    config["torch_dtype"] = "float32";
    config["tie_word_embeddings"] = view.shape.tiedEmbeddings;
    return config;
  }
  Topology shape;
  shape.model = modelDimsOf(view.shape, view.shape.context);
  shape.embedding.tied = view.shape.tiedEmbeddings;
  if (auto it = ckpt.metadata().find(names::kTopologyMetadataKey); it != ckpt.metadata().end()) {
    const Json t = parseJsonStrict(it->second, "topology metadata");
    shape.model.ropeTheta = t["model"].value("rope_theta", 10000.0);
    shape.model.normEps = t["model"].value("norm_eps", 1e-5);
  }
  return llamaConfigFor(shape);
}

}  // namespace

void exportHfLlama(const Checkpoint& ckpt, const ModelView& view, const fs::path& outDir) {
  namespace hf = names::hf;
  if (view.family != Family::Llama && view.family != Family::ShareLens)
    throw Error({.what = "export-hf writes ShareLens and Llama-family checkpoints in the Llama layout",
                 .where = view.source,
                 .expected = "a ShareLens run or checkpoint, or a Llama-style one",
                 .found = std::string(familyName(view.family)),
                 .hint = "this checkpoint is in its own Hugging Face layout already; `sharelens convert` "
                         "changes its dtype"});
  for (const LayerView& l : view.layers)
    for (const auto& b : l.bias)
      if (b.has_value())
        throw Error({.what = "the Llama layout written here has no biases",
                     .where = view.source + ": layer " + std::to_string(l.index),
                     .found = "a projection with a bias",
                     .hint = "evaluate or analyse this checkpoint where it is"});
  if (!view.shape.gatedFfn || !view.embedding || !view.finalNorm)
    throw Error({.what = "only SwiGLU decoders with RMSNorm export to the Llama layout",
                 .where = view.source,
                 .found = std::string(familyName(view.family)),
                 .hint = "GPT-2 checkpoints stay in their own layout"});
  std::vector<EncodedTensor> tensors;
  auto put = [&](const std::string& name, const FloatMatrix& m) {
    tensors.push_back(EncodedTensor::fromFloats(name, DType::F32, {m.rows, m.cols}, m.data));
  };
  auto putVector = [&](const std::string& name, const std::string& source) {
    const std::vector<float> v = ckpt.readFloat(source);
    tensors.push_back(EncodedTensor::fromFloats(name, DType::F32, {static_cast<int64_t>(v.size())}, v));
  };
  put(hf::kEmbedding, materialize(ckpt, *view.embedding));
  if (!view.shape.tiedEmbeddings) put(hf::kOutput, materialize(ckpt, *view.outputHead));
  putVector(hf::kFinalNorm, view.finalNorm->weight);
  for (const LayerView& layer : view.layers) {
    for (Proj p : kAllProjs) put(hf::proj(layer.index, p), materialize(ckpt, layer.at(p)));
    const auto& attnNorm = layer.normAt(NormSlot::AttnIn);
    const auto& ffnNorm = layer.normAt(NormSlot::FfnIn);
    if (!attnNorm || !ffnNorm)
      throw Error({.what = "layer lacks its RMSNorm weights",
                   .where = view.source + ": layer " + std::to_string(layer.index)});
    putVector(hf::attnNorm(layer.index), attnNorm->weight);
    putVector(hf::ffnNorm(layer.index), ffnNorm->weight);
  }
  const Json config = exportedConfig(ckpt, view);
  StagedDirectory out(outDir);  // whole or absent: a kill or a full disk leaves no half-written OUT_DIR
  writeSafetensors(out.path() / "model.safetensors", tensors,
                   {{"format", "pt"}, {"exported_by", "sharelens export-hf"}});
  writeFileAtomically(out.path() / "config.json", config.dump(2) + "\n");
  out.commit();
}

std::string writePlainHfCheckpoint(const Checkpoint& checkpoint, const ModelView& view,
                                   const fs::path& outDir) {
  if (compressionRecordOf(checkpoint)) {
    writeDecompressedCheckpoint(checkpoint, view, outDir);
    return outDir.string() +
           "/model.safetensors with every compressed matrix materialised, and its config.json";
  }
  exportHfLlama(checkpoint, view, outDir);
  return outDir.string() + "/model.safetensors and config.json (" + std::to_string(view.layers.size()) +
         " layers)";
}

}  // namespace sharelens
