#include "app/workflows/compress.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>

#include "analysis/matrix_pca.hpp"
#include "core/arch/family.hpp"
#include "core/atomic_file.hpp"
#include "core/compression_methods.hpp"
#include "core/derived_checkpoint.hpp"
#include "core/error.hpp"
#include "core/fault_injection.hpp"
#include "core/hash.hpp"
#include "core/run_dir.hpp"
#include "core/safetensors.hpp"

namespace fs = std::filesystem;

namespace sharelens {
namespace {

using clock_type = std::chrono::steady_clock;

double secondsSince(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

int64_t peakResidentBytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;
}

// Compression edits each selected projection of every layer as one stored tensor slice; composed matrices (a
// ShareLens model's shared blocks, LoRA, MASA) and already compressed checkpoints are refused with a way on.
void checkCompressible(const Checkpoint& ckpt, const ModelView& view, const std::vector<Proj>& projections) {
  if (compressionRecordOf(ckpt))
    throw Error({.what = "the checkpoint is already compressed",
                 .where = ckpt.path().string(),
                 .hint = "compress the original checkpoint (its path is in `sharelens inspect`'s notes), or "
                         "`export-hf` this one first"});
  if (!view.hasHeads())
    throw Error({.what = "compression needs the head counts",
                 .where = view.source,
                 .hint = "put the model's config.json next to the weights"});
  for (const LayerView& layer : view.layers)
    for (Proj p : projections)
      if (!layer.has(p) || !isPlainSlice(layer.at(p)))
        throw Error(
            {.what = "cannot compress a checkpoint whose attention weights are not stored per layer",
             .where = ckpt.path().string() + ": layer " + std::to_string(layer.index) + " " +
                      std::string(projName(p)) +
                      (layer.has(p) ? " = " + layer.at(p).describe() : " (missing)"),
             .expected = "plain per-layer weights, as Hugging Face checkpoints store them",
             .hint = "`sharelens export-hf` materialises a shared ShareLens model; compress its output"});
}

std::vector<double> toDouble(const FloatMatrix& m) {
  return std::vector<double>(m.data.begin(), m.data.end());
}

struct NewTensors {
  std::vector<EncodedTensor> tensors;
  int64_t parameters = 0;
  void add(std::string name, DType dtype, std::vector<int64_t> shape, std::span<const float> values) {
    parameters += static_cast<int64_t>(values.size());
    tensors.push_back(EncodedTensor::fromFloats(std::move(name), dtype, std::move(shape), values));
  }
};

DType storedDtype(const Checkpoint& ckpt, const ModelView& view, int64_t layer, Proj p) {
  return ckpt.at(view.layers[static_cast<size_t>(layer)].at(p).terms[0].left.tensor).info->dtype;
}

// The original tensors the compressed projections came from: dropped when every canonical row they hold is
// compressed (GPT-2's c_attn only when Q, K and V all are), kept otherwise.
std::vector<DroppedTensor> droppedTensors(const Checkpoint& ckpt, const ModelView& view,
                                          const std::vector<Proj>& projections,
                                          std::vector<std::string>& kept) {
  std::map<std::string, DroppedTensor> byTensor;
  std::map<std::string, int64_t> rowsCovered;
  for (const LayerView& layer : view.layers)
    for (Proj p : projections) {
      const TensorSlice& s = layer.at(p).terms[0].left;
      const TensorInfo& info = *ckpt.at(s.tensor).info;
      DroppedTensor& d = byTensor[s.tensor];
      d.name = s.tensor;
      d.dtype = info.dtype;
      d.shape = info.shape;
      d.parts.push_back({layer.index, p, s.row0, s.transposed});
      rowsCovered[s.tensor] += s.rows;
    }
  std::vector<DroppedTensor> out;
  for (auto& [name, d] : byTensor) {
    const int64_t rows = d.shape.size() == 2 ? (d.parts.front().transposed ? d.shape[1] : d.shape[0]) : 0;
    if (rowsCovered[name] == rows)
      out.push_back(std::move(d));
    else
      kept.push_back(name);
  }
  return out;
}

std::vector<std::vector<int64_t>> resolveGroups(const CompressOptions& o,
                                                const CalibrationResult& calibration, int64_t layers) {
  if (o.spec.method == "svd") return {};
  if (!o.spec.groups.empty()) return o.spec.groups;
  const int64_t count = klGroupCount(o.klGroups, layers);
  if (count > layers)
    throw Error({.what = "more groups than layers",
                 .where = "--groups kl:" + std::to_string(count),
                 .expected = "at most " + std::to_string(layers),
                 .found = std::to_string(count)});
  return groupsFromKlDrift(calibration.klDrift, layers, count);
}

std::string ratioLabel(double ratio) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.2f", ratio);
  return buf;
}

}  // namespace

