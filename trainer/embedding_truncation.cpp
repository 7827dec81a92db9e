#include "trainer/embedding_truncation.hpp"

#include "core/arch/family.hpp"
#include "core/error.hpp"
#include "core/run_dir.hpp"
#include "trainer/inference_model.hpp"
#include "trainer/scoring.hpp"
#include "trainer/torch_compat.hpp"

namespace sharelens {
namespace {

// The SVD of a V x d table, in double, kept to rebuild any rank-r approximation U_r S_r V_r^T.
struct TableSvd {
  torch::Tensor u, s, vh;
  torch::Tensor truncated(int64_t r, torch::Device device) const {
    return at::matmul(u.narrow(1, 0, r) * s.narrow(0, 0, r), vh.narrow(0, 0, r)).to(at::kFloat).to(device);
  }
};

TableSvd svdOf(const torch::Tensor& table) {
  auto [u, s, vh] = at::linalg_svd(table.to(at::kCPU, at::kDouble), /*full_matrices=*/false);
  return {u, s, vh};
}

}  // namespace

std::vector<TruncatedEmbeddingLoss> truncatedEmbeddingLosses(const std::filesystem::path& path,
                                                             const std::vector<int64_t>& ranks,
                                                             const EvalOptions& options,
                                                             const TaskContext& ctx) {
  const ComputeThreads computeThreads(options.threads > 0 ? options.threads : ctx.threadCount());
  const auto ckpt = Checkpoint::open(resolveModelPath(path));
  const ModelView view = openModelView(*ckpt);
  for (int64_t r : ranks)
    if (r < 1 || r > view.shape.hidden)
      throw Error({.what = "embedding rank out of range",
                   .where = "embedding truncation",
                   .expected = "1.." + std::to_string(view.shape.hidden),
                   .found = std::to_string(r)});
  const HeldOutText text = heldOutTokens(path, options, ctx);
  requireScorable(text, view.shape.vocab);
  InferenceModel model(*ckpt, view, torch::kCPU);
  const int64_t window = evalWindow(options, model.context());
  std::vector<TruncatedEmbeddingLoss> out;
  out.push_back({0, scoreTokens(model, text, window, ctx)});
  const TableSvd input = svdOf(model.embeddingTable());
  const bool tied = view.shape.tiedEmbeddings;
  const std::optional<TableSvd> output =
      tied ? std::nullopt : std::optional<TableSvd>(svdOf(model.outputTable()));
  for (size_t i = 0; i < ranks.size(); ++i) {
    ctx.throwIfCancelled();
    const torch::Tensor e = input.truncated(ranks[i], torch::kCPU);
    model.setEmbeddingTables(e, tied ? e : output->truncated(ranks[i], torch::kCPU));
    out.push_back({ranks[i], scoreTokens(model, text, window, ctx)});
    ctx.report(static_cast<double>(i + 1) / static_cast<double>(ranks.size()),
               "embedding: rank " + std::to_string(ranks[i]));
  }
  for (TruncatedEmbeddingLoss& l : out) {
    l.eval.source = path.string();
    l.eval.tokenizer = text.tokenizer;
    l.eval.text = text.description;
  }
  return out;
}

}  // namespace sharelens
