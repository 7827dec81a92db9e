#include "core/inspect_report.hpp"

#include <cstdio>
#include <sstream>

#include "core/arch/family.hpp"
#include "core/model_view.hpp"
#include "core/naming.hpp"

namespace sharelens {
namespace {

Json layerJson(const LayerView& layer) {
  Json roles = Json::array(), norms = Json::array(), biases = Json::array();
  for (std::string_view r : layer.rolesFound()) roles.push_back(r);
  for (int slot = 0; slot < kNormSlotCount; ++slot)
    if (layer.norm[slot]) norms.push_back(normSlotName(static_cast<NormSlot>(slot)));
  for (Proj p : kAllProjs)
    if (layer.bias[static_cast<int>(p)]) biases.push_back(projName(p));
  // The stored block a projection's weight comes from ("attn_blocks.2" for attn_blocks.2.wq): layers that
  // share weights name the same block.
  auto source = [&](std::initializer_list<Proj> projs) -> Json {
    for (Proj p : projs)
      if (layer.has(p) && !layer.at(p).terms.empty()) {
        const std::string& tensor = layer.at(p).terms.front().left.tensor;
        return tensor.substr(0, tensor.rfind('.'));
      }
    return nullptr;
  };
  return {{"index", layer.index},
          {"roles", roles},
          {"norms", norms},
          {"biases", biases},
          {"attention_source", source({Proj::Q, Proj::K})},
          {"ffn_source", source({Proj::Up, Proj::Down})}};
}

// `s` padded to `width` columns, with at least one space after it when it is wider (a long config key ran
// into its value).
std::string padRight(std::string s, size_t width) {
  s.append(s.size() < width ? width - s.size() : 1, ' ');
  return s;
}

}  // namespace

Json modelShapeToJson(const ModelShape& s) {
  return {{"vocab", s.vocab},       {"hidden", s.hidden},    {"layers", s.layers},
          {"heads", s.heads},       {"kv_heads", s.kvHeads}, {"head_dim", s.headDim},
          {"ffn", s.ffn},           {"context", s.context},  {"tied_embeddings", s.tiedEmbeddings},
          {"gated_ffn", s.gatedFfn}};
}

Json inspectCheckpoint(const Checkpoint& ckpt) {
  Json report;
  report["path"] = ckpt.path().string();
  report["format"] = ckpt.format();
  report["sharded"] = ckpt.sharded();
  Json files = Json::array();
  for (const auto& f : ckpt.files())
    files.push_back(
        {{"path", f->path().string()}, {"bytes", f->fileSize()}, {"tensors", f->tensors().size()}});
  report["files"] = files;
  report["config"] = ckpt.config() ? *ckpt.config() : Json(nullptr);
  report["metadata"] = ckpt.metadata();

  const FamilyAdapter* adapter = detectFamily(ckpt);
  std::optional<ModelView> view;
  if (adapter) view = openModelView(ckpt);  // the family's view, with a compressed checkpoint's overlay

  Json tensors = Json::array();
  for (const std::string& name : ckpt.tensorNames()) {
    const TensorInfo& t = *ckpt.at(name).info;
    std::string role = "other";
    if (view) {
      if (auto it = view->roles.find(name); it != view->roles.end()) role = std::string(roleName(it->second));
    }
    Json entry = {{"name", name},
                  {"dtype", dtypeName(t.dtype)},
                  {"shape", t.shape},
                  {"bytes", t.byteSize()},
                  {"role", role}};
    // Quantised on disk, dequantised to `dtype` on read: "Q4_K" (GGUF), "Q8_0/64" (llama.c version 2, its
    // group size).
    if (t.stored && t.stored->blocks != GgmlBlocks::None) entry["stored"] = ggmlBlocksName(t.stored->blocks);
    if (t.stored && t.stored->groupSize > 0) entry["stored"] = "Q8_0/" + std::to_string(t.stored->groupSize);
    tensors.push_back(std::move(entry));
  }
  report["tensors"] = tensors;
  report["unindexed_tensors"] = ckpt.unindexedTensors();

  Json fileWarnings = Json::array();
  for (const auto& f : ckpt.files())
    for (const std::string& w : f->warnings())
      fileWarnings.push_back(f->path().filename().string() + ": " + w);
  if (!view) {
    report["family"] = nullptr;
    report["notes"] = fileWarnings;
    report["notes"].push_back("architecture not recognised: tensors listed, no canonical view");
    return report;
  }
  report["family"] = familyName(view->family);
  report["model_type"] = view->modelType;
  const RoleCounts counts = countParameters(ckpt, *view);
  Json params = Json::object();
  for (int r = 0; r < kTensorRoleCount; ++r)
    params[std::string(roleName(static_cast<TensorRole>(r)))] = counts.params[r];
  params["total"] = counts.total;
  report["parameters"] = params;
  report["tied_embeddings"] = view->shape.tiedEmbeddings;
  report["shape"] = modelShapeToJson(view->shape);
  Json layers = Json::array();
  for (const LayerView& layer : view->layers) layers.push_back(layerJson(layer));
  report["layers"] = layers;
  report["missing"] = view->missing;
  report["unexpected"] = view->unexpected;
  report["ignored"] = view->ignored;
  Json notes = view->notes;
  for (const Json& w : fileWarnings) notes.push_back(w);
  report["notes"] = notes;
  return report;
}

std::string formatInspectReport(const Json& r) {
  std::ostringstream out;
  out << "checkpoint  " << r["path"].get<std::string>() << "\n";
  const std::string format = r.value("format", "safetensors");
  if (format != "safetensors") out << "format      " << format << "\n";
  out << "family      " << (r["family"].is_null() ? std::string("unknown") : r["family"].get<std::string>());
  if (r.contains("model_type")) out << " (model_type " << r["model_type"].get<std::string>() << ")";
  out << "\nfiles       " << r["files"].size() << (r["sharded"].get<bool>() ? " (sharded)" : "") << "\n";
  for (const Json& f : r["files"])
    out << "  " << f["path"].get<std::string>() << "  " << humanBytes(f["bytes"].get<double>()) << ", "
        << f["tensors"].get<size_t>() << " tensors\n";

  if (!r["config"].is_null()) {
    out << (format == "safetensors" ? "\nconfig.json\n" : "\nconfig (from the file's header)\n");
    for (const auto& [key, value] : r["config"].items()) {
      std::string text = value.dump();
      if (text.size() > 90) text = text.substr(0, 87) + "...";
      out << "  " << padRight(key, 32) << text << "\n";
    }
  }

  out << "\ntensors (" << r["tensors"].size() << ")\n";
  size_t nameWidth = 4;
  for (const Json& t : r["tensors"]) nameWidth = std::max(nameWidth, t["name"].get<std::string>().size());
  out << "  " << padRight("name", nameWidth + 2) << padRight("dtype", 9) << padRight("shape", 22)
      << padRight("bytes", 14) << "role\n";
  for (const Json& t : r["tensors"])  // a quantised tensor shows its stored type (read as float32)
    out << "  " << padRight(t["name"].get<std::string>(), nameWidth + 2)
        << padRight(t.value("stored", t["dtype"].get<std::string>()), 9)
        << padRight(shapeToString(t["shape"].get<std::vector<int64_t>>()), 22)
        << padRight(std::to_string(t["bytes"].get<uint64_t>()), 14) << t["role"].get<std::string>() << "\n";

  if (r.contains("parameters")) {
    const Json& p = r["parameters"];
    const double total = std::max(1.0, p["total"].get<double>());
    out << "\nparameters by role\n";
    for (const auto& [role, count] : p.items()) {
      if (role == "total" || count.get<int64_t>() == 0) continue;
      char pct[16];
      std::snprintf(pct, sizeof pct, "%5.1f%%", 100.0 * count.get<double>() / total);
      out << "  " << padRight(role, 14) << padRight(std::to_string(count.get<int64_t>()), 14)
          << padRight(humanCount(count.get<double>()), 9) << pct << "\n";
    }
    out << "  " << padRight("total", 14) << padRight(std::to_string(p["total"].get<int64_t>()), 14)
        << humanCount(p["total"].get<double>()) << "\n";
    out << "  tied embeddings: " << (r["tied_embeddings"].get<bool>() ? "yes" : "no") << "\n";

    const Json& s = r["shape"];
    out << "\ncanonical view\n  layers " << s["layers"] << ", query heads " << s["heads"] << ", KV heads "
        << s["kv_heads"] << ", head_dim " << s["head_dim"] << ", hidden " << s["hidden"] << ", ffn "
        << s["ffn"] << ", vocab " << s["vocab"] << ", context " << s["context"] << "\n";
    for (const Json& layer : r["layers"]) {
      out << "  layer " << padRight(std::to_string(layer["index"].get<int64_t>()), 4) << " ";
      for (const Json& role : layer["roles"]) out << role.get<std::string>() << " ";
      out << "| norms";
      for (const Json& n : layer["norms"]) out << " " << n.get<std::string>();
      if (!layer["biases"].empty()) {
        out << " | biases";
        for (const Json& b : layer["biases"]) out << " " << b.get<std::string>();
      }
      out << "\n";
    }
  }
  auto list = [&](const char* key, const char* title) {
    if (!r.contains(key) || r[key].empty()) return;
    out << "\n" << title << " (" << r[key].size() << ")\n";
    for (const Json& item : r[key]) out << "  " << item.get<std::string>() << "\n";
  };
  list("missing", "missing tensors");
  list("unexpected", "unexpected tensors");
  list("unindexed_tensors", "tensors in shards but not in the index");
  list("ignored", "ignored (buffers, non-text towers)");
  list("notes", "notes");
  return out.str();
}

}  // namespace sharelens
