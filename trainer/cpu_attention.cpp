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
#include "trainer/causal_panels.hpp"
#include "trainer/cpu_kernels.hpp"
#include "trainer/cpu_parallel.hpp"
#include "trainer/cpu_tensor.hpp"

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

// Every GEMM of a pair runs by causal row panels (trainer/causal_panels.hpp). The softmax kernels write the
// zeros of the masked entries, so no entry a panel skips is ever read uninitialised.

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
      const float *q0 = qp + d.qAt(pair), *k0 = kp + d.kvAt(pair), *v0 = vp + d.kvAt(pair);
      float* o0 = op + d.qAt(pair);
      const int qRow = static_cast<int>(d.qRow()), kvRow = static_cast<int>(d.kvRow());
      // S = scale Q K^T  [T, T], by row panels: S[r0:r0+rows, :seen] = scale Q[r0:r0+rows] K[:seen]^T
      forEachCausalPanel(d.time, [&](int64_t r0, int rows, int seen) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, seen, hd, static_cast<float>(scale),
                    q0 + r0 * qRow, qRow, k0, kvRow, 0.0f, p + r0 * t, t);
      });
      kernels::causalSoftmaxRows(p, d.time);  // P = causal softmax(S), zeros above the diagonal
      // O = P V  [T, hd]:  O[r0:r0+rows] = P[r0:r0+rows, :seen] V[:seen]
      forEachCausalPanel(d.time, [&](int64_t r0, int rows, int seen) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, hd, seen, 1.0f, p + r0 * t, t, v0, kvRow,
                    0.0f, o0 + r0 * qRow, qRow);
      });
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
        const float *go = gop + d.qAt(pair), *q0 = qp + d.qAt(pair);
        const float *k0 = kp + d.kvAt(pair), *v0 = vp + d.kvAt(pair);
        float *gq0 = gqp + d.qAt(pair), *gk0 = gkp + d.kvAt(pair), *gv0 = gvp + d.kvAt(pair);
        // Each product by row panels of queries, over the keys [0, seen) those rows see.
        forEachCausalPanel(d.time, [&](int64_t r0, int rows, int seen) {
          // dV[:seen] += P[r0:r0+rows, :seen]^T dO[r0:r0+rows]  [seen, hd]
          cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, seen, hd, rows, 1.0f, p + r0 * t, t,
                      go + r0 * qRow, qRow, 1.0f, gv0, kvRow);
          // dP[r0:r0+rows, :seen] = dO[r0:r0+rows] V[:seen]^T
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, seen, hd, 1.0f, go + r0 * qRow, qRow, v0,
                      kvRow, 0.0f, ds.data() + r0 * t, t);
        });
        // dS = P (dP - sum_j dP_ij P_ij), row by row over the keys each query sees; zeros above the diagonal
        kernels::causalSoftmaxBackwardRows(ds.data(), p, d.time);
        forEachCausalPanel(d.time, [&](int64_t r0, int rows, int seen) {
          // dQ[r0:r0+rows] = scale dS[r0:r0+rows, :seen] K[:seen]
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, hd, seen, scale, ds.data() + r0 * t, t,
                      k0, kvRow, 0.0f, gq0 + r0 * qRow, qRow);
          // dK[:seen] += scale dS[r0:r0+rows, :seen]^T Q[r0:r0+rows]
          cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, seen, hd, rows, scale, ds.data() + r0 * t, t,
                      q0 + r0 * qRow, qRow, 1.0f, gk0, kvRow);
        });
      }
    });
    return {gq, gk, gv, torch::Tensor()};
  }
};

}  // namespace

bool tokenMajorAttentionApplies(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
  for (const torch::Tensor* t : {&q, &k, &v})
    if (!isContiguousCpuFloat(*t) || t->dim() != 4) return false;
  return k.sizes() == v.sizes() && q.size(0) == k.size(0) && q.size(1) == k.size(1) &&
         q.size(3) == k.size(3) && k.size(2) > 0 && q.size(2) % k.size(2) == 0;
}

torch::Tensor tokenMajorCausalAttention(const torch::Tensor& q, const torch::Tensor& k,
                                        const torch::Tensor& v, double scale) {
  return TokenMajorAttention::apply(q, k, v, scale);
}

}  // namespace sharelens