void parseCalibrationSpec(const std::string& spec, CalibrationOptions& o) {
  const auto colon = spec.rfind(':');
  if (colon == std::string::npos) {
    o.corpus = spec;
    return;
  }
  o.corpus = spec.substr(0, colon);
  const std::string n = spec.substr(colon + 1);
  try {
    size_t used = 0;
    const long long tokens = std::stoll(n, &used);
    if (used != n.size() || tokens < 1) throw std::invalid_argument(n);
    o.tokens = tokens;
  } catch (const std::exception&) {
    throw Error({.what = "not a token count",
                 .where = "--calibration " + spec,
                 .expected = "CORPUS:N with N >= 1, e.g. brown:2048",
                 .found = "'" + n + "'"});
  }
  constexpr long long kMostCalibrationTokens = 1 << 24;  // 16M tokens: activations of every layer are kept
  if (o.tokens > kMostCalibrationTokens)
    throw Error({.what = "too many calibration tokens",
                 .where = "--calibration " + spec,
                 .expected = "at most " + std::to_string(kMostCalibrationTokens),
                 .found = n,
                 .hint = "SVD-LLM and MASA calibrate on a few thousand tokens; 2048 is the default"});
}

CompressionReport compressCheckpoint(const fs::path& path, const CompressOptions& o, const TaskContext& ctx) {
  {  // refuse what can be refused before the (long) calibration
    const auto ckpt = Checkpoint::open(resolveModelPath(path));
    const ModelView view = openModelView(*ckpt);
    checkCompressible(*ckpt, view, o.spec.projections);
    CompressionSpec probe = o.spec;
    if (probe.method != "svd" &&
        probe.groups.empty()) {  // the groups come from calibration; check the rest now
      const int64_t count = klGroupCount(o.klGroups, view.shape.layers);
      if (count < 1 || count > view.shape.layers)
        throw Error({.what = "group count out of range",
                     .where = "--groups kl:" + std::to_string(count),
                     .expected = "1.." + std::to_string(view.shape.layers),
                     .found = std::to_string(count)});
      probe.groups = {{}};
      for (int64_t l = 0; l < view.shape.layers; ++l) probe.groups[0].push_back(l);
      // The groups' sizes come from calibration, but no group of kl:G can hold more than L - G + 1 layers:
      // atoms beyond that can never fit (issue 40: they were checked only with explicit --groups).
      const int64_t largest = view.shape.layers - count + 1;
      if (probe.atoms && (*probe.atoms < 1 || *probe.atoms > largest))
        throw Error({.what = "more atoms than any layer group can hold",
                     .where = "--atoms " + std::to_string(*probe.atoms),
                     .expected = "1.." + std::to_string(largest) +
                                 " (the largest group kl:" + std::to_string(count) + " can make of " +
                                 std::to_string(view.shape.layers) + " layers)",
                     .found = std::to_string(*probe.atoms),
                     .hint = "Matrix PCA of |G| matrices has at most |G| atoms"});
      probe.atoms.reset();
    }
    (void)planCompression(view.shape, probe);
    if (fs::exists(o.out) && !(fs::is_directory(o.out) && fs::is_empty(o.out)))
      throw Error({.what = "the output directory already exists and is not empty",
                   .where = o.out.string(),
                   .hint = "choose a new directory, or remove this one first"});
  }
  const CalibrationResult calibration = calibrate(path, o.calibration, ctx);
  return compressCheckpoint(path, o, calibration, ctx);
}

