#include "metrics/metrics.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>

#include "base/log.h"
#include "base/thread_annotations.h"
#include "metrics/http/http_server.h"
#include "metrics/page/page.h"
#include "metrics/page/recent_pairs.h"
#include "metrics/render.h"

namespace neardup::metrics {

Histogram::Histogram(std::vector<double> upper_bounds) : bounds(std::move(upper_bounds)) {
  // +Inf is implicit and NaN has no place among bounds; duplicates would make empty buckets.
  std::erase_if(bounds, [](double b) { return std::isnan(b) || std::isinf(b); });
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  counts.assign(bounds.size() + 1, 0);
}

void Histogram::observe(double value) {
  if (std::isnan(value)) return;  // a NaN would poison sum forever; it measures nothing
  if (counts.size() != bounds.size() + 1) counts.resize(bounds.size() + 1, 0);
  // Bucket i holds bounds[i-1] < value <= bounds[i] (Prometheus "le" semantics).
  const auto it = std::lower_bound(bounds.begin(), bounds.end(), value);
  ++counts[static_cast<std::size_t>(it - bounds.begin())];
  sum += value;
  ++count;
}

ServiceStats ServiceStats::with_buckets(int max_distance) {
  max_distance = std::clamp(max_distance, 0, 64);
  ServiceStats s;
  std::vector<double> distance;
  for (int d = 0; d <= max_distance; ++d) distance.push_back(d);
  s.match_distance = Histogram(std::move(distance));
  s.candidates_per_probe = Histogram({0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096});
  s.processing_seconds = Histogram(
      {1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 1e-2, 0.1, 1});
  s.end_to_end_latency_seconds = Histogram(
      {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300});
  s.judge_round_trip_seconds = s.end_to_end_latency_seconds;
  return s;
}

// The pipeline thread publishes; civetweb's worker threads answer requests.
struct Exporter::Impl {
  BuildInfo build;                       // set before the server starts, then only read
  const RecentPairs* pairs = nullptr;    // likewise (the object itself is thread-safe)
  PageAccess access;                     // likewise
  std::atomic<bool> page_served{false};  // set once the bound address is known
  mutable base::Mutex mutex;
  std::shared_ptr<const ServiceStats> last GUARDED_BY(mutex) =
      std::make_shared<const ServiceStats>();
  RateMeter rates GUARDED_BY(mutex);
  /// The pairs recorded when `last` was taken: the page lists none newer.
  std::uint64_t pairs_mark GUARDED_BY(mutex) = 0;
  std::atomic<bool> ready{false};
  std::string why_not GUARDED_BY(mutex);
  std::unique_ptr<HttpServer> server;

  HttpResponse handle(const HttpRequest& request) const EXCLUDES(mutex) {
    if (request.method != "GET" && request.method != "HEAD") {
      return {405, "text/plain; charset=utf-8", "method not allowed\n", {{"Allow", "GET, HEAD"}}};
    }
    if (request.path == "/metrics") {
      std::shared_ptr<const ServiceStats> stats;
      {
        base::MutexLock lock(mutex);
        stats = last;
      }
      return {200,
              "text/plain; version=0.0.4; charset=utf-8",
              render_text(*stats, build, ready.load(std::memory_order_relaxed)),
              {}};
    }
    if (request.path == "/healthz") return {200, "text/plain; charset=utf-8", "ok\n", {}};
    if (request.path == "/readyz") {
      if (ready.load(std::memory_order_relaxed))
        return {200, "text/plain; charset=utf-8", "ready\n", {}};
      std::string body = "not ready";
      {
        base::MutexLock lock(mutex);
        if (!why_not.empty()) body += ": " + why_not;
      }
      return {503, "text/plain; charset=utf-8", body + "\n", {}};
    }
    if (request.path == "/" || request.path == "/api/summary") return page(request);
    return {404, "text/plain; charset=utf-8", "not found\n", {}};
  }

