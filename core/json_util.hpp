// Strict JSON reading for the files users hand us (config.json, index files, topologies, run.json):
// duplicate keys are errors, parse errors say line and column, and typed field access names the file and
// the field in its error.
#pragma once

#include <filesystem>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace sharelens {

using Json = nlohmann::json;

// Parses `text`; `label` (usually the file path) goes into error messages.
Json parseJsonStrict(std::string_view text, const std::string& label);
Json readJsonFile(const std::filesystem::path& path);

// Typed access to the fields of one JSON object. `where` is "config.json" or "topology.json: model".
class JsonObject {
 public:
  JsonObject(const Json& object, std::string where);

  bool has(std::string_view key) const;
  const Json& raw() const { return *m_object; }
  const std::string& where() const { return m_where; }

  int64_t requireInt(std::string_view key, int64_t minValue = INT64_MIN) const;
  std::optional<int64_t> optionalInt(std::string_view key, int64_t minValue = INT64_MIN) const;
  double requireNumber(std::string_view key) const;
  std::optional<double> optionalNumber(std::string_view key) const;
  std::string requireString(std::string_view key) const;
  std::optional<std::string> optionalString(std::string_view key) const;
  std::optional<bool> optionalBool(std::string_view key) const;
  JsonObject requireObject(std::string_view key) const;
  std::optional<JsonObject> optionalObject(std::string_view key) const;
  const Json& requireArray(std::string_view key) const;

  // Throws a named error for the first key not in `known`: a misspelt optional field would otherwise be
  // ignored and its default taken without a word.
  void allowOnly(std::initializer_list<std::string_view> known) const;

  // Throws "WHERE field 'key': WHAT (expected, found). Hint: ..." for validation done by callers.
  [[noreturn]] void fail(std::string_view key, std::string what, std::string expected, std::string found,
                         std::string hint = {}) const;

 private:
  const Json& get(std::string_view key) const;  // throws "missing field"
  const Json* m_object;                         // not owned: the root document must outlive this view
  std::string m_where;
};

std::string jsonTypeName(const Json& value);

}  // namespace sharelens