CompressionReport compressCheckpoint(const fs::path& path, const CompressOptions& o,
                                     const CalibrationResult& calibration, const TaskContext& ctx) {
  const auto started = clock_type::now();
  const auto ckpt = Checkpoint::open(resolveModelPath(path));
  const ModelView view = openModelView(*ckpt);
  checkCompressible(*ckpt, view, o.spec.projections);
  const int64_t layers = static_cast<int64_t>(view.layers.size());
  if (static_cast<int64_t>(calibration.layers.size()) != layers)
    throw Error({.what = "the calibration belongs to another model",
                 .where = path.string(),
                 .expected = std::to_string(layers) + " layers",
                 .found = std::to_string(calibration.layers.size())});
  CompressionSpec spec = o.spec;
  spec.groups = resolveGroups(o, calibration, layers);
  CompressionReport report;
  report.plan = planCompression(view.shape, spec);
  report.klDrift = calibration.klDrift;
  report.calibrationSeconds = calibration.seconds;
  const CompressionPlan& plan = report.plan;
  StagedDirectory out(o.out);  // removed again unless everything is written

  CompressionRecord& record = report.record;
  record.method = spec.method;
  record.targetRatio = spec.ratio;
  record.projections = spec.projections;
  record.groups = spec.groups;
  record.atoms = plan.atoms;
  record.budget = spec.method == "masa" ? spec.budget : "";
  record.allocation = spec.method == "masa" ? spec.allocation : "";
  record.beta = plan.beta;
  record.originalParameters = plan.originalParameters;
  record.targetParameters = plan.targetParameters;
  record.source = fs::absolute(resolveModelPath(path)).string();
  std::vector<std::string> kept;
  record.dropped = droppedTensors(*ckpt, view, spec.projections, kept);

  // Whitening per layer and input, made when a layer first needs it (Q, K and V share the attention input's).
  std::map<std::pair<int64_t, bool>, Whitening> whitenings;
  Json damping = Json::object();
  auto whiteningFor = [&](int64_t layer, Proj p) -> const Whitening& {
    const bool output = p == Proj::O;
    const auto key = std::pair{layer, output};
    if (auto it = whitenings.find(key); it != whitenings.end()) return it->second;
    const auto& inputs = calibration.layers[static_cast<size_t>(layer)];
    const std::string where = "layer " + std::to_string(layer) + (output ? " O input" : " Q/K/V input");
    Whitening w = whiteningOf(output ? inputs.outputInput : inputs.attentionInput, "calibration of " + where);
    if (w.damping > 0) damping[where] = w.damping;
    return whitenings.emplace(key, std::move(w)).first->second;
  };
  auto store = [&](NewTensors& t, int64_t layer, Proj p, const LowRankTerm& term) {
    if (term.rank() <= 0) return;
    const DType dtype = storedDtype(*ckpt, view, layer, p);
    t.add(compressedFactorName(layer, p, 'B'), dtype, {term.b.rows, term.rank()}, term.b.data);
    t.add(compressedFactorName(layer, p, 'A'), dtype, {term.rank(), term.a.cols}, term.a.data);
  };
  auto rankOf = [&](Proj p, int64_t layer) -> int64_t& {
    return report.plan.ranks.at(p)[static_cast<size_t>(layer)];
  };

  NewTensors fresh;
  const int64_t units = spec.method == "svd" ? layers : static_cast<int64_t>(spec.groups.size());
  for (int64_t unit = 0; unit < units; ++unit) {
    ctx.throwIfCancelled();
    ctx.report(static_cast<double>(unit) / static_cast<double>(units),
               spec.method == "svd" ? "compress: layer " + std::to_string(unit)
                                    : "compress: layer group " + std::to_string(unit));
    if (spec.method == "svd") {  // SVD-LLM: every matrix replaced by its whitened truncated SVD
      for (Proj p : spec.projections) {
        const auto [rows, cols] = attentionShape(view.shape, p);
        store(fresh, unit, p,
              whitenedTruncation(
                  toDouble(materializeFinite(*ckpt, view.layers[static_cast<size_t>(unit)].at(p))), rows,
                  cols, whiteningFor(unit, p), rankOf(p, unit)));
      }
      whitenings.clear();
      continue;
    }
    const std::vector<int64_t>& group = spec.groups[static_cast<size_t>(unit)];
    const int64_t atoms = plan.atoms[static_cast<size_t>(unit)];
    // What the refinement needs of each projection: the group's weights (float) and its first B atoms with
    // the coefficients; a layer's residuals are formed only when that layer is refined.
    struct Refinable {
      std::vector<FloatMatrix> w;
      MatrixPcaGroup pca;
    };
    std::map<Proj, Refinable> refinable;
    for (Proj p : spec.projections) {
      const auto [rows, cols] = attentionShape(view.shape, p);
      std::vector<FloatMatrix> w;
      for (int64_t l : group)
        w.push_back(materializeFinite(*ckpt, view.layers[static_cast<size_t>(l)].at(p)));
      // Matrix PCA (MASA Eq. 4): the first B atoms and each layer's coefficients c_ls = tr(D_s^T W_l).
      MatrixPcaGroup pca = matrixPcaOfMatrices(p, group, w, /*keepAtoms=*/true);
      std::vector<float> atomData,
          coefficients(static_cast<size_t>(group.size()) * static_cast<size_t>(atoms));
      for (int64_t s = 0; s < atoms; ++s) {
        atomData.insert(atomData.end(), pca.atoms[static_cast<size_t>(s)].data.begin(),
                        pca.atoms[static_cast<size_t>(s)].data.end());
        for (size_t i = 0; i < group.size(); ++i)
          coefficients[i * static_cast<size_t>(atoms) + static_cast<size_t>(s)] =
              pca.coefficients(s, static_cast<int64_t>(i));
      }
      const DType dtype = storedDtype(*ckpt, view, group.front(), p);
      fresh.add(compressedAtomsName(p, unit), dtype, {atoms, rows, cols}, atomData);
      fresh.add(compressedCoefficientsName(p, unit), DType::F32, {static_cast<int64_t>(group.size()), atoms},
                coefficients);
      if (spec.method != "masa" || group.size() == 1) continue;  // single-layer groups are exact
      Refinable& r = refinable[p];
      r.w = std::move(w);
      r.pca = std::move(pca);
      r.pca.atoms.resize(static_cast<size_t>(atoms));
    }
    // Local refinement (Eq. 12): each residual's whitened SVD, the ranks of Algorithm 1 within (Q, K) and
    // (O, V) (or the plan's, by-shape), and the truncation at those ranks.
    for (size_t i = 0; i < group.size() && !refinable.empty(); ++i) {
      const int64_t layer = group[i];
      std::map<Proj, WhitenedSvd> svds;
      for (auto& [p, r] : refinable) {
        const auto [rows, cols] = attentionShape(view.shape, p);
        // The residual dW_l = W_l - W^_l (Eq. 11), in double.
        std::vector<double> residual = toDouble(r.w[i]);
        r.w[i] = FloatMatrix();
        for (int64_t s = 0; s < atoms; ++s) {
          const double c = r.pca.coefficients(s, static_cast<int64_t>(i));
          const std::vector<float>& atom = r.pca.atoms[static_cast<size_t>(s)].data;
          for (size_t k = 0; k < residual.size(); ++k) residual[k] -= c * static_cast<double>(atom[k]);
        }
        if (rankOf(p, layer) > 0 || spec.allocation == "tail-energy")
          svds[p] = whitenedSvd(residual, rows, cols, whiteningFor(layer, p));
      }
      if (spec.allocation == "tail-energy")
        for (const auto& [a, b] : {std::pair{Proj::Q, Proj::K}, std::pair{Proj::O, Proj::V}}) {
          if (!svds.count(a) || !svds.count(b)) continue;
          const RankPair r =
              tailEnergyRanks(svds[a].sigma, svds[b].sigma, {rankOf(a, layer), rankOf(b, layer)});
          rankOf(a, layer) = r.a;
          rankOf(b, layer) = r.b;
        }
      for (const auto& [p, svd] : svds)
        store(fresh, layer, p, truncate(svd, whiteningFor(layer, p), rankOf(p, layer)));
    }
    whitenings.clear();
  }
  report.plan.plannedParameters = plannedParametersOf(view.shape, report.plan);
  record.ranks = report.plan.ranks;
  record.calibration = {{"tokens", calibration.tokens}, {"logit_lens", calibration.logitLens},
                        {"text", calibration.text},     {"tokenizer", calibration.tokenizer},
                        {"damping", damping},           {"kl_drift", calibration.klDrift}};
  if (!kept.empty()) record.calibration["kept_tensors"] = kept;  // only part of their rows were compressed
  record.parameters = fresh.parameters;
  if (record.parameters != plan.plannedParameters)
    throw Error({.what = "internal: the compressed tensors do not hold the planned parameters",
                 .where = o.out.string(),
                 .expected = std::to_string(plan.plannedParameters),
                 .found = std::to_string(record.parameters)});

  auto metadata = ckpt->metadata();
  metadata[kCompressedMetadataKey] = compressionRecordToJson(record).dump();
  std::vector<std::string> drop;
  for (const DroppedTensor& d : record.dropped) drop.push_back(d.name);
  TensorEditor(*ckpt).save(out.path() / "model.safetensors", metadata, drop, fresh.tensors);
  copyCompanionFiles(*ckpt, out.path());
  fresh.tensors.clear();
  // Read back: the view opens, and the compressed tensors hold exactly the planned parameters.
  {
    const auto written = Checkpoint::open(out.path());
    const ModelView reopened = openModelView(*written);
    for (const std::string& name : written->tensorNames())
      if (name.rfind("compressed.", 0) == 0)
        report.storedParameters += static_cast<int64_t>(written->at(name).info->numel);
    (void)reopened;
  }
  report.out = o.out;
  report.compressionSeconds = secondsSince(started);
  report.peakResidentBytes = peakResidentBytes();
  if (o.beforeCommit) o.beforeCommit(out.path(), report);
  writeFileAtomically(out.path() / "compress.json", report.toJson().dump(2) + "\n");
  out.commit();
  return report;
}

