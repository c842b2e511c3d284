// neardup_pipeline_bench: end-to-end throughput of `neardup run` against a
// plain consume -> produce passthrough with the same client settings, both on
// the embedded broker in this one process, on the same generated feed
// (~200-byte messages, ~20% near-duplicates).
//
// The feed is produced WHILE the service consumes (the mock broker keeps only a
// few MB per partition): the feeder stays at most --ahead messages ahead of the
// pipeline, so nothing is trimmed before it is read. The clock starts when the
// feeder starts (after the consumer group has its partitions) and stops when
// every input offset is covered by acknowledged outputs.
//
// usage: neardup_pipeline_bench [--messages N] [--partitions P] [--ahead A] [--action
// drop|tag|route] [--metrics]
//                               [--only passthrough|neardup|contended|split|parallel]
//                               [--repeat N]
//        neardup_pipeline_bench --brokers LIST [--broker-pid PID] [--commit-interval MS]
//                               [--messages N] [--partitions P] [--ahead A] [--action A]
//                               [--repeat N]
// --brokers LIST: against an external cluster (kfake, a real one) instead of the
// embedded broker. Each run creates its own topics through the admin API
// (uniquely named; the judge and verdict topics with one partition) and deletes
// them after it. --repeat N repetitions, each of three runs on the same feed:
// passthrough, neardup at-least-once, neardup exactly-once (a transactional.id
// of its own, the group judge on as by default). The last line gives the
// medians and the median of each repetition's ratios:
//   passthrough=<msg/s> neardup_alo=<msg/s> neardup_eos=<msg/s>
//   neardup_over_passthrough=<alo/passthrough> eos_over_alo=<eos/alo>
//   cpu_us_per_msg_passthrough=... cpu_us_per_msg_neardup_alo=... cpu_us_per_msg_neardup_eos=...
//   [broker_cpu_us_per_msg_passthrough=... _neardup_alo=... _neardup_eos=...] repeat=N
// where cpu_us_per_msg_* is this process (the service and the bench's feeder) and
// broker_cpu_us_per_msg_* is the process --broker-pid names (/proc/PID/stat utime +
// stime), both from the feeder's start to the last commit. --commit-interval (default:
// the service's own, 200 ms) is how often the service commits: one transaction
// per interval with exactly-once.
// --only runs one of the two (for profiling one side; no ratio is printed).
// --only neardup --repeat N: N runs, each followed by the isolated loop, and
// the median of the N worker/isolated ratios (this VM's CPU times drift ~30%).
// --only split: with no broker, the analysis of every message first and then
// the decisions back to back, 2/1 and 16/8 ahead (as the judge takes them),
// each half timed, beside the isolated loop; --repeat rounds.
// --only parallel: each split half alone, then again while the other half runs in
// a loop on a second thread (the two cores at once, as the analysis threads and
// the judge run); --repeat rounds and the medians of the ratios.
// --only contended: the isolated loop and the split halves on this thread,
// alone (before and after) and again and again while --repeat passthrough
// runs go on in the same process (the broker and client threads that share
// the cores with the dedup threads inside the service, but no dedup): what
// sharing the cores and caches alone does to the same work.
// --repeat N runs N passthrough/neardup pairs (fresh topics and groups each)
// and reports the pair with the median ratio: on a shared machine one pair can
// land in a slow or a fast moment; the pairs' spread is printed too.
// --metrics adds a third run, neardup with its Prometheus exporter on and scraped,
// and prints metrics_on/metrics_off (counting must not slow the hot path).
// --page adds --repeat pairs of runs, neardup without and with the page's record
// (metrics/page/recent_pairs.h: each kept text cached, each duplicate pair recorded, as
// `neardup run` does when its metrics endpoint is on), and prints the median
// page_on/page_off ratio and the process CPU per message of both.
// (drop, the default action, republishes ~20% fewer records than the
// passthrough; tag republishes every record, the like-for-like comparison)
// Last line: passthrough=<msg/s> neardup=<msg/s> ratio=<neardup/passthrough>, then the CPU
// microseconds per message beside it (they hold on any machine, where msg/s depend on its cores):
//   cpu_us_per_msg passthrough=<process> neardup=<process> worker=<neardup-* threads>
//   isolated=<the same analysis + decisions on one thread> worker/isolated=<ratio>
// process: this whole process (service, mock broker, feeder) from the feeder's start to the
// last commit (CLOCK_PROCESS_CPUTIME_ID); worker: the service's own threads named neardup-*
// (the dedup worker), from /proc/self/task; isolated: Analyzer + Classifier over the same
// feed and configuration on the bench's main thread, prepared two ahead as the worker does
// (CLOCK_THREAD_CPUTIME_ID), run right after each neardup run.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <new>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include "bench/feed.h"
#include "metrics/metrics.h"
#include "metrics/page/recent_pairs.h"
#include "stream/kafka/client_properties.h"
#include "stream/kafka/clients/embedded_broker.h"
#include "stream/kafka/kafka.h"
#include "stream/pipeline/pipeline.h"
#include "stream/service/service.h"

