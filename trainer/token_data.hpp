// Token streams for training: the training and validation documents, tokenised and concatenated with an
// end-of-sequence token between documents (packed sequences). Batches are a pure function of
// (seed, step): batch s of a run is the same whether the run was interrupted or not, so exact resume needs
// no data-loader state.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/corpus.hpp"
#include "core/task.hpp"
#include "trainer/hf_tokenizer.hpp"

namespace sharelens {

struct TokenData {
  std::vector<int32_t> train;
  std::vector<int32_t> validation;
  int vocab = 0;
  int eos = 0;
  int64_t trainDocuments = 0, validationDocuments = 0;
};

// Tokenises the split with any tokenizer (a run's own SentencePiece model, or the tokenizer of the checkpoint
// a run starts from); documents are joined with its EOS token. Cached, keyed by tokenizer and corpus
// fingerprints.
TokenData tokenizeSplit(const CorpusSplit& split, const std::string& corpusFingerprint,
                        const TextTokenizer& tokenizer, const TaskContext& ctx);

// batch x (length + 1) tokens, row-major: inputs are [:, :length], targets [:, 1:].
struct TokenBatch {
  std::vector<int32_t> tokens;
  int64_t batch = 0, length = 0;
};

// Windows at offsets drawn by a counter-based generator from (seed, step, row): rows [rowBegin, rowEnd) of
// the step's global batch (a distributed rank takes its own rows; all rows by default), the same whoever
// draws them.
TokenBatch trainingBatch(const TokenData& data, uint64_t seed, int64_t step, int64_t batch, int64_t length,
                         int64_t rowBegin = 0, int64_t rowEnd = -1);
// The index-th of the fixed validation batches: windows evenly spaced over the validation stream.
TokenBatch validationBatch(const TokenData& data, int64_t index, int64_t count, int64_t batch,
                           int64_t length);

}  // namespace sharelens
