#include "core/json_util.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "core/atomic_file.hpp"
#include "core/error.hpp"

namespace sharelens {
namespace {

std::pair<size_t, size_t> lineAndColumn(std::string_view text, size_t byte) {
  size_t line = 1, column = 1;
  for (size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

}  // namespace

std::string jsonTypeName(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "an integer (" + v.dump() + ")";
    case Json::value_t::number_float:
      return "a number (" + v.dump() + ")";
    case Json::value_t::string:
      return "a string (" + v.dump() + ")";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::object:
      return "an object";
    default:
      return "a value";
  }
}

Json parseJsonStrict(std::string_view text, const std::string& label) {
  // Detect duplicate keys: nlohmann keeps the last value silently, which hides real mistakes.
  std::vector<std::set<std::string>> keysPerObject;
  std::optional<std::string> duplicate;
  auto callback = [&](int, Json::parse_event_t event, Json& parsed) {
    switch (event) {
      case Json::parse_event_t::object_start:
        keysPerObject.emplace_back();
        break;
      case Json::parse_event_t::object_end:
        keysPerObject.pop_back();
        break;
      case Json::parse_event_t::key:
        if (!keysPerObject.back().insert(parsed.get<std::string>()).second && !duplicate)
          duplicate = parsed.get<std::string>();
        break;
      default:
        break;
    }
    return true;
  };
  // The parser takes a NUL byte for the end of input and would not read what follows; JSON has no raw NUL.
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
    auto [line, column] = lineAndColumn(text, nul);
    throw Error({.what = "invalid JSON: a NUL byte",
                 .where = label + ":" + std::to_string(line) + ":" + std::to_string(column),
                 .expected = "JSON text",
                 .found = "byte 0 at offset " + std::to_string(nul),
                 .hint = "the file is corrupt or not JSON text; write it again"});
  }
  Json result;
  try {
    result = Json::parse(text.begin(), text.end(), callback, /*allow_exceptions=*/true);
  } catch (const Json::parse_error& e) {
    auto [line, column] = lineAndColumn(text, e.byte > 0 ? e.byte - 1 : 0);
    std::string message = e.what();
    if (auto pos = message.find("syntax error"); pos != std::string::npos) message = message.substr(pos);
    throw Error({.what = "invalid JSON",
                 .where = label + ":" + std::to_string(line) + ":" + std::to_string(column),
                 .found = message,
                 .hint = "fix the JSON syntax (a JSON linter shows the exact spot)"});
  } catch (const Json::exception& e) {  // out_of_range: a number beyond a double, like 1e1111111
    std::string message = e.what();
    if (auto pos = message.find("] "); pos != std::string::npos) message = message.substr(pos + 2);
    throw Error({.what = "invalid JSON",
                 .where = label,
                 .expected = "numbers that fit a 64-bit float",
                 .found = message,
                 .hint = "fix or remove the out-of-range number"});
  }
  if (duplicate)
    throw Error({.what = "duplicate key '" + *duplicate + "'",
                 .where = label,
                 .expected = "each key once per object",
                 .found = "'" + *duplicate + "' at least twice",
                 .hint = "remove one of them; JSON readers disagree on which one wins"});
  return result;
}

Json readJsonFile(const std::filesystem::path& path) {
  return parseJsonStrict(readTextFile(path), path.string());
}

JsonObject::JsonObject(const Json& object, std::string where) : m_object(&object), m_where(std::move(where)) {
  if (!object.is_object())
    throw Error({.what = "expected a JSON object",
                 .where = m_where,
                 .expected = "an object",
                 .found = jsonTypeName(object)});
}

bool JsonObject::has(std::string_view key) const {
  auto it = m_object->find(key);
  return it != m_object->end() && !it->is_null();
}

const Json& JsonObject::get(std::string_view key) const {
  auto it = m_object->find(key);
  if (it == m_object->end() || it->is_null())
    throw Error(
        {.what = "missing field '" + std::string(key) + "'", .where = m_where, .hint = "add the field"});
  return *it;
}

void JsonObject::allowOnly(std::initializer_list<std::string_view> known) const {
  for (const auto& [key, value] : m_object->items()) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string list;
    for (std::string_view k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    fail(key, "unknown field", "one of " + list, "'" + key + "'",
         "check its spelling: an unknown field would otherwise be ignored and its default used");
  }
}

void JsonObject::fail(std::string_view key, std::string what, std::string expected, std::string found,
                      std::string hint) const {
  throw Error({.what = std::move(what),
               .where = m_where + " field '" + std::string(key) + "'",
               .expected = std::move(expected),
               .found = std::move(found),
               .hint = std::move(hint)});
}

int64_t JsonObject::requireInt(std::string_view key, int64_t minValue) const {
  const Json& v = get(key);
  int64_t value = 0;
  if (v.is_number_integer()) {
    value = v.get<int64_t>();
  } else if (v.is_number_unsigned() && v.get<uint64_t>() <= uint64_t(INT64_MAX)) {
    value = static_cast<int64_t>(v.get<uint64_t>());
  } else if (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>() &&
             std::abs(v.get<double>()) < 9e15) {
    value = static_cast<int64_t>(v.get<double>());
  } else {
    fail(key, "wrong type", "an integer", jsonTypeName(v));
  }
  if (value < minValue)
    fail(key, "value out of range", ">= " + std::to_string(minValue), std::to_string(value));
  return value;
}

std::optional<int64_t> JsonObject::optionalInt(std::string_view key, int64_t minValue) const {
  if (!has(key)) return std::nullopt;
  return requireInt(key, minValue);
}

double JsonObject::requireNumber(std::string_view key) const {
  const Json& v = get(key);
  if (!v.is_number()) fail(key, "wrong type", "a number", jsonTypeName(v));
  return v.get<double>();
}

std::optional<double> JsonObject::optionalNumber(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  return requireNumber(key);
}

std::string JsonObject::requireString(std::string_view key) const {
  const Json& v = get(key);
  if (!v.is_string()) fail(key, "wrong type", "a string", jsonTypeName(v));
  return v.get<std::string>();
}

std::optional<std::string> JsonObject::optionalString(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  return requireString(key);
}

std::optional<bool> JsonObject::optionalBool(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  const Json& v = get(key);
  if (!v.is_boolean()) fail(key, "wrong type", "true or false", jsonTypeName(v));
  return v.get<bool>();
}

JsonObject JsonObject::requireObject(std::string_view key) const {
  const Json& v = get(key);
  if (!v.is_object()) fail(key, "wrong type", "an object", jsonTypeName(v));
  return JsonObject(v, m_where + "." + std::string(key));
}

std::optional<JsonObject> JsonObject::optionalObject(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  return requireObject(key);
}

const Json& JsonObject::requireArray(std::string_view key) const {
  const Json& v = get(key);
  if (!v.is_array()) fail(key, "wrong type", "an array", jsonTypeName(v));
  return v;
}

}  // namespace sharelens
