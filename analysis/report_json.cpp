#include "analysis/report_json.hpp"

#include <cmath>

#include "core/error.hpp"

namespace sharelens {
namespace {

template <typename T>
Json square(const std::vector<T>& flat, int64_t n) {
  Json rows = Json::array();
  for (int64_t i = 0; i < n; ++i)
    rows.push_back(std::vector<T>(flat.begin() + i * n, flat.begin() + (i + 1) * n));
  return rows;
}

Json matrixJson(const FloatMatrix& m) {
  Json rows = Json::array();
  for (int64_t r = 0; r < m.rows; ++r) rows.push_back(std::vector<float>(m.row(r), m.row(r) + m.cols));
  return rows;
}

template <typename T>
std::vector<T> flatten(const Json& rows, int64_t& n, const char* field) {
  if (!rows.is_array())
    throw Error({.what = "expected a square array", .where = std::string("analysis report: ") + field});
  n = static_cast<int64_t>(rows.size());
  std::vector<T> out;
  for (const Json& row : rows) {
    if (!row.is_array() || static_cast<int64_t>(row.size()) != n)
      throw Error({.what = "rows of a square map must all have n entries",
                   .where = std::string("analysis report: ") + field,
                   .expected = std::to_string(n),
                   .found = std::to_string(row.size())});
    for (const Json& v : row) out.push_back(v.get<T>());
  }
  return out;
}

FloatMatrix matrixFromJson(const Json& rows) {
  FloatMatrix m;
  m.rows = static_cast<int64_t>(rows.size());
  m.cols = m.rows ? static_cast<int64_t>(rows[0].size()) : 0;
  for (const Json& row : rows)
    for (const Json& v : row) m.data.push_back(v.get<float>());
  return m;
}

const Json& field(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end())
    throw Error({.what = std::string("missing field '") + key + "'",
                 .where = "analysis report",
                 .hint = "regenerate it with `sharelens analyze`"});
  return *it;
}

}  // namespace

Json toJson(const Spectrum& s) {
  return {{"rows", s.rows},
          {"cols", s.cols},
          {"effective_rank", s.effectiveRank},
          {"threshold", s.threshold},
          {"spectral_norm", s.spectralNorm()},
          {"frobenius_norm", s.frobenius()},
          {"stable_rank", s.stableRank()},
          {"singular_values", s.sigma}};
}

Json toJson(const std::vector<MatrixSpectrum>& spectra) {
  Json out = Json::array();
  for (const MatrixSpectrum& m : spectra) {
    Json j = toJson(m.spectrum);
    j["name"] = m.id.name;
    j["layer"] = m.id.layer;
    j["proj"] = m.id.proj ? Json(std::string(projName(*m.id.proj))) : Json(nullptr);
    j["head"] = m.id.head;
    out.push_back(std::move(j));
  }
  return out;
}

std::vector<MatrixSpectrum> spectraFromJson(const Json& j) {
  std::vector<MatrixSpectrum> out;
  for (const Json& m : j) {
    MatrixSpectrum s;
    s.id.name = field(m, "name").get<std::string>();
    s.id.layer = field(m, "layer").get<int64_t>();
    if (!field(m, "proj").is_null()) s.id.proj = parseProj(m["proj"].get<std::string>());
    s.id.head = field(m, "head").get<int64_t>();
    s.spectrum.rows = field(m, "rows").get<int64_t>();
    s.spectrum.cols = field(m, "cols").get<int64_t>();
    s.spectrum.sigma = field(m, "singular_values").get<std::vector<double>>();
    s.spectrum.threshold = field(m, "threshold").get<double>();
    s.spectrum.effectiveRank = field(m, "effective_rank").get<int64_t>();
    const double f = field(m, "frobenius_norm").get<double>();
    s.spectrum.frobeniusSquared = f * f;
    out.push_back(std::move(s));
  }
  return out;
}

