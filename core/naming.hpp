// Small helpers for tensor names: natural ordering ("layers.2" < "layers.10") and name templates
// ("model.layers.{L}.mlp.up_proj.weight" with L = 3).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sharelens {

// Compares runs of digits by value and everything else byte-wise.
bool naturalLess(std::string_view a, std::string_view b);

// Replaces every "{L}" in `pattern` with `layer`.
std::string expandLayer(std::string_view pattern, int64_t layer);

// If `name` starts with `prefix` followed by a decimal integer and a '.', returns the integer
// ("model.layers." + "12.self_attn..." -> 12).
std::optional<int64_t> layerIndexAfter(std::string_view name, std::string_view prefix);

bool startsWith(std::string_view s, std::string_view prefix);
bool endsWith(std::string_view s, std::string_view suffix);

// Human-readable counts: 124439808 -> "124.4M"; bytes -> "1.0 GiB".
std::string humanCount(double count);
std::string humanBytes(double bytes);
// A time to plan by: "7.5 s", "40 s", "25 min", "3.2 h".
std::string humanDuration(double seconds);

// A file-name stem from any label: letters, digits, '.', '-' and '_' kept, runs of anything else become one
// '-' ("run @ step 100" -> "run-step-100"); never empty.
std::string fileStem(std::string_view label);
// The local time as "20261122-184502", for names that must not collide with earlier ones.
std::string timestampForFileName();

}  // namespace sharelens
