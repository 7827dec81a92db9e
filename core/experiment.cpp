#include "core/experiment.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "core/error.hpp"
#include "core/param_count.hpp"
#include "core/run_dir.hpp"
#include "core/text.hpp"
#include "core/topology_presets.hpp"

namespace fs = std::filesystem;

namespace sharelens {
namespace {

[[noreturn]] void bad(const std::string& where, const std::string& what, const std::string& expected,
                      const std::string& found, const std::string& hint = {}) {
  throw Error({.what = what, .where = where, .expected = expected, .found = found, .hint = hint});
}

// {"preset": "cycle", "layers": 8, "unique": 4, "depth": "1", "d_model": 128, "heads": 4, "kv_heads": 2,
//  "ffn": 352, "vocab": 2048, "context": 128, "lora_rank": 8, "share_ffn": true, "tied": true,
//  "parameter_matched": false,
//  "overrides": {partial topology JSON, merged over the preset}}
Topology topologyFromPreset(const JsonObject& o) {
  const std::string name = o.requireString("preset");
  const auto pattern = parsePattern(name);
  if (!pattern) o.fail("preset", "unknown sharing pattern", patternList(), name);
  PresetSpec spec;
  spec.pattern = *pattern;
  ModelDims& m = spec.base;
  m.layers = o.optionalInt("layers", 1).value_or(m.layers);
  spec.uniqueBlocks = o.optionalInt("unique", 1).value_or(m.layers);
  spec.depthMultiplier = o.optionalString("depth").value_or("1");
  m.dModel = o.optionalInt("d_model", 1).value_or(m.dModel);
  m.heads = o.optionalInt("heads", 1).value_or(m.heads);
  m.kvHeads = o.optionalInt("kv_heads", 1).value_or(m.heads);
  m.headDim = o.optionalInt("head_dim", 2).value_or(m.dModel / m.heads);
  m.ffn = o.optionalInt("ffn", 1).value_or(m.ffn);
  m.vocab = o.optionalInt("vocab", 16).value_or(m.vocab);
  m.context = o.optionalInt("context", 2).value_or(m.context);
  spec.loraRank = o.optionalInt("lora_rank", 0).value_or(spec.loraRank);
  spec.shareFfn = o.optionalBool("share_ffn").value_or(true);
  spec.tiedEmbeddings = o.optionalBool("tied").value_or(true);
  spec.parameterMatched = o.optionalBool("parameter_matched").value_or(false);  // [LRS] Table 3's rule
  if (spec.parameterMatched)
    for (const char* key : {"embedding_rank", "ffn_tie_interior", "overrides", "lora_rank", "unique"})
      if (o.has(key))
        o.fail(key, "a parameter-matched preset fixes this itself",
               "parameter_matched without '" + std::string(key) + "'", "both",
               "Table 3's rule sets the unique blocks and solves the LoRA rank; a change after it would undo "
               "the match");
  Topology t = makePreset(spec);
  if (const auto rank = o.optionalInt("embedding_rank", 0)) t.embedding.factorRank = *rank;
  if (const auto interior = o.optionalInt("ffn_tie_interior", 0)) {  // the STLM report's interior FFN tying
    if (2 * *interior >= t.model.layers)
      o.fail("ffn_tie_interior", "no interior left", "< half the layers", std::to_string(*interior));
    t.ffn.assign = interiorTieAssignment(t.model.layers, *interior);
    t.ffn.loraRank = spec.loraRank;
  }
  if (o.has("overrides")) {
    Json merged = topologyToJson(t);
    merged.merge_patch(o.raw()["overrides"]);
    t = topologyFromJson(merged, o.where() + ".overrides");
  }
  if (o.has("name")) t.name = o.requireString("name");
  return t;
}

Topology armTopology(const JsonObject& arm, const fs::path& baseDir) {
  const Json& spec = arm.raw()["topology"];
  const std::string where = arm.where() + ".topology";
  if (spec.is_string()) return readTopologyFile(baseDir / spec.get<std::string>());
  if (!spec.is_object())
    arm.fail("topology", "wrong type", "a file name, a topology or a preset object", jsonTypeName(spec));
  if (spec.contains("preset")) return topologyFromPreset(JsonObject(spec, where));
  return topologyFromJson(spec, where);
}

}  // namespace

Json experimentTrainingIdentity(Json j) {
  j.erase("description");
  j.erase("claim");
  j.erase("plan");
  if (j.contains("arms") && j["arms"].is_array())
    for (Json& arm : j["arms"])
      if (arm.is_object()) {
        arm.erase("expect");
        arm.erase("margin");
        arm.erase("paper_effect");
        arm.erase("paper_source");
      }
  return j;
}

Json experimentTrainingIdentityLessSeeds(Json j) {
  j = experimentTrainingIdentity(std::move(j));
  j.erase("seeds");
  return j;
}

const ExperimentArm& Experiment::arm(const std::string& name) const {
  for (const ExperimentArm& a : arms)
    if (a.name == name) return a;
  throw Error({.what = "no such arm", .where = "experiment '" + this->name + "'", .found = "'" + name + "'"});
}

namespace {

std::vector<double> positiveNumbers(const JsonObject& o, const char* key, std::vector<double> fallback,
                                    double most) {
  if (!o.has(key)) return fallback;
  const Json& list = o.requireArray(key);
  std::vector<double> out;
  for (const Json& v : list) {
    if (!v.is_number() || !(v.get<double>() > 0 && v.get<double>() <= most))
      o.fail(key, "a list of numbers in range", "numbers in (0, " + formatNumber(most, "%g") + "]", v.dump());
    out.push_back(v.get<double>());
  }
  if (out.empty()) o.fail(key, "an empty list", "one number or more", "[]");
  return out;
}

PlanSpec planSpecFromJson(const JsonObject& p) {
  p.allowOnly({"target_half_width", "pilot_seeds", "pilot_budgets", "lr_factors", "lr_budget", "max_seeds",
               "min_tokens_per_parameter", "pilot_every_budget", "sd_confidence"});
  PlanSpec s;
  s.targetHalfWidth = p.optionalNumber("target_half_width").value_or(s.targetHalfWidth);
  if (!(s.targetHalfWidth > 0 && s.targetHalfWidth < 10))
    p.fail("target_half_width", "out of range", "(0, 10) nats/token", formatNumber(s.targetHalfWidth, "%g"));
  s.pilotSeeds = static_cast<int>(p.optionalInt("pilot_seeds", 2).value_or(s.pilotSeeds));
  s.maxSeeds = static_cast<int>(p.optionalInt("max_seeds", 2).value_or(s.maxSeeds));
  if (s.pilotSeeds > 1000 || s.maxSeeds > 1000)
    p.fail(s.pilotSeeds > 1000 ? "pilot_seeds" : "max_seeds", "too many seeds", "<= 1000", "more");
  s.pilotBudgets = positiveNumbers(p, "pilot_budgets", s.pilotBudgets, 1.0);
  s.lrFactors = positiveNumbers(p, "lr_factors", s.lrFactors, 1000.0);
  for (size_t i = 0; i < s.lrFactors.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (s.lrFactors[i] == s.lrFactors[j])
        p.fail("lr_factors", "a factor listed twice", "distinct factors", formatNumber(s.lrFactors[i], "%g"));
  s.lrBudget = p.optionalNumber("lr_budget").value_or(s.lrBudget);
  if (!(s.lrBudget > 0 && s.lrBudget <= 1))
    p.fail("lr_budget", "out of range", "a fraction of tokens in (0, 1]", formatNumber(s.lrBudget, "%g"));
  s.minTokensPerParameter = p.optionalNumber("min_tokens_per_parameter").value_or(s.minTokensPerParameter);
  if (!(s.minTokensPerParameter >= 0 && s.minTokensPerParameter < 1e6))
    p.fail("min_tokens_per_parameter", "out of range", "[0, 1e6)",
           formatNumber(s.minTokensPerParameter, "%g"));
  s.pilotEveryBudget = p.optionalBool("pilot_every_budget").value_or(s.pilotEveryBudget);
  s.sdConfidence = p.optionalNumber("sd_confidence").value_or(s.sdConfidence);
  if (!(s.sdConfidence >= 0 && s.sdConfidence < 1))
    p.fail("sd_confidence", "out of range", "[0, 1): 0 sizes from the pilot's sd itself",
           formatNumber(s.sdConfidence, "%g"));
  return s;
}

Json planSpecToJson(const PlanSpec& s) {
  Json j = {{"target_half_width", s.targetHalfWidth},
            {"pilot_seeds", s.pilotSeeds},
            {"pilot_budgets", s.pilotBudgets},
            {"lr_factors", s.lrFactors},
            {"lr_budget", s.lrBudget},
            {"max_seeds", s.maxSeeds},
            {"min_tokens_per_parameter", s.minTokensPerParameter}};
  if (s.pilotEveryBudget) j["pilot_every_budget"] = true;  // written only when set: older readers refuse it
  if (s.sdConfidence != PlanSpec{}.sdConfidence) j["sd_confidence"] = s.sdConfidence;  // likewise
  return j;
}

// The A/A arm of `of` (issue 35): the same arm again, resolved, to be initialised from other seeds. Refused
// by name when an arm already holds its name.
ExperimentArm aaArmOf(const Experiment& e, const ExperimentArm& of, const std::string& where) {
  ExperimentArm aa = of;
  aa.name = of.name + kAaSuffix;
  aa.aaOf = of.name;
  aa.matchedBaselineOf.clear();
  aa.expect.clear();
  aa.margin = 0;
  aa.paperEffect.reset();
  aa.paperSource.clear();
  aa.topology.name = aa.name;
  if (std::any_of(e.arms.begin(), e.arms.end(), [&](const ExperimentArm& x) { return x.name == aa.name; }))
    bad(where + ".arms['" + aa.name + "']", "an arm holds the name of the A/A arm",
        "no arm named '" + aa.name + "'", "one",
        "rename that arm, or set \"aa_arm\": false and compare without an A/A check");
  return aa;
}

}  // namespace

void addAaArms(Experiment& e, const std::string& where) {
  auto has = [&](const std::string& aaOf) {
    return std::any_of(e.arms.begin(), e.arms.end(), [&](const ExperimentArm& x) { return x.aaOf == aaOf; });
  };
  const ExperimentArm reference = e.arm(e.reference);
  if (has(reference.name)) return;
  if (reference.derive) {
    const ExperimentArm source = e.arm(reference.derive->from);
    if (!has(source.name)) e.arms.push_back(aaArmOf(e, source, where));
    ExperimentArm aa = aaArmOf(e, reference, where);
    aa.derive->from = source.name + kAaSuffix;
    e.arms.push_back(std::move(aa));
  } else {
    e.arms.push_back(aaArmOf(e, reference, where));
  }
}

Experiment experimentFromJson(const Json& j, const std::string& where, const fs::path& baseDir) {
  const JsonObject o(j, where);
  if (o.optionalString("schema").value_or("") != kExperimentSchema)
    o.fail("schema", "not an experiment file", kExperimentSchema,
           o.has("schema") ? o.raw()["schema"].dump() : "nothing");
  o.allowOnly({"schema", "name", "description", "claim", "corpus", "seeds", "tokens", "eval_tokens", "train",
               "reference", "aa_arm", "plan", "profiles", "arms"});
  Experiment e;
  e.name = o.requireString("name");
  e.description = o.optionalString("description").value_or("");
  if (const auto c = o.optionalObject("claim")) {
    c->allowOnly({"paper", "section", "statement", "number"});
    e.claim.paper = c->optionalString("paper").value_or("");
    e.claim.section = c->optionalString("section").value_or("");
    e.claim.statement = c->optionalString("statement").value_or("");
    e.claim.number = c->optionalString("number").value_or("");
  }
  e.corpus = o.optionalString("corpus").value_or(e.corpus);
  if (o.has("seeds")) {
    const Json& s = o.raw()["seeds"];
    e.seeds.clear();
    if (const int64_t count = s.is_number_integer() ? s.get<int64_t>() : static_cast<int64_t>(s.size());
        count > kMostExperimentSeeds)
      o.fail("seeds", "too many seeds", "at most " + std::to_string(kMostExperimentSeeds),
             std::to_string(count), "every seed is a training run of every arm");
    if (s.is_number_integer()) {
      for (int64_t i = 1; i <= s.get<int64_t>(); ++i) e.seeds.push_back(static_cast<uint64_t>(i));
    } else if (s.is_array()) {
      for (const Json& v : s) {
        if (!v.is_number_integer() || v.get<int64_t>() < 0)
          o.fail("seeds", "seeds are non-negative integers", "[1, 2, 3]", v.dump());
        e.seeds.push_back(v.get<uint64_t>());
      }
    } else {
      o.fail("seeds", "wrong type", "a count or a list of seeds", jsonTypeName(s));
    }
  }
  if (e.seeds.size() < 2)
    o.fail("seeds", "an interval over seeds needs at least 2 seeds", ">= 2 seeds",
           std::to_string(e.seeds.size()),
           "3 seeds is the default; the papers' effects are as large as seed-to-seed spread at this scale");
  if (std::set<uint64_t>(e.seeds.begin(), e.seeds.end()).size() != e.seeds.size())
    o.fail("seeds", "a seed listed twice", "distinct seeds", "a repeated seed");
  e.tokens = o.requireInt("tokens", 1);
  constexpr int64_t kMostTokens = 1'000'000'000'000;  // keeps every step count below int64's range
  if (e.tokens > kMostTokens)
    o.fail("tokens", "too many training tokens", "at most 10^12 per run", std::to_string(e.tokens),
           "an experiment's runs are small models: millions to billions of tokens");
  if (o.has("eval_tokens") && o.raw().at("eval_tokens") == "all")
    e.evalTokens = kEveryHeldOutToken;
  else
    e.evalTokens = o.optionalInt("eval_tokens", 2).value_or(e.evalTokens);
  if (o.has("train")) e.train = o.requireObject("train").raw();
  if (const auto p = o.optionalObject("plan")) e.plan = planSpecFromJson(*p);
  for (const char* fixed : {"corpus", "steps", "seed", "init_seed", "data_offset"})
    if (e.train.contains(fixed))
      o.fail("train", std::string("'") + fixed + "' is set by the experiment, not by its training options",
             "no '" + std::string(fixed) + "'", "'" + std::string(fixed) + "'",
             "use the experiment's corpus, tokens and seeds");

  const Json& arms = o.requireArray("arms");
  std::vector<std::pair<std::string, std::string>> baselines;  // (arm, of)
  std::set<std::string> recordedBaselines;                     // written with their solved topology
  for (size_t i = 0; i < arms.size(); ++i) {
    const JsonObject a(arms[i], where + ".arms[" + std::to_string(i) + "]");
    a.allowOnly({"name", "corpus", "expect", "margin", "matched_baseline_of", "derive", "topology", "aa_of",
                 "lr", "paper_effect", "paper_source"});
    ExperimentArm arm;
    arm.name = a.requireString("name");
    if (const auto effect = a.optionalNumber("paper_effect")) {
      if (!std::isfinite(*effect) || std::abs(*effect) > 10)
        a.fail("paper_effect", "out of range", "a loss difference in nats/token, |x| <= 10",
               formatNumber(*effect, "%g"));
      arm.paperEffect = *effect;
      arm.paperSource = a.optionalString("paper_source").value_or("");
    } else if (a.has("paper_source")) {
      a.fail("paper_source", "a source without its number", "\"paper_effect\" beside it", "none");
    }
    if (const auto lr = a.optionalNumber("lr")) {
      if (!(*lr > 0 && *lr <= 10))
        a.fail("lr", "learning rate out of range", "(0, 10]", formatNumber(*lr, "%g"),
               "a peak learning rate like 3e-3");
      arm.lr = *lr;
    }
    if (arm.name.empty() || arm.name.find('/') != std::string::npos || arm.name == "." || arm.name == "..")
      a.fail("name", "arm names are directory names", "letters, digits, '-', '_'", "'" + arm.name + "'");
    for (const ExperimentArm& other : e.arms)
      if (other.name == arm.name)
        a.fail("name", "two arms with one name", "unique names", "'" + arm.name + "'");
    if (a.has("corpus") && a.requireString("corpus") != e.corpus)
      a.fail("corpus", "arms of one comparison train on one corpus", "'" + e.corpus + "'",
             "'" + a.requireString("corpus") + "'");
    if (const auto expect = a.optionalString("expect")) {
      if (*expect != "better" && *expect != "worse" && *expect != "no-worse")
        a.fail("expect", "unknown claim", "better, worse or no-worse (against the reference)",
               "'" + *expect + "'");
      arm.expect = *expect;
      if (arm.expect == "no-worse") arm.margin = kDefaultNoWorseMargin;
    }
    if (const auto margin = a.optionalNumber("margin")) {
      if (arm.expect != "no-worse")
        a.fail("margin", "a margin belongs to a no-worse claim", "\"expect\": \"no-worse\" beside it",
               arm.expect.empty() ? "no claim" : "\"expect\": \"" + arm.expect + "\"");
      if (!std::isfinite(*margin) || *margin < 0)
        a.fail("margin", "the non-inferiority margin is a loss difference", "a number >= 0 (nats/token)",
               formatNumber(*margin, "%g"));
      arm.margin = *margin;
    }
    if (a.has("aa_of")) {  // as experimentToJson writes the A/A arms it added: beside a topology or derive
      arm.aaOf = a.requireString("aa_of");
      if (!a.has("topology") && !a.has("derive"))
        a.fail("aa_of", "an A/A arm is written with its topology or derivation", "\"topology\" or \"derive\"",
               "neither", "leave A/A arms out of experiment files: \"aa_arm\" (default true) adds one");
    }
    if (a.has("matched_baseline_of")) {
      arm.matchedBaselineOf = a.requireString("matched_baseline_of");
      baselines.emplace_back(arm.name, arm.matchedBaselineOf);
      // A record (experimentToJson writes the solved topology beside it) keeps the baseline it was run with:
      // solved again by a later solver it would pass for the record of another baseline's runs.
      if (a.has("topology")) {
        arm.topology = armTopology(a, baseDir);
        recordedBaselines.insert(arm.name);
      }
    } else if (a.has("derive")) {
      const JsonObject d = a.requireObject("derive");
      d.allowOnly({"from", "method", "ratio", "gamma", "steps", "lr"});
      DerivedArm derived;
      derived.from = d.requireString("from");
      derived.method = d.requireString("method");
      if (derived.method != "directshare" && derived.method != "postshare")
        d.fail("method", "unknown derivation", "directshare or postshare", "'" + derived.method + "'");
      derived.ratio = d.optionalNumber("ratio").value_or(derived.ratio);
      if (!(derived.ratio > 0.0 && derived.ratio < 1.0))
        d.fail("ratio", "sharing ratio out of range", "a fraction in (0, 1)", std::to_string(derived.ratio));
      derived.gamma = d.optionalNumber("gamma").value_or(derived.gamma);
      derived.steps = d.optionalInt("steps", 1).value_or(derived.steps);
      derived.lr = d.optionalNumber("lr").value_or(derived.lr);
      if (derived.method == "postshare" && !(derived.gamma >= 0.0 && std::isfinite(derived.gamma)))
        d.fail("gamma", "PostShare's penalty weight out of range",
               ">= 0 (0: the same post-training without the penalty, the control arm)",
               std::to_string(derived.gamma));
      if (!(derived.lr > 0.0 && derived.lr <= 10.0))
        d.fail("lr", "learning rate out of range", "(0, 10]", std::to_string(derived.lr));
      arm.derive = derived;
    } else if (a.has("topology")) {
      arm.topology = armTopology(a, baseDir);
    } else {
      a.fail("topology", "an arm needs a topology, matched_baseline_of or derive", "one of them", "none");
    }
    e.arms.push_back(std::move(arm));
  }
  if (e.arms.size() < 2)
    o.fail("arms", "a comparison needs two arms or more", ">= 2 arms", std::to_string(e.arms.size()));
  for (const auto& baseline : baselines) {
    // Plain names, not structured bindings: clang 14 cannot capture a binding in a lambda.
    const std::string& name = baseline.first;
    const std::string& of = baseline.second;
    auto target =
        std::find_if(e.arms.begin(), e.arms.end(), [&](const ExperimentArm& x) { return x.name == of; });
    if (target == e.arms.end() || !target->matchedBaselineOf.empty() || target->derive)
      bad(where + ".arms['" + name + "'].matched_baseline_of", "unknown arm reference",
          "an arm given by its topology", "'" + of + "'");
    auto self =
        std::find_if(e.arms.begin(), e.arms.end(), [&](const ExperimentArm& x) { return x.name == name; });
    if (!recordedBaselines.count(name)) {
      self->topology = parameterMatchedBaseline(target->topology);
      self->topology.name = name;
    }
  }
  for (ExperimentArm& arm :
       e.arms) {  // a derived arm starts from a trained arm's model: that arm must exist and be unshared
    if (!arm.derive) continue;
    const auto source = std::find_if(e.arms.begin(), e.arms.end(),
                                     [&](const ExperimentArm& x) { return x.name == arm.derive->from; });
    if (source == e.arms.end() || source->derive)
      bad(where + ".arms['" + arm.name + "'].derive.from", "unknown arm reference", "a trained arm's name",
          "'" + arm.derive->from + "'");
    if (!source->topology.isUnshared())
      bad(where + ".arms['" + arm.name + "'].derive.from",
          "DirectShare and PostShare start from an unshared model", "an arm with a vanilla topology",
          "'" + source->name + "' shares weights", "derive from a vanilla arm");
    arm.topology = source->topology;
    arm.topology.name = arm.name;
  }
  e.reference = o.optionalString("reference").value_or(e.arms.back().name);
  if (std::none_of(e.arms.begin(), e.arms.end(),
                   [&](const ExperimentArm& a) { return a.name == e.reference; }))
    o.fail("reference", "unknown arm reference", "one of the arms' names", "'" + e.reference + "'");
  e.aaArm = o.optionalBool("aa_arm").value_or(true);
  if (e.aaArm) addAaArms(e, where);
  // What makes per-token losses comparable: one vocabulary and one context for every arm.
  struct Shared {
    const char* what;
    int64_t ModelDims::*field;
    const char* hint;
  };
  const ExperimentArm& first = e.arms.front();
  for (const Shared& shared :
       {Shared{"a vocabulary", &ModelDims::vocab,
               "the tokenizer is trained per vocabulary; losses of different ones do not compare"},
        Shared{"a context length", &ModelDims::context,
               "each arm is scored in windows of its own context: a per-token loss over shorter windows is "
               "higher for want of context, not of parameters"}})
    for (const ExperimentArm& a : e.arms)
      if (a.topology.model.*shared.field != first.topology.model.*shared.field)
        bad(where + ".arms['" + a.name + "']", std::string("arms of one comparison share ") + shared.what,
            std::to_string(first.topology.model.*shared.field) + " (arm '" + first.name + "')",
            std::to_string(a.topology.model.*shared.field), shared.hint);
  return e;
}

Json experimentProfile(const Json& j, const std::string& profile, const std::string& where) {
  const JsonObject o(j, where);
  Json out = j;
  out.erase("profiles");
  if (profile.empty()) return out;
  const auto profiles = o.optionalObject("profiles");
  if (!profiles || !profiles->has(profile)) {
    std::string known;
    if (profiles)
      for (const auto& [name, value] : profiles->raw().items()) known += (known.empty() ? "" : ", ") + name;
    o.fail("profiles", "no such profile", known.empty() ? "a \"profiles\" object" : "one of " + known,
           "'" + profile + "'", "leave --profile out to run the file's own (CPU) configuration");
  }
  const JsonObject p = profiles->requireObject(profile);
  p.allowOnly({"description", "tokens", "eval_tokens", "seeds", "train", "model", "arms"});
  out["name"] = out.value("name", std::string()) + "-" + profile;
  for (const char* key : {"tokens", "eval_tokens", "seeds"})
    if (p.has(key)) out[key] = p.raw()[key];
  if (p.has("train")) {
    if (!out.contains("train")) out["train"] = Json::object();
    out["train"].merge_patch(p.requireObject("train").raw());
  }
  if (p.has("model")) {
    const Json& model = p.requireObject("model").raw();
    for (const auto& [key, value] : model.items())
      if (key == "preset" || key == "overrides" || key == "name")
        p.fail("model", "a profile scales the model, not its sharing", "dimensions (d_model, layers, ...)",
               "'" + key + "'");
    if (out.contains("arms") && out["arms"].is_array())
      for (Json& arm : out["arms"]) {
        if (!arm.is_object() || !arm.contains("topology")) continue;  // baselines and derived arms follow
        Json& topology = arm["topology"];
        if (!topology.is_object() || !topology.contains("preset"))
          p.fail("model", "a profile scales arms given as presets",
                 "arm '" + arm.value("name", std::string()) + "' as {\"preset\": ...}",
                 "a topology file or object");
        topology.merge_patch(model);
      }
  }
  if (p.has("arms")) {  // per arm, after "model": what one arm needs besides (a width that holds N_tot fixed)
    const JsonObject arms = p.requireObject("arms");
    for (const auto& [name, patch] : arms.raw().items()) {
      Json* target = nullptr;
      for (Json& arm : out["arms"])
        if (arm.is_object() && arm.value("name", std::string()) == name && arm.contains("topology") &&
            arm["topology"].is_object() && arm["topology"].contains("preset"))
          target = &arm["topology"];
      if (!target || !patch.is_object())
        arms.fail(name, "no arm given as a preset by that name, or not an object",
                  "an arm's name: {dimensions}", patch.dump());
      target->merge_patch(patch);
    }
  }
  return out;
}

Experiment readExperimentFile(const fs::path& path, const std::string& profile) {
  const Json j = readJsonFile(path);
  const std::string where = path.string();
  // Every profile the file carries must resolve, whichever one runs: a broken GPU profile is named on CPU.
  if (j.is_object() && j.contains("profiles") && j["profiles"].is_object())
    for (const auto& [name, value] : j["profiles"].items())
      (void)experimentFromJson(experimentProfile(j, name, where), where + " (profile " + name + ")",
                               path.parent_path());
  return experimentFromJson(experimentProfile(j, profile, where), where, path.parent_path());
}

Json experimentRecord(Json recorded) {
  if (!recorded.is_object() || recorded.contains("aa_arm")) return recorded;
  // Written before 2026-11-26: no A/A arm, a no-worse margin of 0 when none was written, and 32,768
  // evaluation tokens unless given.
  recorded["aa_arm"] = false;
  if (!recorded.contains("eval_tokens")) recorded["eval_tokens"] = 32768;
  if (recorded.contains("arms") && recorded["arms"].is_array())
    for (Json& arm : recorded["arms"])
      if (arm.is_object() && arm.value("expect", std::string()) == "no-worse" && !arm.contains("margin"))
        arm["margin"] = 0.0;
  return recorded;
}

Json experimentToJson(const Experiment& e) {
  Json arms = Json::array();
  for (const ExperimentArm& a : e.arms) {
    Json arm = {{"name", a.name}};
    if (a.derive) {
      arm["derive"] = {{"from", a.derive->from},   {"method", a.derive->method}, {"ratio", a.derive->ratio},
                       {"gamma", a.derive->gamma}, {"steps", a.derive->steps},   {"lr", a.derive->lr}};
    } else {
      arm["topology"] = topologyToJson(a.topology);
    }
    if (!a.matchedBaselineOf.empty()) arm["matched_baseline_of"] = a.matchedBaselineOf;
    if (!a.aaOf.empty()) arm["aa_of"] = a.aaOf;
    if (a.lr) arm["lr"] = *a.lr;
    if (a.paperEffect) arm["paper_effect"] = *a.paperEffect, arm["paper_source"] = a.paperSource;
    if (!a.expect.empty()) arm["expect"] = a.expect;
    if (a.expect == "no-worse") arm["margin"] = a.margin;
    arms.push_back(arm);
  }
  return {{"schema", kExperimentSchema},
          {"name", e.name},
          {"description", e.description},
          {"claim",
           {{"paper", e.claim.paper},
            {"section", e.claim.section},
            {"statement", e.claim.statement},
            {"number", e.claim.number}}},
          {"corpus", e.corpus},
          {"seeds", e.seeds},
          {"tokens", e.tokens},
          {"eval_tokens", e.evalTokens == kEveryHeldOutToken ? Json("all") : Json(e.evalTokens)},
          {"train", e.train},
          {"reference", e.reference},
          {"aa_arm", e.aaArm},
          {"plan", planSpecToJson(e.plan)},
          {"arms", arms}};
}

fs::path experimentRunDirectory(const fs::path& outDir, const std::string& arm, uint64_t seed) {
  return outDir / arm / ("seed-" + std::to_string(seed));
}

}  // namespace sharelens