Json toJson(const HeadDiffResult& h) {
  Json layers = Json::array();
  for (const HeadDiffLayer& l : h.layers)
    layers.push_back({{"layer", l.layer},
                      {"labels", l.labels},
                      {"norms", l.norms},
                      {"effective_rank", square(l.map.rank, l.map.n)},
                      {"relative_difference", square(l.map.relativeDifference, l.map.n)}});
  Json lowest = Json::array();
  for (const HeadPair& p : h.lowest) {
    lowest.push_back({{"layer", p.layer},
                      {"a", p.labelA},
                      {"b", p.labelB},
                      {"effective_rank", p.rank},
                      {"relative_difference", p.relativeDifference}});
    if (!p.note.empty()) lowest.back()["note"] = p.note;
  }
  return {{"threshold", h.threshold},
          {"head_dim", h.headDim},
          {"hidden", h.hidden},
          {"layers", layers},
          {"lowest_pairs", lowest}};
}

HeadDiffResult headDiffFromJson(const Json& j) {
  HeadDiffResult h;
  h.threshold = field(j, "threshold").get<double>();
  h.headDim = field(j, "head_dim").get<int64_t>();
  h.hidden = field(j, "hidden").get<int64_t>();
  for (const Json& l : field(j, "layers")) {
    HeadDiffLayer layer;
    layer.layer = field(l, "layer").get<int64_t>();
    layer.labels = field(l, "labels").get<std::vector<std::string>>();
    if (l.contains("norms")) layer.norms = l["norms"].get<std::vector<float>>();
    for (const std::string& label : layer.labels) {  // "q3", "o12": the projection's letter, then the head
      const auto proj = label.empty() ? std::nullopt : parseProj(label.substr(0, 1));
      if (!proj)
        throw Error(
            {.what = "unknown head label", .where = "analysis report: head_differences", .found = label});
      layer.heads.push_back({*proj, std::stoll(label.substr(1))});
    }
    layer.map.rank = flatten<int32_t>(field(l, "effective_rank"), layer.map.n, "effective_rank");
    layer.map.relativeDifference =
        flatten<float>(field(l, "relative_difference"), layer.map.n, "relative_difference");
    h.layers.push_back(std::move(layer));
  }
  for (const Json& p : field(j, "lowest_pairs"))
    h.lowest.push_back({field(p, "layer").get<int64_t>(), 0, 0, field(p, "a").get<std::string>(),
                        field(p, "b").get<std::string>(), field(p, "effective_rank").get<int32_t>(),
                        field(p, "relative_difference").get<float>(), p.value("note", "")});
  return h;
}

Json toJson(const LayerDiffResult& r) {
  Json maps = Json::array();
  for (const LayerDiffMap& m : r.maps)
    maps.push_back({{"proj", projName(m.proj)},
                    {"rows", m.rows},
                    {"cols", m.cols},
                    {"effective_rank", square(m.map.rank, m.map.n)},
                    {"relative_difference", square(m.map.relativeDifference, m.map.n)}});
  return {{"threshold", r.threshold}, {"maps", maps}};
}

LayerDiffResult layerDiffFromJson(const Json& j) {
  LayerDiffResult r;
  r.threshold = field(j, "threshold").get<double>();
  for (const Json& m : field(j, "maps")) {
    LayerDiffMap map;
    const auto proj = parseProj(field(m, "proj").get<std::string>());
    if (!proj)
      throw Error({.what = "unknown projection",
                   .where = "analysis report: layer_differences",
                   .found = m["proj"].dump()});
    map.proj = *proj;
    map.rows = field(m, "rows").get<int64_t>();
    map.cols = field(m, "cols").get<int64_t>();
    map.map.rank = flatten<int32_t>(field(m, "effective_rank"), map.map.n, "effective_rank");
    map.map.relativeDifference =
        flatten<float>(field(m, "relative_difference"), map.map.n, "relative_difference");
    r.maps.push_back(std::move(map));
  }
  return r;
}

