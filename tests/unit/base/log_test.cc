#include "base/log.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace neardup::base {
namespace {

using ::testing::HasSubstr;

const auto kTime = std::chrono::system_clock::time_point(
    std::chrono::milliseconds(1714564800123));  // 2024-05-01T12:00:00.123Z

TEST(Log, TextLineHasTimeLevelMessageAndQuotedFields) {
  const std::vector<LogField> fields{
      {"count", 8}, {"topic", "input"}, {"error", "broker down"}, {"empty", ""}};
  EXPECT_EQ(format_log_line(LogFormat::text, LogLevel::warn, kTime, "assigned\npartitions", fields),
            "2024-05-01T12:00:00.123Z warn assigned\\npartitions count=8 topic=input "
            "error=\"broker down\" empty=\"\"");
}

TEST(Log, JsonLineIsValidEvenForHostileText) {
  const std::vector<LogField> fields{
      {"count", 8}, {"ratio", 0.5}, {"ok", true}, {"bad", "a\"b\\c\x01\xff"}};
  const std::string line =
      format_log_line(LogFormat::json, LogLevel::error, kTime, "tab\there", fields);
  EXPECT_EQ(
      line,
      "{\"ts\":\"2024-05-01T12:00:00.123Z\",\"level\":\"error\",\"msg\":\"tab\\there\",\"count\":8,"
      "\"ratio\":0.5,\"ok\":true,\"bad\":\"a\\\"b\\\\c\\u0001\xEF\xBF\xBD\"}");
  if (std::system("command -v python3 >/dev/null 2>&1") == 0) {
    const auto file =
        std::filesystem::temp_directory_path() / ("neardup_log_" + std::to_string(::getpid()));
    std::ofstream(file) << line;
    const std::string command =
        "python3 -c 'import json,sys; json.load(open(sys.argv[1]))' " + file.string();
    EXPECT_EQ(std::system(command.c_str()), 0) << line;
    std::filesystem::remove(file);
  }
}

TEST(Log, NonFiniteNumbersBecomeStrings) {
  const std::vector<LogField> fields{{"x", std::nan("")}};
  EXPECT_THAT(format_log_line(LogFormat::json, LogLevel::info, kTime, "m", fields),
              HasSubstr("\"x\":\"NaN\""));
}

TEST(Log, LevelFilterAndSink) {
  std::FILE* sink = std::tmpfile();
  ASSERT_NE(sink, nullptr);
  configure_logging(LogFormat::json, LogLevel::warn, sink);
  EXPECT_FALSE(log_enabled(LogLevel::info));
  log(LogLevel::info, "hidden");
  log(LogLevel::error, "shown", {{"partition", 3}});
  configure_logging(LogFormat::text, LogLevel::info, stderr);
  std::rewind(sink);
  std::string written;
  for (int c; (c = std::fgetc(sink)) != EOF;) written += static_cast<char>(c);
  std::fclose(sink);
  EXPECT_THAT(written, ::testing::Not(HasSubstr("hidden")));
  EXPECT_THAT(written, HasSubstr("\"level\":\"error\",\"msg\":\"shown\",\"partition\":3}\n"));
}

}  // namespace
}  // namespace neardup::base
