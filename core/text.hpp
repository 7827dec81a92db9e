// Parsing the small pieces of text users type or files hold: whole integers and separated lists.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sharelens {

// The integer the whole of `text` spells in decimal ("12", "-3"); nullopt for "", "12x", " 12" or overflow.
std::optional<int64_t> parseWholeInt(std::string_view text);

// Whether `text` is well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF).
bool isValidUtf8(std::string_view text);

// "a, b,,c" -> {"a", "b", "c"}: split at `separator`, spaces and tabs trimmed, empty pieces dropped.
std::vector<std::string_view> splitList(std::string_view text, char separator);

// `text` with ASCII letters in lower case (file extensions, format names; other bytes unchanged).
std::string asciiLower(std::string_view text);

// One number as the printf conversion `format` ("%.4f", "%+.3f", "%g") writes it, for messages and reports.
std::string formatNumber(double value, const char* format);

}  // namespace sharelens
