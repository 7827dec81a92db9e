#include "trainer/fused_ops.hpp"

#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/blas_threads.hpp"
#include "trainer/cpu_kernels.hpp"
#include "trainer/cpu_parallel.hpp"
#include "trainer/cpu_tensor.hpp"

namespace sharelens {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Below these a loop stays on the calling thread (starting a thread costs tens of microseconds).
constexpr int64_t kMinRowsPerThread = 256, kMinElementsPerThread = 65536;

// ---- RMSNorm ----------------------------------------------------------------------------------------------
// y = x r w with r = 1 / sqrt(mean(x^2) + eps) per row. Backward, with u = gy w:
//   gx = r u - x r^3 mean(u x),   gw = sum_rows gy x r.

struct RmsNormFunction : public torch::autograd::Function<RmsNormFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight,
                               double eps) {
    const int64_t d = x.size(-1), rows = x.numel() / d;
    torch::Tensor y = at::empty_like(x), inv = at::empty({rows}, x.options());
    const float* xp = x.data_ptr<float>();
    const float* wp = weight.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    float* rp = inv.data_ptr<float>();
    splitOverThreads(currentBlasThreads(), rows, kMinRowsPerThread, [&](int64_t begin, int64_t end) {
      kernels::rmsNormRows(xp, wp, yp, rp, begin, end, d, static_cast<float>(eps));
    });
    ctx->save_for_backward({x, weight, inv});
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &x = saved[0], &weight = saved[1], &inv = saved[2];
    const torch::Tensor gy = grads[0].contiguous();
    const int64_t d = x.size(-1), rows = x.numel() / d;
    torch::Tensor gx = at::empty_like(x);
    // gw is a sum over rows: each chunk of rows accumulates its own partial sum, added up at the end.
    const int64_t chunk = 256, chunks = (rows + chunk - 1) / chunk;
    std::vector<float> partial(static_cast<size_t>(chunks * d), 0.0f);
    const float *xp = x.data_ptr<float>(), *wp = weight.data_ptr<float>(), *rp = inv.data_ptr<float>(),
                *gp = gy.data_ptr<float>();
    float* gxp = gx.data_ptr<float>();
    splitOverThreads(currentBlasThreads(), chunks, 2, [&](int64_t cBegin, int64_t cEnd) {
      for (int64_t c = cBegin; c < cEnd; ++c)
        kernels::rmsNormBackwardRows(xp, wp, rp, gp, gxp, partial.data() + c * d, c * chunk,
                                     std::min(rows, (c + 1) * chunk), d);
    });
    torch::Tensor gw = at::zeros({d}, x.options());
    float* gwp = gw.data_ptr<float>();
    for (int64_t c = 0; c < chunks; ++c)
      for (int64_t i = 0; i < d; ++i) gwp[i] += partial[static_cast<size_t>(c * d + i)];
    return {gx, gw, torch::Tensor()};
  }
};

// ---- RoPE -------------------------------------------------------------------------------------------------
// Per position t and pair (i, i + h) of a head, h = hd / 2, with c = cos[t][i], s = sin[t][i]:
//   y_i = x_i c - x_{i+h} s,   y_{i+h} = x_{i+h} c + x_i s      (a rotation by the position's angle)
// and the backward is the inverse rotation of the gradient:
//   gx_i = gy_i c + gy_{i+h} s,   gx_{i+h} = gy_{i+h} c - gy_i s.

void rotate(const torch::Tensor& in, const torch::Tensor& cos, const torch::Tensor& sin, torch::Tensor& out,
            float direction) {
  const int64_t batch = in.size(0), time = in.size(1), heads = in.size(2), hd = in.size(3);
  const float *ip = in.data_ptr<float>(), *cp = cos.data_ptr<float>(), *sp = sin.data_ptr<float>();
  float* op = out.data_ptr<float>();
  splitOverThreads(currentBlasThreads(), batch * time, kMinRowsPerThread, [&](int64_t begin, int64_t end) {
    kernels::ropeRows(ip, heads * hd, cp, sp, op, heads * hd, begin, end, time, heads, hd, direction);
  });
}

