// Analyses by name and result type: `results.get(analyses::kHeads)` is a `const HeadDiffResult*` with no
// string to misspell and no type to restate at the call. Each analysis declares its id beside its result
// type, in its own header (analysis/esd.hpp: `analyses::kEsd`), and the registry (registry.cpp) builds its
// entry from that constant, so an id and its result type are bound in one place; a view, the CLI and the
// figure registry name analyses only through these.
#pragma once

#include <string_view>

namespace sharelens {

// An analysis id whose result is a T. Converts to its id where a plain name is wanted (running it, its
// state).
template <class T>
struct AnalysisId {
  using Result = T;
  std::string_view id;
  constexpr operator std::string_view() const { return id; }  // NOLINT: an id is its name
};

}  // namespace sharelens
