// metrics.jsonl as its readers meet it: lines written by another version, by hand, or torn by a kill.
// The regression input is the one libFuzzer found (an "event" that is a number, not a string).
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/error.hpp"
#include "core/experiment_archive.hpp"
#include "core/metrics_csv.hpp"
#include "core/run_dir.hpp"

namespace fs = std::filesystem;
using namespace sharelens;

namespace {

fs::path writeLog(const std::string& name, const std::string& text) {
  const fs::path dir =
      fs::temp_directory_path() / ("sharelens_metrics_" + name + "_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "metrics.jsonl", std::ios::binary) << text;
  return dir / "metrics.jsonl";
}

std::string readAll(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST(MetricsLog, EventsWhoseNameIsNotAStringAreCountedNotKept) {
  const fs::path file = writeLog("events",
                                 "{\"step\":1,\"loss\":5.0}\n"
                                 "{\"event\":7}\n"
                                 "{\"event\":[\"finish\"]}\n"
                                 "{\"event\":\"stop\",\"step\":1}\n");
  MetricsReader reader(file);
  EXPECT_EQ(reader.poll(), 4u);
  ASSERT_EQ(reader.events().size(), 1u);
  EXPECT_EQ(reader.events()[0]["event"], "stop");
  EXPECT_EQ(reader.malformedLines(), 2u);
  ASSERT_EQ(reader.points().size(), 1u);
  EXPECT_DOUBLE_EQ(reader.points()[0].loss, 5.0);
}

// The results archive keeps a finished run's validation points and its last point
// (core/experiment_archive.hpp): the report's curve, tokens and training time read the same from it as from
// the whole log.
TEST(MetricsLog, TheArchivedLogKeepsValidationPointsAndTheLastPointOnly) {
  const std::string val10 = R"({"step":10,"tokens":640,"elapsed":1.5,"loss":5.1,"val_loss":5.3})";
  const std::string last = R"({"step":12,"tokens":768,"elapsed":1.9,"loss":4.9,"val_loss":null})";
  const std::string text = R"({"step":9,"tokens":576,"elapsed":1.2,"loss":5.2,"val_loss":null})"
                           "\n" +
                           val10 + "\n" + R"({"event":"checkpoint","step":10})" + "\n" + "not json\n" + last +
                           "\n" + R"({"step":13,"tokens":832,"elapsed":2.0,"lo)";  // torn by a kill
  EXPECT_EQ(thinnedMetrics(text), val10 + "\n" + last + "\n");
  EXPECT_EQ(thinnedMetrics(val10 + "\n"), val10 + "\n") << "a last point that validated is kept once";
  EXPECT_EQ(thinnedMetrics(""), "");

  const fs::path whole = writeLog("thinned_whole", text),
                 thin = writeLog("thinned_thin", thinnedMetrics(text));
  MetricsReader a(whole), b(thin);
  a.poll();
  b.poll();
  ASSERT_EQ(b.points().size(), 2u);
  EXPECT_EQ(b.points().back().tokens, a.points().back().tokens);
  EXPECT_EQ(b.points().back().elapsed, a.points().back().elapsed);
  EXPECT_EQ(b.points().front().valLoss, 5.3);
  fs::remove_all(whole.parent_path());
  fs::remove_all(thin.parent_path());
}

TEST(MetricsLog, TrimmingForAResumeDropsLaterStepsAndTheFinishOnly) {
  const fs::path file = writeLog("trim",
                                 "{\"step\":1,\"loss\":5.0}\n"
                                 "{\"event\":3}\n"
                                 "{\"step\":2,\"loss\":4.0}\n"
                                 "{\"step\":3,\"loss\":3.0}\n"
                                 "{\"event\":\"finish\"}\n"
                                 "{\"step\":4,\"lo");  // torn by the kill
  EXPECT_EQ(trimMetricsFile(file, 2), 3);              // step 3, the finish, the torn line
  EXPECT_EQ(readAll(file), "{\"step\":1,\"loss\":5.0}\n{\"event\":3}\n{\"step\":2,\"loss\":4.0}\n");
  MetricsReader reader(file);
  reader.poll();
  ASSERT_EQ(reader.points().size(), 2u);
  EXPECT_EQ(reader.points().back().step, 2);
}

// A full disk shows when the line is flushed, not when the file opens: /dev/full is such a disk.
TEST(MetricsLog, AnAppendToAFullDiskIsANamedError) {
  ASSERT_TRUE(fs::exists("/dev/full"));
  try {
    appendJsonLine("/dev/full", Json{{"step", 1}, {"loss", 5.0}});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/dev/full"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("No space left on device"), std::string::npos) << e.what();
  }
}

// A disk that takes only part of a line (here a file-size limit, which writes up to the limit and then fails
// with EFBIG, as a filling disk does with ENOSPC): the part is cut back off, so the next line starts clean.
TEST(MetricsLog, AnAppendTheDiskTakesOnlyPartOfLeavesTheFileAsItWas) {
  const std::string before = "{\"step\":1,\"loss\":5.0}\n";
  const fs::path file = writeLog("partial", before);
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  const auto oldHandler = std::signal(SIGXFSZ, SIG_IGN);  // else the write past the limit kills us
  rlimit limited = saved;
  limited.rlim_cur = before.size() + 10;  // room for 10 bytes of the next line
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limited), 0);
  std::string message;
  try {
    appendJsonLine(file, Json{{"step", 2}, {"loss", 4.5}, {"lr", 0.001}});
  } catch (const Error& e) {
    message = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, oldHandler);
  EXPECT_NE(message.find(file.string()), std::string::npos) << "no error naming the file: " << message;
  EXPECT_EQ(readAll(file), before) << "a fragment of step 2's line was left behind";
  appendJsonLine(file, Json{{"step", 2}, {"loss", 4.5}});
  MetricsReader reader(file);
  reader.poll();
  ASSERT_EQ(reader.points().size(), 2u);
  EXPECT_EQ(reader.malformedLines(), 0u);
  EXPECT_EQ(reader.points()[1].loss, 4.5);
  fs::remove_all(file.parent_path());
}

