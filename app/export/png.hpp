// PNG writing through Cairo, atomically (temp file + rename).
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

namespace sharelens {

// rgba: width * height * 4 bytes, straight (not premultiplied) alpha, top row first.
void writePngRgba(const std::filesystem::path& path, int width, int height, const std::vector<uint8_t>& rgba);

}  // namespace sharelens
