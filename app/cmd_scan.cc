// `neardup scan`: the pipeline over a file or stdin, JSON Lines verdicts out.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <string>
#include <utility>

#include "app/cli.h"
#include "config/config.h"
#include "config/values.h"
#include "stream/pipeline/pipeline.h"
#include "stream/records/json_out.h"
#include "stream/scan/scan.h"

namespace neardup::app {
namespace {

constexpr const char* kHelp =
    R"(usage: neardup scan [--config FILE] [--format jsonl|lines] [--text-field F]...
                    [--id-field F] [--threads N] [FILE|-]

Finds near-duplicates in a file (or stdin, '-' or no FILE), in order: each
record is compared with the earlier records still in the window.

  --config FILE      YAML configuration: the dedup, window and input sections
                     apply (input.format aside: use --format); defaults work
                     well without one
  --format F         jsonl (default): one JSON object per line;
                     lines: each line is a text, its id is the line number
  --text-field F     field holding the text (JSON pointer like /body, or a
                     top-level field name like body); repeat to join several
                     (default: input.text_fields, /text)
  --id-field F       field holding the id (default: input.id_field, /id;
                     absent in a record -> its line number)
  --threads N        threads that read, decode and analyze the records
                     (normalize, fingerprint, sketch) and write the verdicts,
                     1..256; default: the cores this process may use. One of
                     them takes the window decisions, in input order: the
                     output is the same, byte for byte, for every N.
                     A learned IDF (dedup.weighting tf_idf with
                     dedup.idf_source stream) makes each analysis depend on
                     the records before it: then one thread does all, whatever N

Output: one JSON object per input line, in input order:
  {"id":1,"verdict":"unique","fingerprint":"3f2a..."}
  {"id":2,"verdict":"duplicate","of":1,"distance":5,"similarity":0.85,"count":1,"fingerprint":"3f2b..."}
  {"id":3,"verdict":"invalid","error":"malformed JSON: ..."}
"distance" is the SimHash distance in bits; "similarity", when present, the
shingle Jaccard that decided the match (estimated by the MinHash sketch, or
exact between two recent short texts); "count" which duplicate of its
original this is (1 for the first). A bad line never stops the
scan (it gets an "invalid" verdict); an input that cannot be read or an output
that cannot be written does, and the message says which. Wrong options and an
invalid configuration stop it before anything is read.

example:
  neardup scan --text-field /title --text-field /body news.jsonl
  printf 'The cat sat.\nthe cat sat!\n' | neardup scan --format lines
)";

constexpr long long kMaxThreads = 256;

// A JSON pointer as given, or a top-level field name made into one (its '~'
// and '/' escaped as ~0 and ~1). Throws a usage error for anything else.
std::string as_pointer(const std::string& option, const std::string& field) {
  std::string pointer;
  if (!field.empty() && field[0] == '/') {
    pointer = field;
  } else if (!field.empty()) {
    pointer.push_back('/');
    for (const char c : field) {
      if (c == '~')
        pointer.append("~0");
      else if (c == '/')
        pointer.append("~1");
      else
        pointer.push_back(c);
    }
  }
  if (config::is_json_pointer(pointer)) return pointer;
  std::string message = "--";
  message.append(option);
  message.append(
      ": expected a JSON pointer like /body (~0 for '~', ~1 for '/') or a field name like body, "
      "got '");
  message.append(field);
  message.push_back('\'');
  throw cli::UsageError(message);
}

int run_scan(std::span<const std::string> raw_args) {
  cli::Args args(raw_args, {"config", "format", "text-field", "id-field", "threads"});
  if (args.positionals().size() > 1) throw cli::UsageError("expected at most one FILE");
  const auto threads_flag = args.get_int("threads", 1, kMaxThreads);

  config::Config config =
      args.get("config") ? config::load_config(*args.get("config")) : config::Config{};
  const std::string format = args.get("format").value_or("jsonl");
  if (format != "jsonl" && format != "lines")
    throw cli::UsageError("--format: expected jsonl or lines, got '" + format + "'");
  const auto input_format =
      format == "jsonl" ? config::InputFormat::json : config::InputFormat::text;
  // --format decides the input's format, over the file and the environment; it
  // is set before the environment's keys are checked (a JSON-field dedup.scope
  // needs json).
  config.input.format = input_format;
  cli::apply_env(config);
  config.input.format = input_format;
  if (args.has("text-field")) {
    config.input.text_fields.clear();
    for (const auto& field : args.all("text-field"))
      config.input.text_fields.push_back(as_pointer("text-field", field));
  }
  if (auto id = args.get("id-field")) config.input.id_field = as_pointer("id-field", *id);
  if (config.scope == "key") {
    throw config::ConfigError(
        "dedup.scope: key does not apply to neardup scan (a line has no Kafka key); use global or "
        "a JSON pointer like /user_id");
  }
  if (config.scope.starts_with("/") && config.input.format != config::InputFormat::json) {
    throw config::ConfigError("dedup.scope: " + config.scope +
                              " is a JSON field: it needs --format jsonl, not lines");
  }
  const unsigned threads =
      threads_flag ? static_cast<unsigned>(*threads_flag)
                   : std::min(stream::available_cores(), static_cast<unsigned>(kMaxThreads));
  if (threads_flag && threads > 1 && stream::analysis_depends_on_history(config))
    std::fprintf(stderr,
                 "neardup scan: a learned IDF (dedup.weighting tf_idf, dedup.idf_source stream) "
                 "makes each analysis depend on the records before it: analyzing on one thread "
                 "(--threads %u ignored)\n",
                 threads);

  const std::string path = args.positionals().empty() ? "-" : args.positionals()[0];
  FILE* in = path == "-" ? stdin : std::fopen(path.c_str(), "rb");
  if (!in) {
    std::fprintf(stderr, "neardup scan: cannot open %s: %s\n", path.c_str(), std::strerror(errno));
    return 1;
  }
  stream::ScanStats stats = stream::scan_stream(config, in, stdout, threads);
  if (in != stdin) std::fclose(in);
  if (stats.write_error) {
    std::fprintf(stderr,
                 "neardup scan: cannot write the verdicts: %s (stopped after judging %llu records; "
                 "the output "
                 "may end before them, mid-line)\n",
                 stats.write_error_text.c_str(), static_cast<unsigned long long>(stats.records));
    return 1;
  }
  if (stats.read_error) {
    std::fprintf(stderr, "neardup scan: error reading %s: %s\n", path.c_str(),
                 stats.read_error_text.c_str());
    return 1;
  }
  return 0;
}

const cli::Registrar kScan{
    {"scan", "find near-duplicates in a file or stdin (JSON Lines out)", kHelp, run_scan}};

}  // namespace
}  // namespace neardup::app