// Every C++ allocation of the process (global operator new; librdkafka's C
// mallocs are not counted) is counted per thread, so the bench can print each
// thread's allocations per message: the steady state of the pipeline thread
// and the dedup worker should allocate nothing per message.
namespace allocations {

struct Slot {
  std::atomic<long> tid{0};
  std::atomic<std::uint64_t> count{0};
};
constexpr std::size_t kSlots = 1024;  // threads over the bench's life; more are not counted
Slot g_slots[kSlots];
std::atomic<std::size_t> g_used{0};
thread_local Slot* t_slot = nullptr;

void count() noexcept {
  if (t_slot == nullptr) {
    const std::size_t i = g_used.fetch_add(1, std::memory_order_relaxed);
    if (i >= kSlots) return;
    g_slots[i].tid.store(static_cast<long>(gettid()), std::memory_order_relaxed);
    t_slot = &g_slots[i];
  }
  t_slot->count.fetch_add(1, std::memory_order_relaxed);
}

/// Allocations so far by thread id (threads that allocated at least once).
/// The kernel reuses the ids of threads that ended: the newest slot of an id
/// is the live thread's.
std::map<long, std::uint64_t> by_thread() {
  std::map<long, std::uint64_t> out;
  const std::size_t used = std::min(g_used.load(std::memory_order_relaxed), kSlots);
  for (std::size_t i = 0; i < used; ++i)
    out[g_slots[i].tid.load(std::memory_order_relaxed)] =
        g_slots[i].count.load(std::memory_order_relaxed);
  return out;
}

void* allocate(std::size_t size, std::size_t alignment) {
  count();
  void* p = nullptr;
  if (alignment <= alignof(std::max_align_t)) {
    p = std::malloc(size == 0 ? 1 : size);
  } else if (posix_memalign(&p, alignment, size == 0 ? alignment : size) != 0) {
    p = nullptr;
  }
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace allocations

void* operator new(std::size_t size) { return allocations::allocate(size, 0); }
void* operator new[](std::size_t size) { return allocations::allocate(size, 0); }
void* operator new(std::size_t size, std::align_val_t a) {
  return allocations::allocate(size, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t size, std::align_val_t a) {
  return allocations::allocate(size, static_cast<std::size_t>(a));
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return allocations::allocate(size, 0);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return allocations::allocate(size, 0);
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace {

using namespace neardup;
using Clock = std::chrono::steady_clock;

/// ~200-byte news-like messages, ~20% edited reposts (bench/feed.h).
std::vector<std::string> make_feed(std::size_t n) { return bench::FeedGenerator().feed(n, 190); }

double cpu_seconds(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

/// utime + stime in seconds of a /proc/<pid>/stat or /proc/<pid>/task/<tid>/stat
/// file; -1 when it cannot be read (the process ended, no such pid).
double stat_cpu_seconds(const std::string& path) {
  std::ifstream stat_file(path);
  std::string stat;
  if (!std::getline(stat_file, stat)) return -1;
  const auto close = stat.rfind(')');  // the name may hold spaces; fields follow it
  if (close == std::string::npos || close + 2 > stat.size()) return -1;
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  double utime = -1, stime = -1;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14) utime = std::atof(field.c_str());
    if (i == 15) stime = std::atof(field.c_str());
  }
  if (utime < 0 || stime < 0) return -1;
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

/// CPU seconds of each thread of this process, by thread id, with its name:
/// /proc/self/task/<tid>/schedstat (nanoseconds on a CPU), or where the kernel
/// has no schedstat, utime + stime of .../stat (clock ticks).
struct ThreadCpu {
  std::string name;
  double seconds = 0;
  double slices = 0;       ///< times scheduled onto a CPU (schedstat's third field; 0 without it)
  double allocations = 0;  ///< C++ allocations so far (operator new, counted above)
};
std::map<long, ThreadCpu> sample_threads() {
  std::map<long, ThreadCpu> threads;
  const std::map<long, std::uint64_t> allocated = allocations::by_thread();
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task", error)) {
    const std::string dir = entry.path().string();
    ThreadCpu thread;
    std::ifstream comm(dir + "/comm");
    if (!std::getline(comm, thread.name)) continue;  // ended meanwhile
    std::ifstream schedstat(dir + "/schedstat");
    double nanoseconds = 0, waited = 0;
    if (schedstat >> nanoseconds) {
      thread.seconds = nanoseconds * 1e-9;
      schedstat >> waited >> thread.slices;
    } else {
      thread.seconds = stat_cpu_seconds(dir + "/stat");
      if (thread.seconds < 0) continue;
    }
    const long tid = std::atol(entry.path().filename().c_str());
    if (const auto a = allocated.find(tid); a != allocated.end())
      thread.allocations = static_cast<double>(a->second);
    threads[tid] = thread;
  }
  return threads;
}

/// CPU seconds per thread name between two samples (a thread absent from
/// `before` started after it and counts from zero).
std::map<std::string, double> cpu_by_name(const std::map<long, ThreadCpu>& before,
                                          const std::map<long, ThreadCpu>& after,
                                          double ThreadCpu::*field = &ThreadCpu::seconds) {
  std::map<std::string, double> by_name;
  for (const auto& [tid, thread] : after) {
    const auto earlier = before.find(tid);
    by_name[thread.name] += thread.*field - (earlier == before.end() ? 0 : earlier->second.*field);
  }
  return by_name;
}

/// The service's own worker threads: the dedup worker (stream/pipeline/dedup_worker.cc)
/// names its thread "neardup-analyze"; the bench names its threads pipeline
/// (Service::run) and bench-*, librdkafka names its rdk:*.
bool is_dedup_worker(const std::string& name) { return name.rfind("neardup-", 0) == 0; }

struct Result {
  double rate = 0;
  std::int64_t p50_ms = 0, p99_ms = 0;
  double processing_p99_us = 0;
  stream::ServiceSnapshot snapshot;
  double process_cpu_us = 0;  ///< CPU of the whole process per message, from start to finish
  double worker_cpu_us = 0;   ///< CPU of the neardup-* threads per message
  double broker_cpu_us = -1;  ///< CPU of the --broker-pid process per message; -1 unknown
  std::map<std::string, double> thread_cpu_us;  ///< per message, by thread name
  /// Times each thread was put on a CPU, per 1000 messages, by thread name: a
  /// thread that sleeps and wakes often starts often with cold caches.
  std::map<std::string, double> thread_slices;
  /// C++ allocations per message, by thread name.
  std::map<std::string, double> thread_allocations;
};

/// The dedup worker's work without the service around it: decode, analysis and
/// the window decision of every message of `feed`, in order, on this thread,
/// two messages ahead as stream/pipeline/dedup_worker.cc does. CPU microseconds per message.
double isolated_cpu_us(const std::vector<std::string>& feed, const config::Config& config) {
  // Named apart from Service::run's thread, so a profile (bench/profile) can tell them apart.
  pthread_setname_np(pthread_self(), "bench-isolated");
  struct Rename {
    ~Rename() { pthread_setname_np(pthread_self(), "pipeline"); }
  } rename;
  stream::Analyzer analyzer(config);
  stream::Classifier classifier(config);
  stream::Prepared prepared[3];  // record i in slot i % 3
  const double start = cpu_seconds(CLOCK_THREAD_CPUTIME_ID);
  std::size_t ahead = 0;
  for (; ahead < 2 && ahead < feed.size(); ++ahead) {
    analyzer.prepare(feed[ahead], prepared[ahead % 3]);
    classifier.prefetch(prepared[ahead % 3]);
  }
  for (std::size_t i = 0; i < feed.size(); ++i) {
    if (ahead < feed.size()) {
      analyzer.prepare(feed[ahead], prepared[ahead % 3]);
      classifier.prefetch(prepared[ahead % 3]);
      ++ahead;
    }
    if (i + 1 < feed.size()) classifier.prefetch_cells(prepared[(i + 1) % 3]);
    std::string_view error;
    classifier.decide(prepared[i % 3], dedup::EventTime{0}, dedup::RecordRef{i + 1}, &error);
  }
  const double seconds = cpu_seconds(CLOCK_THREAD_CPUTIME_ID) - start;
  return seconds * 1e6 / static_cast<double>(feed.size());
}

/// The same work split as the service splits it with the group judge: every
/// message analyzed first (the analysis threads), then the decisions back to
/// back, `ahead` decisions prefetched ahead (cells `cells_ahead`), as
/// stream/judge/judge_decide.cc does with a request's entries. CPU microseconds per message
/// of each half, on this thread, with no broker and no service.
struct Split {
  double analysis_us = 0, decisions_us = 0;
};
Split split_cpu_us(const std::vector<std::string>& feed, const config::Config& config,
                   std::size_t ahead, std::size_t cells_ahead) {
  stream::Analyzer analyzer(config);
  stream::Classifier classifier(config);
  std::vector<stream::Prepared> prepared(feed.size());
  Split out;
  double start = cpu_seconds(CLOCK_THREAD_CPUTIME_ID);
  for (std::size_t i = 0; i < feed.size(); ++i) analyzer.prepare(feed[i], prepared[i]);
  out.analysis_us =
      (cpu_seconds(CLOCK_THREAD_CPUTIME_ID) - start) * 1e6 / static_cast<double>(feed.size());
  start = cpu_seconds(CLOCK_THREAD_CPUTIME_ID);
  const std::size_t n = feed.size();
  for (std::size_t j = 0; j < std::min(ahead, n); ++j) classifier.prefetch(prepared[j]);
  for (std::size_t j = 0; j < std::min(cells_ahead, n); ++j) classifier.prefetch_cells(prepared[j]);
  for (std::size_t i = 0; i < n; ++i) {
    if (i + ahead < n) classifier.prefetch(prepared[i + ahead]);
    if (i + cells_ahead < n) classifier.prefetch_cells(prepared[i + cells_ahead]);
    std::string_view error;
    classifier.decide(prepared[i], dedup::EventTime{0}, dedup::RecordRef{i + 1}, &error);
  }
  out.decisions_us =
      (cpu_seconds(CLOCK_THREAD_CPUTIME_ID) - start) * 1e6 / static_cast<double>(feed.size());
  return out;
}

/// The lower median (v not empty).
double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2];
}

/// The two halves of the split as the service runs them: at the same time, on
/// the two cores. Each half is timed alone, then again while the other half
/// runs in a loop on a second thread (as the judge decides while the analysis
/// threads analyze). CPU microseconds per message on the timed thread.
struct Parallel {
  double analysis_alone = 0, analysis_beside = 0, decisions_alone = 0, decisions_beside = 0;
};
Parallel parallel_cpu_us(const std::vector<std::string>& feed, const config::Config& config) {
  const double per_message = 1e6 / static_cast<double>(feed.size());
  std::vector<stream::Prepared> prepared(feed.size());
  auto analyze_all = [&](stream::Analyzer& analyzer, std::vector<stream::Prepared>& into) {
    const double start = cpu_seconds(CLOCK_THREAD_CPUTIME_ID);
    for (std::size_t i = 0; i < feed.size(); ++i) analyzer.prepare(feed[i], into[i]);
    return (cpu_seconds(CLOCK_THREAD_CPUTIME_ID) - start) * per_message;
  };
  auto decide_all = [&](const std::vector<stream::Prepared>& from) {  // 16/8 ahead, as the judge
    stream::Classifier classifier(config);
    const double start = cpu_seconds(CLOCK_THREAD_CPUTIME_ID);
    const std::size_t n = from.size();
    for (std::size_t j = 0; j < std::min<std::size_t>(16, n); ++j) classifier.prefetch(from[j]);
    for (std::size_t j = 0; j < std::min<std::size_t>(8, n); ++j)
      classifier.prefetch_cells(from[j]);
    for (std::size_t i = 0; i < n; ++i) {
      if (i + 16 < n) classifier.prefetch(from[i + 16]);
      if (i + 8 < n) classifier.prefetch_cells(from[i + 8]);
      std::string_view error;
      classifier.decide(from[i], dedup::EventTime{0}, dedup::RecordRef{i + 1}, &error);
    }
    return (cpu_seconds(CLOCK_THREAD_CPUTIME_ID) - start) * per_message;
  };
  Parallel out;
  {
    stream::Analyzer analyzer(config);
    out.analysis_alone = analyze_all(analyzer, prepared);
  }
  out.decisions_alone = decide_all(prepared);
  std::atomic<bool> stop{false};
  {  // the decisions, while another thread analyzes the feed again and again
    std::thread other([&] {
      stream::Analyzer analyzer(config);
      std::vector<stream::Prepared> scratch(feed.size());
      while (!stop.load())
        for (std::size_t i = 0; i < feed.size() && !stop.load(); ++i)
          analyzer.prepare(feed[i], scratch[i]);
    });
    out.decisions_beside = decide_all(prepared);
    stop = true;
    other.join();
  }
  stop = false;
  {  // the analysis, while another thread decides the feed again and again (a fresh window each)
    std::thread other([&] {
      while (!stop.load()) decide_all(prepared);
    });
    stream::Analyzer analyzer(config);
    std::vector<stream::Prepared> scratch(feed.size());
    out.analysis_beside = analyze_all(analyzer, scratch);
    stop = true;
    other.join();
  }
  return out;
}

/// The configuration every run uses (a variant through NEARDUP_* variables,
/// e.g. NEARDUP_DEDUP_SKETCH_ENABLED=false).
config::Config base_config() {
  config::Config cfg;
  config::apply_env_overrides(cfg);
  return cfg;
}

double histogram_quantile(const metrics::Histogram& h, double q) {
  if (h.count == 0) return 0;
  auto rank = static_cast<std::uint64_t>(q * static_cast<double>(h.count - 1)) + 1;
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < h.counts.size(); ++i) {
    seen += h.counts[i];
    if (seen >= rank) return i < h.bounds.size() ? h.bounds[i] : h.bounds.back();
  }
  return h.bounds.back();
}

/// One GET of http://address/metrics, as a Prometheus scrape would; returns the body size.
std::size_t scrape(const std::string& address) {
  const auto colon = address.rfind(':');
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(std::atoi(address.c_str() + colon + 1)));
  inet_pton(AF_INET, address.substr(0, colon).c_str(), &addr.sin_addr);
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  std::size_t total = 0;
  if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    const char request[] = "GET /metrics HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n";
    if (write(fd, request, sizeof request - 1) > 0) {
      char buffer[8192];
      for (ssize_t n; (n = read(fd, buffer, sizeof buffer)) > 0;)
        total += static_cast<std::size_t>(n);
    }
  }
  if (fd >= 0) close(fd);
  return total;
}

