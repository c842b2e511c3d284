// The vocabulary stream/kafka/ gives the code above it (stream/kafka/kafka.h):
// partition lists, error codes and outgoing headers, without a broker.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "stream/kafka/kafka.h"

namespace neardup::stream::kafka {
namespace {

TEST(TopicPartitions, ListsWhatWasAddedInOrder) {
  TopicPartitions list(1);  // (grows past its capacity)
  list.add("input", 1, 42);
  list.add("input", 0);
  list.add("other", 3, kOffsetBeginning);
  ASSERT_EQ(list.size(), 3u);
  std::vector<std::string> seen;
  for (const TopicPartition e : list)
    seen.push_back(std::string(e.topic) + "/" + std::to_string(e.partition) + "@" +
                   std::to_string(e.offset));
  EXPECT_EQ(seen, (std::vector<std::string>{"input/1@42", "input/0@-1001", "other/3@-2"}));
  EXPECT_EQ(list[0].error, errc::no_error);
}

TEST(TopicPartitions, AnEntryAddedWithoutAnOffsetHasNone) {
  TopicPartitions list;
  EXPECT_TRUE(list.empty());
  list.add("input", 0);
  EXPECT_EQ(list[0].offset, kOffsetInvalid);
}

TEST(TopicPartitions, FindsAnEntryByTopicAndPartition) {
  TopicPartitions list;
  list.add("input", 0, 7);
  list.add("input-2", 1, 8);
  ASSERT_TRUE(list.find("input-2", 1));
  EXPECT_EQ(list.find("input-2", 1)->offset, 8);
  EXPECT_FALSE(list.find("input", 1));
  EXPECT_FALSE(list.find("input-", 1));
  EXPECT_TRUE(list.has_topic("input"));
  EXPECT_FALSE(list.has_topic("inp"));
}

TEST(TopicPartitions, AMovedListKeepsItsEntries) {
  TopicPartitions list;
  list.add("input", 2, 5);
  TopicPartitions moved = std::move(list);
  ASSERT_EQ(moved.size(), 1u);
  EXPECT_EQ(moved[0].topic, "input");
}

TEST(ErrorCode, NoErrorTestsFalseAndEveryOtherCodeTrue) {
  EXPECT_FALSE(errc::no_error);
  EXPECT_TRUE(errc::no_offset);
  EXPECT_TRUE(errc::unknown_topic_or_partition);
}

TEST(ErrorCode, IsNamedAndDescribedForAPerson) {
  EXPECT_EQ(error_name(errc::timed_out), "_TIMED_OUT");
  EXPECT_EQ(error_name(errc::unknown_topic_or_partition), "UNKNOWN_TOPIC_OR_PART");
  EXPECT_NE(describe(errc::timed_out).find("Timed out"), std::string::npos);
  EXPECT_NE(describe(errc::message_too_large).find("too large"), std::string::npos)
      << describe(errc::message_too_large);
}

TEST(ErrorCode, PrintsItsName) {
  std::ostringstream out;
  out << errc::timed_out << " " << errc::no_error;
  EXPECT_EQ(out.str(), "_TIMED_OUT NO_ERROR");
}

TEST(ErrorCode, IsClassifiedOnce) {
  EXPECT_EQ(classify(errc::message_too_large), Severity::message);
  EXPECT_EQ(classify(errc::unknown_topic_or_partition), Severity::fatal);
  EXPECT_EQ(classify(errc::transport), Severity::retriable);
  EXPECT_EQ(classify(errc::transport, /*fatal_flag=*/true), Severity::fatal);
}

TEST(Headers, KeepEveryHeaderInOrderAndFindTheLastOfAName) {
  Headers headers;
  EXPECT_FALSE(headers.find("neardup-error"));
  headers.add("neardup-error", "first");
  headers.add("neardup-source", "input/0@7");
  headers.add("neardup-error", "second");
  ASSERT_TRUE(headers.find("neardup-error"));
  EXPECT_EQ(*headers.find("neardup-error"), "second");
  std::vector<std::string> seen;
  headers.for_each([&](std::string_view name, std::string_view value) {
    seen.push_back(std::string(name) + "=" + std::string(value));
  });
  EXPECT_EQ(seen, (std::vector<std::string>{"neardup-error=first", "neardup-source=input/0@7",
                                            "neardup-error=second"}));
}

TEST(Headers, AreEmptyUntilOneIsAdded) {
  Headers headers;
  EXPECT_TRUE(headers.empty());
  headers.add("neardup-verdict", "duplicate");
  EXPECT_FALSE(headers.empty());
  Headers moved = std::move(headers);
  EXPECT_FALSE(moved.empty());
}

}  // namespace
}  // namespace neardup::stream::kafka
