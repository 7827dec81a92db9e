// sharelens hidden-states PATH --token-ids FILE --out OUT.safetensors
//     hidden.0 (embeddings), hidden.1..L (after each layer) and logits, as F32 [T, d] / [T, V]
// sharelens tokenize PATH (checkpoint, tokenizer.json or tokenizer.model) [--text TEXT | --file FILE |
//     --texts-json FILE] [--special] [--json FILE]     token ids of the text(s) with that tokenizer
#include <array>
#include <fstream>
#include <iostream>
#include <sstream>

#include "app/cli/commands.hpp"
#include "core/atomic_file.hpp"
#include "core/checkpoint.hpp"
#include "core/error.hpp"
#include "core/json_util.hpp"
#include "core/output_guard.hpp"
#include "core/run_dir.hpp"
#include "core/safetensors.hpp"
#include "trainer/forward_probe.hpp"
#include "trainer/hf_tokenizer.hpp"

namespace sharelens::cli {

std::vector<int> readTokenIds(const std::string& path) {
  const std::string text = readTextFile(path);
  std::vector<int> ids;
  std::string token;
  std::stringstream in(text);
  while (std::getline(in, token, ',')) {
    std::stringstream words(token);
    for (std::string w; words >> w;) {
      try {
        size_t used = 0;
        const long v = std::stol(w, &used);
        if (used != w.size() || v < 0 || v > INT32_MAX) throw std::invalid_argument(w);
        ids.push_back(static_cast<int>(v));
      } catch (const std::exception&) {
        throw Error({.what = "not a token id",
                     .where = path,
                     .expected = "non-negative integers separated by commas or spaces",
                     .found = "'" + w + "'"});
      }
    }
  }
  if (ids.empty()) throw Error({.what = "no token ids", .where = path, .hint = "write ids like 1, 42, 7"});
  return ids;
}

int runHiddenStates(Args& args) {
  const std::string path = args.positional("PATH");
  const auto idsFile = args.option("token-ids");
  const auto out = args.option("out");
  args.finish();
  if (!idsFile || !out)
    throw Error({.what = "missing --token-ids FILE or --out FILE",
                 .where = "sharelens hidden-states",
                 .hint = "usage: " + args.usage()});
  const auto ckpt = Checkpoint::open(resolveModelPath(path));
  checkOutputs("sharelens hidden-states", *ckpt, std::array{DeclaredOutput::file(*out, "--out")});
  const std::vector<FloatMatrix> states = hiddenStates(*ckpt, readTokenIds(*idsFile));
  std::vector<EncodedTensor> tensors;
  for (size_t i = 0; i + 1 < states.size(); ++i)
    tensors.push_back(EncodedTensor::fromFloats("hidden." + std::to_string(i), DType::F32,
                                                {states[i].rows, states[i].cols}, states[i].data));
  tensors.push_back(EncodedTensor::fromFloats("logits", DType::F32, {states.back().rows, states.back().cols},
                                              states.back().data));
  writeSafetensors(*out, tensors);
  std::cout << "wrote " << tensors.size() << " tensors to " << *out << "\n";
  return 0;
}

int runTokenize(Args& args) {
  const std::string path = args.positional("PATH");
  const auto text = args.option("text");
  const auto file = args.option("file");
  const auto textsJson = args.option("texts-json");
  const bool special = args.flag("special");
  const auto jsonOut = args.option("json");
  args.finish();
  if ((text ? 1 : 0) + (file ? 1 : 0) + (textsJson ? 1 : 0) != 1)
    throw Error(
        {.what = "give exactly one of --text, --file or --texts-json", .where = "sharelens tokenize"});
  const std::filesystem::path p(path);
  std::unique_ptr<TextTokenizer> tokenizer;
  if (p.extension() == ".json")
    tokenizer = loadHfTokenizer(p);
  else if (p.extension() == ".model")
    tokenizer = loadSentencePieceTokenizer(p);
  else
    tokenizer = tokenizerForCheckpoint(p);
  Json result;
  if (textsJson) {  // a JSON array of strings -> an array of id lists
    const Json texts = readJsonFile(*textsJson);
    if (!texts.is_array()) throw Error({.what = "expected a JSON array of strings", .where = *textsJson});
    Json all = Json::array();
    for (size_t i = 0; i < texts.size(); ++i) {
      if (!texts[i].is_string())
        throw Error({.what = "expected a JSON array of strings",
                     .where = *textsJson + ": element " + std::to_string(i),
                     .expected = "a string",
                     .found = std::string(texts[i].type_name()),
                     .hint = "write the texts as [\"first text\", \"second text\"]"});
      all.push_back(tokenizer->encode(texts[i].get<std::string>(), special));
    }
    result = {{"tokenizer", tokenizer->describe()}, {"ids", all}};
  } else {
    const std::string input = text ? *text : readTextFile(*file);
    const std::vector<int> ids = tokenizer->encode(input, special);
    result = {{"tokenizer", tokenizer->describe()}, {"ids", ids}, {"decoded", tokenizer->decode(ids)}};
  }
  const Json& ids = result["ids"];
  if (jsonOut)
    writeFileAtomically(*jsonOut, result.dump() + "\n");
  else
    std::cout << ids.dump() << "\n";
  return 0;
}

}  // namespace sharelens::cli
