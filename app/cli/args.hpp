// A small command-line parser for the subcommands: positionals, `--name VALUE` / `--name=VALUE` options and
// `--switch` flags. Every mistake is a sharelens::Error naming the flag and the command's usage.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace sharelens::cli {

class Args {
 public:
  Args(std::string command, std::string usage, std::vector<std::string> argv);

  std::optional<std::string> option(std::string_view name);  // consumes --name VALUE
  std::string option(std::string_view name, std::string fallback);
  // A finite number in [minValue, maxValue] (NaN, infinities and out-of-range values are errors).
  std::optional<double> number(std::string_view name, double minValue, double maxValue);
  std::optional<long long> integer(std::string_view name, long long minValue, long long maxValue);
  // The same, or the word `word` (such as "all"), which reads as `wordValue`.
  std::optional<long long> integerOrWord(std::string_view name, long long minValue, long long maxValue,
                                         std::string_view word, long long wordValue);
  bool flag(std::string_view name);               // consumes --name
  std::string positional(std::string_view what);  // next positional; error when absent
  std::optional<std::string> optionalPositional();
  // Error on anything not consumed; and, where SHARELENS_CHECK_USAGE is set (the tests set it for every
  // process they start), on any option or flag read here that the usage does not list: a command's usage is
  // written by hand beside its code, and this keeps it from losing an option without failing a user's
  // command over a word missing from its help.
  void finish();
  std::vector<std::string> remaining() const;  // the arguments not consumed yet, in order

  const std::string& usage() const { return m_usage; }

 private:
  [[noreturn]] void fail(const std::string& what, const std::string& found) const;
  long long checkedInteger(std::string_view name, const std::string& text, long long minValue,
                           long long maxValue, std::string_view orWord = {}) const;
  std::string m_command;
  std::string m_usage;
  std::vector<std::string> m_args;
  std::vector<bool> m_used;
  std::set<std::string> m_taken;  // the options and flags read so far ("--lr")
  std::set<std::string> m_asked;  // every option and flag asked for, given or not
};

}  // namespace sharelens::cli
