#include "trainer/fused_ops.hpp"

#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cmath>
#include <vector>

namespace sharelens {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

bool fusable(const torch::Tensor& t) {
  return t.device().is_cpu() && t.scalar_type() == at::kFloat && t.is_contiguous();
}

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
    at::parallel_for(0, rows, 16, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        const float* xr = xp + row * d;
        float* yr = yp + row * d;
        float sum = 0;
        for (int64_t i = 0; i < d; ++i) sum += xr[i] * xr[i];
        const float r = 1.0f / std::sqrt(sum / static_cast<float>(d) + static_cast<float>(eps));
        rp[row] = r;
        for (int64_t i = 0; i < d; ++i) yr[i] = xr[i] * r * wp[i];
      }
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
    at::parallel_for(0, chunks, 1, [&](int64_t cBegin, int64_t cEnd) {
      for (int64_t c = cBegin; c < cEnd; ++c) {
        float* gw = partial.data() + c * d;
        for (int64_t row = c * chunk; row < std::min(rows, (c + 1) * chunk); ++row) {
          const float *xr = xp + row * d, *gr = gp + row * d;
          float* gxr = gxp + row * d;
          const float r = rp[row];
          float dot = 0;
          for (int64_t i = 0; i < d; ++i) dot += gr[i] * wp[i] * xr[i];
          const float k = r * r * r * dot / static_cast<float>(d);
          for (int64_t i = 0; i < d; ++i) {
            gxr[i] = r * gr[i] * wp[i] - xr[i] * k;
            gw[i] += gr[i] * xr[i] * r;
          }
        }
      }
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
  const int64_t batch = in.size(0), time = in.size(1), heads = in.size(2), hd = in.size(3), half = hd / 2;
  const float *ip = in.data_ptr<float>(), *cp = cos.data_ptr<float>(), *sp = sin.data_ptr<float>();
  float* op = out.data_ptr<float>();
  at::parallel_for(0, batch * time, 8, [&](int64_t begin, int64_t end) {
    for (int64_t bt = begin; bt < end; ++bt) {
      const int64_t t = bt % time;
      const float *c = cp + t * hd, *s = sp + t * hd;
      for (int64_t h = 0; h < heads; ++h) {
        const float* x = ip + (bt * heads + h) * hd;
        float* y = op + (bt * heads + h) * hd;
        for (int64_t i = 0; i < half; ++i) {
          const float a = x[i], b = x[i + half], si = direction * s[i];
          y[i] = a * c[i] - b * si;
          y[i + half] = b * c[i] + a * si;
        }
      }
    }
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

torch::Tensor rotateHalf(const torch::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

}  // namespace

torch::Tensor rmsNormReference(const torch::Tensor& x, const torch::Tensor& weight, double eps) {
  return x * at::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + eps) * weight;
}

torch::Tensor rmsNorm(const torch::Tensor& x, const torch::Tensor& weight, double eps) {
  if (fusable(x) && fusable(weight)) return RmsNormFunction::apply(x, weight, eps);
  return rmsNormReference(x, weight, eps);
}

torch::Tensor applyRopeReference(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  const int64_t time = x.size(1);
  const auto c = cos.narrow(0, 0, time).unsqueeze(1), s = sin.narrow(0, 0, time).unsqueeze(1);  // [T, 1, hd]
  return x * c + rotateHalf(x) * s;
}

torch::Tensor applyRope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  if (fusable(x) && fusable(cos) && fusable(sin) && !cos.requires_grad() && !sin.requires_grad())
    return RopeFunction::apply(x, cos, sin);
  return applyRopeReference(x, cos, sin);
}

}  // namespace sharelens