struct RopeFunction : public torch::autograd::Function<RopeFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& cos,
                               const torch::Tensor& sin) {
    torch::Tensor y = at::empty_like(x);
    rotate(x, cos, sin, y, 1.0f);
    ctx->save_for_backward({cos, sin});
    return y;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor gy = grads[0].contiguous();
    torch::Tensor gx = at::empty_like(gy);
    rotate(gy, saved[0], saved[1], gx, -1.0f);
    return {gx, torch::Tensor(), torch::Tensor()};
  }
};

// ---- Q, K and V out of the stacked projection, Q and K rotated
// --------------------------------------------- qkv [B, T, (H + 2 Hkv) hd] holds each token's Q heads, then
// K's, then V's (one GEMM over the three weights stacked). Forward: q = RoPE(Q part), k = RoPE(K part), v =
// the V part, each packed [B, T, heads, hd]. Backward: the Q and K parts get the inverse rotation of gq and
// gk, the V part gv, written straight into one gradient of qkv's shape.

struct QkvRopeFunction : public torch::autograd::Function<QkvRopeFunction> {
  static variable_list forward(AutogradContext* ctx, const torch::Tensor& qkv, const torch::Tensor& cos,
                               const torch::Tensor& sin, int64_t heads, int64_t kvHeads) {
    const int64_t batch = qkv.size(0), time = qkv.size(1), width = qkv.size(2);
    const int64_t hd = width / (heads + 2 * kvHeads), qWidth = heads * hd, kvWidth = kvHeads * hd;
    torch::Tensor q = at::empty({batch, time, heads, hd}, qkv.options());
    torch::Tensor k = at::empty({batch, time, kvHeads, hd}, qkv.options());
    torch::Tensor v = at::empty({batch, time, kvHeads, hd}, qkv.options());
    const float *in = qkv.data_ptr<float>(), *cp = cos.data_ptr<float>(), *sp = sin.data_ptr<float>();
    float *qp = q.data_ptr<float>(), *kp = k.data_ptr<float>(), *vp = v.data_ptr<float>();
    splitOverThreads(currentBlasThreads(), batch * time, kMinRowsPerThread, [&](int64_t begin, int64_t end) {
      kernels::ropeRows(in, width, cp, sp, qp, qWidth, begin, end, time, heads, hd, 1.0f);
      kernels::ropeRows(in + qWidth, width, cp, sp, kp, kvWidth, begin, end, time, kvHeads, hd, 1.0f);
      for (int64_t r = begin; r < end; ++r)
        std::copy_n(in + r * width + qWidth + kvWidth, kvWidth, vp + r * kvWidth);
    });
    ctx->save_for_backward({cos, sin});
    for (const auto& [key, value] :
         {std::pair{"batch", batch}, {"time", time}, {"hd", hd}, {"heads", heads}, {"kvHeads", kvHeads}})
      ctx->saved_data[key] = value;
    return {q, k, v};
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    auto dim = [&](const char* key) { return ctx->saved_data[key].toInt(); };
    const int64_t batch = dim("batch"), time = dim("time"), hd = dim("hd"), heads = dim("heads"),
                  kvHeads = dim("kvHeads");
    // An output that reached no loss arrives as zeros (LibTorch materialises missing gradients).
    const torch::Tensor gq = grads[0].contiguous(), gk = grads[1].contiguous(), gv = grads[2].contiguous();
    const int64_t qWidth = heads * hd, kvWidth = kvHeads * hd, width = qWidth + 2 * kvWidth;
    torch::Tensor gqkv = at::empty({batch, time, width}, gq.options());
    const float *cp = saved[0].data_ptr<float>(), *sp = saved[1].data_ptr<float>();
    const float *gqp = gq.data_ptr<float>(), *gkp = gk.data_ptr<float>(), *gvp = gv.data_ptr<float>();
    float* out = gqkv.data_ptr<float>();
    splitOverThreads(currentBlasThreads(), batch * time, kMinRowsPerThread, [&](int64_t begin, int64_t end) {
      kernels::ropeRows(gqp, qWidth, cp, sp, out, width, begin, end, time, heads, hd, -1.0f);
      kernels::ropeRows(gkp, kvWidth, cp, sp, out + qWidth, width, begin, end, time, kvHeads, hd, -1.0f);
      for (int64_t r = begin; r < end; ++r)
        std::copy_n(gvp + r * kvWidth, kvWidth, out + r * width + qWidth + kvWidth);
    });
    return {gqkv, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

// ---- SwiGLU product --------------------------------------------------------------------------------------
// y = u silu(g) = u g s, s = sigmoid(g). Backward: gu = gy g s, gg = gy u s (1 + g (1 - s)).

struct SwiGluFunction : public torch::autograd::Function<SwiGluFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& gate, const torch::Tensor& up) {
    torch::Tensor y = at::empty_like(gate);
    const float *gp = gate.data_ptr<float>(), *upp = up.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    splitOverThreads(currentBlasThreads(), gate.numel(), kMinElementsPerThread,
                     [&](int64_t begin, int64_t end) {
                       kernels::swigluForward(gp + begin, upp + begin, yp + begin, end - begin);
                     });
    ctx->save_for_backward({gate, up});
    return y;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor gy = grads[0].contiguous();
    torch::Tensor gg = at::empty_like(gy), gu = at::empty_like(gy);
    const float *gp = saved[0].data_ptr<float>(), *upp = saved[1].data_ptr<float>(),
                *dy = gy.data_ptr<float>();
    float *ggp = gg.data_ptr<float>(), *gup = gu.data_ptr<float>();
    splitOverThreads(
        currentBlasThreads(), gy.numel(), kMinElementsPerThread, [&](int64_t begin, int64_t end) {
          kernels::swigluBackward(gp + begin, upp + begin, dy + begin, ggp + begin, gup + begin, end - begin);
        });
    return {gg, gu};
  }
};

// The same product over the stacked gate and up projection gu [..., 2F] (gate in [0, F), up in [F, 2F)): its
// rows go through the kernels a row at a time, and the backward writes gate's and up's gradients into one
// tensor of gu's shape.
struct StackedSwiGluFunction : public torch::autograd::Function<StackedSwiGluFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& gateUp) {
    const int64_t width = gateUp.size(-1), f = width / 2, rows = gateUp.numel() / width;
    std::vector<int64_t> shape = gateUp.sizes().vec();
    shape.back() = f;
    torch::Tensor y = at::empty(shape, gateUp.options());
    const float* in = gateUp.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    splitOverThreads(currentBlasThreads(), rows, kMinRowsPerThread, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r)
        kernels::swigluForward(in + r * width, in + r * width + f, yp + r * f, f);
    });
    ctx->save_for_backward({gateUp});
    return y;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const torch::Tensor gateUp = ctx->get_saved_variables()[0];
    const torch::Tensor gy = grads[0].contiguous();
    const int64_t width = gateUp.size(-1), f = width / 2, rows = gateUp.numel() / width;
    torch::Tensor g = at::empty_like(gateUp);
    const float *in = gateUp.data_ptr<float>(), *dy = gy.data_ptr<float>();
    float* out = g.data_ptr<float>();
    splitOverThreads(currentBlasThreads(), rows, kMinRowsPerThread, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r)
        kernels::swigluBackward(in + r * width, in + r * width + f, dy + r * f, out + r * width,
                                out + r * width + f, f);
    });
    return {g};
  }
};