  /// "/" and "/api/summary": as `access` allows, with a Content-Security-Policy.
  HttpResponse page(const HttpRequest& request) const EXCLUDES(mutex) {
    const bool html = request.path == "/";
    // The page is live data: no cache may keep it. (nosniff: every response, HttpServer.)
    std::map<std::string, std::string> headers{
        {"Cache-Control", "no-store"},
        {"Content-Security-Policy", std::string(kLockedContentSecurityPolicy)}};
    if (!page_served.load(std::memory_order_acquire))
      return {403, "text/plain; charset=utf-8", page_off_reason(access) + "\n", headers};
    if (!page_authorized(access, request.authorization)) {
      headers["WWW-Authenticate"] = std::string(kPageAuthChallenge);
      return {401, "text/plain; charset=utf-8",
              "the page needs the user and password of metrics.page_user\n", headers};
    }
    std::uint64_t mark = 0;
    PageCounts counts = page_counts(mark);
    std::optional<PairsSnapshot> snapshot;
    if (pairs) snapshot = pairs->snapshot(mark);  // the pairs as of the counts shown
    if (snapshot && access.redact_texts) redact_texts(*snapshot);
    const PairsSnapshot* shown = snapshot ? &*snapshot : nullptr;
    if (html) {
      headers["Content-Security-Policy"] = page_content_security_policy();
      return {200, "text/html; charset=utf-8", render_page(counts, shown), std::move(headers)};
    }
    return {200, "application/json", render_summary_json(counts, shown), std::move(headers)};
  }

  /// The counts of the last published stats, and in `pairs_recorded` the
  /// pairs recorded when they were taken (read under the same lock).
  PageCounts page_counts(std::uint64_t& pairs_recorded) const EXCLUDES(mutex) {
    PageCounts counts;
    std::shared_ptr<const ServiceStats> stats;
    {
      base::MutexLock lock(mutex);
      stats = last;
      pairs_recorded = pairs_mark;
      rates.fill(counts);
    }
    counts.unique = stats->unique;
    counts.duplicate = stats->duplicate;
    counts.invalid = stats->invalid;
    counts.window_entries = stats->window_entries;
    counts.dead_letters = stats->dead_letters;
    counts.ready = ready.load(std::memory_order_relaxed);
    counts.version = build.version;
    return counts;
  }
};

Exporter::Exporter(const std::string& listen, const BuildInfo& build, const RecentPairs* pairs,
                   int max_workers, PageAccess access)
    : impl_(std::make_unique<Impl>()) {
  impl_->build = build;
  impl_->pairs = pairs;
  impl_->access = std::move(access);
  Impl* impl = impl_.get();
  impl_->server = std::make_unique<HttpServer>(
      listen, [impl](const HttpRequest& request) { return impl->handle(request); }, max_workers);
  const std::string bound = impl_->server->address();
  // (the host of "127.0.0.1:9464", or of "[::1]:9464" from a host name)
  std::string host = bound.substr(0, bound.rfind(':'));
  if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  const bool loopback = is_loopback_host(host);
  impl_->page_served.store(metrics::page_served(impl_->access, loopback),
                           std::memory_order_release);
  if (const std::string warning = page_exposure_warning(impl_->access, bound, loopback);
      !warning.empty()) {
    base::log(base::LogLevel::warn, warning);
  }
}

Exporter::~Exporter() = default;

void Exporter::publish(const ServiceStats& stats) {
  auto copy = std::make_shared<const ServiceStats>(stats);  // copied outside the lock
  const auto now = RateMeter::Clock::now();
  const std::uint64_t mark =
      impl_->pairs ? stats.pairs_recorded.value_or(impl_->pairs->recorded()) : 0;
  base::MutexLock lock(impl_->mutex);
  impl_->last.swap(copy);
  impl_->pairs_mark = mark;
  impl_->rates.add(now, stats.unique + stats.duplicate + stats.invalid, stats.duplicate);
}

void Exporter::set_ready(bool ready, std::string why_not) {
  {
    base::MutexLock lock(impl_->mutex);
    impl_->why_not.swap(why_not);  // the old text is freed outside the lock
  }
  impl_->ready.store(ready, std::memory_order_relaxed);
}

std::string Exporter::address() const { return impl_->server->address(); }

bool Exporter::page_served() const { return impl_->page_served.load(std::memory_order_acquire); }

}  // namespace neardup::metrics