/// How a run differs from the default one, beyond its side and action.
struct RunSettings {
  config::Delivery delivery = config::Delivery::at_least_once;
  std::chrono::milliseconds commit_interval = stream::ServiceOptions{}.commit_interval;
  pid_t broker_pid = 0;  ///< the external broker's process, for its CPU; 0 none
};

/// The configuration of run `name`: its own topics, group and transactional.id.
config::Config run_config(const std::string& name, config::Action action,
                          config::Delivery delivery) {
  config::Config cfg =
      base_config();  // e.g. NEARDUP_DEDUP_SKETCH_ENABLED=false to measure a variant
  cfg.kafka.group_id = name;
  cfg.kafka.input_topics = {name + "-in"};
  cfg.kafka.output_topic = name + "-out";
  cfg.kafka.duplicates_topic = name + "-dup";
  cfg.kafka.dead_letter_topic = name + "-dead";
  cfg.kafka.changelog_topic =
      name + "-window";  // one per run: a shared one would replay the other run's window
  if (!cfg.kafka.judge_topic.empty()) {  // (NEARDUP_KAFKA_JUDGE_TOPIC= : each instance judges)
    cfg.kafka.judge_topic = name + "-judge";
    cfg.kafka.verdict_topic = name + "-verdicts";
  }
  cfg.action = action;
  cfg.kafka.delivery = delivery;
  if (delivery == config::Delivery::exactly_once) cfg.kafka.transactional_id = name + "-txn";
  return cfg;
}