// ---- Cross-entropy ---------------------------------------------------------------------------------------
// loss = mean_i (lse_i - x_i[t_i]), lse_i = log sum_j exp(x_ij). Backward: gx_ij = g / N (exp(x_ij - lse_i) -
// [j == t_i]).

// Targets outside the vocabulary are an error before any row is read.
void checkTargets(const torch::Tensor& targets, int64_t vocab) {
  const int64_t* tp = targets.data_ptr<int64_t>();
  for (int64_t r = 0, n = targets.numel(); r < n; ++r)
    TORCH_CHECK(tp[r] >= 0 && tp[r] < vocab, "cross-entropy target ", tp[r], " outside the vocabulary of ",
                vocab);
}

struct CrossEntropyFunction : public torch::autograd::Function<CrossEntropyFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& logits,
                               const torch::Tensor& targets) {
    const int64_t rows = logits.size(0), vocab = logits.size(1);
    torch::Tensor lse = at::empty({rows}, logits.options());
    const float* xp = logits.data_ptr<float>();
    const int64_t* tp = targets.data_ptr<int64_t>();
    float* lp = lse.data_ptr<float>();
    checkTargets(targets, vocab);
    // Blocks of rows summed on their own, then the blocks in order: the same loss on any number of threads.
    const int64_t blocks = (rows + kMinRowsPerThread - 1) / kMinRowsPerThread;
    std::vector<double> blockTotals(static_cast<size_t>(blocks), 0.0);
    splitOverThreads(currentBlasThreads(), blocks, 1, [&](int64_t first, int64_t last) {
      std::vector<float> row(static_cast<size_t>(vocab));
      for (int64_t b = first; b < last; ++b)
        for (int64_t r = b * kMinRowsPerThread; r < std::min(rows, (b + 1) * kMinRowsPerThread); ++r)
          blockTotals[static_cast<size_t>(b)] +=
              kernels::rowNll(xp + r * vocab, vocab, tp[r], row.data(), lp + r);
    });
    double total = 0.0;
    for (const double block : blockTotals) total += block;
    ctx->save_for_backward({logits, targets, lse});
    return at::full({}, total / static_cast<double>(rows), logits.options());
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &logits = saved[0], &targets = saved[1], &lse = saved[2];
    const int64_t rows = logits.size(0), vocab = logits.size(1);
    const float g = grads[0].item<float>() / static_cast<float>(rows);
    torch::Tensor gx = at::empty_like(logits);
    const float *xp = logits.data_ptr<float>(), *lp = lse.data_ptr<float>();
    const int64_t* tp = targets.data_ptr<int64_t>();
    float* gp = gx.data_ptr<float>();
    splitOverThreads(currentBlasThreads(), rows, kMinRowsPerThread, [&](int64_t begin, int64_t end) {
      kernels::crossEntropyGradRows(xp, lp, tp, g, gp, begin, end, vocab);
    });
    return {gx, torch::Tensor()};
  }
};