Json CompressionReport::toJson() const {
  Json ranks = Json::object(), startRanks = Json::object();
  for (const auto& [p, perLayer] : plan.ranks) ranks[std::string(projName(p))] = perLayer;
  for (const auto& [p, perLayer] : plan.startRanks) startRanks[std::string(projName(p))] = perLayer;
  Json json = {{"schema", "sharelens.compress/1"},
               {"out", out.string()},
               {"method", plan.spec.method},
               {"target_ratio", plan.spec.ratio},
               {"groups", plan.spec.groups},
               {"atoms", plan.atoms},
               {"beta", plan.beta},
               {"budget", plan.spec.method == "masa" ? plan.spec.budget : ""},
               {"allocation", plan.spec.method == "masa" ? plan.spec.allocation : ""},
               {"start_ranks", startRanks},
               {"ranks", ranks},
               {"original_parameters", plan.originalParameters},
               {"target_parameters", plan.targetParameters},
               {"atom_parameters", plan.atomParameters},
               {"parameters", storedParameters},
               {"achieved_ratio", plan.originalParameters ? static_cast<double>(storedParameters) /
                                                                static_cast<double>(plan.originalParameters)
                                                          : 0.0},
               {"kl_drift", klDrift},
               {"calibration", record.calibration},
               {"timing", {{"calibration_s", calibrationSeconds}, {"compression_s", compressionSeconds}}},
               {"peak_resident_bytes", peakResidentBytes}};
  if (!eval.is_null()) json["eval"] = eval;
  return json;
}

