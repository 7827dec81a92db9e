#include "trainer/cpu_attention.hpp"

#include <cblas.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <thread>
#include <vector>

#include "core/blas_threads.hpp"
#include "trainer/cpu_kernels.hpp"
#include "trainer/cpu_parallel.hpp"

namespace sharelens {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The shapes of one call: q [B, T, H, hd], k and v [B, T, KV, hd], probabilities [B, H, T, T].
struct Dims {
  int64_t batch, time, heads, kvHeads, headDim;
  int64_t group() const { return heads / kvHeads; }
  int64_t qRow() const { return heads * headDim; }     // floats between one token's rows of q (and out)
  int64_t kvRow() const { return kvHeads * headDim; }  // ... of k and v
  int64_t pairs() const { return batch * heads; }
  // Offsets of pair (b, h)'s first row.
  int64_t qAt(int64_t pair) const { return (pair / heads) * time * qRow() + (pair % heads) * headDim; }
  int64_t kvAt(int64_t pair) const {
    return (pair / heads) * time * kvRow() + ((pair % heads) / group()) * headDim;
  }
  int64_t pAt(int64_t pair) const { return pair * time * time; }
};

Dims dimsOf(const torch::Tensor& q, const torch::Tensor& k) {
  return {q.size(0), q.size(1), q.size(2), k.size(2), q.size(3)};
}

// Runs work(pair) for every (batch, head) pair, split over the run's threads; BLAS is single-threaded
// meanwhile (each GEMM here is small: 128 x 128 x 32 at the claims' sizes), so the threads do not wait on one
// shared BLAS pool.
template <class Work>
void forEachPair(int64_t pairs, const Work& work) {
  const int threads = currentBlasThreads();
  SingleThreadedBlas single;
  splitOverThreads(threads, pairs, 1, [&](int64_t begin, int64_t end) {
    for (int64_t pair = begin; pair < end; ++pair) work(pair);
  });
}

struct TokenMajorAttention : public torch::autograd::Function<TokenMajorAttention> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, double scale) {
    const Dims d = dimsOf(q, k);
    const auto t = static_cast<int>(d.time), hd = static_cast<int>(d.headDim);
    torch::Tensor out = at::empty_like(q);
    torch::Tensor probs = at::empty({d.batch, d.heads, d.time, d.time}, q.options());
    const float *qp = q.data_ptr<float>(), *kp = k.data_ptr<float>(), *vp = v.data_ptr<float>();
    float *op = out.data_ptr<float>(), *pp = probs.data_ptr<float>();
    forEachPair(d.pairs(), [&](int64_t pair) {
      float* p = pp + d.pAt(pair);
      // S = scale Q K^T  [T, T];  P = causal softmax(S);  O = P V  [T, hd]
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, t, t, hd, static_cast<float>(scale),
                  qp + d.qAt(pair), static_cast<int>(d.qRow()), kp + d.kvAt(pair),
                  static_cast<int>(d.kvRow()), 0.0f, p, t);
      kernels::causalSoftmaxRows(p, d.time);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, t, hd, t, 1.0f, p, t, vp + d.kvAt(pair),
                  static_cast<int>(d.kvRow()), 0.0f, op + d.qAt(pair), static_cast<int>(d.qRow()));
    });
    ctx->save_for_backward({q, k, v, probs});
    ctx->saved_data["scale"] = scale;
    return out;
  }

  // With dO the incoming gradient: dV = P^T dO, dP = dO V^T, dS = P (dP - rowsum(dP P)), dQ = scale dS K,
  // dK = scale dS^T Q. K and V gradients of a KV head sum over its query group, so pairs of one KV head run
  // on one thread, in order.
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &q = saved[0], &k = saved[1], &v = saved[2], &probs = saved[3];
    const float scale = static_cast<float>(ctx->saved_data["scale"].toDouble());
    const torch::Tensor gradOut = grads[0].contiguous();
    const Dims d = dimsOf(q, k);
    const auto t = static_cast<int>(d.time), hd = static_cast<int>(d.headDim);
    const int qRow = static_cast<int>(d.qRow()), kvRow = static_cast<int>(d.kvRow());
    torch::Tensor gq = at::empty_like(q), gk = at::zeros_like(k), gv = at::zeros_like(v);
    const float *qp = q.data_ptr<float>(), *kp = k.data_ptr<float>(), *vp = v.data_ptr<float>();
    const float *pp = probs.data_ptr<float>(), *gop = gradOut.data_ptr<float>();
    float *gqp = gq.data_ptr<float>(), *gkp = gk.data_ptr<float>(), *gvp = gv.data_ptr<float>();
    const int64_t kvPairs = d.batch * d.kvHeads, group = d.group();
    forEachPair(kvPairs, [&](int64_t kvPair) {
      std::vector<float> ds(static_cast<size_t>(d.time * d.time));
      for (int64_t member = 0; member < group; ++member) {
        const int64_t pair = (kvPair / d.kvHeads) * d.heads + (kvPair % d.kvHeads) * group + member;
        const float* p = pp + d.pAt(pair);
        const float* go = gop + d.qAt(pair);
        // dV += P^T dO  [T, hd]
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, t, hd, t, 1.0f, p, t, go, qRow, 1.0f,
                    gvp + d.kvAt(pair), kvRow);
        // dP = dO V^T  [T, T]
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, t, t, hd, 1.0f, go, qRow, vp + d.kvAt(pair),
                    kvRow, 0.0f, ds.data(), t);
        // dS = P (dP - sum_j dP_ij P_ij), row by row over the keys each query sees
        kernels::causalSoftmaxBackwardRows(ds.data(), p, d.time);
        // dQ = scale dS K  [T, hd];  dK += scale dS^T Q  [T, hd]
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, t, hd, t, scale, ds.data(), t,
                    kp + d.kvAt(pair), kvRow, 0.0f, gqp + d.qAt(pair), qRow);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, t, hd, t, scale, ds.data(), t, qp + d.qAt(pair),
                    qRow, 1.0f, gkp + d.kvAt(pair), kvRow);
      }
    });
    return {gq, gk, gv, torch::Tensor()};
  }
};

}  // namespace

bool tokenMajorAttentionApplies(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
  for (const torch::Tensor* t : {&q, &k, &v})
    if (!t->device().is_cpu() || t->scalar_type() != at::kFloat || !t->is_contiguous() || t->dim() != 4)
      return false;
  return k.sizes() == v.sizes() && q.size(0) == k.size(0) && q.size(1) == k.size(1) &&
         q.size(3) == k.size(3) && k.size(2) > 0 && q.size(2) % k.size(2) == 0;
}

torch::Tensor tokenMajorCausalAttention(const torch::Tensor& q, const torch::Tensor& k,
                                        const torch::Tensor& v, double scale) {
  return TokenMajorAttention::apply(q, k, v, scale);
}

}  // namespace sharelens