Json toJson(const std::vector<MatrixPcaGroup>& groups) {
  Json out = Json::array();
  for (const MatrixPcaGroup& g : groups)
    out.push_back({{"proj", projName(g.proj)},
                   {"layers", g.layers},
                   {"singular_values", g.singularValues},
                   {"explained_variance", g.explainedVariance},
                   {"reconstruction_error", g.reconstructionError},
                   {"coefficients", matrixJson(g.coefficients)},
                   {"layer_error", matrixJson(g.layerError)}});
  return out;
}

std::vector<MatrixPcaGroup> matrixPcaFromJson(const Json& j) {
  std::vector<MatrixPcaGroup> out;
  for (const Json& g : j) {
    MatrixPcaGroup group;
    group.proj = parseProj(field(g, "proj").get<std::string>()).value_or(Proj::Q);
    group.layers = field(g, "layers").get<std::vector<int64_t>>();
    group.singularValues = field(g, "singular_values").get<std::vector<double>>();
    group.explainedVariance = field(g, "explained_variance").get<std::vector<double>>();
    group.reconstructionError = field(g, "reconstruction_error").get<std::vector<double>>();
    group.coefficients = matrixFromJson(field(g, "coefficients"));
    group.layerError = matrixFromJson(field(g, "layer_error"));
    out.push_back(std::move(group));
  }
  return out;
}

Json toJson(const DirectShareResult& r) {
  auto match = [](const UnitMatch& m) {
    return Json{{"target", {m.target.layer, m.target.unit}},
                {"source", {m.source.layer, m.source.unit}},
                {"similarity", m.similarity}};
  };
  Json best = Json::array(), chosen = Json::array();
  for (const UnitMatch& m : r.bestMatches) best.push_back(match(m));
  for (const UnitMatch& m : r.chosen) chosen.push_back(match(m));
  return {{"layers", r.layers},
          {"units", r.units},
          {"unit", r.unitKind},
          {"query_heads_per_unit", r.queryHeadsPerUnit},
          {"ratio", r.ratio},
          {"achieved_ratio", r.achievedRatio()},
          {"shared_projections", "q,k,v"},
          {"parameters_per_unit", r.parametersPerUnit},
          {"parameters_saved", r.parametersSaved},
          {"parameters_total", r.parametersTotal},
          {"o_parameters_per_unit", r.oParametersPerUnit},
          {"attention_parameters", r.attentionParameters},
          {"saved_share_of_attention", r.savedShareOfAttention(false)},
          {"parameters_saved_with_o", r.parametersSavedWithO()},  // what the paper's Table 3 counts
          {"saved_share_of_attention_with_o", r.savedShareOfAttention(true)},
          {"best_matches", best},
          {"chosen", chosen},
          {"similarity", square(r.similarity, r.layers * r.units)}};
}

DirectShareResult directShareFromJson(const Json& j) {
  DirectShareResult r;
  r.layers = field(j, "layers").get<int64_t>();
  r.units = field(j, "units").get<int64_t>();
  r.unitKind = field(j, "unit").get<std::string>();
  r.queryHeadsPerUnit = field(j, "query_heads_per_unit").get<int64_t>();
  r.ratio = field(j, "ratio").get<double>();
  r.parametersPerUnit = field(j, "parameters_per_unit").get<int64_t>();
  r.parametersSaved = field(j, "parameters_saved").get<int64_t>();
  r.parametersTotal = field(j, "parameters_total").get<int64_t>();
  r.oParametersPerUnit = j.value("o_parameters_per_unit", int64_t{0});  // absent from older reports
  r.attentionParameters = j.value("attention_parameters", int64_t{0});
  auto match = [](const Json& m) {
    return UnitMatch{{m["target"][0].get<int64_t>(), m["target"][1].get<int64_t>()},
                     {m["source"][0].get<int64_t>(), m["source"][1].get<int64_t>()},
                     m["similarity"].get<float>()};
  };
  for (const Json& m : field(j, "best_matches")) r.bestMatches.push_back(match(m));
  for (const Json& m : field(j, "chosen")) r.chosen.push_back(match(m));
  int64_t n = 0;
  r.similarity = flatten<float>(field(j, "similarity"), n, "similarity");
  return r;
}

