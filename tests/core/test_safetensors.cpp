// Safetensors reading and writing on real files.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <random>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/safetensors.hpp"
#include "tests/support/hf_fixtures.hpp"
#include "tests/support/malformed.hpp"

namespace sharelens {
namespace {

namespace fs = std::filesystem;

std::vector<float> randomFloats(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

void writeBytes(const fs::path& path, const std::vector<std::byte>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

TEST(Safetensors, RoundTripsFloatingDTypesAndMetadata) {
  const auto dir = testing::makeTempDir("st");
  const auto values = randomFloats(6 * 5, 1);
  std::vector<EncodedTensor> tensors;
  for (DType d : {DType::F32, DType::F64, DType::F16, DType::BF16})
    tensors.push_back(EncodedTensor::fromFloats("w_" + std::string(dtypeName(d)), d, {6, 5}, values));
  writeSafetensors(dir / "m.safetensors", tensors, {{"format", "pt"}, {"note", "ünïcödé"}});

  const auto file = SafetensorsFile::open(dir / "m.safetensors");
  ASSERT_EQ(file->tensors().size(), 4u);
  EXPECT_EQ(file->metadata().at("note"), "ünïcödé");
  for (DType d : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    const TensorInfo& t = file->at("w_" + std::string(dtypeName(d)));
    EXPECT_EQ(t.dtype, d);
    EXPECT_EQ(t.shape, (std::vector<int64_t>{6, 5}));
    const auto read = file->readFloat(t);
    for (size_t i = 0; i < values.size(); ++i) {
      // Each value must be the dtype's correctly rounded encoding of the original.
      float expected = values[i];
      if (d == DType::F16) expected = halfToFloat(floatToHalf(values[i]));
      if (d == DType::BF16) expected = bfloat16ToFloat(floatToBfloat16(values[i]));
      EXPECT_EQ(read[i], expected);
    }
  }
  fs::remove_all(dir);
}

TEST(Safetensors, IntegerTensorsAndPartialReads) {
  const auto dir = testing::makeTempDir("st");
  const std::vector<int32_t> ints = {-3, 0, 7, 1 << 24, -100, 42};
  const std::vector<uint8_t> bools = {1, 0, 1};
  const std::vector<TensorWrite> writes = {
      {"ints", DType::I32, {2, 3}, std::as_bytes(std::span(ints))},
      {"flags", DType::Bool, {3}, std::as_bytes(std::span(bools))},
  };
  writeSafetensors(dir / "i.safetensors", writes);
  const auto file = SafetensorsFile::open(dir / "i.safetensors");
  std::vector<float> tail(3);
  file->readFloat(file->at("ints"), 3, tail);
  EXPECT_EQ(tail, (std::vector<float>{16777216.0f, -100.0f, 42.0f}));
  EXPECT_EQ(file->readFloat(file->at("flags")), (std::vector<float>{1, 0, 1}));
  std::vector<float> tooMany(4);
  EXPECT_THROW(file->readFloat(file->at("ints"), 3, tooMany), Error);
  fs::remove_all(dir);
}

TEST(Safetensors, WriterPadsHeaderToEightBytes) {
  const auto dir = testing::makeTempDir("st");
  const std::vector<float> v = {1, 2, 3};
  writeSafetensors(dir / "p.safetensors",
                   std::vector<EncodedTensor>{EncodedTensor::fromFloats("x", DType::F32, {3}, v)});
  std::ifstream in(dir / "p.safetensors", std::ios::binary);
  uint64_t n = 0;
  in.read(reinterpret_cast<char*>(&n), 8);
  EXPECT_EQ(n % 8, 0u);
  fs::remove_all(dir);
}

TEST(Safetensors, ReadsUnalignedDataByCopying) {
  // A header of odd length puts every tensor at an odd address; UBSan would flag any reinterpretation.
  std::string header = R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,12]}})";
  while ((8 + header.size()) % 4 != 1) header += ' ';
  auto bytes = testing::makeSafetensorsBytes(header, 12);
  const float values[3] = {1.5f, -2.25f, 1e-30f};
  std::memcpy(bytes.data() + 8 + header.size(), values, 12);
  const auto dir = testing::makeTempDir("st");
  writeBytes(dir / "u.safetensors", bytes);
  const auto file = SafetensorsFile::open(dir / "u.safetensors");
  EXPECT_EQ(file->readFloat(file->at("x")), (std::vector<float>{1.5f, -2.25f, 1e-30f}));
  fs::remove_all(dir);
}

