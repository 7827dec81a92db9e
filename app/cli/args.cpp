#include "app/cli/args.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "core/error.hpp"
#include "core/text.hpp"

namespace sharelens::cli {

Args::Args(std::string command, std::string usage, std::vector<std::string> argv)
    : m_command(std::move(command)),
      m_usage(std::move(usage)),
      m_args(std::move(argv)),
      m_used(m_args.size()) {}

void Args::fail(const std::string& what, const std::string& found) const {
  throw Error({.what = what, .where = "sharelens " + m_command, .found = found, .hint = "usage: " + m_usage});
}

std::optional<std::string> Args::option(std::string_view name) {
  const std::string flagName = "--" + std::string(name);
  m_asked.insert(flagName);
  for (size_t i = 0; i < m_args.size(); ++i) {
    if (m_used[i]) continue;
    if (m_args[i] == flagName) {
      if (i + 1 >= m_args.size() || m_used[i + 1])
        fail("option " + flagName + " needs a value", "nothing after it");
      m_used[i] = m_used[i + 1] = true;
      m_taken.insert(flagName);
      return m_args[i + 1];
    }
    if (m_args[i].rfind(flagName + "=", 0) == 0) {
      m_used[i] = true;
      m_taken.insert(flagName);
      return m_args[i].substr(flagName.size() + 1);
    }
  }
  return std::nullopt;
}

std::string Args::option(std::string_view name, std::string fallback) {
  auto v = option(name);
  return v ? *v : std::move(fallback);
}

std::optional<double> Args::number(std::string_view name, double minValue, double maxValue) {
  auto text = option(name);
  if (!text) return std::nullopt;
  double value = 0;
  try {
    size_t used = 0;
    value = std::stod(*text, &used);
    if (used != text->size()) throw std::invalid_argument("trailing");
  } catch (const std::exception&) {
    fail("option --" + std::string(name) + " needs a number", "'" + *text + "'");
  }
  if (!std::isfinite(value))
    fail("option --" + std::string(name) + " needs a finite number", "'" + *text + "'");
  if (value < minValue || value > maxValue) {
    char range[96];
    std::snprintf(range, sizeof range, "[%g, %g]", minValue, maxValue);
    fail("option --" + std::string(name) + " out of range " + range, "'" + *text + "'");
  }
  return value;
}

long long Args::checkedInteger(std::string_view name, const std::string& text, long long minValue,
                               long long maxValue, std::string_view orWord) const {
  const std::string alternative = orWord.empty() ? "" : " or '" + std::string(orWord) + "'";
  const auto parsed = parseWholeInt(text);
  if (!parsed) fail("option --" + std::string(name) + " needs an integer" + alternative, "'" + text + "'");
  const long long value = *parsed;
  if (value < minValue || value > maxValue)
    fail("option --" + std::string(name) + " out of range [" + std::to_string(minValue) + ", " +
             std::to_string(maxValue) + "]" + alternative,
         std::to_string(value));
  return value;
}

std::optional<long long> Args::integer(std::string_view name, long long minValue, long long maxValue) {
  const auto text = option(name);
  if (!text) return std::nullopt;
  return checkedInteger(name, *text, minValue, maxValue);
}

std::optional<long long> Args::integerOrWord(std::string_view name, long long minValue, long long maxValue,
                                             std::string_view word, long long wordValue) {
  const auto text = option(name);
  if (!text) return std::nullopt;
  if (*text == word) return wordValue;
  return checkedInteger(name, *text, minValue, maxValue, word);
}

bool Args::flag(std::string_view name) {
  const std::string flagName = "--" + std::string(name);
  m_asked.insert(flagName);
  for (size_t i = 0; i < m_args.size(); ++i)
    if (!m_used[i] && m_args[i] == flagName) {
      m_used[i] = true;
      m_taken.insert(flagName);
      return true;
    }
  return false;
}

std::optional<std::string> Args::optionalPositional() {
  for (size_t i = 0; i < m_args.size(); ++i)
    if (!m_used[i] && (m_args[i].empty() || m_args[i][0] != '-' || m_args[i] == "-")) {
      m_used[i] = true;
      return m_args[i];
    }
  return std::nullopt;
}

std::string Args::positional(std::string_view what) {
  auto v = optionalPositional();
  if (!v) fail("missing " + std::string(what), "nothing");
  return *v;
}

std::vector<std::string> Args::remaining() const {
  std::vector<std::string> out = {m_command};
  for (size_t i = 0; i < m_args.size(); ++i)
    if (!m_used[i]) out.push_back(m_args[i]);
  return out;
}

// Whether `usage` lists `flagName` whole ("--eval" is not listed by "--eval-every").
static bool lists(const std::string& usage, const std::string& flagName) {
  for (size_t at = usage.find(flagName); at != std::string::npos; at = usage.find(flagName, at + 1)) {
    const size_t end = at + flagName.size();
    if (end == usage.size() || !(std::isalnum(static_cast<unsigned char>(usage[end])) || usage[end] == '-'))
      return true;
  }
  return false;
}

void Args::finish() {
  const char* check = std::getenv("SHARELENS_CHECK_USAGE");
  if (check && *check && std::string_view(check) != "0")
    for (const std::string& flagName : m_asked)
      if (!lists(m_usage, flagName))
        throw Error(
            {.what = "option " + flagName + " is read but its usage does not list it",
             .where = m_command.empty() ? "sharelens" : "sharelens " + m_command,
             .expected = "every option the command reads in its usage",
             .found = "usage: " + m_usage,
             .hint = "add " + flagName +
                     " to the usage (a command's: app/cli/commands.cpp; the GUI's: app/gui/gui_main.cpp)"});
  for (size_t i = 0; i < m_args.size(); ++i) {
    if (m_used[i]) continue;
    const std::string name = m_args[i].substr(0, m_args[i].find('='));
    if (m_taken.count(name))  // the first was read; a second would silently lose to it
      fail("option " + name + " given twice", "'" + m_args[i] + "' after an earlier " + name);
    fail("unknown or misplaced argument", "'" + m_args[i] + "'");
  }
}

}  // namespace sharelens::cli
