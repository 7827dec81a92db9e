#include "core/error.hpp"

namespace sharelens {

std::string formatError(const ErrorDetails& d) {
  std::string out;
  if (!d.where.empty()) out += d.where + ": ";
  out += d.what;
  if (!d.expected.empty() || !d.found.empty()) {
    out += " (";
    if (!d.expected.empty()) out += "expected " + d.expected;
    if (!d.expected.empty() && !d.found.empty()) out += ", ";
    if (!d.found.empty()) out += "found " + d.found;
    out += ")";
  }
  if (!d.hint.empty()) out += ". Hint: " + d.hint;
  return out;
}

Error::Error(ErrorDetails details) : std::runtime_error(formatError(details)), m_details(std::move(details)) {}

}  // namespace sharelens