namespace {

// What decides a sweep's results: an interrupted sweep continues only under the same settings. The checkpoint
// is named by its real path and its files' sizes and modification times, token ids by their hash.
Json sweepSettings(const fs::path& path, const CompressOptions& base, const std::vector<double>& ratios,
                   const std::vector<std::string>& methods, const EvalOptions& eval) {
  const fs::path model = fs::weakly_canonical(resolveModelPath(path));
  Json files = Json::object();
  auto stamp = [&](const fs::path& f) {
    files[f.filename().string()] = {fs::file_size(f), fs::last_write_time(f).time_since_epoch().count()};
  };
  if (fs::is_directory(model)) {
    for (const fs::directory_entry& entry : fs::directory_iterator(model))
      if (entry.is_regular_file()) stamp(entry.path());
  } else {
    stamp(model);
  }
  auto idsHash = [](const std::vector<int>& ids) {
    Fnv1a h;
    h.update(ids.data(), ids.size() * sizeof(int));
    return ids.empty() ? std::string() : h.hex();
  };
  std::vector<std::string> projections;
  for (Proj p : base.spec.projections) projections.emplace_back(projName(p));
  return {{"schema", "sharelens.compress-sweep-settings/1"},
          {"checkpoint", model.string()},
          {"files", files},
          {"ratios", ratios},
          {"methods", methods},
          {"projections", projections},
          {"groups", base.spec.groups},
          {"kl_groups", base.klGroups},
          {"atoms", base.spec.atoms ? Json(*base.spec.atoms) : Json(nullptr)},
          {"budget", base.spec.budget},
          {"allocation", base.spec.allocation},
          {"calibration",
           {{"corpus", base.calibration.corpus},
            {"tokens", base.calibration.tokens},
            {"logit_lens", base.calibration.logitLens},
            {"chunk", base.calibration.chunk},
            {"token_ids", idsHash(base.calibration.tokenIds)}}},
          {"eval",
           {{"corpus", eval.corpus.value_or("")},
            {"validation_fraction", eval.validationFraction.value_or(-1.0)},
            {"tokens", eval.tokens},
            {"window", eval.window},
            {"token_ids", idsHash(eval.tokenIds)}}}};
}

// An evaluation kept in the sweep's partial output (FILE): read back when the sweep continues, else made
// and written there.
EvalResult evaluationIn(const fs::path& file, const std::function<EvalResult()>& evaluate) {
  if (fs::exists(file)) return evalResultFromJson(readJsonFile(file), file.string());
  EvalResult r = evaluate();
  writeFileAtomically(file, evalResultToJson(r).dump(2) + "\n");
  return r;
}

}  // namespace

