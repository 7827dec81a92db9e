// Where commands may write (core/output_guard.hpp), one writer per directory (core/directory_lock.hpp), and
// the temporaries a killed writer leaves (core/atomic_file.hpp): each case is one a user met (issue 40).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <fstream>
#include <thread>

#include "core/atomic_file.hpp"
#include "core/checkpoint.hpp"
#include "core/directory_lock.hpp"
#include "core/error.hpp"
#include "core/output_guard.hpp"
#include "tests/support/hf_fixtures.hpp"

namespace sharelens {
namespace {

namespace fs = std::filesystem;

std::string refusal(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

std::string refusal(const Checkpoint& input, const DeclaredOutput& out) {
  return refusal([&] { checkOutputs("test", input, std::array{out}); });
}

// The cases of issue 40's "Data lost": each overwrote a checkpoint (the newest, an older step of its run, or
// a BF16 original beside its config.json) because only the opened directory was guarded.
TEST(OutputGuard, AnOutputInsideTheRunOrTheModelFolderAnInputBelongsToIsRefused) {
  const fs::path dir = testing::makeTempDir("guard");
  const fs::path run = testing::writeFixtureRun(dir / "run");
  const fs::path step6 = run / "checkpoints" / "step-0000006";
  const auto newestFile = Checkpoint::open(step6 / "model.safetensors");
  using D = DeclaredOutput;
  EXPECT_NE(refusal(*newestFile, D::directory(step6, "OUT_DIR")).find("would overwrite, hold or lie in"),
            std::string::npos);
  EXPECT_NE(refusal(*newestFile, D::directory(run / "checkpoints" / "step-0000004", "OUT_DIR")), "")
      << "another step of the same run";
  EXPECT_NE(refusal(*newestFile, D::file(run / "report.json", "--json")), "") << "inside the run";
  EXPECT_NE(refusal(*newestFile, D::directory(dir, "OUT_DIR")), "") << "a directory holding the input";
  // Through a symbolic link and "..", it is still the same place.
  fs::create_directory_symlink(run, dir / "link");
  EXPECT_NE(refusal(*newestFile, D::file(dir / "link" / ".." / "run" / "x.json", "--json")), "");
  EXPECT_NE(refusal(*newestFile, D::file(dir / "link" / "y.json", "--json")), "");
  // A Hugging Face folder opened by its weights file: the folder (config.json, tokenizer) is the model.
  testing::writeHfFixture(dir / "hf", testing::defaultSpec(Family::Llama));
  const auto hf = Checkpoint::open(dir / "hf" / "model.safetensors");
  EXPECT_NE(refusal(*hf, D::directory(dir / "hf", "OUT_DIR")), "");
  EXPECT_NE(refusal(*hf, D::file(dir / "hf" / "f32.safetensors", "OUT")), "") << "read as a second shard";
  EXPECT_NE(refusal(*hf, D::file(dir / "hf" / "config.json", "--json")), "") << "read as the model's config";
  EXPECT_NE(refusal(*hf, D::file(dir / "hf" / "tokenizer.json", "--json")), "");
  EXPECT_EQ(refusal(*hf, D::file(dir / "hf" / "report.json", "--json")), "") << "a report beside the model";
  // Beside them is fine.
  fs::create_directories(dir / "elsewhere");
  EXPECT_EQ(refusal(*newestFile, D::directory(dir / "elsewhere" / "export", "OUT_DIR")), "");
  EXPECT_EQ(refusal(*hf, D::file(dir / "elsewhere" / "report.json", "--json")), "");
  // A lone safetensors file (no config.json beside it) is only itself.
  fs::copy_file(dir / "hf" / "model.safetensors", dir / "elsewhere" / "lone.safetensors");
  const auto lone = Checkpoint::open(dir / "elsewhere" / "lone.safetensors");
  EXPECT_EQ(refusal(*lone, D::file(dir / "elsewhere" / "other.safetensors", "OUT")), "");
  EXPECT_NE(refusal(*lone, D::file(dir / "elsewhere" / "lone.safetensors", "OUT")), "");
  // A Hugging Face cache: snapshots/X/config.json links into blobs/. The write follows the link (it would
  // overwrite the blob the model reads), so the link is refused where it is, not passed where it leads.
  fs::create_directories(dir / "cache" / "blobs");
  fs::create_directories(dir / "cache" / "snapshots");
  fs::copy(dir / "hf", dir / "cache" / "snapshots" / "x", fs::copy_options::recursive);
  fs::rename(dir / "cache" / "snapshots" / "x" / "config.json", dir / "cache" / "blobs" / "abc");
  fs::create_symlink("../../blobs/abc", dir / "cache" / "snapshots" / "x" / "config.json");
  const auto cached = Checkpoint::open(dir / "cache" / "snapshots" / "x");
  EXPECT_NE(refusal(*cached, D::file(dir / "cache" / "snapshots" / "x" / "config.json", "--json")), "")
      << "the snapshot's config.json, a link to its blob";
  fs::remove_all(dir);
}

// Outputs that could only fail after the work (a directory named as a file, a missing folder, a non-empty
// output directory, one path given twice, an empty path) are refused before it, each by name.
TEST(OutputGuard, OutputsThatCannotBeWrittenAreRefusedBeforeTheWork) {
  const fs::path dir = testing::makeTempDir("guard-writable");
  testing::writeHfFixture(dir / "m", testing::defaultSpec(Family::Llama));
  const auto m = Checkpoint::open(dir / "m");
  fs::create_directories(dir / "full");
  std::ofstream(dir / "full" / "x") << "x";
  using D = DeclaredOutput;
  const std::pair<D, std::string> cases[] = {
      {D::file(dir / "full", "--json"), "the output file is a directory"},
      {D::file(dir / "missing" / "r.json", "--json"), "the output file's directory does not exist"},
      {D::directory(dir / "full", "--out"), "already exists and is not empty"},
      {D::directory(dir / "full" / "x", "--out"), "the output directory is a file"},
      {D::directory("", "OUT_DIR"), "an empty output path"},
  };
  for (const auto& [out, message] : cases) {
    const std::string error = refusal(*m, out);
    EXPECT_NE(error.find(message), std::string::npos) << out.path << ": " << error;
    EXPECT_NE(error.find("test: " + out.role), std::string::npos) << "names the option: " << error;
  }
  const std::string twice = refusal([&] {
    checkOutputs("test", *m, std::array{D::file(dir / "a.json", "--json"), D::file(dir / "a.json", "--md")});
  });
  EXPECT_NE(twice.find("two outputs are the same path"), std::string::npos) << twice;
  EXPECT_EQ(refusal(*m, D::directory(dir / "full", "--out", /*resumable=*/true)), "")
      << "a job's own earlier output may be continued";
  // /dev/null is written where it is: its directory's permission does not count, and twice is no clash.
  EXPECT_EQ(
      refusal([&] {
        checkOutputs("test", *m, std::array{D::file("/dev/null", "--json"), D::file("/dev/null", "--md")});
      }),
      "");
  fs::remove_all(dir);
}

// A process that has exited: its pid names no process until the kernel hands it out again.
pid_t deadPid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

// A killed writer's staging directory and temporary file are removed by the next writer of the same target
// (they were never cleaned, 83 MB each); a live writer's are left alone.
TEST(AtomicFile, TheNextWriterRemovesWhatAKilledWriterOfTheSameTargetLeft) {
  const fs::path dir = testing::makeTempDir("stale");
  const std::string dead = std::to_string(deadPid()), live = std::to_string(::getppid());
  for (const std::string& pid : {dead, live}) {
    fs::create_directories(dir / (".out.tmp-" + pid + "-0"));
    std::ofstream(dir / (".out.tmp-" + pid + "-0") / "model.safetensors") << "partial";
    std::ofstream(dir / ("r.json.tmp." + pid + ".3")) << "partial";
  }
  std::ofstream(dir / ("other.json.tmp." + dead + ".0")) << "another target's";
  {
    StagedDirectory out(dir / "out");
    writeFileAtomically(out.path() / "x.json", "{}");
    out.commit();
  }
  writeFileAtomically(dir / "r.json", "{}");
  EXPECT_FALSE(fs::exists(dir / (".out.tmp-" + dead + "-0")));
  EXPECT_FALSE(fs::exists(dir / ("r.json.tmp." + dead + ".3")));
  EXPECT_TRUE(fs::exists(dir / (".out.tmp-" + live + "-0"))) << "a live writer's staging is its own";
  EXPECT_TRUE(fs::exists(dir / ("r.json.tmp." + live + ".3")));
  EXPECT_TRUE(fs::exists(dir / ("other.json.tmp." + dead + ".0"))) << "another target's temporaries stay";
  EXPECT_EQ(readTextFile(dir / "out" / "x.json"), "{}");
  fs::remove_all(dir);
}

// `--json /dev/null` as root renamed a file over /dev/null: the machine's null device became a plain file
// (found when a later read of /dev/null returned a shell's error messages). A FIFO stands in for the device
// here (mkfifo needs no root): it is written into and stays a FIFO; a symbolic link stays a link and the file
// it names gets the content.
TEST(AtomicFile, ADeviceOrPipeIsWrittenIntoAndALinkIsFollowedNeitherIsReplaced) {
  const fs::path dir = testing::makeTempDir("special");
  const fs::path fifo = dir / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // The read end is opened first, non-blocking, so the writer's open succeeds and nothing can hang: a writer
  // that renames instead leaves the FIFO unwritten, and the read finds no data.
  const int readEnd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(readEnd, 0);
  writeFileAtomically(fifo, "{\"a\": 1}");
  std::string received(64, '\0');
  const ssize_t got = ::read(readEnd, received.data(), received.size());
  ::close(readEnd);
  received.resize(got > 0 ? static_cast<size_t>(got) : 0);
  EXPECT_TRUE(fs::is_fifo(fs::symlink_status(fifo))) << "the FIFO was replaced by a plain file";
  EXPECT_EQ(received, "{\"a\": 1}");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1) << "no temporary left";

  fs::create_directories(dir / "real");
  writeFileAtomically(dir / "real" / "r.json", "old");
  fs::create_symlink(dir / "real" / "r.json", dir / "link.json");
  writeFileAtomically(dir / "link.json", "new");
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(dir / "link.json"))) << "the link was replaced";
  EXPECT_EQ(readTextFile(dir / "real" / "r.json"), "new");
  // A relative link whose file does not exist yet: the file is created where it points, the link kept.
  fs::create_symlink("real/later.json", dir / "dangling.json");
  writeFileAtomically(dir / "dangling.json", "made");
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(dir / "dangling.json")));
  EXPECT_EQ(readTextFile(dir / "real" / "later.json"), "made");
  // A FIFO nobody reads is a named error at once, never a wait; a directory is named as one.
  EXPECT_NE(refusal([&] { writeFileAtomically(fifo, "x"); }).find("nothing reads the pipe"),
            std::string::npos);
  EXPECT_NE(refusal([&] { writeFileAtomically(dir / "real", "x"); }).find("the output file is a directory"),
            std::string::npos);
  fs::remove_all(dir);
}

