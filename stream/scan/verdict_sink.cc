#include "stream/scan/verdict_sink.h"

#include <cerrno>
#include <charconv>
#include <cstring>

#include "base/json.h"
#include "stream/records/json_out.h"

namespace neardup::stream::scan {

namespace {

void append_number(std::string& out, std::uint64_t value) {
  char buffer[24];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, result.ptr);
}

}  // namespace

JsonlSink::JsonlSink(std::FILE* out) : out_(out) { buffer_.reserve(kFlushAt + 4096); }

JsonlSink::~JsonlSink() { flush(); }

void JsonlSink::write(std::uint64_t line, const std::string& id, const dedup::Verdict& verdict,
                      std::string_view error, const KeptIds& kept) {
  buffer_.append("{\"id\":");
  append_id(line, id);
  buffer_.append(",\"verdict\":\"");
  buffer_.append(dedup::to_string(verdict.kind));
  buffer_.push_back('"');
  if (verdict.kind == dedup::VerdictKind::duplicate) {
    buffer_.append(",\"of\":");
    const std::uint64_t of = verdict.match->of.value;
    append_id(of, kept.find(of));
    buffer_.append(",\"distance\":");
    append_number(buffer_, static_cast<std::uint64_t>(verdict.match->distance));
    if (verdict.similarity) {
      buffer_.append(",\"similarity\":");
      append_similarity(buffer_, *verdict.similarity);  // the sketch's estimate, "0.875"
    }
    buffer_.append(",\"count\":");
    append_number(buffer_, verdict.count);
  }
  if (verdict.kind == dedup::VerdictKind::invalid) {
    buffer_.append(",\"error\":");
    base::append_json_string(buffer_, error);
  } else {
    buffer_.append(",\"fingerprint\":\"");
    verdict.fingerprint.append_hex(buffer_);
    buffer_.push_back('"');
  }
  buffer_.append("}\n");
  if (buffer_.size() >= kFlushAt) flush();
}

void JsonlSink::flush() {
  if (error_ == 0 && !buffer_.empty() &&
      std::fwrite(buffer_.data(), 1, buffer_.size(), out_) != buffer_.size())
    error_ = errno != 0 ? errno : EIO;
  buffer_.clear();
  if (error_ == 0 && std::fflush(out_) != 0) error_ = errno != 0 ? errno : EIO;
}

void JsonlSink::append_id(std::uint64_t line, std::string_view id) {
  if (id.empty()) {
    append_number(buffer_, line);
  } else {
    buffer_.append(id);
  }
}

VerdictSink::VerdictSink(const config::Config& config, std::FILE* out)
    : kept_(config.dedup.window.max_entries), sink_(out) {}

bool VerdictSink::write(const Prepared& record, const dedup::Verdict& verdict,
                        std::string_view error) {
  const std::uint64_t number = ++stats_.records;
  switch (verdict.kind) {
    case dedup::VerdictKind::unique:
      ++stats_.unique;
      if (!record.id.empty()) kept_.add(number, record.id);
      break;
    case dedup::VerdictKind::duplicate:
      ++stats_.duplicate;
      if (verdict.refreshed) kept_.renew(verdict.match->of.value);
      break;
    case dedup::VerdictKind::invalid:
      ++stats_.invalid;
      break;
  }
  sink_.write(number, record.id, verdict, error, kept_);
  return sink_.error() == 0;
}

ScanStats VerdictSink::finish() {
  sink_.flush();
  if (sink_.error() != 0) {
    stats_.write_error = true;
    stats_.write_error_text = std::strerror(sink_.error());
  }
  return stats_;
}

}  // namespace neardup::stream::scan