TEST(Safetensors, OpeningTouchesOnlyTheHeader) {
  const auto dir = testing::makeTempDir("lazy");
  const fs::path path = dir / "big.safetensors";
  {  // 64 MiB of data in 16 tensors
    const std::vector<float> block(1 << 20, 0.5f);
    std::vector<EncodedTensor> tensors;
    for (int i = 0; i < 16; ++i)
      tensors.push_back(EncodedTensor::fromFloats("t" + std::to_string(i), DType::F32, {1024, 1024}, block));
    writeSafetensors(path, tensors);
  }
  const int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  const size_t size = fs::file_size(path);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  void* probe = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  ASSERT_NE(probe, MAP_FAILED);
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> residency((size + page - 1) / page);
  auto residentBytes = [&] {
    ::mincore(probe, size, residency.data());
    size_t n = 0;
    for (unsigned char r : residency) n += r & 1;
    return n * page;
  };
  const size_t before = residentBytes();
  if (before > size / 2) {
    ::munmap(probe, size);
    ::close(fd);
    GTEST_SKIP() << "the page cache did not drop the file (fadvise ignored here)";
  }
  {
    const auto file = SafetensorsFile::open(path);
    EXPECT_EQ(file->tensors().size(), 16u);
    const size_t afterOpen = residentBytes();
    EXPECT_LT(afterOpen - std::min(afterOpen, before), 256u << 10)
        << "opening read more than header + readahead: before " << before << " after " << afterOpen;
    (void)file->readFloat(file->at("t7"));
    EXPECT_GE(residentBytes(), afterOpen + (2u << 20)) << "reading a tensor should bring its pages in";
  }
  ::munmap(probe, size);
  ::close(fd);
  fs::remove_all(dir);
}

TEST(Safetensors, WriterRejectsBadInputWithoutLeavingFiles) {
  const auto dir = testing::makeTempDir("st");
  const std::vector<float> v = {1, 2};
  const std::vector<EncodedTensor> duplicate = {EncodedTensor::fromFloats("a", DType::F32, {2}, v),
                                                EncodedTensor::fromFloats("a", DType::F32, {2}, v)};
  EXPECT_THROW(writeSafetensors(dir / "d.safetensors", duplicate), Error);
  std::vector<TensorWrite> wrongSize = {{"b", DType::F32, {3}, std::as_bytes(std::span(v))}};
  try {
    writeSafetensors(dir / "w.safetensors", wrongSize);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("12 bytes"), std::string::npos) << e.what();
  }
  // Found by fuzz_model_view: a name that is not UTF-8 escaped as a JSON library exception.
  const std::vector<EncodedTensor> notUtf8 = {EncodedTensor::fromFloats("w\xff\xfe", DType::F32, {2}, v)};
  try {
    writeSafetensors(dir / "u.safetensors", notUtf8);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not valid UTF-8"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::is_empty(dir)) << "a failed write left files behind";
  fs::remove_all(dir);
}

TEST(AtomicFile, UncommittedWriteLeavesTheOldFile) {
  const auto dir = testing::makeTempDir("atomic");
  writeFileAtomically(dir / "f.txt", "old");
  {
    AtomicFile f(dir / "f.txt");
    f.write(std::string_view("new, but never committed"));
  }
  EXPECT_EQ(readTextFile(dir / "f.txt"), "old");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
  fs::remove_all(dir);
}

TEST(AtomicFile, MissingDirectoryIsANamedError) {
  try {
    writeFileAtomically("/nonexistent-dir-sharelens/x.json", "{}");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir-sharelens"), std::string::npos);
  }
}

}  // namespace
}  // namespace sharelens
