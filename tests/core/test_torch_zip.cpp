// The PyTorch zip reader (core/torch_zip) on files our own writer lays out as torch.save does
// (tests/support/torch_zip_fixtures): tensors read back, and every malformed or disallowed file is a named
// error. Files written by PyTorch itself are checked by tests/peer/peer_torch_bin.py.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "core/checkpoint.hpp"
#include "core/error.hpp"
#include "tests/support/hf_fixtures.hpp"
#include "tests/support/torch_zip_fixtures.hpp"

namespace sharelens {
namespace {

namespace fs = std::filesystem;
using testing::TorchTensor;

class TorchZip : public ::testing::Test {
 protected:
  void SetUp() override { m_dir = testing::makeTempDir("torch-zip"); }
  void TearDown() override { fs::remove_all(m_dir); }
  fs::path write(const std::string& name, const std::vector<std::byte>& bytes) {
    std::ofstream(m_dir / name, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    return m_dir / name;
  }
  std::string errorOpening(const fs::path& path) {
    try {
      const auto ckpt = Checkpoint::open(path);
      for (const std::string& name : ckpt->tensorNames()) (void)ckpt->readFloat(name);
    } catch (const Error& e) {
      return e.what();
    }
    return "opened";
  }
  template <size_t N>  // a literal whole, its NUL bytes included (not its terminator)
  static std::vector<std::byte> literal(const char (&s)[N]) {
    return bytesOf(std::string_view(s, N - 1));
  }
  static std::vector<std::byte> bytesOf(std::string_view s) {
    return {reinterpret_cast<const std::byte*>(s.data()),
            reinterpret_cast<const std::byte*>(s.data()) + s.size()};
  }
  fs::path m_dir;
};

const std::vector<TorchTensor> kTensors = {{"layers.0.w", {2, 3}, {1, 2, 3, 4, 5, 6}},
                                           {"bias", {4}, {-1, 0.5f, 0, 9}}};

TEST_F(TorchZip, TensorsReadBackWithTheirNamesShapesAndValues) {
  const auto ckpt = Checkpoint::open(write("model.bin", testing::torchZipBytes(kTensors)));
  EXPECT_EQ(ckpt->format(), "pytorch zip");
  ASSERT_EQ(ckpt->tensorCount(), 2u);
  for (const TorchTensor& t : kTensors) {
    EXPECT_EQ(ckpt->at(t.name).info->shape, t.shape) << t.name;
    EXPECT_EQ(ckpt->readFloat(t.name), t.values) << t.name;
  }
}

TEST_F(TorchZip, MalformedOrDisallowedFilesAreNamedErrors) {
  const std::vector<std::byte> pickle = testing::statePickle(kTensors);
  const auto storage = [](const TorchTensor& t) {
    std::vector<std::byte> b(t.values.size() * 4);
    std::memcpy(b.data(), t.values.data(), b.size());
    return b;
  };
  auto zipWith = [&](std::vector<std::byte> pkl, bool withSecondStorage = true) {
    testing::ZipEntries e = {{"a/data.pkl", std::move(pkl)}, {"a/data/0", storage(kTensors[0])}};
    if (withSecondStorage) e.emplace_back("a/data/1", storage(kTensors[1]));
    return testing::zipBytes(e);
  };
  auto replaced = [&](std::string_view from, std::string_view to) {
    std::string s(reinterpret_cast<const char*>(pickle.data()), pickle.size());
    s.replace(s.find(from), from.size(), to);
    return bytesOf(s);
  };

  std::string e =
      errorOpening(write("system.bin", zipWith(replaced("torch._utils\n_rebuild_tensor_v2", "os\nsystem"))));
  EXPECT_NE(e.find("the global os.system"), std::string::npos) << e;

  e = errorOpening(write("no-storage.bin", zipWith(pickle, false)));
  EXPECT_NE(e.find("tensor storage missing"), std::string::npos) << e;
  EXPECT_NE(e.find("'bias'"), std::string::npos) << e;

  std::vector<TorchTensor> big = kTensors;
  big[1].shape = {8};  // a storage of four values, a tensor of eight
  e = errorOpening(write("larger.bin", zipWith(testing::statePickle(big))));
  EXPECT_NE(e.find("tensor larger than its storage"), std::string::npos) << e;
  big[1].values.resize(8);  // the pickle's storage of eight values, the archive's entry of four
  e = errorOpening(write("outside.bin", zipWith(testing::statePickle(big))));
  EXPECT_NE(e.find("tensor outside its storage"), std::string::npos) << e;

  // A name whose bytes are not UTF-8 (found by fuzz_torch_zip once its harness dumped the inspect report):
  // a named error, not an exception from the JSON it would go into.
  e = errorOpening(write("latin1.bin", zipWith(replaced("bias", std::string("bi\xe9s")))));
  EXPECT_NE(e.find("not valid UTF-8"), std::string::npos) << e;

  std::vector<std::byte> truncated(pickle.begin(), pickle.begin() + 60);
  e = errorOpening(write("truncated-pickle.bin", zipWith(truncated)));
  EXPECT_NE(e.find("the end of data.pkl"), std::string::npos) << e;

  std::vector<std::byte> opcode = pickle;
  opcode[2] = std::byte{'i'};  // INST instead of GLOBAL: not a state dict's opcode
  e = errorOpening(write("opcode.bin", zipWith(opcode)));
  EXPECT_NE(e.find("opcode 0x69"), std::string::npos) << e;

  std::vector<std::byte> memo = bytesOf("\x80\x02h\x07.");  // BINGET of a key never stored
  e = errorOpening(write("memo.bin", zipWith(memo)));
  EXPECT_NE(e.find("never stored"), std::string::npos) << e;

  e = errorOpening(write("no-pickle.bin", testing::zipBytes({{"a/other", bytesOf("x")}})));
  EXPECT_NE(e.find("not a PyTorch checkpoint"), std::string::npos) << e;

  // A persistent id naming a global that is not a storage type, and a call of a global that builds nothing.
  e = errorOpening(
      write("not-storage.bin", zipWith(replaced("torch\nFloatStorage", "collections\nOrderedDict"))));
  EXPECT_NE(e.find("a storage type"), std::string::npos) << e;
  e = errorOpening(write("call.bin", zipWith(bytesOf("\x80\x02"
                                                     "ctorch\nFloatStorage\n)R."))));
  EXPECT_NE(e.find("a call of torch.FloatStorage"), std::string::npos) << e;
  // A dict that holds itself through the memo, and tuples nested a hundred thousand deep: named errors (no
  // tensors), no hang, no stack overflow.
  e = errorOpening(write("cycle.bin", zipWith(literal("\x80\x02}q\x00(X\x01\x00\x00\x00"
                                                      "a"
                                                      "h\x00X\x01\x00\x00\x00"
                                                      "b"
                                                      "h\x00u."))));
  EXPECT_NE(e.find("no tensors"), std::string::npos) << e;
  std::string deep = "\x80\x02)";
  deep += std::string(100'000, '\x85');
  e = errorOpening(write("deep.bin", zipWith(bytesOf(deep + "."))));
  EXPECT_NE(e.find("no tensors"), std::string::npos) << e;

  const std::vector<std::byte> good = testing::torchZipBytes(kTensors);
  e = errorOpening(write("cut.bin", std::vector<std::byte>(good.begin(), good.end() - 30)));
  EXPECT_NE(e.find("malformed zip archive"), std::string::npos) << e;
  EXPECT_NE(e.find("cut.bin"), std::string::npos) << e;
}

}  // namespace
}  // namespace sharelens
