#include "trainer/cpu_linear.hpp"

#include <torch/csrc/autograd/custom_function.h>

#include "trainer/cpu_gemm.hpp"
#include "trainer/cpu_tensor.hpp"

namespace sharelens {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// x [..., K] as rows [M, K]: M is the product of the leading dimensions (also when K is 0).
int64_t rowsOf(const torch::Tensor& x) {
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < x.dim(); ++d) rows *= x.size(d);
  return rows;
}

// x viewed as rows [M, K], weight [N, K]:
//   y [M, N] = x W^T,   dx [M, K] = dy W,   dW [N, K] = dy^T x.
struct LinearFunction : public torch::autograd::Function<LinearFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight) {
    const int64_t k = x.size(-1), rows = rowsOf(x), n = weight.size(0);
    std::vector<int64_t> shape = x.sizes().vec();
    shape.back() = n;
    torch::Tensor y = at::empty(shape, x.options());
    sgemm(Op::None, Op::Transpose, rows, n, k, 1.0f, x.data_ptr<float>(), k, weight.data_ptr<float>(), k,
          0.0f, y.data_ptr<float>(), n);
    ctx->save_for_backward({x, weight});
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &x = saved[0], &weight = saved[1];
    const torch::Tensor dy = grads[0].contiguous();
    const int64_t k = x.size(-1), rows = rowsOf(x), n = weight.size(0);
    torch::Tensor dx, dw;
    if (ctx->needs_input_grad(0)) {
      dx = at::empty_like(x);
      sgemm(Op::None, Op::None, rows, k, n, 1.0f, dy.data_ptr<float>(), n, weight.data_ptr<float>(), k, 0.0f,
            dx.data_ptr<float>(), k);
    }
    if (ctx->needs_input_grad(1)) {
      dw = at::empty_like(weight);
      sgemm(Op::Transpose, Op::None, n, k, rows, 1.0f, dy.data_ptr<float>(), n, x.data_ptr<float>(), k, 0.0f,
            dw.data_ptr<float>(), k);
    }
    return {dx, dw};
  }
};

}  // namespace

torch::Tensor projection(const torch::Tensor& x, const torch::Tensor& weight) {
  if (isContiguousCpuFloat(x) && isContiguousCpuFloat(weight) && weight.dim() == 2 && x.dim() >= 1 &&
      x.size(-1) == weight.size(1))
    return LinearFunction::apply(x, weight);
  return at::linear(x, weight);
}

bool projectionUsesOneDnn() {
  return sgemmUsesOneDnn();
}

}  // namespace sharelens