torch::Tensor rotateHalf(const torch::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

}  // namespace

torch::Tensor rmsNormReference(const torch::Tensor& x, const torch::Tensor& weight, double eps) {
  return x * at::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + eps) * weight;
}

torch::Tensor rmsNorm(const torch::Tensor& x, const torch::Tensor& weight, double eps) {
  if (isContiguousCpuFloat(x) && isContiguousCpuFloat(weight)) return RmsNormFunction::apply(x, weight, eps);
  return rmsNormReference(x, weight, eps);
}

torch::Tensor applyRopeReference(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  const int64_t time = x.size(1);
  const auto c = cos.narrow(0, 0, time).unsqueeze(1), s = sin.narrow(0, 0, time).unsqueeze(1);  // [T, 1, hd]
  return x * c + rotateHalf(x) * s;
}

torch::Tensor applyRope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  if (isContiguousCpuFloat(x) && isContiguousCpuFloat(cos) && isContiguousCpuFloat(sin) &&
      !cos.requires_grad() && !sin.requires_grad())
    return RopeFunction::apply(x, cos, sin);
  return applyRopeReference(x, cos, sin);
}

torch::Tensor swigluReference(const torch::Tensor& gate, const torch::Tensor& up) {
  return at::silu(gate) * up;
}

torch::Tensor swiglu(const torch::Tensor& gate, const torch::Tensor& up) {
  if (isContiguousCpuFloat(gate) && isContiguousCpuFloat(up) && gate.sizes() == up.sizes())
    return SwiGluFunction::apply(gate, up);
  return swigluReference(gate, up);
}

QkvHeads splitQkvWithRopeReference(const torch::Tensor& qkv, const torch::Tensor& cos,
                                   const torch::Tensor& sin, int64_t heads, int64_t kvHeads) {
  const int64_t batch = qkv.size(0), time = qkv.size(1), hd = qkv.size(2) / (heads + 2 * kvHeads);
  const auto parts = at::split_with_sizes(qkv, {heads * hd, kvHeads * hd, kvHeads * hd}, -1);
  return {applyRopeReference(parts[0].reshape({batch, time, heads, hd}), cos, sin),
          applyRopeReference(parts[1].reshape({batch, time, kvHeads, hd}), cos, sin),
          parts[2].reshape({batch, time, kvHeads, hd})};
}

