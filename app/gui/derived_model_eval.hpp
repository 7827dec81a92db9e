// "Is the derived model any good?": when a view writes a derived model (a DirectShare-shared checkpoint, a
// compressed one), it hands the original and the derived model to a DerivedModelEval, which scores both with
// `sharelens eval`'s evaluateCheckpoint on the same held-out tokens in one background job and shows the two
// NLLs, perplexities and their difference where the model was written.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "app/gui/jobs.hpp"
#include "trainer/evaluate.hpp"

namespace sharelens::gui {

struct AppContext;

class DerivedModelEval {
 public:
  // Scores `original` and `derived` (the second replacing any earlier comparison); `what` names the derived
  // model in the status line ("DirectShare at alpha 0.25").
  void start(AppContext& ctx, std::filesystem::path original, std::filesystem::path derived,
             std::string what);
  void draw() const;  // nothing before the first start()

 private:
  struct State {
    enum class Phase { Running, Done, Failed, Cancelled } phase = Phase::Running;
    std::string what, error;
    std::filesystem::path derivedPath;
    EvalResult original, derived;
  };
  std::shared_ptr<State> m_state;
};

// Tokens each side is scored on in the GUI (the CLI's default is larger; a GUI answer should come quickly).
inline constexpr int64_t kGuiEvalTokens = 8192;

}  // namespace sharelens::gui
