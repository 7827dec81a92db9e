#include "trainer/token_data.hpp"
#include "trainer/tokenizer.hpp"

#include <cstring>
#include <fstream>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/parallel.hpp"

namespace fs = std::filesystem;

namespace sharelens {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

std::vector<int32_t> tokenizeDocuments(const std::vector<const Document*>& docs, const TextTokenizer& tok,
                                       const TaskContext& ctx) {
  std::vector<std::vector<int32_t>> parts(docs.size());
  const int eos = tok.eosId();
  parallelFor(docs.size(), ctx, [&](size_t i) {
    const std::vector<int> ids = tok.encode(docs[i]->text, false);
    parts[i].assign(ids.begin(), ids.end());
    if (eos >= 0) parts[i].push_back(eos);
  });
  std::vector<int32_t> stream;
  for (const auto& p : parts) stream.insert(stream.end(), p.begin(), p.end());
  return stream;
}

void writeStream(AtomicFile& out, const std::vector<int32_t>& v) {
  const uint64_t n = v.size();
  out.write(&n, 8);
  out.write(v.data(), n * 4);
}

bool readStream(std::ifstream& in, std::vector<int32_t>& v) {
  uint64_t n = 0;
  if (!in.read(reinterpret_cast<char*>(&n), 8) || n > (uint64_t(1) << 34)) return false;
  v.resize(n);
  return static_cast<bool>(in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(n * 4)));
}

}  // namespace

TokenData tokenizeSplit(const CorpusSplit& split, const std::string& corpusFingerprint,
                        const TextTokenizer& tokenizer, const TaskContext& ctx) {
  TokenData data;
  data.vocab = tokenizer.vocabSize();
  data.eos = tokenizer.eosId();
  data.trainDocuments = static_cast<int64_t>(split.train.size());
  data.validationDocuments = static_cast<int64_t>(split.validation.size());
  const fs::path cache =
      cacheDirectory() / "tokens" /
      ("tok-" + tokenizer.fingerprint() + "-corpus-" + corpusFingerprint + "-" +
       std::to_string(split.train.size()) + "-" + std::to_string(split.validation.size()) + ".bin");
  if (std::ifstream in{cache, std::ios::binary}) {
    if (readStream(in, data.train) && readStream(in, data.validation)) return data;
  }
  ctx.report(0.0, "tokenising the corpus");
  data.train = tokenizeDocuments(split.train, tokenizer, ctx);
  data.validation = tokenizeDocuments(split.validation, tokenizer, ctx);
  fs::create_directories(cache.parent_path());
  // A temporary name of this process's own: runs tokenising the same corpus side by side (an experiment with
  // --parallel) each write theirs, and the last rename wins with identical content.
  AtomicFile out(cache);
  writeStream(out, data.train);
  writeStream(out, data.validation);
  out.commit();
  return data;
}

TokenBatch trainingBatch(const TokenData& data, uint64_t seed, int64_t step, int64_t batch, int64_t length,
                         int64_t rowBegin, int64_t rowEnd) {
  if (rowEnd < 0) rowEnd = batch;
  const int64_t span = static_cast<int64_t>(data.train.size()) - (length + 1);
  if (span <= 0)
    throw Error({.what = "the training corpus is shorter than one sequence",
                 .where = "training data",
                 .expected = "more than " + std::to_string(length + 1) + " tokens",
                 .found = std::to_string(data.train.size()),
                 .hint = "use a larger corpus or a shorter context"});
  TokenBatch b{std::vector<int32_t>(static_cast<size_t>((rowEnd - rowBegin) * (length + 1))),
               rowEnd - rowBegin, length};
  for (int64_t row = rowBegin; row < rowEnd; ++row) {
    const uint64_t r =
        splitmix64(seed * 0x100000001b3ull ^ splitmix64(static_cast<uint64_t>(step) * 1315423911ull + row));
    const int64_t offset = static_cast<int64_t>(r % static_cast<uint64_t>(span + 1));
    std::memcpy(b.tokens.data() + (row - rowBegin) * (length + 1), data.train.data() + offset,
                static_cast<size_t>(length + 1) * 4);
  }
  return b;
}

TokenBatch validationBatch(const TokenData& data, int64_t index, int64_t count, int64_t batch,
                           int64_t length) {
  const int64_t span = static_cast<int64_t>(data.validation.size()) - (length + 1);
  if (span <= 0)
    throw Error({.what = "the validation split is shorter than one sequence",
                 .where = "validation data",
                 .expected = "more than " + std::to_string(length + 1) + " tokens",
                 .found = std::to_string(data.validation.size()),
                 .hint = "raise validation_fraction or use a larger corpus"});
  TokenBatch b{std::vector<int32_t>(static_cast<size_t>(batch * (length + 1))), batch, length};
  const int64_t windows = count * batch;
  for (int64_t row = 0; row < batch; ++row) {
    const int64_t w = index * batch + row;
    const int64_t offset = windows > 1 ? span * w / (windows - 1) : 0;
    std::memcpy(b.tokens.data() + row * (length + 1), data.validation.data() + offset,
                static_cast<size_t>(length + 1) * 4);
  }
  return b;
}

}  // namespace sharelens