QkvHeads splitQkvWithRope(const torch::Tensor& qkv, const torch::Tensor& cos, const torch::Tensor& sin,
                          int64_t heads, int64_t kvHeads) {
  TORCH_CHECK(qkv.dim() == 3 && heads > 0 && kvHeads > 0 && qkv.size(2) > 0 &&
                  qkv.size(2) % (heads + 2 * kvHeads) == 0,
              "stacked QKV of shape ", qkv.sizes(), " does not split into ", heads, " + 2 x ", kvHeads,
              " heads");
  const int64_t hd = qkv.size(2) / (heads + 2 * kvHeads);
  TORCH_CHECK(hd % 2 == 0 && cos.dim() == 2 && sin.sizes() == cos.sizes() && cos.size(1) == hd &&
                  cos.size(0) >= qkv.size(1),
              "RoPE tables of shape ", cos.sizes(), " do not cover ", qkv.size(1), " positions of head_dim ",
              hd, " (even)");
  if (isContiguousCpuFloat(qkv) && isContiguousCpuFloat(cos) && isContiguousCpuFloat(sin) &&
      !cos.requires_grad() && !sin.requires_grad()) {
    const variable_list out = QkvRopeFunction::apply(qkv, cos, sin, heads, kvHeads);
    return {out[0], out[1], out[2]};
  }
  return splitQkvWithRopeReference(qkv, cos, sin, heads, kvHeads);
}

torch::Tensor stackedSwigluReference(const torch::Tensor& gateUp) {
  const int64_t f = gateUp.size(-1) / 2;
  return swigluReference(gateUp.narrow(-1, 0, f), gateUp.narrow(-1, f, f));
}

torch::Tensor stackedSwiglu(const torch::Tensor& gateUp) {
  TORCH_CHECK(gateUp.dim() >= 1 && gateUp.size(-1) > 0 && gateUp.size(-1) % 2 == 0,
              "stacked gate and up of shape ", gateUp.sizes(), " has an odd or empty last dimension");
  if (isContiguousCpuFloat(gateUp)) return StackedSwiGluFunction::apply(gateUp);
  return stackedSwigluReference(gateUp);
}

torch::Tensor crossEntropyReference(const torch::Tensor& logits, const torch::Tensor& targets) {
  return at::cross_entropy_loss(logits, targets);
}

torch::Tensor crossEntropy(const torch::Tensor& logits, const torch::Tensor& targets) {
  if (isContiguousCpuFloat(logits) && logits.dim() == 2 && targets.dim() == 1 &&
      targets.scalar_type() == at::kLong && targets.device().is_cpu() && targets.is_contiguous() &&
      targets.size(0) == logits.size(0) && logits.size(0) > 0 && logits.size(1) > 0)
    return CrossEntropyFunction::apply(logits, targets);
  return crossEntropyReference(logits, targets);
}

torch::Tensor tokenNllReference(const torch::Tensor& logits, const torch::Tensor& targets) {
  return -at::log_softmax(logits.to(at::kDouble), -1).gather(-1, targets.unsqueeze(-1)).squeeze(-1);
}

torch::Tensor tokenNll(const torch::Tensor& logits, const torch::Tensor& targets) {
  if (!(isContiguousCpuFloat(logits) && logits.dim() == 2 && targets.dim() == 1 &&
        targets.scalar_type() == at::kLong && targets.device().is_cpu() && targets.is_contiguous() &&
        targets.size(0) == logits.size(0) && logits.size(1) > 0))
    return -at::log_softmax(logits.to(at::kFloat), -1)
                .gather(-1, targets.unsqueeze(-1))
                .squeeze(-1)
                .to(at::kDouble);
  const int64_t rows = logits.size(0), vocab = logits.size(1);
  torch::Tensor nll = at::empty({rows}, logits.options().dtype(at::kDouble));
  const float* xp = logits.data_ptr<float>();
  const int64_t* tp = targets.data_ptr<int64_t>();
  double* np = nll.data_ptr<double>();
  checkTargets(targets, vocab);
  splitOverThreads(currentBlasThreads(), rows, kMinRowsPerThread, [&](int64_t begin, int64_t end) {
    std::vector<float> row(static_cast<size_t>(vocab));
    float lse = 0;
    for (int64_t r = begin; r < end; ++r)
      np[r] = kernels::rowNll(xp + r * vocab, vocab, tp[r], row.data(), &lse);
  });
  return nll;
}

}  // namespace sharelens