Json toJson(const EmbeddingStudy& e) {
  Json curve = Json::array();
  for (const FactorizationPoint& p : e.curve) {
    curve.push_back({{"rank", p.rank},
                     {"fraction_of_hidden", p.fractionOfHidden},
                     {"relative_error", p.relativeError},
                     {"parameters", p.parameters}});
    if (std::isfinite(p.validationNll)) curve.back()["validation_nll"] = p.validationNll;
  }
  Json j = {{"vocab", e.vocab},
            {"hidden", e.hidden},
            {"tied", e.tied},
            {"rho", e.rho},
            {"embedding_parameters", e.embeddingParameters},
            {"total_parameters", e.totalParameters},
            {"spectrum", toJson(e.spectrum)},
            {"factorization", curve}};
  if (e.tyingCosineMean)
    j["tying_gap"] = {{"mean_cosine", *e.tyingCosineMean},
                      {"median_cosine", *e.tyingCosineMedian},
                      {"histogram", e.tyingCosineHistogram}};
  if (std::isfinite(e.fullRankValidationNll))
    j["validation"] = {{"full_rank_nll", e.fullRankValidationNll}, {"text", e.validationText}};
  return j;
}

EmbeddingStudy embeddingFromJson(const Json& j) {
  EmbeddingStudy e;
  e.vocab = field(j, "vocab").get<int64_t>();
  e.hidden = field(j, "hidden").get<int64_t>();
  e.tied = field(j, "tied").get<bool>();
  e.rho = field(j, "rho").get<double>();
  e.embeddingParameters = field(j, "embedding_parameters").get<int64_t>();
  e.totalParameters = field(j, "total_parameters").get<int64_t>();
  const Json& s = field(j, "spectrum");
  e.spectrum.rows = s["rows"].get<int64_t>();
  e.spectrum.cols = s["cols"].get<int64_t>();
  e.spectrum.sigma = s["singular_values"].get<std::vector<double>>();
  e.spectrum.effectiveRank = s["effective_rank"].get<int64_t>();
  e.spectrum.threshold = s["threshold"].get<double>();
  const double f = s["frobenius_norm"].get<double>();
  e.spectrum.frobeniusSquared = f * f;
  for (const Json& p : field(j, "factorization"))
    e.curve.push_back({p["rank"].get<int64_t>(), p["fraction_of_hidden"].get<double>(),
                       p["relative_error"].get<double>(), p["parameters"].get<int64_t>(),
                       p.value("validation_nll", NAN)});
  if (auto it = j.find("validation"); it != j.end()) {
    e.fullRankValidationNll = (*it)["full_rank_nll"].get<double>();
    e.validationText = (*it)["text"].get<std::string>();
  }
  if (auto it = j.find("tying_gap"); it != j.end()) {
    e.tyingCosineMean = (*it)["mean_cosine"].get<double>();
    e.tyingCosineMedian = (*it)["median_cosine"].get<double>();
    e.tyingCosineHistogram = (*it)["histogram"].get<std::vector<int64_t>>();
  }
  return e;
}

Json toJson(const ActivationResults& r) {
  return {
      {"tokens", r.tokens},
      {"layers", r.layers},
      {"hidden", r.hidden},
      {"heads", r.heads},
      {"corpus", r.corpus},
      {"tokenizer", r.tokenizer},
      {"token_ids", r.tokenIds},
      {"layer_output_differences",
       {{"threshold", r.threshold},
        {"effective_rank", square(r.layerOutputs.rank, r.layerOutputs.n)},
        {"relative_difference", square(r.layerOutputs.relativeDifference, r.layerOutputs.n)}}},
      {"logit_lens",
       {{"lens", r.logitLens},
        {"tokens", r.logitLensTokens},
        {"kl_drift", r.klDrift},
        {"grouping", r.klGroupCount > 0 ? "kl:" + std::to_string(r.klGroupCount) : std::string("kl-peaks")},
        {"groups", r.groups}}},
      {"attention_similarity",
       {{"tokens", r.attentionTokens},
        {"labels", r.headLabels},
        {"similarity", matrixJson(r.attentionSimilarity)}}},
      {"timing",
       {{"forward_s", r.forwardSeconds},
        {"logit_lens_s", r.logitLensSeconds},
        {"rank_map_s", r.rankMapSeconds}}},
      {"peak_resident_bytes", r.peakResidentBytes}};
}

