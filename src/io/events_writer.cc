#include "io/events_writer.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <ctime>

#include "proto/event.pb.h"

namespace flowstone::io {
namespace {

std::string Hostname() {
  char name[256] = {0};
  if (gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

double WallTime() {
  using namespace std::chrono;
  return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count() / 1e6;
}

}  // namespace

Status EventsWriter::Open(const std::string& logdir, const std::string& suffix,
                          std::unique_ptr<EventsWriter>* out) {
  const double now = WallTime();
  char stamp[32];
  std::snprintf(stamp, sizeof(stamp), "%010" PRId64, static_cast<int64_t>(now));
  std::string dir = logdir;
  if (!dir.empty() && dir.back() != '/') dir += '/';
  // TensorFlow's name: seconds, host, process id and a per-process count, so that two writers
  // opened in one second (a writer closed and reopened) never write the same file.
  static std::atomic<int64_t> files_opened{0};
  const std::string path = dir + "events.out.tfevents." + stamp + "." + Hostname() + "." +
                           std::to_string(getpid()) + "." + std::to_string(files_opened++) + suffix;
  std::unique_ptr<RecordWriter> writer;
  FS_RETURN_IF_ERROR(RecordWriter::Open(path, Compression::kNone, &writer));
  out->reset(new EventsWriter(path, std::move(writer)));
  proto::Event version;
  version.set_wall_time(now);
  version.set_file_version("brain.Event:2");
  FS_RETURN_IF_ERROR((*out)->Write(version.SerializeAsString()));
  // TensorBoard finds the file by its first record, so it is on disk before Open returns.
  return (*out)->Flush();
}

Status EventsWriter::Write(const std::string& serialized_event) {
  return writer_->Write(serialized_event);
}

Status EventsWriter::Flush() { return writer_->Flush(); }

Status EventsWriter::Close() { return writer_->Close(); }

Status EventFileWriter::Open(const std::string& logdir, int max_queue, double flush_secs,
                             const std::string& suffix, std::unique_ptr<EventFileWriter>* out) {
  if (max_queue < 1) {
    return errors::InvalidArgument("max_queue must be at least 1, got ", max_queue);
  }
  if (!(flush_secs > 0)) {
    return errors::InvalidArgument("flush_secs must be positive, got ", flush_secs);
  }
  std::unique_ptr<EventsWriter> writer;
  FS_RETURN_IF_ERROR(EventsWriter::Open(logdir, suffix, &writer));
  out->reset(new EventFileWriter(std::move(writer), max_queue, flush_secs));
  return Status::OK();
}

EventFileWriter::EventFileWriter(std::unique_ptr<EventsWriter> writer, int max_queue,
                                 double flush_secs)
    : writer_(std::move(writer)),
      max_queue_(static_cast<size_t>(max_queue)),
      flush_interval_(flush_secs),
      thread_([this] { Run(); }) {}

EventFileWriter::~EventFileWriter() { Close(); }

Status EventFileWriter::Add(std::string serialized_event) {
  std::unique_lock<std::mutex> lock(mu_);
  space_.wait(lock, [this] { return queue_.size() < max_queue_ || closed_; });
  if (closed_) {
    return errors::FailedPrecondition("the event file ", writer_->path(), " is closed");
  }
  queue_.push_back(std::move(serialized_event));
  work_.notify_one();
  return error_;
}

void EventFileWriter::Run() {
  auto next_flush = std::chrono::steady_clock::now() + flush_interval_;
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    work_.wait_until(lock, next_flush, [this] { return !queue_.empty() || stopping_; });
    if (queue_.empty() && stopping_) break;
    std::deque<std::string> batch;
    batch.swap(queue_);
    writing_ = true;
    space_.notify_all();
    lock.unlock();
    Status status;
    {
      std::lock_guard<std::mutex> file_lock(file_mu_);
      for (const std::string& event : batch) {
        if (status.ok()) status = writer_->Write(event);
      }
      if (status.ok() && std::chrono::steady_clock::now() >= next_flush) {
        status = writer_->Flush();
        next_flush = std::chrono::steady_clock::now() + flush_interval_;
      }
    }
    lock.lock();
    if (error_.ok()) error_ = status;
    writing_ = false;
    idle_.notify_all();
  }
}

Status EventFileWriter::WriteQueued() {
  {
    std::unique_lock<std::mutex> lock(mu_);
    idle_.wait(lock, [this] { return queue_.empty() && !writing_; });
  }
  Status status;
  {
    std::lock_guard<std::mutex> file_lock(file_mu_);
    status = writer_->Flush();
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (error_.ok()) error_ = status;
  return error_;
}

Status EventFileWriter::Flush() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return error_;
  }
  return WriteQueued();
}

Status EventFileWriter::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return error_;
    closed_ = true;
  }
  space_.notify_all();
  Status flushed = WriteQueued();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_.notify_all();
  space_.notify_all();
  thread_.join();
  Status status = writer_->Close();
  return flushed.ok() ? status : flushed;
}

}  // namespace flowstone::io
