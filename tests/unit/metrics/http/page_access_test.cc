// Who may read the page on the metrics port: off on a listener other hosts can
// reach unless turned on, HTTP basic authentication, withheld texts, and the
// Content-Security-Policy of every answer on the page's paths. The probes'
// paths stay open throughout.

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "metrics/http/digest.h"
#include "metrics/http/http_server.h"
#include "metrics/http/page_access.h"
#include "metrics/metrics.h"
#include "metrics/page/page.h"
#include "metrics/page/recent_pairs.h"
#include "tests/unit/metrics/http/http_client.h"

namespace neardup::metrics {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using testing::http;
using testing::Reply;

Reply get(const std::string& address, const std::string& path,
          const std::string& authorization = "") {
  std::string request = "GET " + path + " HTTP/1.1\r\nHost: test\r\n";
  if (!authorization.empty()) request += "Authorization: " + authorization + "\r\n";
  return http(address, request + "\r\n");
}

std::string basic(std::string_view credentials) {
  const std::string_view text = credentials;
  return "Basic " +
         base64(std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
}

std::string hex(const std::array<std::uint8_t, 32>& digest) {
  std::string out;
  for (const std::uint8_t byte : digest) {
    constexpr std::string_view kDigits = "0123456789abcdef";
    out += kDigits[byte >> 4];
    out += kDigits[byte & 15];
  }
  return out;
}

/// A TEST-NET-1 address (192.0.2.0/24, RFC 5737) this test adds to the
/// loopback interface for its lifetime, so a listener on a non-loopback
/// address never uses the machine's own network address. Needs root and
/// iproute2's `ip`; address() is empty when the address could not be added.
class TestNetAddress {
 public:
  TestNetAddress() {
    if (::geteuid() != 0) return;
    // One per process, so tests that run in parallel do not share one.
    const unsigned first = 10 + static_cast<unsigned>(::getpid()) % 200;
    for (unsigned i = 0; i < 20 && address_.empty(); ++i) {
      const std::string candidate = "192.0.2." + std::to_string(first + i);
      if (run("ip addr add " + candidate + "/32 dev lo")) address_ = candidate;
    }
  }
  ~TestNetAddress() {
    if (!address_.empty()) run("ip addr del " + address_ + "/32 dev lo");
  }
  TestNetAddress(const TestNetAddress&) = delete;
  TestNetAddress& operator=(const TestNetAddress&) = delete;
  const std::string& address() const { return address_; }

 private:
  static bool run(const std::string& command) {
    return std::system((command + " >/dev/null 2>&1").c_str()) == 0;
  }
  std::string address_;
};

/// A record with one pair whose texts the tests look for.
void record_pair(RecentPairs& pairs) {
  pairs.kept(1, "Secret plans for the harbour tunnel leak");
  DuplicateSeen seen;
  seen.original_key = 1;
  seen.original = {"input", 0, 4};
  seen.duplicate = {"input", 1, 9};
  seen.duplicate_text = "Secret plans for the harbour tunnel leaked";
  seen.distance = 2;
  pairs.duplicate(seen);
}

/// What lies between `open` and `close` in `text`, the first time.
std::string between(const std::string& text, std::string_view open, std::string_view close) {
  const auto begin = text.find(open);
  if (begin == std::string::npos) return "";
  const auto end = text.find(close, begin + open.size());
  if (end == std::string::npos) return "";
  return text.substr(begin + open.size(), end - begin - open.size());
}

std::string csp_hash_of(std::string_view content) {
  return "'sha256-" + base64(sha256(content)) + "'";
}

PageAccess with_user(PageMode mode = PageMode::automatic) {
  PageAccess access;
  access.mode = mode;
  access.user = "ops";
  access.password = "s3cret: with colon";
  return access;
}

}  // namespace

TEST(Digest, Sha256MatchesTheStandardVectors) {
  EXPECT_EQ(hex(sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hex(sha256("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // 56 bytes: the padding takes a second block.
  EXPECT_EQ(hex(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(hex(sha256(std::string(1000, 'a'))),
            "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
}

TEST(Digest, Base64RoundTripsAndRejectsWhatIsNotBase64) {
  const std::string_view text = "ops:pa ss";
  const std::string encoded =
      base64(std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
  EXPECT_EQ(encoded, "b3BzOnBhIHNz");
  EXPECT_EQ(base64_decode(encoded), std::string(text));
  EXPECT_EQ(base64_decode("YQ=="), "a");
  EXPECT_EQ(base64_decode("YWI="), "ab");
  EXPECT_EQ(base64_decode(""), "");
  EXPECT_EQ(base64_decode("YQ="), std::nullopt);
  EXPECT_EQ(base64_decode("Y=Q="), std::nullopt);
  EXPECT_EQ(base64_decode("YQ==YQ=="), std::nullopt);
  EXPECT_EQ(base64_decode("a*b="), std::nullopt);
}

TEST(PageAccess, KnowsLoopbackAddresses) {
  for (const char* host :
       {"127.0.0.1", "127.3.2.1", "::1", "[::1]", "localhost", "LocalHost", "::ffff:127.0.0.1"}) {
    EXPECT_TRUE(is_loopback_host(host)) << host;
  }
  for (const char* host : {"0.0.0.0", "::", "10.0.0.1", "192.0.2.2", "128.0.0.1", "fd00::2",
                           "example.com", "localhost.example.com", ""}) {
    EXPECT_FALSE(is_loopback_host(host)) << host;
  }
}

TEST(PageAccess, AutomaticServesOnLoopbackOrWithCredentials) {
  EXPECT_TRUE(page_served(PageAccess{}, true));
  EXPECT_FALSE(page_served(PageAccess{}, false));
  EXPECT_TRUE(page_served(with_user(), false));
  PageAccess on;
  on.mode = PageMode::on;
  EXPECT_TRUE(page_served(on, false));
  PageAccess off;
  off.mode = PageMode::off;
  EXPECT_FALSE(page_served(off, true));
  EXPECT_THAT(page_off_reason(PageAccess{}), HasSubstr("metrics.page: on"));
  EXPECT_THAT(page_off_reason(off), HasSubstr("metrics.page: off"));
}

TEST(PageAccess, WarnsOnlyWhenTextsReachTheNetworkWithoutCredentials) {
  PageAccess on;
  on.mode = PageMode::on;
  EXPECT_THAT(page_exposure_warning(on, "0.0.0.0:9464", false),
              HasSubstr("serves message texts on 0.0.0.0:9464"));
  EXPECT_EQ(page_exposure_warning(on, "127.0.0.1:9464", true), "");
  EXPECT_EQ(page_exposure_warning(PageAccess{}, "0.0.0.0:9464", false), "");  // off there
  EXPECT_EQ(page_exposure_warning(with_user(PageMode::on), "0.0.0.0:9464", false), "");
  on.redact_texts = true;
  EXPECT_EQ(page_exposure_warning(on, "0.0.0.0:9464", false), "");
}

TEST(PageAccess, AuthorizesOnlyTheConfiguredCredentials) {
  const PageAccess access = with_user();
  EXPECT_TRUE(page_authorized(access, basic("ops:s3cret: with colon")));
  EXPECT_TRUE(page_authorized(access, "basic  " + basic("ops:s3cret: with colon").substr(6)));
  EXPECT_FALSE(page_authorized(access, ""));
  EXPECT_FALSE(page_authorized(access, basic("ops:s3cret")));
  EXPECT_FALSE(page_authorized(access, basic("ops:s3cret: with colonX")));
  EXPECT_FALSE(page_authorized(access, basic("opt:s3cret: with colon")));
  EXPECT_FALSE(page_authorized(access, basic("")));
  EXPECT_FALSE(page_authorized(access, "Bearer " + basic("ops:s3cret: with colon").substr(6)));
  EXPECT_FALSE(page_authorized(access, "Basic not*base64"));
  EXPECT_TRUE(page_authorized(PageAccess{}, ""));  // no user: nothing to check
}

TEST(PageAccessServer, NonLoopbackListenerServesNoTextButKeepsTheProbesOpen) {
  const TestNetAddress added;
  if (added.address().empty())
    GTEST_SKIP() << "could not add a TEST-NET-1 address to lo (needs root and iproute2's ip)";
  ASSERT_FALSE(is_loopback_host(added.address()));
  const std::optional<std::string> host = added.address();
  RecentPairs pairs;
  record_pair(pairs);
  Exporter exporter(*host + ":0", {"1.2.3", {}}, &pairs, 64, PageAccess{});
  exporter.set_ready(true);
  EXPECT_FALSE(exporter.page_served());
  for (const char* path : {"/", "/api/summary"}) {
    const Reply reply = get(exporter.address(), path);
    EXPECT_EQ(reply.status, 403) << path;
    EXPECT_THAT(reply.body, HasSubstr("metrics.page: on")) << path;
    EXPECT_THAT(reply.body, Not(HasSubstr("harbour"))) << path;
    EXPECT_THAT(reply.body, Not(HasSubstr("input"))) << path;
    EXPECT_THAT(reply.head, HasSubstr("Content-Security-Policy: default-src 'none'")) << path;
    EXPECT_THAT(reply.head, HasSubstr("X-Content-Type-Options: nosniff")) << path;
  }
  EXPECT_EQ(get(exporter.address(), "/metrics").status, 200);
  EXPECT_EQ(get(exporter.address(), "/healthz").status, 200);
  EXPECT_EQ(get(exporter.address(), "/readyz").status, 200);

  // Credentials turn it on there (metrics.page: auto), behind them.
  Exporter guarded(*host + ":0", {"1.2.3", {}}, &pairs, 64, with_user());
  EXPECT_TRUE(guarded.page_served());
  EXPECT_EQ(get(guarded.address(), "/").status, 401);
  const Reply page = get(guarded.address(), "/", basic("ops:s3cret: with colon"));
  EXPECT_EQ(page.status, 200);
  EXPECT_THAT(page.body, HasSubstr("harbour"));
}

TEST(PageAccessServer, LoopbackListenerServesThePage) {
  RecentPairs pairs;
  record_pair(pairs);
  Exporter exporter("127.0.0.1:0", {"1.2.3", {}}, &pairs, 64, PageAccess{});
  EXPECT_TRUE(exporter.page_served());
  const Reply page = get(exporter.address(), "/");
  EXPECT_EQ(page.status, 200);
  EXPECT_THAT(page.body, HasSubstr("harbour"));
  const Reply json = get(exporter.address(), "/api/summary");
  EXPECT_EQ(json.status, 200);
  EXPECT_THAT(json.body, HasSubstr("\"texts_redacted\":false"));
  // metrics.page: off turns it off even there.
  PageAccess off;
  off.mode = PageMode::off;
  Exporter closed("127.0.0.1:0", {"1.2.3", {}}, &pairs, 64, off);
  const Reply refused = get(closed.address(), "/api/summary");
  EXPECT_EQ(refused.status, 403);
  EXPECT_THAT(refused.body, HasSubstr("metrics.page: off"));
  EXPECT_EQ(get(closed.address(), "/metrics").status, 200);
}

TEST(PageAccessServer, CredentialsGuardThePageAndTheJsonButNotTheProbes) {
  RecentPairs pairs;
  record_pair(pairs);
  Exporter exporter("127.0.0.1:0", {"1.2.3", {}}, &pairs, 64, with_user());
  for (const char* path : {"/", "/api/summary"}) {
    const Reply none = get(exporter.address(), path);
    EXPECT_EQ(none.status, 401) << path;
    EXPECT_THAT(none.head, HasSubstr("WWW-Authenticate: Basic realm=\"neardup\"")) << path;
    EXPECT_THAT(none.head, HasSubstr("Content-Security-Policy: default-src 'none'")) << path;
    EXPECT_THAT(none.body, Not(HasSubstr("harbour"))) << path;
    const Reply wrong = get(exporter.address(), path, basic("ops:s3cret: with colons"));
    EXPECT_EQ(wrong.status, 401) << path;
    EXPECT_THAT(wrong.body, Not(HasSubstr("harbour"))) << path;
    const Reply right = get(exporter.address(), path, basic("ops:s3cret: with colon"));
    EXPECT_EQ(right.status, 200) << path;
    EXPECT_THAT(right.body, HasSubstr("harbour")) << path;
  }
  EXPECT_EQ(get(exporter.address(), "/metrics").status, 200);
  EXPECT_EQ(get(exporter.address(), "/healthz").status, 200);
  EXPECT_EQ(get(exporter.address(), "/readyz").status, 503);  // open, just not ready
}

TEST(PageAccessServer, ThePagesPolicyAllowsExactlyItsOwnInlineStyleAndScript) {
  RecentPairs pairs;
  record_pair(pairs);
  Exporter exporter("127.0.0.1:0", {"1.2.3", {}}, &pairs, 64, PageAccess{});
  const Reply page = get(exporter.address(), "/");
  ASSERT_EQ(page.status, 200);
  const std::string policy = between(page.head + "\r\n", "Content-Security-Policy: ", "\r\n");
  EXPECT_EQ(policy, page_content_security_policy());
  EXPECT_THAT(policy, HasSubstr("default-src 'none'"));
  EXPECT_THAT(policy, HasSubstr("connect-src 'self'"));  // the reload
  EXPECT_THAT(policy, HasSubstr("frame-ancestors 'none'"));
  EXPECT_THAT(page.head, HasSubstr("X-Content-Type-Options: nosniff"));
  // The hashes are of what the page holds between its tags, byte for byte.
  const std::string style = between(page.body, "<style>", "</style>");
  const std::string script = between(page.body, "<script>", "</script>");
  ASSERT_FALSE(style.empty());
  ASSERT_FALSE(script.empty());
  EXPECT_THAT(policy, HasSubstr("style-src " + csp_hash_of(style)));
  EXPECT_THAT(policy, HasSubstr("script-src " + csp_hash_of(script)));
  EXPECT_EQ(page.body.find("<script>", page.body.find("</script>")), std::string::npos)
      << "one inline script only";
  EXPECT_EQ(page.body.find(" style=\""), std::string::npos) << "no style attributes";
  const Reply json = get(exporter.address(), "/api/summary");
  EXPECT_THAT(json.head, HasSubstr("Content-Security-Policy: default-src 'none'; "
                                   "frame-ancestors 'none'"));
  EXPECT_THAT(json.head, HasSubstr("X-Content-Type-Options: nosniff"));
}

TEST(PageAccessServer, RedactTextsShowsLocationsAndDistancesOnly) {
  RecentPairs pairs;
  record_pair(pairs);
  PageAccess access;
  access.redact_texts = true;
  Exporter exporter("127.0.0.1:0", {"1.2.3", {}}, &pairs, 64, access);
  ServiceStats stats;
  stats.duplicate = 1;
  exporter.publish(stats);  // (the page lists the pairs its published counts include)
  const Reply page = get(exporter.address(), "/");
  ASSERT_EQ(page.status, 200);
  EXPECT_THAT(page.body, Not(HasSubstr("harbour")));
  EXPECT_THAT(page.body, HasSubstr("text withheld (metrics.redact_texts)"));
  EXPECT_THAT(page.body, HasSubstr("input/1/9"));
  EXPECT_THAT(page.body, HasSubstr("distance <b class=\"distance\">2</b>"));
  // The stories of the hour: count and chart, no excerpt.
  EXPECT_THAT(page.body, HasSubstr("<tr class=\"story\"><td class=\"hour\">1</td>"));
  EXPECT_THAT(page.body,
              HasSubstr("<td class=\"excerpt\"><span class=\"redacted\">withheld</span>"));
  const Reply json = get(exporter.address(), "/api/summary");
  ASSERT_EQ(json.status, 200);
  EXPECT_THAT(json.body, HasSubstr("\"stories\":[{\"hour\":1,"));
  EXPECT_THAT(json.body, Not(HasSubstr("harbour")));
  EXPECT_THAT(json.body, HasSubstr("\"texts_redacted\":true"));
  EXPECT_THAT(json.body, HasSubstr("\"held\":true,\"text\":null"));
  EXPECT_THAT(json.body, HasSubstr("\"distance\":2"));
}

}  // namespace neardup::metrics
