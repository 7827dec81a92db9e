// sharelens convert PATH OUT.safetensors [--dtype F32|F16|BF16|F64]
// Writes every tensor of a checkpoint (sharded or not) into one safetensors file, floating tensors
// converted to --dtype (default F32), integer and bool tensors copied as they are. Metadata is kept.
#include <array>
#include <iostream>

#include "app/cli/commands.hpp"
#include "core/checkpoint.hpp"
#include "core/error.hpp"
#include "core/output_guard.hpp"

namespace sharelens::cli {

int runConvert(Args& args) {
  const std::string path = args.positional("PATH");
  const std::string out = args.positional("OUT.safetensors");
  const std::string dtypeText = args.option("dtype", "F32");
  args.finish();
  const auto dtype = parseDType(dtypeText);
  if (!dtype || !isFloatingDType(*dtype))
    throw Error({.what = "unsupported target dtype",
                 .where = "sharelens convert --dtype",
                 .expected = "F32, F16, BF16 or F64",
                 .found = dtypeText});
  const auto ckpt = Checkpoint::open(path);
  checkOutputs("sharelens convert", *ckpt, std::array{DeclaredOutput::file(out, "OUT.safetensors")});
  std::vector<EncodedTensor> converted;
  std::vector<TensorWrite> writes;
  converted.reserve(ckpt->tensorCount());
  for (const std::string& name : ckpt->tensorNames()) {
    const TensorRef& ref = ckpt->at(name);
    if (!isFloatingDType(ref.info->dtype)) {
      writes.push_back({name, ref.info->dtype, ref.info->shape, ref.file->bytes(*ref.info)});
      continue;
    }
    converted.push_back(
        EncodedTensor::fromFloats(name, *dtype, ref.info->shape, ref.file->readFloat(*ref.info)));
    writes.push_back(converted.back().view());
  }
  writeSafetensors(out, writes, ckpt->metadata());
  std::cout << "wrote " << writes.size() << " tensors to " << out << "\n";
  return 0;
}

}  // namespace sharelens::cli