SweepReport sweepCompression(const fs::path& path, const CompressOptions& base,
                             const std::vector<double>& ratios, const std::vector<std::string>& methods,
                             const EvalOptions& eval, const TaskContext& ctx,
                             const std::function<void(const fs::path&, const SweepReport&)>& beforeCommit) {
  if (ratios.empty())
    throw Error({.what = "no ratios to sweep",
                 .where = "--sweep",
                 .expected = "e.g. 0.9,0.8,0.7,0.6",
                 .found = "none"});
  {
    const auto ckpt = Checkpoint::open(resolveModelPath(path));
    checkCompressible(*ckpt, openModelView(*ckpt), base.spec.projections);
  }
  // Everything is written into a resumable staging directory (.OUT.partial) renamed into place at the end:
  // OUT appears whole or not at all, and a sweep that was killed or failed keeps its finished points there,
  // so the same command run again continues from them (under the same settings only).
  const Json settings = sweepSettings(path, base, ratios, methods, eval);
  StagedDirectory staging(base.out, StagedDirectory::Kind::Resumable);
  const fs::path settingsFile = staging.path() / "sweep-settings.json";
  if (fs::exists(settingsFile)) {
    if (readJsonFile(settingsFile) != settings)
      throw Error({.what = "an interrupted sweep with other settings is waiting to be finished",
                   .where = staging.path().string(),
                   .expected = "the same checkpoint, ratios, methods, calibration and evaluation",
                   .found = "other settings (see its sweep-settings.json)",
                   .hint = "run that sweep's command again to finish it, or remove " +
                           staging.path().string() + " to start this one"});
  } else if (staging.resumed() && !fs::is_empty(staging.path())) {  // what it holds cannot be vouched for
    throw Error({.what = "an interrupted sweep's directory has no record of its settings",
                 .where = staging.path().string(),
                 .expected = "sweep-settings.json beside its points",
                 .found = "points without it",
                 .hint = "remove " + staging.path().string() + " to start the sweep afresh"});
  } else {
    writeFileAtomically(settingsFile, settings.dump(2) + "\n");
  }
  const auto ckpt = Checkpoint::open(resolveModelPath(path));
  const ModelView view = openModelView(*ckpt);
  std::vector<CompressOptions> points;
  for (double ratio : ratios)
    for (const std::string& method : methods) {
      CompressOptions o = base;
      o.spec.method = method;
      o.spec.ratio = ratio;
      o.out = staging.path() / (method + "-" + ratioLabel(ratio));
      o.beforeCommit = nullptr;
      points.push_back(std::move(o));
    }
  // A point is finished once its directory holds compress.json (compressCheckpoint commits it whole).
  const auto finished = [](const CompressOptions& o) { return fs::exists(o.out / "compress.json"); };
  std::optional<CalibrationResult> calibration;
  if (!std::all_of(points.begin(), points.end(), finished)) {
    // Every point is planned -- and so refused, if it must be -- with the real groups before anything is
    // compressed; a sweep refused before it finished anything leaves nothing behind.
    try {
      calibration = calibrate(path, base.calibration, ctx);
      for (CompressOptions& o : points) {
        o.spec.groups = resolveGroups(o, *calibration, view.shape.layers);
        (void)planCompression(view.shape, o.spec);
      }
    } catch (const Error&) {
      if (std::none_of(points.begin(), points.end(), finished)) staging.discard();
      throw;
    }
  }
  SweepReport report;
  report.source = path.string();
  try {
    report.original = evaluationIn(staging.path() / "original-eval.json",
                                   [&] { return evaluateCheckpoint(path, eval, ctx); });
  } catch (const Error&) {  // refused (the evaluation's text, say) before any point: nothing to keep
    if (std::none_of(points.begin(), points.end(), finished)) staging.discard();
    throw;
  }
  int done = 0;
  for (const CompressOptions& o : points) {
    SweepPoint point{.method = o.spec.method, .ratio = o.spec.ratio, .dir = base.out / o.out.filename()};
    if (finished(o)) {
      ++report.resumedPoints;
    } else {
      (void)compressCheckpoint(path, o, *calibration, ctx);
    }
    const Json written = readJsonFile(o.out / "compress.json");
    point.parameters = written.at("parameters").get<int64_t>();
    point.achievedRatio = static_cast<double>(point.parameters) /
                          static_cast<double>(written.at("original_parameters").get<int64_t>());
    if (o.spec.method != "svd") report.groups = written.at("groups").get<std::vector<std::vector<int64_t>>>();
    point.eval = evaluationIn(o.out / "eval.json", [&] { return evaluateCheckpoint(o.out, eval, ctx); });
    point.eval.source = point.dir.string();
    report.points.push_back(std::move(point));
    fault::maybeKillAfterSweepPoint(++done);
  }
  writeFileAtomically(staging.path() / "sweep.json", report.toJson().dump(2) + "\n");
  writeFileAtomically(staging.path() / "sweep.md", report.toMarkdown());
  if (beforeCommit) beforeCommit(staging.path(), report);
  staging.commit();
  return report;
}

