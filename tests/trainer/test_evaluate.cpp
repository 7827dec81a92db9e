// Held-out evaluation's per-document sums (trainer/evaluate.hpp; the experiment report's document bootstrap
// resamples them), through the real CLI on a model trained here: on three held-out documents of our own, each
// document's count is its own token count plus its EOS (the stream's first token is never predicted), the
// sums add to the whole, and each document's sum is the difference of the totals of two prefixes of the
// stream scored alone with --token-ids. Windows start at the same positions in a prefix as in the whole
// stream and attention is causal, so a prefix's targets are predicted from the same context: the prefix
// totals are an independent way to the same numbers that shares no attribution code.
#include <gtest/gtest.h>

#include <numeric>

#include "core/atomic_file.hpp"
#include "core/json_util.hpp"
#include "tests/support/hf_fixtures.hpp"
#include "tests/support/process.hpp"

namespace sharelens {
namespace {

namespace fs = std::filesystem;
using testing::runProcess;
using testing::shellQuote;

const std::string kBinary = SHARELENS_BINARY;
constexpr int kEos = 2;  // ShareLens's SentencePiece training sets eos_id 2 (trainer/tokenizer.cpp)

std::string q(const fs::path& p) {
  return shellQuote(p.string());
}

TEST(Evaluate, PerDocumentSumsAreDifferencesOfPrefixTotals) {
  const fs::path dir = testing::makeTempDir("evaluate");
  auto r = runProcess(kBinary +
                      " topology --preset vanilla --layers 2 --unique 2 --d-model 64 --heads 2 --kv-heads 2 "
                      "--ffn 128 --vocab 512 --context 64 --out " +
                      q(dir / "t.json"));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  r = runProcess(kBinary + " train --topology " + q(dir / "t.json") + " --corpus brown --out " +
                 q(dir / "run") +
                 " --steps 20 --batch 4 --threads 2 --eval-every 1000 --checkpoint-every 20");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const std::vector<std::pair<std::string, std::string>> docs = {
      {"a.txt", "The committee met on Tuesday and voted to postpone the decision until the spring."},
      {"b.txt",
       "Rain fell through the night over the valley; by morning the river had risen above the old stone "
       "bridge, and the farmers gathered on the hill to watch the water move slowly across their fields, "
       "carrying branches, fence posts and, once, a small boat that nobody claimed."},
      {"c.txt", "She said nothing at first. Then she laughed, and the room laughed with her."},
      {"d.txt", "Prices rose again in March, the third month in a row, according to the report."}};
  fs::create_directories(dir / "docs");
  for (const auto& [name, text] : docs) writeFileAtomically(dir / "docs" / name, text);
  constexpr int window = 24;
  r = runProcess(kBinary + " eval " + q(dir / "run") + " --corpus " + q(dir / "docs") +
                 " --validation-fraction 0.999999 --tokens all --window " + std::to_string(window) +
                 " --json " + q(dir / "e.json"));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const Json e = readJsonFile(dir / "e.json");
  const auto ids = e["document_ids"].get<std::vector<std::string>>();
  const auto sums = e["document_nll"].get<std::vector<double>>();
  const auto counts = e["document_tokens"].get<std::vector<int64_t>>();
  // A share of 0.999999 holds out every document but one (splitByDocument keeps one for training).
  ASSERT_EQ(ids.size(), docs.size() - 1);
  ASSERT_EQ(sums.size(), ids.size());
  ASSERT_EQ(counts.size(), ids.size());
  EXPECT_EQ(std::accumulate(counts.begin(), counts.end(), int64_t{0}), e["tokens"].get<int64_t>());
  EXPECT_NEAR(std::accumulate(sums.begin(), sums.end(), 0.0),
              e["nll"].get<double>() * e["tokens"].get<double>(),
              1e-9 * std::abs(std::accumulate(sums.begin(), sums.end(), 0.0)));

  // The stream as eval builds it: each document's ids, then EOS.
  std::vector<int> stream;
  std::vector<size_t> ends;  // one past each document's EOS
  for (size_t d = 0; d < ids.size(); ++d) {
    r = runProcess(kBinary + " tokenize " + q(dir / "run") + " --file " + q(dir / "docs" / ids[d]));
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const auto tokens = Json::parse(r.out).get<std::vector<int>>();
    EXPECT_EQ(counts[d], static_cast<int64_t>(tokens.size()) + (d == 0 ? 0 : 1)) << ids[d];
    stream.insert(stream.end(), tokens.begin(), tokens.end());
    stream.push_back(kEos);
    ends.push_back(stream.size());
  }
  double before = 0;
  for (size_t d = 0; d < ids.size(); ++d) {
    std::string text;
    for (size_t i = 0; i < ends[d]; ++i) text += std::to_string(stream[i]) + " ";
    writeFileAtomically(dir / "prefix.ids", text);
    r = runProcess(kBinary + " eval " + q(dir / "run") + " --token-ids " + q(dir / "prefix.ids") +
                   " --window " + std::to_string(window) + " --tokens all --json " + q(dir / "p.json"));
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const Json p = readJsonFile(dir / "p.json");
    const double total = p["nll"].get<double>() * p["tokens"].get<double>();
    EXPECT_EQ(p["tokens"].get<size_t>(), ends[d] - 1);
    // float32 forward passes over batches of another composition: 1e-5 of the document's sum.
    EXPECT_NEAR(total - before, sums[d], 1e-5 * sums[d]) << ids[d];
    before = total;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sharelens