// A resumable staging directory (a compression sweep's) has a stable name, is kept when its writer goes
// without committing, is found again by the next writer of the same target, is locked while written, and
// leaves nothing once committed or discarded; a disposable writer of the same target leaves it alone.
TEST(StagedDirectory, AResumableOneOutlivesItsWriterAndIsFoundAgain) {
  const fs::path dir = testing::makeTempDir("resumable");
  const fs::path partial = dir / ".out.partial";
  {
    StagedDirectory first(dir / "out", StagedDirectory::Kind::Resumable);
    EXPECT_EQ(first.path(), partial);
    EXPECT_FALSE(first.resumed());
    writeFileAtomically(first.path() / "point-1.json", "{}");
    const std::string error =
        refusal([&] { StagedDirectory beside(dir / "out", StagedDirectory::Kind::Resumable); });
    EXPECT_NE(error.find("another process is writing this unfinished output"), std::string::npos) << error;
  }  // gone without commit(), as a failed or killed sweep goes
  EXPECT_TRUE(fs::exists(partial / "point-1.json"));
  EXPECT_FALSE(fs::exists(dir / "out"));
  {
    StagedDirectory disposable(dir / "out");  // removes killed writers' .out.tmp-*, never .out.partial
  }
  {
    StagedDirectory again(dir / "out", StagedDirectory::Kind::Resumable);
    EXPECT_TRUE(again.resumed());
    EXPECT_EQ(readTextFile(again.path() / "point-1.json"), "{}");
    again.commit();
  }
  EXPECT_FALSE(fs::exists(partial));
  EXPECT_EQ(readTextFile(dir / "out" / "point-1.json"), "{}");
  {
    StagedDirectory other(dir / "other", StagedDirectory::Kind::Resumable);
    writeFileAtomically(other.path() / "settings.json", "{}");
    other.discard();
  }
  EXPECT_FALSE(fs::exists(dir / ".other.partial"));
  EXPECT_FALSE(fs::exists(dir / "other"));
  fs::remove_all(dir);
}