ActivationResults activationResultsFromJson(const Json& j) {
  ActivationResults r;
  r.tokens = field(j, "tokens").get<int64_t>();
  r.layers = j.value("layers", int64_t{0});
  r.hidden = j.value("hidden", int64_t{0});  // 0: a report written before these were kept
  r.heads = j.value("heads", int64_t{0});
  r.corpus = field(j, "corpus").get<std::string>();
  r.tokenizer = field(j, "tokenizer").get<std::string>();
  r.tokenIds = field(j, "token_ids").get<std::vector<int>>();
  const Json& map = field(j, "layer_output_differences");
  r.threshold = field(map, "threshold").get<double>();
  r.layerOutputs.rank = flatten<int32_t>(field(map, "effective_rank"), r.layerOutputs.n, "effective_rank");
  r.layerOutputs.relativeDifference =
      flatten<float>(field(map, "relative_difference"), r.layerOutputs.n, "relative_difference");
  const Json& lens = field(j, "logit_lens");
  r.logitLensTokens = field(lens, "tokens").get<int64_t>();
  r.klDrift = field(lens, "kl_drift").get<std::vector<double>>();
  r.groups = field(lens, "groups").get<std::vector<std::vector<int64_t>>>();
  r.logitLens = lens.value("lens", std::string("per-token"));  // reports before the mean-state lens had none
  if (const std::string g = lens.value("grouping", std::string("kl-peaks")); g.rfind("kl:", 0) == 0)
    r.klGroupCount = std::stoll(g.substr(3));
  else
    r.klGroupCount = 0;
  const Json& att = field(j, "attention_similarity");
  r.attentionTokens = field(att, "tokens").get<int64_t>();
  r.headLabels = field(att, "labels").get<std::vector<std::string>>();
  r.attentionSimilarity = matrixFromJson(field(att, "similarity"));
  if (auto t = j.find("timing"); t != j.end()) {
    r.forwardSeconds = t->value("forward_s", 0.0);
    r.logitLensSeconds = t->value("logit_lens_s", 0.0);
    r.rankMapSeconds = t->value("rank_map_s", 0.0);
  }
  r.peakResidentBytes = j.value("peak_resident_bytes", int64_t{0});
  if (r.layers == 0) r.layers = r.layerOutputs.n;
  if (r.heads == 0 && r.layers > 0)  // an older report: its attention map has a row per layer and head
    r.heads = static_cast<int64_t>(r.headLabels.size()) / r.layers;
  return r;
}

Json toJson(const std::vector<LearnedDictionaryMap>& maps) {
  Json out = Json::array();
  for (const LearnedDictionaryMap& m : maps)
    out.push_back({{"proj", projName(m.proj)},
                   {"group", m.group},
                   {"layers", m.layers},
                   {"correlation", matrixJson(m.correlation)},
                   {"coefficients", matrixJson(m.coefficients)}});
  return out;
}

std::vector<LearnedDictionaryMap> learnedDictionaryMapsFromJson(const Json& j) {
  std::vector<LearnedDictionaryMap> out;
  for (const Json& m : j) {
    const auto proj = parseProj(field(m, "proj").get<std::string>());
    if (!proj)
      throw Error({.what = "unknown projection",
                   .where = "analysis report: masa_trained",
                   .found = m["proj"].dump()});
    out.push_back({*proj, field(m, "group").get<int64_t>(), field(m, "layers").get<std::vector<int64_t>>(),
                   matrixFromJson(field(m, "correlation")), matrixFromJson(field(m, "coefficients"))});
  }
  return out;
}

}  // namespace sharelens
