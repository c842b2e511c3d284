// The judge's protocol work per message, without Kafka (stream/records/judge_record.h,
// stream/records/changelog_record.h): an instance encoding a request, the judge decoding it,
// encoding one verdict per entry and a changelog entry per kept message, and
// the instance decoding the verdicts. What the judge thread spends besides the
// decisions themselves (docs/PERFORMANCE.md, the pipeline's "judge" stage).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "dedup/core/options.h"
#include "stream/changelog/changelog_writer.h"
#include "stream/records/changelog_record.h"
#include "stream/records/judge_record.h"

namespace {

using namespace neardup;

constexpr std::size_t kEntries = 1800;  // about one request record in the pipeline bench

/// `kEntries` analyses; every other one with a sketch, as short texts have.
std::vector<dedup::Analysis> analyses(const dedup::SketchOptions& sketch) {
  std::vector<dedup::Analysis> out(kEntries);
  std::uint64_t x = 0x9e3779b97f4a7c15ULL;
  for (std::size_t i = 0; i < out.size(); ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    dedup::TextSummary& s = out[i].summary;
    s.fingerprint.bits = x;
    s.features = 30 + static_cast<std::uint32_t>(i % 20);
    s.chars = 190;
    out[i].text_bytes = 195;
    if (i % 2 == 0) {
      s.sketch.shingles = 25;
      s.sketch.sketch.words[0] = x ^ 1;
      s.sketch.sketch.words[1] = x ^ 2;
      for (int b = 0; b < sketch.bands; ++b)
        s.sketch.band_keys[static_cast<std::size_t>(b)] = x + static_cast<std::uint64_t>(b);
    }
  }
  return out;
}

std::string encode_request(stream::JudgeRequestWriter& writer,
                           const std::vector<dedup::Analysis>& in, std::uint64_t batch) {
  writer.start(7, batch);
  for (std::size_t i = 0; i < in.size(); ++i)
    writer.add("bench-in", static_cast<std::int32_t>(i % 8), static_cast<std::int64_t>(i),
               dedup::EventTime{1'700'000'000'000 + static_cast<std::int64_t>(i)}, in[i]);
  return std::string(writer.finish());
}

/// The judge's side of one request: decode it, then per entry a verdict
/// (every fifth a duplicate) and, for a kept one, a changelog entry, as
/// stream/judge/judge_decide.cc does around each decision. Items: messages.
void BM_JudgeSideOfARequest(benchmark::State& state) {
  const dedup::SketchOptions sketch;
  const auto in = analyses(sketch);
  stream::JudgeRequestWriter request_writer(dedup::fingerprint_schema({}));
  const std::string request_value = encode_request(request_writer, in, 1);
  stream::JudgeRequest request;
  stream::JudgeVerdictWriter verdict_writer;
  stream::ChangelogBatch changelog(42);
  std::string error;
  for (auto _ : state) {
    if (!stream::decode_judge_request(request_value, request, &error)) {
      state.SkipWithError("request");
      break;
    }
    verdict_writer.start(request.instance, request.batch);
    std::size_t i = 0;
    for (const stream::JudgeRequestEntry& e : request.entries) {
      stream::JudgeVerdictEntry out;
      out.fingerprint = e.analysis.summary.fingerprint;
      out.features = e.analysis.summary.features;
      out.candidates = 2;
      if (++i % 5 == 0) {
        out.kind = dedup::VerdictKind::duplicate;
        out.of = stream::SourceRef{e.source.topic, e.source.partition, e.source.offset - 3};
        out.of_time = e.time;
        out.of_fingerprint = e.analysis.summary.fingerprint;
        out.distance = 2;
        out.count = 1;
        out.similarity = 0.9;
      } else {
        changelog.add(stream::kept_entry(e.source.topic, e.source.partition, e.source.offset,
                                         e.time, e.analysis.summary.fingerprint,
                                         e.analysis.summary.sketch, sketch, e.analysis.scope));
        if (changelog.entries() >= stream::ChangelogWriter::kBatchMaxEntries)
          benchmark::DoNotOptimize(changelog.take());
      }
      verdict_writer.add(out);
    }
    benchmark::DoNotOptimize(changelog.take());
    benchmark::DoNotOptimize(verdict_writer.finish());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(in.size()));
}
BENCHMARK(BM_JudgeSideOfARequest)->Unit(benchmark::kMicrosecond);

/// The instance's side: encode the request, decode its verdicts. Items: messages.
void BM_InstanceSideOfARequest(benchmark::State& state) {
  const dedup::SketchOptions sketch;
  const auto in = analyses(sketch);
  stream::JudgeRequestWriter request_writer(dedup::fingerprint_schema({}));
  stream::JudgeVerdictWriter verdict_writer;
  verdict_writer.start(7, 1);
  for (std::size_t i = 0; i < in.size(); ++i) {
    stream::JudgeVerdictEntry out;
    out.fingerprint = in[i].summary.fingerprint;
    if (i % 5 == 4) {
      out.kind = dedup::VerdictKind::duplicate;
      out.of = stream::SourceRef{"bench-in", 3, static_cast<std::int64_t>(i)};
      out.similarity = 0.9;
    }
    verdict_writer.add(out);
  }
  const std::string verdict_value(verdict_writer.finish());
  stream::JudgeVerdicts verdicts;
  std::string error;
  std::uint64_t batch = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(encode_request(request_writer, in, ++batch));
    if (!stream::decode_judge_verdicts(verdict_value, verdicts, &error)) {
      state.SkipWithError("verdicts");
      break;
    }
    benchmark::DoNotOptimize(verdicts.entries.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(in.size()));
}
BENCHMARK(BM_InstanceSideOfARequest)->Unit(benchmark::kMicrosecond);

}  // namespace
