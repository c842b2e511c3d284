#include "metrics/page/page.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "base/json.h"
#include "metrics/http/digest.h"

namespace neardup::metrics {

// ------------------------------------------------------------------ rates

void RateMeter::add(Clock::time_point at, std::uint64_t messages, std::uint64_t duplicates) {
  samples_.push_back({at, messages, duplicates});
  // Keep one sample at or before `at - span` (the rates' start), none older.
  while (samples_.size() > 2 && samples_[1].at <= at - span_) samples_.pop_front();
}

void RateMeter::fill(PageCounts& counts) const {
  counts.in_per_second = counts.duplicates_per_second = counts.rate_seconds = 0;
  if (samples_.size() < 2) return;
  const Sample& first = samples_.front();
  const Sample& last = samples_.back();
  const double seconds = std::chrono::duration<double>(last.at - first.at).count();
  if (seconds < 0.1) return;
  const auto delta = [](std::uint64_t a, std::uint64_t b) {
    return b >= a ? static_cast<double>(b - a) : 0.0;  // a restart of the counters reads as 0
  };
  counts.in_per_second = delta(first.messages, last.messages) / seconds;
  counts.duplicates_per_second = delta(first.duplicates, last.duplicates) / seconds;
  counts.rate_seconds = seconds;
}

// ------------------------------------------------------------------ escaping

void append_html_escaped(std::string& out, std::string_view text) {
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
}

// ------------------------------------------------------------------ rendering

namespace {

std::string format(const char* fmt, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, std::isfinite(value) ? value : 0.0);
  return buf;
}

std::string utc_time(std::int64_t ms) {
  const std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%H:%M:%S", &tm);
  return buf;
}

std::string locate(const Location& at) {
  return at.topic + "/" + std::to_string(at.partition) + "/" + std::to_string(at.offset);
}

double duplicate_share(const PageCounts& c) {
  const std::uint64_t judged = c.unique + c.duplicate;
  return judged ? 100.0 * static_cast<double>(c.duplicate) / static_cast<double>(judged) : 0.0;
}

// Bytes of an original's text in the list of stories (cut at a character boundary).
constexpr std::size_t kExcerptBytes = 160;

constexpr std::string_view kStyle = R"(
body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#1b1f24;background:#f6f7f9}
header{background:#1b1f24;color:#fff;padding:.6em 1.2em;display:flex;gap:1em;align-items:baseline;flex-wrap:wrap}
header h1{font-size:1.2em;margin:0}header a{color:#9cc3ff}
.ready{color:#7ee787}.notready{color:#ffa198}
main{padding:0 1.2em 2em}
#counts{display:flex;flex-wrap:wrap;gap:.8em;margin:1em 0}
.stat{background:#fff;border:1px solid #d0d7de;border-radius:6px;padding:.5em .9em;min-width:7em}
.stat .n{display:block;font-size:1.5em;font-variant-numeric:tabular-nums}.stat .l{color:#57606a}
.pair{background:#fff;border:1px solid #d0d7de;border-radius:6px;margin:.8em 0;padding:.6em .9em}
.pair .meta{color:#57606a;font-size:.9em}
.sides{display:grid;grid-template-columns:1fr 1fr;gap:1em}
.side h3{font-size:.85em;margin:.3em 0;color:#57606a;font-weight:normal}
.text{margin:0;white-space:pre-wrap;overflow-wrap:anywhere}
mark.del{background:#ffd7d5}mark.add{background:#ccffd8}
.missing{color:#9a6700;font-style:italic}.cut{color:#57606a}.redacted{color:#57606a;font-style:italic}
table{border-collapse:collapse;background:#fff;width:100%}
svg.spark{display:block;background:#f6f8fa}svg.spark rect{fill:#0969da}svg.spark line{stroke:#d0d7de}
td.hour{font-size:1.2em;font-variant-numeric:tabular-nums}
td,th{border:1px solid #d0d7de;padding:.3em .6em;text-align:left;vertical-align:top}
)";

constexpr std::string_view kScript = R"(
(function () {
  var paused = document.getElementById('pause');
  setInterval(function () {
    if (paused.checked) return;
    fetch(location.href, {cache: 'no-store'}).then(function (r) { return r.text(); }).then(function (t) {
      var fresh = new DOMParser().parseFromString(t, 'text/html').getElementById('live');
      if (!fresh) return;
      document.getElementById('live').replaceWith(fresh);
      document.body.dataset.refreshed = (Number(document.body.dataset.refreshed) || 0) + 1;
    }).catch(function () {});
  }, 2000);
})();
)";

std::string csp_hash(std::string_view inline_content) {
  const auto digest = sha256(inline_content);
  return "'sha256-" + base64(digest) + "'";
}

void stat(std::string& out, std::string_view id, const std::string& value, std::string_view label) {
  out += "<div class=\"stat\"><span class=\"n\" id=\"";
  out += id;
  out += "\">";
  append_html_escaped(out, value);
  out += "</span><span class=\"l\">";
  out += label;
  out += "</span></div>";
}

void side_html(std::string& out, std::string_view role, const Location& at, const ShownText& text,
               const std::vector<DiffSegment>* diff, std::string_view mark_class,
               const PairsSnapshot& pairs) {
  out += "<div class=\"side ";
  out += role;
  out += "\"><h3>";
  out += role;
  out += " <span class=\"at\">";
  append_html_escaped(out, locate(at));
  out += "</span></h3>";
  if (pairs.texts_redacted) {
    out += "<p class=\"text redacted\">text withheld (metrics.redact_texts)</p></div>";
    return;
  }
  if (!text.held) {
    out += "<p class=\"text missing\">original no longer held: its text is not among the last ";
    out += std::to_string(pairs.texts);
    out += " kept texts this instance cached (evicted, or kept by another instance)</p></div>";
    return;
  }
  out += "<p class=\"text\">";
  if (diff) {
    for (const DiffSegment& s : *diff) {
      if (s.changed) {
        out += "<mark class=\"";
        out += mark_class;
        out += "\">";
        append_html_escaped(out, s.text);
        out += "</mark>";
      } else {
        append_html_escaped(out, s.text);
      }
    }
  } else {
    append_html_escaped(out, text.text);
  }
  if (text.truncated) out += "<span class=\"cut\"> [cut]</span>";
  out += "</p></div>";
}

// Bars of the duplicates per minute, oldest on the left, as inline SVG (its
// look comes from the page's stylesheet: no style attribute, which the policy
// would block). Each bar carries its minute's count (data-n) and a tooltip.
void spark_svg(std::string& out, const HourStory& s, std::int64_t last_minute_ms) {
  constexpr int kBar = 3, kHeight = 32;
  const std::string width = std::to_string(kBar * kStoryMinutes);
  const std::string height = std::to_string(kHeight + 1);
  std::uint32_t max = 0;
  for (const std::uint32_t n : s.per_minute) max = std::max(max, n);
  out += "<svg class=\"spark\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" + width +
         "\" height=\"" + height + "\" viewBox=\"0 0 " + width + " " + height +
         "\" role=\"img\" data-max=\"" + std::to_string(max) +
         "\"><title>duplicates per minute over the last 60 minutes (at most " +
         std::to_string(max) + " in a minute)</title><line x1=\"0\" y1=\"" +
         std::to_string(kHeight) + ".5\" x2=\"" + width + "\" y2=\"" + std::to_string(kHeight) +
         ".5\"/>";
  for (int j = 0; j < kStoryMinutes; ++j) {
    const std::uint32_t n = s.per_minute[static_cast<std::size_t>(j)];
    if (n == 0) continue;
    const int h =
        std::max(1, static_cast<int>((static_cast<std::uint64_t>(n) * kHeight + max / 2) / max));
    const std::int64_t minute_ms = last_minute_ms - std::int64_t{kStoryMinutes - 1 - j} * 60'000;
    out += "<rect x=\"" + std::to_string(j * kBar) + "\" y=\"" + std::to_string(kHeight - h) +
           "\" width=\"" + std::to_string(kBar - 1) + "\" height=\"" + std::to_string(h) +
           "\" data-n=\"" + std::to_string(n) + "\"><title>" + utc_time(minute_ms).substr(0, 5) +
           " UTC: " + std::to_string(n) + "</title></rect>";
  }
  out += "</svg>";
}

void stories_html(std::string& out, const PairsSnapshot& pairs) {
  out +=
      "<section id=\"stories\"><h2>Biggest stories of the last hour</h2>"
      "<p class=\"note\">Originals with the most duplicates in the last 60 minutes and their "
      "duplicates per minute (among " +
      std::to_string(pairs.story_originals) + " originals counted).</p>";
  if (pairs.stories.empty()) {
    out += "<p>None in the last hour.</p></section>\n";
    return;
  }
  out +=
      "<table><thead><tr><th>last hour</th><th>per minute</th><th>original</th><th>text</th>"
      "</tr></thead><tbody>";
  std::string excerpt;
  for (const HourStory& s : pairs.stories) {
    out += "<tr class=\"story\"><td class=\"hour\">" + std::to_string(s.hour) + "</td><td>";
    spark_svg(out, s, pairs.stories_minute_ms);
    out += "</td><td>";
    append_html_escaped(out, locate(s.original));
    out += "</td><td class=\"excerpt\">";
    if (pairs.texts_redacted) {
      out += "<span class=\"redacted\">withheld</span>";
    } else if (s.text.held) {
      const bool cut = copy_shown_text(s.text.text, kExcerptBytes, excerpt);
      append_html_escaped(out, excerpt);
      if (cut || s.text.truncated) out += "<span class=\"cut\"> [cut]</span>";
    } else {
      out += "<span class=\"missing\">original no longer held</span>";
    }
    out += "</td></tr>";
  }
  out += "</tbody></table></section>\n";
}

void location_json(std::string& out, const Location& at) {
  out += "\"topic\":";
  base::append_json_string(out, at.topic, base::JsonEscape::html_safe);
  out +=
      ",\"partition\":" + std::to_string(at.partition) + ",\"offset\":" + std::to_string(at.offset);
}

void side_json(std::string& out, const Location& at, const ShownText& text,
               const std::vector<DiffSegment>* diff, bool redacted) {
  out += '{';
  location_json(out, at);
  out += ",\"held\":";
  out += text.held ? "true" : "false";
  out += ",\"text\":";
  if (text.held && !redacted)
    base::append_json_string(out, text.text, base::JsonEscape::html_safe);
  else
    out += "null";
  out += ",\"truncated\":";
  out += text.truncated ? "true" : "false";
  if (diff) {
    out += ",\"segments\":[";
    for (std::size_t i = 0; i < diff->size(); ++i) {
      if (i) out += ',';
      out += "{\"text\":";
      base::append_json_string(out, (*diff)[i].text, base::JsonEscape::html_safe);
      out += ",\"changed\":";
      out += (*diff)[i].changed ? "true" : "false";
      out += '}';
    }
    out += ']';
  }
  out += '}';
}

}  // namespace

const std::string& page_content_security_policy() {
  static const std::string kPolicy = "default-src 'none'; style-src " + csp_hash(kStyle) +
                                     "; script-src " + csp_hash(kScript) +
                                     "; connect-src 'self'; base-uri 'none'; form-action 'none'; "
                                     "frame-ancestors 'none'";
  return kPolicy;
}

std::string render_page(const PageCounts& c, const PairsSnapshot* pairs) {
  std::string out;
  out.reserve(16384);
  out +=
      "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
      "<title>neardup</title><style>";
  out += kStyle;
  out += "</style></head><body><header><h1>neardup</h1>";
  if (!c.version.empty()) {
    out += "<span>";
    append_html_escaped(out, c.version);
    out += "</span>";
  }
  out +=
      "<nav><a href=\"/metrics\">/metrics</a> <a href=\"/healthz\">/healthz</a> "
      "<a href=\"/readyz\">/readyz</a> <a href=\"/api/summary\">/api/summary</a></nav>"
      "<label><input type=\"checkbox\" id=\"pause\"> pause</label></header>\n<main id=\"live\">";
  out += "<section id=\"counts\">";
  stat(out, "count-in", std::to_string(c.unique + c.duplicate + c.invalid), "in");
  stat(out, "count-unique", std::to_string(c.unique), "unique");
  stat(out, "count-duplicate", std::to_string(c.duplicate), "duplicates");
  stat(out, "count-invalid", std::to_string(c.invalid), "invalid");
  stat(out, "duplicate-share", format("%.1f%%", duplicate_share(c)), "duplicates of judged");
  stat(out, "rate-in", format("%.1f", c.in_per_second), "in / s");
  stat(out, "rate-duplicate", format("%.1f", c.duplicates_per_second), "duplicates / s");
  stat(out, "window-entries", std::to_string(c.window_entries), "in the window");
  out += "<div class=\"stat\"><span class=\"n ";
  out += c.ready ? "ready\" id=\"ready\">ready" : "notready\" id=\"ready\">not ready";
  out += "</span><span class=\"l\">/readyz</span></div></section>\n";

  if (!pairs) {
    out += "<section id=\"pairs\"><h2>Recent duplicate pairs</h2>";
    out += "<p>Pairs are not recorded by this process.</p></section></main>";
  } else {
    stories_html(out, *pairs);
    out += "<section id=\"pairs\"><h2>Recent duplicate pairs</h2>";
    out +=
        "<p class=\"note\" id=\"pairs-note\">The last " + std::to_string(pairs->pairs.size()) +
        " of " + std::to_string(pairs->recorded) + " duplicates, newest first (at most " +
        std::to_string(pairs->ring) + " kept). " +
        (pairs->texts_redacted ? std::string("Texts are withheld (metrics.redact_texts).</p>")
                               : "<mark class=\"del\">Words</mark> only in the original, <mark "
                                 "class=\"add\">words</mark> only in the duplicate; texts cut at " +
                                     std::to_string(pairs->text_bytes) + " bytes.</p>");
    for (const RecentPair& p : pairs->pairs) {
      out += "<article class=\"pair\" data-seq=\"" + std::to_string(p.seq) +
             "\"><div class=\"meta\">#" + std::to_string(p.seq) + " at " + utc_time(p.at_ms) +
             " UTC &middot; distance <b class=\"distance\">" + std::to_string(p.distance) +
             "</b> bits &middot; similarity <b class=\"similarity\">" +
             (p.similarity ? format("%.3f", *p.similarity) : std::string("-")) +
             "</b> &middot; duplicate <b class=\"count\">" + std::to_string(p.count) +
             "</b> of its original</div><div class=\"sides\">";
      if (p.original_text.held && !pairs->texts_redacted) {
        const WordDiff diff = word_diff(p.original_text.text, p.duplicate_text.text);
        side_html(out, "original", p.original, p.original_text, &diff.original, "del", *pairs);
        side_html(out, "duplicate", p.duplicate, p.duplicate_text, &diff.duplicate, "add", *pairs);
      } else {
        side_html(out, "original", p.original, p.original_text, nullptr, "del", *pairs);
        side_html(out, "duplicate", p.duplicate, p.duplicate_text, nullptr, "add", *pairs);
      }
      out += "</div></article>\n";
    }
    out +=
        "</section>\n<section id=\"top\"><h2>Originals with the most duplicates</h2>"
        "<p class=\"note\">Among the last " +
        std::to_string(pairs->originals) + " originals that had a duplicate.</p>";
    if (pairs->top.empty()) {
      out += "<p>None yet.</p>";
    } else {
      out +=
          "<table><thead><tr><th>duplicates</th><th>original</th><th>text</th><th>last "
          "duplicate</th></tr></thead><tbody>";
      for (const TopOriginal& t : pairs->top) {
        out += "<tr><td class=\"count\">" + std::to_string(t.duplicates) + "</td><td>";
        append_html_escaped(out, locate(t.original));
        out += "</td><td>";
        if (pairs->texts_redacted) {
          out += "<span class=\"redacted\">withheld</span>";
        } else if (t.text.held) {
          append_html_escaped(out, t.text.text);
          if (t.text.truncated) out += "<span class=\"cut\"> [cut]</span>";
        } else {
          out += "<span class=\"missing\">original no longer held</span>";
        }
        out += "</td><td>" + utc_time(t.last_ms) + " UTC</td></tr>";
      }
      out += "</tbody></table>";
    }
    out += "</section></main>";
  }
  out += "\n<script>";
  out += kScript;
  out += "</script></body></html>\n";
  return out;
}

std::string render_summary_json(const PageCounts& c, const PairsSnapshot* pairs) {
  std::string out;
  out.reserve(8192);
  out += "{\"counts\":{\"in\":" + std::to_string(c.unique + c.duplicate + c.invalid) +
         ",\"unique\":" + std::to_string(c.unique) +
         ",\"duplicate\":" + std::to_string(c.duplicate) +
         ",\"invalid\":" + std::to_string(c.invalid) +
         ",\"window_entries\":" + std::to_string(c.window_entries) +
         ",\"dead_letters\":" + std::to_string(c.dead_letters) + "}";
  out += ",\"rates\":{\"in_per_second\":" + format("%.3f", c.in_per_second) +
         ",\"duplicates_per_second\":" + format("%.3f", c.duplicates_per_second) +
         ",\"over_seconds\":" + format("%.3f", c.rate_seconds) + "}";
  out += ",\"ready\":";
  out += c.ready ? "true" : "false";
  if (!pairs) {
    out += ",\"pairs_recorded\":false}\n";
    return out;
  }
  out += ",\"pairs_recorded\":true,\"texts_redacted\":";
  out += pairs->texts_redacted ? "true" : "false";
  out += ",\"recorded\":" + std::to_string(pairs->recorded) +
         ",\"limits\":{\"ring\":" + std::to_string(pairs->ring) +
         ",\"texts\":" + std::to_string(pairs->texts) +
         ",\"text_bytes\":" + std::to_string(pairs->text_bytes) +
         ",\"originals\":" + std::to_string(pairs->originals) +
         ",\"stories\":" + std::to_string(pairs->story_originals) + "},\"pairs\":[";
  for (std::size_t i = 0; i < pairs->pairs.size(); ++i) {
    const RecentPair& p = pairs->pairs[i];
    if (i) out += ',';
    out += "{\"seq\":" + std::to_string(p.seq) + ",\"at_ms\":" + std::to_string(p.at_ms) +
           ",\"distance\":" + std::to_string(p.distance) + ",\"similarity\":" +
           (p.similarity && std::isfinite(*p.similarity) ? format("%.4f", *p.similarity)
                                                         : std::string("null")) +
           ",\"count\":" + std::to_string(p.count) + ",\"original\":";
    const bool redacted = pairs->texts_redacted;
    if (p.original_text.held && !redacted) {
      const WordDiff diff = word_diff(p.original_text.text, p.duplicate_text.text);
      side_json(out, p.original, p.original_text, &diff.original, false);
      out += ",\"duplicate\":";
      side_json(out, p.duplicate, p.duplicate_text, &diff.duplicate, false);
    } else {
      side_json(out, p.original, p.original_text, nullptr, redacted);
      out += ",\"duplicate\":";
      side_json(out, p.duplicate, p.duplicate_text, nullptr, redacted);
    }
    out += '}';
  }
  out += "],\"top\":[";
  for (std::size_t i = 0; i < pairs->top.size(); ++i) {
    const TopOriginal& t = pairs->top[i];
    if (i) out += ',';
    out += "{\"duplicates\":" + std::to_string(t.duplicates) +
           ",\"last_ms\":" + std::to_string(t.last_ms) + ",\"original\":";
    side_json(out, t.original, t.text, nullptr, pairs->texts_redacted);
    out += '}';
  }
  out += "],\"stories_minute_ms\":" + std::to_string(pairs->stories_minute_ms) + ",\"stories\":[";
  for (std::size_t i = 0; i < pairs->stories.size(); ++i) {
    const HourStory& s = pairs->stories[i];
    if (i) out += ',';
    out += "{\"hour\":" + std::to_string(s.hour) + ",\"last_ms\":" + std::to_string(s.last_ms) +
           ",\"per_minute\":[";
    for (std::size_t j = 0; j < s.per_minute.size(); ++j) {
      if (j) out += ',';
      out += std::to_string(s.per_minute[j]);
    }
    out += "],\"original\":";
    side_json(out, s.original, s.text, nullptr, pairs->texts_redacted);
    out += '}';
  }
  out += "]}\n";
  return out;
}

}  // namespace neardup::metrics
