// sharelens convert PATH OUT.safetensors [--dtype F32|F16|BF16|F64]
// Writes every tensor of a checkpoint (sharded or not, or a llama2.c file) into one safetensors file,
// floating tensors converted to --dtype (default F32), integer and bool tensors copied as they are. Metadata
// is kept. A checkpoint whose config comes from its own header (llama2.c) gets it written as config.json
// beside OUT, so the result opens as a Hugging Face model (export-hf, compress, eval, train --init).
#include <array>
#include <iostream>

#include "app/cli/commands.hpp"
#include "core/atomic_file.hpp"
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
  const bool writesConfig =
      ckpt->config() && ckpt->configPath() && ckpt->configPath()->filename() != "config.json";
  const std::filesystem::path configOut = std::filesystem::absolute(out).parent_path() / "config.json";
  checkOutputs("sharelens convert", *ckpt,
               std::array{DeclaredOutput::file(out, "OUT.safetensors"),
                          DeclaredOutput::file(configOut, "config.json beside OUT")});
  if (writesConfig && std::filesystem::exists(configOut) && readJsonFile(configOut) != *ckpt->config())
    throw Error({.what = "another model's config.json is where this one's would go",
                 .where = configOut.string(),
                 .found = "a config.json that differs from " + path + "'s",
                 .hint = "write OUT into a directory of its own"});
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
  if (writesConfig) {
    writeFileAtomically(configOut, ckpt->config()->dump(2) + "\n");
    std::cout << "wrote " << configOut.string() << " (the config in " << path << "'s header)\n";
  }
  return 0;
}

}  // namespace sharelens::cli
