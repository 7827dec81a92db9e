#include "app/export/png.hpp"

#include <cairo.h>

#include <cstring>

#include "core/atomic_file.hpp"
#include "core/error.hpp"

namespace sharelens {

void writePngRgba(const std::filesystem::path& path, int width, int height,
                  const std::vector<uint8_t>& rgba) {
  if (width <= 0 || height <= 0 || rgba.size() != static_cast<size_t>(width) * height * 4)
    throw Error({.what = "image buffer does not match its size",
                 .where = path.string(),
                 .expected = std::to_string(width) + "x" + std::to_string(height) + " RGBA",
                 .found = std::to_string(rgba.size()) + " bytes"});
  cairo_surface_t* surface = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, width, height);
  cairo_surface_flush(surface);
  unsigned char* data = cairo_image_surface_get_data(surface);
  const int stride = cairo_image_surface_get_stride(surface);
  for (int y = 0; y < height; ++y) {
    auto* out = reinterpret_cast<uint32_t*>(data + y * stride);
    const uint8_t* in = rgba.data() + static_cast<size_t>(y) * width * 4;
    for (int x = 0; x < width; ++x) {
      const uint32_t a = in[4 * x + 3];
      auto premultiply = [a](uint32_t c) { return (c * a + 127) / 255; };
      out[x] = (a << 24) | (premultiply(in[4 * x]) << 16) | (premultiply(in[4 * x + 1]) << 8) |
               premultiply(in[4 * x + 2]);
    }
  }
  cairo_surface_mark_dirty(surface);
  AtomicFile file(path);
  const cairo_status_t status = cairo_surface_write_to_png_stream(
      surface,
      [](void* closure, const unsigned char* bytes, unsigned int length) {
        static_cast<AtomicFile*>(closure)->write(bytes, length);
        return CAIRO_STATUS_SUCCESS;
      },
      &file);
  cairo_surface_destroy(surface);
  if (status != CAIRO_STATUS_SUCCESS)
    throw Error(
        {.what = "PNG encoding failed", .where = path.string(), .found = cairo_status_to_string(status)});
  file.commit();
}

}  // namespace sharelens
