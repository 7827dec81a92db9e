// The attention compression methods (analysis/masa_compress.hpp says what each computes): the one list that
// the CLI, the GUI's Compress panel, the compressed-checkpoint reader, the planner and the sweep figure take
// their names, labels and order from. A method added here is offered, accepted and plotted everywhere.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace sharelens {

struct CompressionMethod {
  std::string_view name;     // as written on the command line and in compressed.json's "method"
  std::string_view label;    // a figure's legend and the GUI's choice
  std::string_view summary;  // one clause for reports
};

inline constexpr std::array<CompressionMethod, 3> kCompressionMethods{{
    {"masa", "MASA (atoms + refined residuals)",
     "Matrix PCA atoms per layer group plus whitened low-rank residuals"},
    {"masa-noref", "MASA atoms only", "the atoms alone"},
    {"svd", "SVD-LLM (whitened SVD)", "every matrix's whitened truncated SVD (SVD-LLM)"},
}};

inline bool isCompressionMethod(std::string_view name) {
  for (const CompressionMethod& m : kCompressionMethods)
    if (m.name == name) return true;
  return false;
}

// "masa, masa-noref, svd" (an error's expected value) or, with "|", a usage line's choice.
inline std::string compressionMethodList(std::string_view separator = ", ") {
  std::string out;
  for (const CompressionMethod& m : kCompressionMethods)
    out += (out.empty() ? "" : std::string(separator)) + std::string(m.name);
  return out;
}

inline std::vector<std::string> compressionMethodNames() {
  std::vector<std::string> out;
  for (const CompressionMethod& m : kCompressionMethods) out.emplace_back(m.name);
  return out;
}

}  // namespace sharelens
