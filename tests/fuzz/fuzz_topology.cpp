// libFuzzer target: a topology file (sharelens.topology/1 JSON) -> parse and validate, then everything
// `sharelens params` does with a valid one: exact counts, training memory, the parameter-matched baseline.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/error.hpp"
#include "core/json_util.hpp"
#include "core/param_count.hpp"
#include "core/topology.hpp"

namespace sl = sharelens;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const sl::Json j =
        sl::parseJsonStrict(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json");
    const sl::Topology t = sl::topologyFromJson(j, "fuzz.json");
    (void)sl::countParameters(t);
    (void)sl::estimateTrainingMemory(t, 16);
    (void)sl::topologyToJson(t);
    (void)sl::parameterMatchedBaseline(t);
  } catch (const sl::Error&) {
  }
  return 0;
}
