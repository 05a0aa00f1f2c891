// TensorBoard event files: TFRecord files (io/record_io.h, masked CRC-32C framing) of serialized
// `Event` protos (proto/event.proto), named
//
//   <logdir>/events.out.tfevents.<10-digit seconds since the epoch>.<hostname>.<pid>.<n><suffix>
//
// whose first record is an Event with file_version "brain.Event:2", as TensorFlow writes them.
// Internal to the core; tf.summary.FileWriter uses EventFileWriter through the bindings
// (python/src/summary.cc).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "flowstone/status.h"
#include "io/record_io.h"

namespace flowstone::io {

// Writes events to one new file, synchronously. Not thread-safe.
class EventsWriter {
 public:
  // Creates the file in `logdir` (which must exist) and writes the file_version event.
  static Status Open(const std::string& logdir, const std::string& suffix,
                     std::unique_ptr<EventsWriter>* out);
  const std::string& path() const { return path_; }
  Status Write(const std::string& serialized_event);
  Status Flush();
  Status Close();

 private:
  EventsWriter(std::string path, std::unique_ptr<RecordWriter> writer)
      : path_(std::move(path)), writer_(std::move(writer)) {}
  std::string path_;
  std::unique_ptr<RecordWriter> writer_;
};

// An EventsWriter fed through a queue: Add returns at once (blocking only while `max_queue`
// events wait) and a background thread writes the events and flushes the file every
// `flush_secs` seconds, without Python's GIL. The first write error is kept and returned by
// later calls. Thread-safe.
class EventFileWriter {
 public:
  static Status Open(const std::string& logdir, int max_queue, double flush_secs,
                     const std::string& suffix, std::unique_ptr<EventFileWriter>* out);
  ~EventFileWriter();
  const std::string& path() const { return writer_->path(); }
  // Queues one serialized Event. FailedPrecondition after Close.
  Status Add(std::string serialized_event);
  // Writes every event queued so far and flushes the file.
  Status Flush();
  // Flush, then stops the thread and closes the file; a second Close does nothing.
  Status Close();

 private:
  EventFileWriter(std::unique_ptr<EventsWriter> writer, int max_queue, double flush_secs);
  void Run();
  // Waits until the thread has written every queued event, then flushes the file.
  Status WriteQueued();

  std::unique_ptr<EventsWriter> writer_;
  const size_t max_queue_;
  const std::chrono::duration<double> flush_interval_;

  mutable std::mutex mu_;
  std::condition_variable work_;   // events queued, or stopping
  std::condition_variable space_;  // the queue shrank
  std::condition_variable idle_;   // the thread wrote everything it took
  std::deque<std::string> queue_;
  bool writing_ = false;
  bool closed_ = false;    // Close has begun: Add fails
  bool stopping_ = false;  // the thread ends once the queue is empty
  Status error_;

  std::mutex file_mu_;  // serializes writes and flushes of writer_
  std::thread thread_;
};

}  // namespace flowstone::io