// One writer per directory, and the lock dies with its holder: a second writer is refused while the first
// lives (in another process, as a --resume beside a live run is), and gets it once the first is SIGKILLed.
TEST(DirectoryLock, ASecondWriterIsRefusedUntilTheFirstDiesHoweverItDies) {
  const fs::path dir = testing::makeTempDir("lock");
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t holder = ::fork();
  if (holder == 0) {
    const DirectoryLock lock(dir, "training run");
    (void)!::write(ready[1], "x", 1);
    ::pause();
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  const std::string error = refusal([&] { DirectoryLock second(dir, "training run"); });
  EXPECT_NE(error.find("another process is writing this training run"), std::string::npos) << error;
  EXPECT_NE(error.find(dir.string()), std::string::npos) << error;
  // Told apart without taking the lock (the Training view's "interrupted": a run no process writes).
  EXPECT_EQ(directoryHasWriter(dir), true) << "the live holder is seen in /proc/locks";
  EXPECT_EQ(directoryHasWriter(dir.parent_path()), false) << "another directory has no writer";
  ::kill(holder, SIGKILL);
  ::waitpid(holder, nullptr, 0);
  EXPECT_EQ(directoryHasWriter(dir), false) << "the killed holder's lock is gone";
  EXPECT_EQ(directoryHasWriter(dir / "missing"), std::nullopt);
  EXPECT_EQ(refusal([&] { DirectoryLock after(dir, "training run"); }), "");
  {
    const DirectoryLock mine(dir, "run");  // within one process too: each lock is its own writer
    EXPECT_NE(refusal([&] { DirectoryLock again(dir, "run"); }), "");
    EXPECT_EQ(directoryHasWriter(dir), true);
  }
  EXPECT_EQ(refusal([&] { DirectoryLock released(dir, "run"); }), "") << "released when it goes";
  ::close(ready[0]);
  ::close(ready[1]);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sharelens