TEST(MetricsLog, NothingToTrimLeavesTheFileAlone) {
  const std::string text = "{\"step\":1,\"loss\":5.0}\n";
  const fs::path file = writeLog("untouched", text);
  const auto before = fs::last_write_time(file);
  EXPECT_EQ(trimMetricsFile(file, 10), 0);
  EXPECT_EQ(readAll(file), text);
  EXPECT_EQ(fs::last_write_time(file), before);
}

TEST(MetricsLog, ALineWithANulByteIsMalformedNotReadUpToTheNul) {
  // nlohmann's parser stops at a NUL as if the input ended, so '{"step":2,...}\0junk' would pass as a record.
  const fs::path file =
      writeLog("nul", std::string("{\"step\":1,\"loss\":5.0}\n{\"step\":2,\"loss\":4.0}\0junk\n", 49));
  MetricsReader reader(file);
  EXPECT_EQ(reader.poll(), 2u);
  EXPECT_EQ(reader.malformedLines(), 1u);
  ASSERT_EQ(reader.points().size(), 1u);
  EXPECT_EQ(reader.points()[0].step, 1);
}

TEST(MetricsLog, CsvHasOneRowPerLoggedStepAndLeavesUnloggedValuesEmpty) {
  const fs::path file = writeLog("csv",
                                 "{\"step\":1,\"tokens\":256,\"elapsed\":0.5,\"loss\":5.25,\"lr\":0.001}\n"
                                 "{\"step\":2,\"tokens\":512,\"elapsed\":1.0,\"loss\":4.75,\"val_loss\":4.9,"
                                 "\"lr\":0.0005,\"grad_norm\":1.5,\"tokens_per_s\":512,"
                                 "\"tensor_peak_bytes\":1048576,\"rss_peak_bytes\":12345678901}\n");
  MetricsReader reader(file);
  reader.poll();
  const std::string csv = metricsCsv({{"cycle, L=4", &reader.points()}});
  EXPECT_EQ(csv,
            "run,step,tokens,elapsed_s,loss,val_loss,lr,grad_norm,tokens_per_s,postshare_penalty,"
            "tensor_peak_bytes,rss_peak_bytes\n"
            "\"cycle, L=4\",1,256,0.5,5.25,,0.001,,,,,\n"
            "\"cycle, L=4\",2,512,1,4.75,4.9,0.0005,1.5,512,,1048576,12345678901\n");
}

