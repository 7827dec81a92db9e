#include "core/compressed_checkpoint.hpp"

#include <algorithm>

#include "core/atomic_file.hpp"
#include "core/compression_methods.hpp"
#include "core/derived_checkpoint.hpp"
#include "core/error.hpp"
#include "core/safetensors.hpp"

namespace sharelens {
namespace {

std::vector<int64_t> intArray(const JsonObject& o, std::string_view key, int64_t minValue) {
  std::vector<int64_t> out;
  for (const Json& v : o.requireArray(key)) {
    if (!v.is_number_integer() || v.get<int64_t>() < minValue)
      o.fail(key, "not an array of integers", "integers >= " + std::to_string(minValue), v.dump());
    out.push_back(v.get<int64_t>());
  }
  return out;
}

Proj projOf(const JsonObject& o, std::string_view key, const Json& v) {
  const auto p = v.is_string() ? parseProj(v.get<std::string>()) : std::nullopt;
  if (!p || !isAttentionProj(*p)) o.fail(key, "not an attention projection", "q, k, v or o", v.dump());
  return *p;
}

// The shape a stored tensor must have, or a named error naming the file, the tensor and both shapes.
const TensorInfo& requireShape(const Checkpoint& ckpt, const std::string& name,
                               const std::vector<int64_t>& shape) {
  const TensorRef* ref = ckpt.find(name);
  if (!ref)
    throw Error({.what = "compressed tensor missing",
                 .where = ckpt.path().string() + ": tensor '" + name + "'",
                 .expected = "a tensor of shape " + shapeToString(shape),
                 .found = "none",
                 .hint = "the file was cut or edited after `sharelens compress` wrote it; compress again"});
  if (ref->info->shape != shape)
    throw Error({.what = "compressed tensor has the wrong shape",
                 .where = ref->file->path().string() + ": tensor '" + name + "'",
                 .expected = shapeToString(shape),
                 .found = shapeToString(ref->info->shape),
                 .hint = "the record in __metadata__['" + std::string(kCompressedMetadataKey) +
                         "'] and the tensors disagree"});
  return *ref->info;
}

}  // namespace

std::pair<int64_t, int64_t> attentionShape(const ModelShape& s, Proj p) {
  switch (p) {
    case Proj::Q:
      return {s.heads * s.headDim, s.hidden};
    case Proj::K:
    case Proj::V:
      return {s.kvHeads * s.headDim, s.hidden};
    case Proj::O:
      return {s.hidden, s.heads * s.headDim};
    default:
      return {0, 0};
  }
}

std::string compressedAtomsName(Proj p, int64_t group) {
  return "compressed." + std::string(projName(p)) + ".group" + std::to_string(group) + ".atoms";
}
std::string compressedCoefficientsName(Proj p, int64_t group) {
  return "compressed." + std::string(projName(p)) + ".group" + std::to_string(group) + ".coefficients";
}
std::string compressedFactorName(int64_t layer, Proj p, char which) {
  return "compressed.layers." + std::to_string(layer) + "." + std::string(projName(p)) + "." +
         std::string(1, which);
}

int64_t CompressionRecord::groupOf(int64_t layer) const {
  for (size_t g = 0; g < groups.size(); ++g)
    if (std::find(groups[g].begin(), groups[g].end(), layer) != groups[g].end())
      return static_cast<int64_t>(g);
  return -1;
}

Json compressionRecordToJson(const CompressionRecord& r) {
  Json projections = Json::array(), ranks = Json::object(), dropped = Json::array();
  for (Proj p : r.projections) projections.push_back(std::string(projName(p)));
  for (const auto& [p, perLayer] : r.ranks) ranks[std::string(projName(p))] = perLayer;
  for (const DroppedTensor& d : r.dropped) {
    Json parts = Json::array();
    for (const DroppedTensor::Part& part : d.parts)
      parts.push_back({{"layer", part.layer},
                       {"proj", std::string(projName(part.proj))},
                       {"row0", part.row0},
                       {"transposed", part.transposed}});
    dropped.push_back(
        {{"name", d.name}, {"dtype", std::string(dtypeName(d.dtype))}, {"shape", d.shape}, {"parts", parts}});
  }
  return {{"schema", kCompressedSchema},
          {"method", r.method},
          {"target_ratio", r.targetRatio},
          {"projections", projections},
          {"groups", r.groups},
          {"atoms", r.atoms},
          {"ranks", ranks},
          {"beta", r.beta},
          {"budget", r.budget},
          {"allocation", r.allocation},
          {"original_parameters", r.originalParameters},
          {"target_parameters", r.targetParameters},
          {"parameters", r.parameters},
          {"dropped", dropped},
          {"calibration", r.calibration},
          {"source", r.source}};
}

CompressionRecord compressionRecordFromJson(const Json& j, const std::string& where) {
  const JsonObject o(j, where);
  if (o.requireString("schema") != kCompressedSchema)
    o.fail("schema", "unknown schema", kCompressedSchema, o.requireString("schema"),
           "written by a newer ShareLens?");
  CompressionRecord r;
  r.method = o.requireString("method");
  if (!isCompressionMethod(r.method)) o.fail("method", "unknown method", compressionMethodList(), r.method);
  r.targetRatio = o.requireNumber("target_ratio");
  for (const Json& v : o.requireArray("projections")) r.projections.push_back(projOf(o, "projections", v));
  for (const Json& g : o.requireArray("groups")) {
    std::vector<int64_t> layers;
    if (!g.is_array()) o.fail("groups", "not an array of layer lists", "[[0, 1], [2]]", g.dump());
    for (const Json& l : g) {
      if (!l.is_number_integer() || l.get<int64_t>() < 0)
        o.fail("groups", "not a layer index", "integers >= 0", l.dump());
      layers.push_back(l.get<int64_t>());
    }
    r.groups.push_back(std::move(layers));
  }
  r.atoms = intArray(o, "atoms", 1);
  if (r.atoms.size() != r.groups.size())
    o.fail("atoms", "one atom count per group", std::to_string(r.groups.size()) + " counts",
           std::to_string(r.atoms.size()));
  const JsonObject ranks = o.requireObject("ranks");
  for (const auto& [key, value] : ranks.raw().items()) {
    const Proj p = projOf(ranks, key, Json(key));
    r.ranks[p] = intArray(ranks, key, 0);
  }
  // "beta" was one number (the residual budget over the original parameters) before issue 36; now one per
  // group.
  if (o.has("beta") && o.raw().at("beta").is_array()) {
    for (const Json& v : o.requireArray("beta")) {
      if (!v.is_number() || !(v.get<double>() >= 0.0))
        o.fail("beta", "not a residual budget", "numbers >= 0, one per group", v.dump());
      r.beta.push_back(v.get<double>());
    }
  } else {
    (void)o.requireNumber("beta");
  }
  r.budget = o.optionalString("budget").value_or("");
  r.allocation = o.optionalString("allocation").value_or("");
  r.originalParameters = o.requireInt("original_parameters", 0);
  r.targetParameters = o.requireInt("target_parameters", 0);
  r.parameters = o.requireInt("parameters", 0);
  for (const Json& d : o.requireArray("dropped")) {
    const JsonObject od(d, where + ": dropped");
    DroppedTensor t;
    t.name = od.requireString("name");
    const auto dtype = parseDType(od.requireString("dtype"));
    if (!dtype) od.fail("dtype", "unknown dtype", "F32, F16, BF16, ...", od.requireString("dtype"));
    t.dtype = *dtype;
    t.shape = intArray(od, "shape", 0);
    for (const Json& part : od.requireArray("parts")) {
      const JsonObject op(part, where + ": dropped '" + t.name + "'");
      t.parts.push_back({op.requireInt("layer", 0), projOf(op, "proj", op.raw().at("proj")),
                         op.requireInt("row0", 0), op.optionalBool("transposed").value_or(false)});
    }
    r.dropped.push_back(std::move(t));
  }
  if (auto c = o.optionalObject("calibration")) r.calibration = c->raw();
  r.source = o.optionalString("source").value_or("");
  return r;
}

std::optional<CompressionRecord> compressionRecordOf(const Checkpoint& ckpt) {
  const auto it = ckpt.metadata().find(kCompressedMetadataKey);
  if (it == ckpt.metadata().end()) return std::nullopt;
  const std::string where = ckpt.path().string() + ": __metadata__['" + kCompressedMetadataKey + "']";
  return compressionRecordFromJson(parseJsonStrict(it->second, where), where);
}

void applyCompressionOverlay(const Checkpoint& ckpt, ModelView& view) {
  const auto record = compressionRecordOf(ckpt);
  if (!record) return;
  const std::string where = ckpt.path().string() + ": __metadata__['" + kCompressedMetadataKey + "']";
  const int64_t layers = static_cast<int64_t>(view.layers.size());
  for (const auto& g : record->groups)
    for (int64_t l : g)
      if (l >= layers)
        throw Error({.what = "compressed layer group names a layer the model does not have",
                     .where = where,
                     .expected = "layers 0.." + std::to_string(layers - 1),
                     .found = std::to_string(l)});
  auto claim = [&](const std::string& name, TensorRole role) {
    view.roles[name] = role;
    std::erase(view.unexpected, name);
  };
  for (Proj p : record->projections) {
    const auto rankIt = record->ranks.find(p);
    if (rankIt == record->ranks.end() || static_cast<int64_t>(rankIt->second.size()) != layers)
      throw Error({.what = "compression record lacks the ranks of a projection",
                   .where = where + " field 'ranks'",
                   .expected = std::to_string(layers) + " ranks for '" + std::string(projName(p)) + "'",
                   .found = rankIt == record->ranks.end() ? "none" : std::to_string(rankIt->second.size())});
    const auto [out, in] = attentionShape(view.shape, p);
    for (int64_t l = 0; l < layers; ++l) {
      MatrixExpr e;
      e.rows = out;
      e.cols = in;
      if (const int64_t g = record->groupOf(l); g >= 0) {
        const auto& group = record->groups[static_cast<size_t>(g)];
        const int64_t atoms = record->atoms[static_cast<size_t>(g)];
        const int64_t position = std::find(group.begin(), group.end(), l) - group.begin();
        const std::string atomName = compressedAtomsName(p, g), coeffName = compressedCoefficientsName(p, g);
        requireShape(ckpt, atomName, {atoms, out, in});
        requireShape(ckpt, coeffName, {static_cast<int64_t>(group.size()), atoms});
        claim(atomName, TensorRole::Masa);
        claim(coeffName, TensorRole::Masa);
        for (int64_t s = 0; s < atoms; ++s) {
          MatrixTerm term;
          term.coefficient = ScalarRef{coeffName, position * atoms + s};
          term.left = TensorSlice{atomName, false, s, 0, out, 0, in};
          e.terms.push_back(term);
        }
      }
      if (const int64_t r = rankIt->second[static_cast<size_t>(l)]; r > 0) {
        const std::string b = compressedFactorName(l, p, 'B'), a = compressedFactorName(l, p, 'A');
        requireShape(ckpt, b, {out, r});
        requireShape(ckpt, a, {r, in});
        claim(b, TensorRole::Lora);
        claim(a, TensorRole::Lora);
        MatrixTerm term;
        term.left = TensorSlice{b, false, -1, 0, out, 0, r};
        term.right = TensorSlice{a, false, -1, 0, r, 0, in};
        e.terms.push_back(term);
      }
      if (e.terms.empty())
        throw Error({.what = "a compressed matrix has neither atoms nor factors",
                     .where = where,
                     .found = "layer " + std::to_string(l) + " " + std::string(projName(p)),
                     .hint = "the record was edited; compress again"});
      view.layers[static_cast<size_t>(l)].proj[static_cast<int>(p)] = std::move(e);
    }
  }
  for (const DroppedTensor& d : record->dropped) {
    std::erase(view.missing, d.name);
    view.roles.erase(d.name);
  }
  view.notes.push_back("compressed (" + record->method + ") to " + std::to_string(record->parameters) +
                       " of " + std::to_string(record->originalParameters) +
                       " attention parameters; target ratio " +
                       std::to_string(record->targetRatio).substr(0, 5));
}

void writeDecompressedCheckpoint(const Checkpoint& ckpt, const ModelView& view,
                                 const std::filesystem::path& outDir) {
  const auto record = compressionRecordOf(ckpt);
  if (!record)
    throw Error({.what = "not a compressed checkpoint",
                 .where = ckpt.path().string(),
                 .hint = "export-hf of a ShareLens model uses the Llama layout instead"});
  StagedDirectory out(outDir);
  std::vector<EncodedTensor> restored;
  for (const DroppedTensor& d : record->dropped) {
    if (d.shape.size() != 2)
      throw Error({.what = "a dropped tensor that is not a matrix",
                   .where = ckpt.path().string() + ": record of '" + d.name + "'",
                   .found = shapeToString(d.shape)});
    std::vector<float> values(static_cast<size_t>(d.shape[0] * d.shape[1]), 0.0f);
    for (const DroppedTensor::Part& part : d.parts) {
      const FloatMatrix m =
          materializeFinite(ckpt, view.layers.at(static_cast<size_t>(part.layer)).at(part.proj));
      for (int64_t r = 0; r < m.rows; ++r)
        for (int64_t c = 0; c < m.cols; ++c) {  // canonical (row0 + r, c) -> stored
          const int64_t sr = part.transposed ? c : part.row0 + r, sc = part.transposed ? part.row0 + r : c;
          values[static_cast<size_t>(sr * d.shape[1] + sc)] = m(r, c);
        }
    }
    restored.push_back(EncodedTensor::fromFloats(d.name, d.dtype, d.shape, values));
  }
  std::vector<std::string> drop;
  for (const std::string& name : ckpt.tensorNames())
    if (name.rfind("compressed.", 0) == 0) drop.push_back(name);
  auto metadata = ckpt.metadata();
  metadata.erase(kCompressedMetadataKey);
  TensorEditor(ckpt).save(out.path() / "model.safetensors", metadata, drop, restored);
  copyCompanionFiles(ckpt, out.path());
  out.commit();
}

}  // namespace sharelens
