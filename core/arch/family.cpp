#include "core/arch/family.hpp"

#include <optional>

#include "core/compressed_checkpoint.hpp"
#include "core/error.hpp"
#include "core/json_util.hpp"

namespace sharelens {

// In family_list.def's order (which decides ties).
const std::vector<const FamilyAdapter*>& familyAdapters() {
  static const std::vector<const FamilyAdapter*> adapters = {
#define SHARELENS_FAMILY(id, adapter) &adapter(),
#include "core/arch/family_list.def"
#undef SHARELENS_FAMILY
  };
  return adapters;
}

std::string_view familyName(Family f) {
  for (const FamilyAdapter* adapter : familyAdapters())
    if (adapter->family() == f) return adapter->name();
  return "unknown";
}

std::string configModelType(const Checkpoint& checkpoint) {
  if (!checkpoint.config() || !checkpoint.config()->is_object()) return {};
  const Json& config = *checkpoint.config();
  // A model_type that is there but not a string is a broken config, not a missing one (issue 40: a number
  // was taken as "no model_type" and the family guessed from tensor names).
  auto typeOf = [&](const Json& object, const std::string& field) -> std::optional<std::string> {
    const auto it = object.find("model_type");
    if (it == object.end() || it->is_null()) return std::nullopt;
    if (!it->is_string())
      throw Error({.what = "config.json field of the wrong type",
                   .where = (checkpoint.configPath() ? checkpoint.configPath()->string()
                                                     : std::string("config.json")) +
                            " field '" + field + "'",
                   .expected = "a string such as \"llama\"",
                   .found = jsonTypeName(*it) + " " + it->dump(),
                   .hint = "fix the config.json beside the weights"});
    return it->get<std::string>();
  };
  if (const auto type = typeOf(config, "model_type")) return *type;
  if (auto text = config.find("text_config"); text != config.end() && text->is_object())
    if (const auto type = typeOf(*text, "text_config.model_type")) return *type;
  return {};
}

const ForwardTraits& forwardTraits(Family family) {
  for (const FamilyAdapter* adapter : familyAdapters())
    if (adapter->family() == family) return adapter->traits();
  throw Error({.what = "internal: no adapter for a family",
               .where = "family " + std::to_string(static_cast<int>(family))});
}

std::optional<int64_t> everyLayerSlidingWindow(const ModelView& view, const Json& config,
                                               const std::string& where) {
  const ForwardTraits& t = forwardTraits(view.family);
  if (!t.slidingWindowAllLayers) return std::nullopt;
  // transformers' Mistral and Phi-3 mask every layer when sliding_window is set (its Llama ignores one);
  // SmolLM3-style configs also say use_sliding_window: false.
  if (!t.slidingWindowModelType.empty() && view.modelType != t.slidingWindowModelType) return std::nullopt;
  const auto window = config.find("sliding_window");
  if (window == config.end() || window->is_null()) return std::nullopt;
  const auto use = config.find("use_sliding_window");
  if (use != config.end() && use->is_boolean() && !use->get<bool>()) return std::nullopt;
  if (!window->is_number() || window->get<double>() < 1)
    throw Error({.what = "sliding_window is not a window",
                 .where = where + " field 'sliding_window'",
                 .expected = "a positive number of tokens, or null for none",
                 .found = window->dump(),
                 .hint = "fix config.json"});
  return window->get<int64_t>();
}

const FamilyAdapter* detectFamily(const Checkpoint& checkpoint) {
  const FamilyAdapter* best = nullptr;
  int bestScore = 0;
  for (const FamilyAdapter* adapter : familyAdapters()) {
    const int s = adapter->score(checkpoint);
    if (s > bestScore) {
      best = adapter;
      bestScore = s;
    }
  }
  return best;
}

ModelView openModelView(const Checkpoint& checkpoint) {
  const FamilyAdapter* best = detectFamily(checkpoint);
  if (!best) {
    const std::string modelType = configModelType(checkpoint);
    std::string known;
    for (const FamilyAdapter* adapter : familyAdapters())
      for (std::string_view type : adapter->modelTypes()) known += std::string(type) + ", ";
    throw Error({.what = "unrecognised model architecture",
                 .where = checkpoint.path().string(),
                 .expected = "a config.json model_type of " + known + "or a ShareLens checkpoint",
                 .found = modelType.empty() ? "no config.json model_type and no known tensor names"
                                            : "model_type '" + modelType + "'",
                 .hint = "`sharelens inspect` still lists the tensors; the analyses need a known family"});
  }
  ModelView view = best->build(checkpoint);
  applyCompressionOverlay(checkpoint,
                          view);  // a compressed checkpoint's attention, from its atoms and factors
  // Every weight the view reads is floating point: integer storage (I32, I16, U8, ...) would be read as the
  // numbers it holds, a different model, and quantised formats need their own scales.
  for (const auto& [name, role] : view.roles)
    if (const TensorRef* ref = checkpoint.find(name); ref && !isFloatingDType(ref->info->dtype))
      throw Error({.what = "a weight is stored as integers",
                   .where = ref->file->path().string() + ": tensor '" + name + "'",
                   .expected = "F32, F16, BF16 or F64",
                   .found = std::string(dtypeName(ref->info->dtype)),
                   .hint = "ShareLens reads unquantised floating-point weights: dequantise or convert the "
                           "checkpoint to a floating dtype first"});
  return view;
}

}  // namespace sharelens
