#include "core/naming.hpp"

#include <ctime>

#include <cctype>
#include <cstdio>

namespace sharelens {

bool naturalLess(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const bool da = std::isdigit(static_cast<unsigned char>(a[i]));
    const bool db = std::isdigit(static_cast<unsigned char>(b[j]));
    if (da && db) {
      size_t ie = i, je = j;
      while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie]))) ++ie;
      while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je]))) ++je;
      // Compare numerically without overflow: strip leading zeros, then length, then digits.
      size_t ia = i, jb = j;
      while (ia + 1 < ie && a[ia] == '0') ++ia;
      while (jb + 1 < je && b[jb] == '0') ++jb;
      const std::string_view na = a.substr(ia, ie - ia), nb = b.substr(jb, je - jb);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = ie;
      j = je;
    } else {
      if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

std::string expandLayer(std::string_view pattern, int64_t layer) {
  std::string out;
  const std::string number = std::to_string(layer);
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern.compare(i, 3, "{L}") == 0) {
      out += number;
      i += 2;
    } else {
      out += pattern[i];
    }
  }
  return out;
}

std::optional<int64_t> layerIndexAfter(std::string_view name, std::string_view prefix) {
  if (!startsWith(name, prefix)) return std::nullopt;
  size_t i = prefix.size();
  int64_t value = 0;
  size_t digits = 0;
  while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) {
    if (digits++ > 9) return std::nullopt;
    value = value * 10 + (name[i] - '0');
    ++i;
  }
  if (digits == 0 || i >= name.size() || name[i] != '.') return std::nullopt;
  return value;
}

bool startsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}
bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string humanCount(double count) {
  const char* units[] = {"", "K", "M", "B", "T"};
  int u = 0;
  while (count >= 1000.0 && u < 4) {
    count /= 1000.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f%s" : "%.1f%s", count, units[u]);
  return buf;
}

std::string humanDuration(double seconds) {
  char buf[32];
  if (seconds < 10)
    std::snprintf(buf, sizeof buf, "%.1f s", seconds);
  else if (seconds < 120)
    std::snprintf(buf, sizeof buf, "%.0f s", seconds);
  else if (seconds < 120 * 60)
    std::snprintf(buf, sizeof buf, "%.0f min", seconds / 60);
  else
    std::snprintf(buf, sizeof buf, "%.1f h", seconds / 3600);
  return buf;
}

std::string humanBytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 4) {
    bytes /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

std::string fileStem(std::string_view label) {
  std::string out;
  for (char c : label) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '-' || c == '_';
    if (keep)
      out.push_back(c);
    else if (!out.empty() && out.back() != '-')
      out.push_back('-');
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  while (!out.empty() && (out.front() == '.' || out.front() == '-')) out.erase(out.begin());
  return out.empty() ? "model" : out;
}

std::string timestampForFileName() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &local);
  return buf;
}

}  // namespace sharelens