Json SweepReport::toJson() const {
  Json points = Json::array();
  for (const SweepPoint& p : this->points)
    points.push_back({{"method", p.method},
                      {"ratio", p.ratio},
                      {"achieved_ratio", p.achievedRatio},
                      {"parameters", p.parameters},
                      {"dir", p.dir.string()},
                      {"eval", evalResultToJson(p.eval)}});
  return {{"schema", "sharelens.compress-sweep/1"},
          {"source", source},
          {"groups", groups},
          {"original", evalResultToJson(original)},
          {"resumed_points", resumedPoints},
          {"points", points}};
}

SweepReport readSweepReport(const std::filesystem::path& path) {
  const std::filesystem::path file = std::filesystem::is_directory(path) ? path / "sweep.json" : path;
  const Json j = readJsonFile(file);
  constexpr std::string_view kSchema = "sharelens.compress-sweep/1";
  const std::string hint =
      "pass the --out of `sharelens compress PATH --sweep ...`, or its sweep.json; a sweep "
      "run again into a new --out writes it anew";
  const bool isObject = j.is_object();
  const std::string schema = isObject && j.contains("schema") && j["schema"].is_string() ? j["schema"] : "";
  if (schema != kSchema)
    throw Error({.what = "not a compression sweep",
                 .where = file.string(),
                 .expected = "schema " + std::string(kSchema),
                 .found = !isObject ? "not a JSON object" : "schema '" + schema + "'",
                 .hint = hint});
  // An evaluation that cannot be read names the point it belongs to; deleting the file (evaluate's hint for
  // its own eval.json) would lose the sweep.
  auto evaluation = [&](const JsonObject& e, const std::string& what) {
    try {
      return evalResultFromJson(e.raw(), e.where());
    } catch (const Error& error) {  // its parts, with the sweep's hint in place of the evaluation's
      ErrorDetails d = error.details();
      d.what = "the evaluation of " + what + ": " + d.what;
      d.hint = hint;
      throw Error(d);
    }
  };
  const JsonObject root(j, file.string());
  SweepReport r;
  r.source = root.requireString("source");
  for (const Json& group : root.requireArray("groups")) {
    auto& members = r.groups.emplace_back();
    if (!group.is_array())
      root.fail("groups", "a group is not a list of layers", "arrays of integers", jsonTypeName(group));
    for (const Json& layer : group) {
      if (!layer.is_number_integer())
        root.fail("groups", "a layer is not an integer", "arrays of integers", jsonTypeName(layer));
      members.push_back(layer.get<int64_t>());
    }
  }
  r.resumedPoints = static_cast<int>(root.requireInt("resumed_points", 0));
  r.original = evaluation(root.requireObject("original"), "the original model");
  const Json& points = root.requireArray("points");
  for (size_t k = 0; k < points.size(); ++k) {
    const JsonObject p(points[k], file.string() + ": points[" + std::to_string(k) + "]");
    SweepPoint& point = r.points.emplace_back();
    point.method = p.requireString("method");
    point.ratio = p.requireNumber("ratio");
    point.achievedRatio = p.requireNumber("achieved_ratio");
    point.parameters = p.requireInt("parameters", 0);
    point.dir = p.requireString("dir");
    char name[96];
    std::snprintf(name, sizeof name, "point %zu (%s at ratio %.2f)", k, point.method.c_str(), point.ratio);
    point.eval = evaluation(p.requireObject("eval"), name);
  }
  return r;
}

