#include "app/gui/derived_model_eval.hpp"

#include <imgui.h>

#include <cmath>

#include "app/gui/view.hpp"

namespace sharelens::gui {

void DerivedModelEval::start(AppContext& ctx, std::filesystem::path original, std::filesystem::path derived,
                             std::string what) {
  auto state = std::make_shared<State>();
  state->what = std::move(what);
  state->derivedPath = derived;
  m_state = state;
  ctx.jobs.submit(
      "evaluate " + state->what,
      [state, original, derived](const TaskContext& ctx) -> JobSystem::Completion {
        EvalOptions o;
        o.tokens = kGuiEvalTokens;
        EvalResult a = evaluateCheckpoint(original, o, ctx);
        EvalResult b = evaluateCheckpoint(derived, o, ctx);
        return [state, a = std::move(a), b = std::move(b)] {
          state->original = a;
          state->derived = b;
          state->phase = State::Phase::Done;
        };
      },
      [state](JobSystem::Status status, const std::string& error) {
        if (status == JobSystem::Status::Failed) state->phase = State::Phase::Failed, state->error = error;
        if (status == JobSystem::Status::Cancelled) state->phase = State::Phase::Cancelled;
      });
}

void DerivedModelEval::draw() const {
  if (!m_state) return;
  const State& s = *m_state;
  switch (s.phase) {
    case State::Phase::Running:
      drawPending(("held-out loss of " + s.what).c_str());
      return;
    case State::Phase::Cancelled:
      ImGui::TextDisabled("evaluation of %s cancelled", s.what.c_str());
      return;
    case State::Phase::Failed:
      ImGui::PushTextWrapPos(0);
      ImGui::TextColored(ImVec4(1, 0.55f, 0.5f, 1), "evaluating %s failed: %s", s.what.c_str(),
                         s.error.c_str());
      ImGui::PopTextWrapPos();
      return;
    case State::Phase::Done:
      break;
  }
  const double delta = s.derived.nll - s.original.nll;
  const double se =
      std::sqrt(std::pow(s.original.standardError(), 2) + std::pow(s.derived.standardError(), 2));
  ImGui::Text("held-out NLL: original %.4f (ppl %.2f), %s %.4f (ppl %.2f), difference %+.4f (+- %.4f)",
              s.original.nll, s.original.perplexity, s.what.c_str(), s.derived.nll, s.derived.perplexity,
              delta, se);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip(
        "%lld tokens of %s\nwritten to %s\n(the +- is the standard error of each side combined, windows as "
        "samples)",
        static_cast<long long>(s.derived.tokens), s.derived.text.c_str(), s.derivedPath.c_str());
}

}  // namespace sharelens::gui
