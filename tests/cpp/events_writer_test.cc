#include "io/events_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "proto/event.pb.h"

namespace flowstone::io {
namespace {

std::string TempDir() {
  std::string pattern = ::testing::TempDir() + "/events_writer_XXXXXX";
  EXPECT_NE(mkdtemp(pattern.data()), nullptr);
  return pattern;
}

std::vector<proto::Event> ReadEvents(const std::string& path) {
  std::unique_ptr<RecordReader> reader;
  EXPECT_TRUE(RecordReader::Open(path, Compression::kNone, &reader).ok());
  std::vector<proto::Event> events;
  std::string record;
  bool end = false;
  while (reader->Next(&record, &end).ok() && !end) {
    events.emplace_back();
    EXPECT_TRUE(events.back().ParseFromString(record));
  }
  return events;
}

std::string StepEvent(int64_t step) {
  proto::Event event;
  event.set_step(step);
  return event.SerializeAsString();
}

TEST(EventFileWriterTest, WritesTheVersionRecordThenEveryEventInOrder) {
  std::unique_ptr<EventFileWriter> writer;
  ASSERT_TRUE(EventFileWriter::Open(TempDir(), 3, 120, ".x", &writer).ok());
  const std::string path = writer->path();
  EXPECT_NE(path.find("/events.out.tfevents."), std::string::npos);
  EXPECT_EQ(path.substr(path.size() - 2), ".x");
  // Before anything is flushed, the file already holds the version record.
  std::vector<proto::Event> events = ReadEvents(path);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  EXPECT_GT(events[0].wall_time(), 0);

  // Three threads fill a queue of three: each one's events stay in its own order.
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&writer, t] {
      for (int i = 0; i < 100; ++i) EXPECT_TRUE(writer->Add(StepEvent(t * 1000 + i)).ok());
    });
  }
  for (std::thread& thread : threads) thread.join();
  ASSERT_TRUE(writer->Flush().ok());
  events = ReadEvents(path);
  ASSERT_EQ(events.size(), 301u);
  std::vector<int64_t> next = {0, 1000, 2000};
  for (size_t i = 1; i < events.size(); ++i) {
    int64_t& expected = next[events[i].step() / 1000];
    EXPECT_EQ(events[i].step(), expected);
    ++expected;
  }
  ASSERT_TRUE(writer->Close().ok());
  EXPECT_TRUE(writer->Close().ok());
  EXPECT_EQ(writer->Add(StepEvent(1)).code(), Code::kFailedPrecondition);
}

TEST(EventFileWriterTest, RejectsBadSettingsAndMissingDirectories) {
  std::unique_ptr<EventFileWriter> writer;
  EXPECT_EQ(EventFileWriter::Open(TempDir(), 0, 1, "", &writer).code(), Code::kInvalidArgument);
  EXPECT_EQ(EventFileWriter::Open(TempDir(), 1, 0, "", &writer).code(), Code::kInvalidArgument);
  Status missing = EventFileWriter::Open(TempDir() + "/no/such/dir", 1, 1, "", &writer);
  EXPECT_EQ(missing.code(), Code::kNotFound) << missing.ToString();
}

}  // namespace
}  // namespace flowstone::io