std::string SweepReport::toMarkdown() const {
  std::string md = "# Compression sweep of " + source +
                   "\n\nHeld-out perplexity against the share of attention parameters kept ("
                   "target ratio; the achieved one in brackets), on " +
                   std::to_string(original.tokens) + " tokens of " + original.text +
                   ". Original: perplexity " + std::to_string(original.perplexity).substr(0, 7) + " (NLL " +
                   std::to_string(original.nll).substr(0, 6) +
                   ").\n\n| method | ratio | achieved | parameters | NLL | ± | perplexity |\n"
                   "|---|---|---|---|---|---|---|\n";
  for (const SweepPoint& p : points) {
    char row[256];
    std::snprintf(row, sizeof row, "| %s | %.2f | %.4f | %lld | %.4f | %.4f | %.3f |\n", p.method.c_str(),
                  p.ratio, p.achievedRatio, static_cast<long long>(p.parameters), p.eval.nll,
                  p.eval.standardError(), p.eval.perplexity);
    md += row;
  }
  md += "\n";
  for (size_t i = 0; i < kCompressionMethods.size(); ++i)
    md += std::string(kCompressionMethods[i].name) + ": " + std::string(kCompressionMethods[i].summary) +
          (i + 1 < kCompressionMethods.size() ? "; " : ". ");
  md += "± is the standard error of the NLL over evaluation windows.\n";
  return md;
}

}  // namespace sharelens