/// `with_metrics`: also run the Prometheus exporter as `neardup run` does
/// (publish on every progress tick) and scrape it every 100 ms, 10x more often
/// than a typical Prometheus, so the cost of counting and exporting shows.
Result run_one(const std::string& brokers, const std::vector<std::string>& feed,
               const std::string& name, bool bypass, std::size_t ahead, config::Action action,
               bool with_metrics = false, bool with_page = false,
               const RunSettings& settings = {}) {
  const config::Config cfg = run_config(name, action, settings.delivery);
  const std::string in = cfg.kafka.input_topics.front();
  const std::string broker_stat = "/proc/" + std::to_string(settings.broker_pid) + "/stat";

  std::atomic<std::uint64_t> consumed{0};
  std::atomic<bool> assigned{false};
  stream::Service* self = nullptr;
  Clock::time_point finished;
  bool done = false;  // finished and after_threads are taken once, at the last commit
  double process_cpu_start = 0, process_cpu_end = 0;
  double broker_cpu_start = -1, broker_cpu_end = -1;
  std::map<long, ThreadCpu> before_threads, after_threads;
  stream::ServiceOptions options;
  options.config = cfg;
  options.brokers = brokers;
  options.bypass_dedup = bypass;
  options.progress_interval = std::chrono::milliseconds(20);
  options.commit_interval = settings.commit_interval;
  std::unique_ptr<metrics::RecentPairs> recent_pairs;
  if (with_page) {
    recent_pairs = std::make_unique<metrics::RecentPairs>();
    options.recent_pairs = recent_pairs.get();
  }
  std::unique_ptr<metrics::Exporter> exporter;
  if (with_metrics)
    exporter = std::make_unique<metrics::Exporter>("127.0.0.1:0", metrics::BuildInfo{"bench", {}});
  options.on_progress = [&](const stream::ServiceSnapshot& s) {
    if (exporter) exporter->publish(stream::to_metrics(s, cfg.dedup.index.max_distance));
    consumed.store(s.consumed);
    if (s.assigned) assigned.store(true);
    if (s.committed >= feed.size() && self && !done) {
      finished = Clock::now();
      process_cpu_end = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
      if (settings.broker_pid > 0) broker_cpu_end = stat_cpu_seconds(broker_stat);
      after_threads = sample_threads();
      done = true;
      self->request_stop();
    }
  };
  stream::Service service(options);
  self = &service;

  Clock::time_point started;
  std::atomic<bool> abort_feed{false};
  std::thread feeder([&] {
    pthread_setname_np(pthread_self(), "bench-feeder");
    stream::kafka::Producer producer(stream::default_producer_properties(brokers),
                                     [](stream::kafka::Message) {});
    auto deadline = Clock::now() + std::chrono::seconds(60);
    while (!assigned.load() && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    before_threads = sample_threads();
    process_cpu_start = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
    if (settings.broker_pid > 0) broker_cpu_start = stat_cpu_seconds(broker_stat);
    started = Clock::now();
    std::uint64_t sent = 0;
    for (const auto& text : feed) {
      while (sent - consumed.load() > ahead && !abort_feed.load()) {
        producer.poll(std::chrono::milliseconds(1));
      }
      if (abort_feed.load()) break;
      stream::kafka::Producer::Record rec;
      rec.topic = in;
      rec.value = text;
      rec.key = std::string_view(text).substr(0, 12);
      rec.has_key = true;
      producer.produce(rec);
      ++sent;
      if ((sent & 1023) == 0) producer.poll(std::chrono::milliseconds(0));
    }
    producer.flush(std::chrono::seconds(30));
  });

  // A bounded run: stop after 10 minutes whatever happens.
  std::thread watchdog([&] {
    pthread_setname_np(pthread_self(), "bench-watchdog");
    auto deadline = Clock::now() + std::chrono::minutes(10);
    while (Clock::now() < deadline && !abort_feed.load())
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    service.request_stop();
  });
  std::atomic<std::size_t> scraped{0};
  std::thread scraper([&] {
    pthread_setname_np(pthread_self(), "bench-scraper");
    while (exporter && !abort_feed.load()) {
      scraped += scrape(exporter->address()) > 0 ? 1 : 0;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  int status = service.run();
  abort_feed.store(true);
  feeder.join();
  watchdog.join();
  scraper.join();
  if (exporter && scraped.load() == 0) {
    std::fprintf(stderr, "%s: the metrics endpoint never answered\n", name.c_str());
    std::exit(1);
  }
  if (status != 0) {
    std::fprintf(stderr, "%s: service failed: %s\n", name.c_str(), service.fatal_error().c_str());
    std::exit(1);
  }
  Result r;
  r.snapshot = service.snapshot();
  if (r.snapshot.committed < feed.size()) {
    std::fprintf(stderr, "%s: only %llu of %zu messages completed before the time limit\n",
                 name.c_str(), static_cast<unsigned long long>(r.snapshot.committed), feed.size());
    std::exit(1);
  }
  double seconds = std::chrono::duration<double>(finished - started).count();
  r.rate = static_cast<double>(feed.size()) / seconds;
  r.p50_ms = r.snapshot.end_to_end.quantile_ms(0.5);
  r.p99_ms = r.snapshot.end_to_end.quantile_ms(0.99);
  r.processing_p99_us = histogram_quantile(r.snapshot.processing_seconds, 0.99) * 1e6;
  const double per_message = 1e6 / static_cast<double>(feed.size());
  r.process_cpu_us = (process_cpu_end - process_cpu_start) * per_message;
  if (broker_cpu_start >= 0 && broker_cpu_end >= broker_cpu_start)
    r.broker_cpu_us = (broker_cpu_end - broker_cpu_start) * per_message;
  for (const auto& [thread, cpu] : cpu_by_name(before_threads, after_threads)) {
    r.thread_cpu_us[thread] = cpu * per_message;
    if (is_dedup_worker(thread)) r.worker_cpu_us += cpu * per_message;
  }
  for (const auto& [thread, slices] :
       cpu_by_name(before_threads, after_threads, &ThreadCpu::slices)) {
    r.thread_slices[thread] = slices * 1000 / static_cast<double>(feed.size());
  }
  for (const auto& [thread, count] :
       cpu_by_name(before_threads, after_threads, &ThreadCpu::allocations)) {
    r.thread_allocations[thread] = count / static_cast<double>(feed.size());
  }
  return r;
}

/// The threads that used at least 0.05us of CPU per message, the busiest first.
void print_threads(const char* side, const Result& result) {
  std::vector<std::pair<double, std::string>> busiest;
  for (const auto& [name, us] : result.thread_cpu_us)
    if (us >= 0.05) busiest.emplace_back(us, name);
  std::sort(busiest.rbegin(), busiest.rend());
  std::printf("%s threads, CPU us/msg:", side);
  for (const auto& [us, name] : busiest) std::printf(" %s=%.2f", name.c_str(), us);
  std::printf("\n%s threads, times on a CPU per 1000 msg:", side);
  for (const auto& [us, name] : busiest) {
    const auto slices = result.thread_slices.find(name);
    if (slices != result.thread_slices.end()) std::printf(" %s=%.1f", name.c_str(), slices->second);
  }
  std::printf("\n%s threads, C++ allocations per msg:", side);
  for (const auto& [us, name] : busiest) {
    const auto count = result.thread_allocations.find(name);
    if (count != result.thread_allocations.end())
      std::printf(" %s=%.3f", name.c_str(), count->second);
  }
  std::printf("\n");
}

/// --brokers: the topics of the runs on an external cluster. Each run's topics
/// are created before it and deleted after it; whatever a failed run left is
/// deleted at exit (std::exit included).
class ExternalTopics {
 public:
  explicit ExternalTopics(const std::string& brokers)
      : admin_(stream::default_producer_properties(brokers)) {
    instance() = this;
    std::atexit([] {
      if (instance()) instance()->delete_all();
    });
  }
  ~ExternalTopics() {
    delete_all();
    instance() = nullptr;
  }
  ExternalTopics(const ExternalTopics&) = delete;
  ExternalTopics& operator=(const ExternalTopics&) = delete;

  /// Creates every topic `cfg` uses, as `neardup topics create` does: the
  /// service's with `partitions` partitions, the judge's and the verdicts' with
  /// one; then waits (30 s at most) until the cluster's metadata shows them.
  /// Exits on a refusal: the names are new, so even "exists" is one.
  void create(const config::Config& cfg, int partitions) {
    std::vector<stream::kafka::NewTopic> wanted;
    for (const std::string& t : stream::service_topics(cfg.kafka))
      wanted.push_back({t, partitions, -1, {}});
    for (const std::string& t : stream::judge_topics(cfg.kafka)) wanted.push_back({t, 1, -1, {}});
    const auto outcomes = stream::kafka::create_topics(admin_, wanted, kTimeout);
    bool ok = outcomes.size() == wanted.size();
    for (const auto& o : outcomes) {
      if (!o.err) {
        created_.push_back(o.name);
        continue;
      }
      ok = false;
      std::fprintf(stderr, "cannot create topic %s: %s\n", o.name.c_str(),
                   (o.message.empty() ? stream::kafka::describe(o.err) : o.message).c_str());
    }
    if (!ok) std::exit(1);
    stream::kafka::Producer probe(admin_, nullptr);
    const auto deadline = Clock::now() + kTimeout;
    for (const auto& t : wanted) {
      while (probe.partition_count(t.name, kTimeout) != t.partitions) {
        if (Clock::now() > deadline) {
          std::fprintf(stderr, "topic %s: not in the cluster's metadata with %d partition(s)\n",
                       t.name.c_str(), t.partitions);
          std::exit(1);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
  }

  /// Deletes every topic created so far (a failure is reported, not fatal).
  void delete_all() {
    if (created_.empty()) return;
    const std::vector<std::string> names = std::exchange(created_, {});
    try {
      for (const auto& o : stream::kafka::delete_topics(admin_, names, kTimeout))
        if (o.err && o.err != stream::kafka::errc::unknown_topic_or_partition)
          std::fprintf(stderr, "cannot delete topic %s: %s\n", o.name.c_str(),
                       (o.message.empty() ? stream::kafka::describe(o.err) : o.message).c_str());
    } catch (const stream::kafka::KafkaError& e) {
      std::fprintf(stderr, "cannot delete the bench's topics: %s\n", e.what());
    }
  }

 private:
  static constexpr std::chrono::seconds kTimeout{30};
  static ExternalTopics*& instance() {
    static ExternalTopics* current = nullptr;
    return current;
  }
  stream::kafka::Properties admin_;
  std::vector<std::string> created_;
};

/// --brokers: --repeat repetitions of passthrough, neardup at-least-once and neardup
/// exactly-once on the cluster, each run on topics of its own; the order
/// within a repetition turns each time, so no side always runs first.
int run_external(const std::string& brokers, const RunSettings& base,
                 const std::vector<std::string>& feed, int partitions, std::size_t ahead,
                 config::Action action, int repeat) {
  struct Side {
    const char* name;
    bool bypass;
    config::Delivery delivery;
  };
  const Side sides[] = {{"passthrough", true, config::Delivery::at_least_once},
                        {"neardup_alo", false, config::Delivery::at_least_once},
                        {"neardup_eos", false, config::Delivery::exactly_once}};
  constexpr int kSides = 3;
  // Unique across runs of the bench on one cluster: the pid and the start time.
  const std::string prefix =
      "pipeline-bench-" + std::to_string(getpid()) + "-" + std::to_string(std::time(nullptr));
  ExternalTopics topics(brokers);
  std::vector<Result> results[kSides];
  for (int r = 0; r < repeat; ++r) {
    for (int k = 0; k < kSides; ++k) {
      const int s = (k + r) % kSides;
      const Side& side = sides[s];
      const std::string name = prefix + "-" + side.name + "-" + std::to_string(r);
      RunSettings settings = base;
      settings.delivery = side.delivery;
      topics.create(run_config(name, action, settings.delivery), partitions);
      Result res = run_one(brokers, feed, name, side.bypass, ahead, action, false, false, settings);
      topics.delete_all();
      std::printf(
          "repetition %d of %d: %s: %.0f msg/s, end-to-end latency p50=%lldms p99=%lldms, CPU "
          "%.2fus/msg (process)",
          r + 1, repeat, side.name, res.rate, static_cast<long long>(res.p50_ms),
          static_cast<long long>(res.p99_ms), res.process_cpu_us);
      if (res.broker_cpu_us >= 0) std::printf(", broker %.2fus/msg", res.broker_cpu_us);
      if (!side.bypass)
        std::printf(
            ", unique=%llu duplicate=%llu, judge requests=%llu round trip p50=%lldms p99=%lldms",
            static_cast<unsigned long long>(res.snapshot.unique),
            static_cast<unsigned long long>(res.snapshot.duplicate),
            static_cast<unsigned long long>(res.snapshot.judge_requests),
            static_cast<long long>(res.snapshot.judge_round_trip.quantile_ms(0.5)),
            static_cast<long long>(res.snapshot.judge_round_trip.quantile_ms(0.99)));
      std::printf("\n");
      print_threads(side.name, res);
      std::fflush(stdout);
      results[s].push_back(std::move(res));
    }
  }
  auto median = [&](int s, double Result::*field) {
    std::vector<double> v;
    for (const Result& res : results[s]) v.push_back(res.*field);
    return median_of(v);
  };
  auto median_ratio = [&](int a, int b) {  // the median of each repetition's a/b
    std::vector<double> v;
    for (int r = 0; r < repeat; ++r) v.push_back(results[a][r].rate / results[b][r].rate);
    return median_of(v);
  };
  auto spread = [&](int s) {
    double lo = results[s][0].rate, hi = lo;
    for (const Result& res : results[s]) {
      lo = std::min(lo, res.rate);
      hi = std::max(hi, res.rate);
    }
    return std::pair{lo, hi};
  };
  std::printf("%d repetition(s) on %s, commit interval %lldms; msg/s min-max:", repeat,
              brokers.c_str(), static_cast<long long>(base.commit_interval.count()));
  for (int s = 0; s < kSides; ++s)
    std::printf(" %s %.0f-%.0f", sides[s].name, spread(s).first, spread(s).second);
  std::printf("; ratios of the medians: neardup/passthrough %.3f, eos/alo %.3f\n",
              median(1, &Result::rate) / median(0, &Result::rate),
              median(2, &Result::rate) / median(1, &Result::rate));
  std::printf(
      "passthrough=%.0f neardup_alo=%.0f neardup_eos=%.0f neardup_over_passthrough=%.3f "
      "eos_over_alo=%.3f cpu_us_per_msg_passthrough=%.2f cpu_us_per_msg_neardup_alo=%.2f "
      "cpu_us_per_msg_neardup_eos=%.2f",
      median(0, &Result::rate), median(1, &Result::rate), median(2, &Result::rate),
      median_ratio(1, 0), median_ratio(2, 1), median(0, &Result::process_cpu_us),
      median(1, &Result::process_cpu_us), median(2, &Result::process_cpu_us));
  if (base.broker_pid > 0)
    std::printf(
        " broker_cpu_us_per_msg_passthrough=%.2f broker_cpu_us_per_msg_neardup_alo=%.2f "
        "broker_cpu_us_per_msg_neardup_eos=%.2f",
        median(0, &Result::broker_cpu_us), median(1, &Result::broker_cpu_us),
        median(2, &Result::broker_cpu_us));
  std::printf(" repeat=%d\n", repeat);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t messages = 300'000, ahead = 50'000;
  int partitions = 8;
  config::Action action = config::Action::drop;
  std::string action_name = "drop";
  bool with_metrics = false;
  bool with_page = false;
  std::string only;
  int repeat = 1;
  std::string brokers;  // --brokers: an external cluster instead of the embedded broker
  RunSettings external;
  bool commit_interval_given = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> long long {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return std::atoll(argv[++i]);
    };
    if (arg == "--messages")
      messages = static_cast<std::size_t>(std::max(1LL, value()));
    else if (arg == "--partitions")
      partitions = static_cast<int>(std::max(1LL, value()));
    else if (arg == "--ahead")
      ahead = static_cast<std::size_t>(std::max(100LL, value()));
    else if (arg == "--metrics")
      with_metrics = true;
    else if (arg == "--brokers" && i + 1 < argc && argv[i + 1][0] != '\0')
      brokers = argv[++i];
    else if (arg == "--broker-pid")
      external.broker_pid = static_cast<pid_t>(std::max(1LL, value()));
    else if (arg == "--commit-interval") {
      external.commit_interval = std::chrono::milliseconds(std::clamp(value(), 1LL, 60'000LL));
      commit_interval_given = true;
    } else if (arg == "--page")
      with_page = true;
    else if (arg == "--repeat")
      repeat = static_cast<int>(std::clamp(value(), 1LL, 25LL));
    else if (arg == "--only" && i + 1 < argc &&
             (std::string(argv[i + 1]) == "passthrough" || std::string(argv[i + 1]) == "neardup" ||
              std::string(argv[i + 1]) == "contended" || std::string(argv[i + 1]) == "split" ||
              std::string(argv[i + 1]) == "parallel"))
      only = argv[++i];
    else if (arg == "--action" && i + 1 < argc) {
      action_name = argv[++i];
      if (action_name == "drop")
        action = config::Action::drop;
      else if (action_name == "tag")
        action = config::Action::tag;
      else if (action_name == "route")
        action = config::Action::route;
      else {
        std::fprintf(stderr, "--action: expected drop, tag or route\n");
        return 2;
      }
    } else {
      std::fprintf(
          stderr,
          "usage: neardup_pipeline_bench [--messages N] [--partitions P] [--ahead A] [--action "
          "drop|tag|route] [--metrics] [--page] [--only "
          "passthrough|neardup|contended|split|parallel] "
          "[--repeat "
          "N]\n"
          "       neardup_pipeline_bench --brokers LIST [--broker-pid PID] [--commit-interval "
          "MS] [--messages N] [--partitions P] [--ahead A] [--action drop|tag|route] [--repeat "
          "N]\n");
      return 2;
    }
  }
  if (brokers.empty() && (external.broker_pid > 0 || commit_interval_given)) {
    std::fprintf(stderr, "--broker-pid and --commit-interval go with --brokers\n");
    return 2;
  }
  if (!brokers.empty()) {
    if (!only.empty() || with_metrics || with_page) {
      std::fprintf(stderr,
                   "--brokers runs its three sides; --only, --metrics, --page are "
                   "for the embedded broker\n");
      return 2;
    }
    if (external.broker_pid > 0 &&
        stat_cpu_seconds("/proc/" + std::to_string(external.broker_pid) + "/stat") < 0) {
      std::fprintf(stderr, "--broker-pid %d: no such process to read the CPU of\n",
                   static_cast<int>(external.broker_pid));
      return 2;
    }
    pthread_setname_np(pthread_self(), "pipeline");
    pthread_setname_np(pthread_self(), "bench-feed");
    auto feed = make_feed(messages);
    pthread_setname_np(pthread_self(), "pipeline");
    std::size_t bytes = 0;
    for (const auto& t : feed) bytes += t.size();
    std::printf(
        "feed: %zu messages, %.0f bytes average, %d partitions, brokers %s%s\n", feed.size(),
        static_cast<double>(bytes) / static_cast<double>(feed.size()), partitions, brokers.c_str(),
        external.broker_pid > 0 ? (", broker pid " + std::to_string(external.broker_pid)).c_str()
                                : "");
    try {
      return run_external(brokers, external, feed, partitions, ahead, action, repeat);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "neardup_pipeline_bench: %s\n", e.what());
      return 1;
    }
  }
  pthread_setname_np(pthread_self(), "pipeline");  // Service::run's thread, in the CPU view
  neardup::stream::EmbeddedBroker broker;
  // Run r of a side uses its own topics and group: "<side>" for the first, "<side>-<r>" after.
  auto run_name = [](const char* side, int r) {
    return r == 0 ? std::string(side) : std::string(side) + "-" + std::to_string(r);
  };
  for (const char* side : {"passthrough", "neardup", "metrics", "pageoff", "page"}) {
    for (int r = 0; r < (std::string(side) == "metrics" ? 1 : repeat); ++r)
      for (const char* suffix : {"-in", "-out", "-dup", "-dead", "-window"})
        broker.create_topic(run_name(side, r) + suffix, partitions);
    for (int r = 0; r < (std::string(side) == "metrics" ? 1 : repeat); ++r)
      for (const char* suffix : {"-judge", "-verdicts"})
        broker.create_topic(run_name(side, r) + suffix,
                            1);  // the group judge's (stream/judge/judge.h)
  }
  pthread_setname_np(pthread_self(), "bench-feed");
  auto feed = make_feed(messages);
  pthread_setname_np(pthread_self(), "pipeline");
  std::size_t bytes = 0;
  for (const auto& t : feed) bytes += t.size();
  std::printf("feed: %zu messages, %.0f bytes average, %d partitions, embedded broker %s\n",
              feed.size(), static_cast<double>(bytes) / static_cast<double>(feed.size()),
              partitions, broker.bootstrap().c_str());

  auto print_passthrough = [&](const Result& pass) {
    std::printf(
        "passthrough: %.0f msg/s, end-to-end latency p50=%lldms p99=%lldms, CPU %.2fus/msg "
        "(process)\n",
        pass.rate, static_cast<long long>(pass.p50_ms), static_cast<long long>(pass.p99_ms),
        pass.process_cpu_us);
  };
  if (only == "split") {
    for (int r = 0; r < repeat; ++r) {
      const double together = isolated_cpu_us(feed, base_config());
      for (const auto& [a, c] : {std::pair<std::size_t, std::size_t>{2, 1}, {16, 8}}) {
        const Split s = split_cpu_us(feed, base_config(), a, c);
        std::printf(
            "isolated %.2f us/msg; split (%zu/%zu ahead): analysis %.2f + decisions %.2f = %.2f "
            "(%.2fx)\n",
            together, a, c, s.analysis_us, s.decisions_us, s.analysis_us + s.decisions_us,
            (s.analysis_us + s.decisions_us) / together);
      }
    }
    return 0;
  }
  if (only == "parallel") {
    std::vector<double> a_ratio, d_ratio;
    for (int r = 0; r < repeat; ++r) {
      const Parallel p = parallel_cpu_us(feed, base_config());
      std::printf(
          "parallel round %d: analysis alone %.2f, beside decisions %.2f (%.2fx); decisions alone "
          "%.2f, beside analysis %.2f (%.2fx) us/msg\n",
          r + 1, p.analysis_alone, p.analysis_beside, p.analysis_beside / p.analysis_alone,
          p.decisions_alone, p.decisions_beside, p.decisions_beside / p.decisions_alone);
      a_ratio.push_back(p.analysis_beside / p.analysis_alone);
      d_ratio.push_back(p.decisions_beside / p.decisions_alone);
    }
    std::printf(
        "%d rounds, medians: analysis beside decisions %.2fx, decisions beside analysis %.2fx\n",
        repeat, median_of(a_ratio), median_of(d_ratio));
    return 0;
  }
  if (only == "contended") {
    // Each round: the isolated loop, then the split (analysis, then decisions
    // 16/8 ahead as the judge does them); alone before and after, and beside a passthrough.
    struct Round {
      double isolated = 0, analysis = 0, decisions = 0;
    };
    auto round = [&] {
      Round r;
      r.isolated = isolated_cpu_us(feed, base_config());
      const Split s = split_cpu_us(feed, base_config(), 16, 8);
      r.analysis = s.analysis_us;
      r.decisions = s.decisions_us;
      return r;
    };
    std::vector<Round> alone{round()};
    std::atomic<bool> done{false};
    std::vector<std::string> longer;  // passthrough runs ~5x faster: 5 feeds' worth
    for (int k = 0; k < 5; ++k) longer.insert(longer.end(), feed.begin(), feed.end());
    std::thread pass([&] {  // --repeat passthrough runs back to back (fresh topics each)
      pthread_setname_np(pthread_self(), "bench-pass");
      for (int r = 0; r < repeat; ++r) {
        const Result res =
            run_one(broker.bootstrap(), longer, run_name("passthrough", r), true, ahead, action);
        std::printf("passthrough alongside: %.0f msg/s\n", res.rate);
      }
      done = true;
    });
    std::this_thread::sleep_for(std::chrono::seconds(4));  // past its group join
    std::vector<Round> loaded;
    while (!done && loaded.size() < 50) {
      const Round r = round();
      if (!done) loaded.push_back(r);  // only rounds that ran entirely beside it
    }
    pass.join();
    alone.push_back(round());
    auto median = [](const std::vector<Round>& rounds, double Round::*field) {
      std::vector<double> v;
      for (const Round& r : rounds) v.push_back(r.*field);
      std::sort(v.begin(), v.end());
      return v.empty() ? 0.0 : v[(v.size() - 1) / 2];
    };
    std::printf("beside a passthrough: %zu rounds; alone: 2 (before and after); us/msg, medians:\n",
                loaded.size());
    for (const auto& [name, field] :
         {std::pair<const char*, double Round::*>{"isolated loop", &Round::isolated},
          {"split: analysis", &Round::analysis},
          {"split: decisions 16/8 ahead", &Round::decisions}}) {
      const double a = std::min(alone[0].*field, alone[1].*field), b = median(loaded, field);
      std::printf("  %-28s alone %.2f, beside %.2f: %.2fx\n", name, a, b, a > 0 ? b / a : 0.0);
    }
    return 0;
  }
  if (only == "passthrough") {
    print_passthrough(run_one(broker.bootstrap(), feed, "passthrough", true, ahead, action));
    return 0;
  }
  auto print_neardup = [&](const Result& dedup, double isolated_us) {
    std::printf(
        "neardup (action %s): %.0f msg/s, unique=%llu duplicate=%llu invalid=%llu, end-to-end "
        "latency p50=%lldms p99=%lldms, "
        "processing p99<=%.1fus, CPU %.2fus/msg (process), dedup worker %.2fus/msg, isolated "
        "%.2fus/msg\n",
        action_name.c_str(), dedup.rate, static_cast<unsigned long long>(dedup.snapshot.unique),
        static_cast<unsigned long long>(dedup.snapshot.duplicate),
        static_cast<unsigned long long>(dedup.snapshot.invalid),
        static_cast<long long>(dedup.p50_ms), static_cast<long long>(dedup.p99_ms),
        dedup.processing_p99_us, dedup.process_cpu_us, dedup.worker_cpu_us, isolated_us);
  };
  if (!only.empty()) {
    // --repeat N: N runs, each followed by the isolated loop; the median of
    // the N worker/isolated ratios (each ratio from one run and the loop after it).
    std::vector<double> ratios, workers, isolateds;
    for (int r = 0; r < repeat; ++r) {
      Result dedup =
          run_one(broker.bootstrap(), feed, run_name("neardup", r), false, ahead, action);
      const double isolated_us = isolated_cpu_us(feed, base_config());
      print_neardup(dedup, isolated_us);
      print_threads("neardup", dedup);
      ratios.push_back(dedup.worker_cpu_us / isolated_us);
      workers.push_back(dedup.worker_cpu_us);
      isolateds.push_back(isolated_us);
      std::printf("run %d of %d: worker/isolated=%.2f\n", r + 1, repeat, ratios.back());
    }
    const auto median = median_of;
    std::sort(ratios.begin(), ratios.end());
    if (repeat > 1)
      std::printf(
          "%d runs: worker/isolated min=%.2f median=%.2f max=%.2f; median worker %.2f us/msg, "
          "median isolated %.2f us/msg, their ratio %.2f\n",
          repeat, ratios.front(), median(ratios), ratios.back(), median(workers), median(isolateds),
          median(workers) / median(isolateds));
    return 0;
  }
  struct Pair {
    Result pass, dedup;
    double isolated_us = 0;
    double ratio() const { return dedup.rate / pass.rate; }
  };
  std::vector<Pair> pairs;
  for (int r = 0; r < repeat; ++r) {
    Pair pair;
    pair.pass = run_one(broker.bootstrap(), feed, run_name("passthrough", r), true, ahead, action);
    print_passthrough(pair.pass);
    pair.dedup = run_one(broker.bootstrap(), feed, run_name("neardup", r), false, ahead, action);
    pair.isolated_us = isolated_cpu_us(feed, base_config());
    print_neardup(pair.dedup, pair.isolated_us);
    if (repeat > 1) std::printf("pair %d of %d: ratio=%.3f\n", r + 1, repeat, pair.ratio());
    pairs.push_back(std::move(pair));
  }
  std::vector<const Pair*> by_ratio;
  for (const Pair& p : pairs) by_ratio.push_back(&p);
  std::sort(by_ratio.begin(), by_ratio.end(),
            [](const Pair* a, const Pair* b) { return a->ratio() < b->ratio(); });
  const Pair& median = *by_ratio[(by_ratio.size() - 1) / 2];
  const Result& pass = median.pass;
  const Result& dedup = median.dedup;
  if (repeat > 1)
    std::printf(
        "%d pairs: ratio min=%.3f median=%.3f max=%.3f (the lines below are the median pair's)\n",
        repeat, by_ratio.front()->ratio(), median.ratio(), by_ratio.back()->ratio());
  std::printf(
      "p99 added latency: %lldms (end-to-end p99 neardup %lldms - passthrough %lldms; in-engine "
      "p99 <= %.1fus)\n",
      static_cast<long long>(dedup.p99_ms - pass.p99_ms), static_cast<long long>(dedup.p99_ms),
      static_cast<long long>(pass.p99_ms), dedup.processing_p99_us);
  if (with_metrics) {
    Result on = run_one(broker.bootstrap(), feed, "metrics", false, ahead, action, true);
    std::printf(
        "metrics_off=%.0f metrics_on=%.0f metrics_ratio=%.3f (exporter publishing every tick, "
        "scraped every 100ms)\n",
        dedup.rate, on.rate, on.rate / dedup.rate);
  }
  if (with_page) {
    std::vector<std::pair<double, std::pair<Result, Result>>> runs;  // by page_on/page_off
    for (int r = 0; r < repeat; ++r) {
      Result off = run_one(broker.bootstrap(), feed, run_name("pageoff", r), false, ahead, action);
      Result on =
          run_one(broker.bootstrap(), feed, run_name("page", r), false, ahead, action, false, true);
      std::printf(
          "page pair %d of %d: page_off=%.0f page_on=%.0f ratio=%.3f cpu_us_per_msg "
          "off=%.2f on=%.2f\n",
          r + 1, repeat, off.rate, on.rate, on.rate / off.rate, off.process_cpu_us,
          on.process_cpu_us);
      runs.push_back({on.rate / off.rate, {std::move(off), std::move(on)}});
    }
    std::sort(runs.begin(), runs.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    const auto& [ratio, median_pair] = runs[(runs.size() - 1) / 2];
    std::printf(
        "page_off=%.0f page_on=%.0f page_ratio=%.3f (median of %d; min=%.3f max=%.3f) "
        "cpu_us_per_msg page_off=%.2f page_on=%.2f\n",
        median_pair.first.rate, median_pair.second.rate, ratio, repeat, runs.front().first,
        runs.back().first, median_pair.first.process_cpu_us, median_pair.second.process_cpu_us);
  }
  print_threads("passthrough", pass);
  print_threads("neardup", dedup);
  std::printf(
      "passthrough=%.0f neardup=%.0f ratio=%.3f cpu_us_per_msg passthrough=%.2f neardup=%.2f "
      "worker=%.2f isolated=%.2f worker/isolated=%.2f\n",
      pass.rate, dedup.rate, dedup.rate / pass.rate, pass.process_cpu_us, dedup.process_cpu_us,
      dedup.worker_cpu_us, median.isolated_us, dedup.worker_cpu_us / median.isolated_us);
  return 0;
}