// With the seeds grouped, the CSV holds each group's mean over its seeds and the 95% Student-t interval of
// that mean, per step every seed logged: two seeds 5.0 and 5.5 give 5.25 +- t(0.975, 1) x 0.25, t = 12.7062
// from the table; validation only where every seed has it; a group of one run has no interval.
TEST(MetricsLog, SeedGroupCsvHasTheMeanAndIntervalOfEachStepEverySeedLogged) {
  const std::vector<MetricPoint> a = {{1, 100, 5.0, 4.0}, {2, 200, 4.0, NAN}, {3, 300, 3.0, 2.5}},
                                 b = {{1, 100, 5.5, 4.5}, {2, 200, 4.5, 4.2}}, alone = {{1, 100, 6.0, NAN}},
                                 nothing;
  const std::string csv = seedGroupsCsv(
      {{"cycle", {{"s1", &a}, {"s2", &b}, {"s3", &nothing}}}, {"baseline", {{"baseline", &alone}}}});
  std::vector<std::vector<std::string>> rows;
  std::stringstream in(csv);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> fields;
    std::stringstream cells(line);
    for (std::string f; std::getline(cells, f, ',');) fields.push_back(f);
    if (!line.empty() && line.back() == ',') fields.emplace_back();
    rows.push_back(fields);
  }
  ASSERT_EQ(rows.size(), 4u) << csv;  // header, cycle at steps 1 and 2 (step 3: one seed), baseline step 1
  EXPECT_EQ(rows[0].size(), 10u);
  const double half = 12.706204736 * 0.25;
  EXPECT_EQ(rows[1][0], "cycle");
  EXPECT_EQ(rows[1][1], "2") << "the run that logged nothing is not a seed of the curve";
  EXPECT_EQ(rows[1][2], "1");
  EXPECT_NEAR(std::stod(rows[1][4]), 5.25, 1e-9);
  EXPECT_NEAR(std::stod(rows[1][5]), 5.25 - half, 1e-6);
  EXPECT_NEAR(std::stod(rows[1][6]), 5.25 + half, 1e-6);
  EXPECT_NEAR(std::stod(rows[1][7]), 4.25, 1e-9);
  EXPECT_EQ(rows[2][2], "2");
  EXPECT_EQ(rows[2][7], "") << "one seed has no validation at step 2";
  EXPECT_EQ(rows[3][0], "baseline");
  EXPECT_NEAR(std::stod(rows[3][4]), 6.0, 1e-12);
  EXPECT_EQ(rows[3][5], "") << "one run: no interval";
}

// The Training view keeps its figures until a run's revision changes (app/gui/views/training_panels.hpp):
// a poll that reads nothing keeps it, one that reads a point or a re-logged step changes it, and a resumed
// run's re-logged step still wins over the first one (appends in step order skip the re-sort).
TEST(MetricsLog, TheRevisionChangesExactlyWhenThePointsDo) {
  const fs::path file = writeLog("revision", "{\"step\":1,\"loss\":5.0}\n{\"step\":2,\"loss\":4.0}\n");
  MetricsReader reader(file), other(file);
  EXPECT_EQ(reader.revision(), 0u) << "nothing read yet";
  reader.poll();
  other.poll();
  const uint64_t first = reader.revision();
  EXPECT_NE(first, 0u);
  EXPECT_NE(other.revision(), first) << "no two readers share a revision";
  reader.poll();
  EXPECT_EQ(reader.revision(), first) << "nothing new: the same revision";
  std::ofstream(file, std::ios::app) << "{\"event\":\"stop\",\"step\":2}\n";
  reader.poll();
  EXPECT_EQ(reader.revision(), first) << "an event is not a point";
  std::ofstream(file, std::ios::app) << "{\"step\":3,\"loss\":3.0}\n";
  reader.poll();
  const uint64_t second = reader.revision();
  EXPECT_NE(second, first);
  std::ofstream(file, std::ios::app) << "{\"step\":2,\"loss\":3.5}\n{\"step\":4,\"loss\":2.5}\n";
  reader.poll();
  EXPECT_NE(reader.revision(), second) << "a re-logged step changes the points";
  ASSERT_EQ(reader.points().size(), 4u);
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(reader.points()[static_cast<size_t>(i)].step, i + 1);
  EXPECT_DOUBLE_EQ(reader.points()[1].loss, 3.5) << "the later line of step 2 wins";
  const uint64_t third = reader.revision();
  std::ofstream(file, std::ios::binary | std::ios::trunc) << "{\"step\":1,\"loss\":9.0}\n";
  reader.poll();
  EXPECT_NE(reader.revision(), third) << "a replaced file is read again";
  ASSERT_EQ(reader.points().size(), 1u);
  EXPECT_DOUBLE_EQ(reader.points()[0].loss, 9.0);
}
