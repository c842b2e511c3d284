#pragma once
// Who may read the page ("/") and /api/summary. They show message texts,
// topics and offsets, so on a listener other hosts can reach they are off
// unless the operator turns them on; a user and password (HTTP basic
// authentication) can guard them, and the texts can be withheld. /metrics,
// /healthz and /readyz are not affected: Prometheus and Kubernetes probes
// reach them without credentials. Pure functions, thread-safe.

#include <string>
#include <string_view>

namespace neardup::metrics {

enum class PageMode {
  automatic,  ///< served on a loopback listener, or anywhere when credentials are set
  on,
  off,
};

struct PageAccess {
  PageMode mode = PageMode::automatic;
  std::string user;           ///< HTTP basic authentication; "" = none
  std::string password;       ///< with `user`
  bool redact_texts = false;  ///< locations, distances and counts only; no message text
};

/// True for 127.0.0.0/8, ::1 (also as ::ffff:127.x.y.z) and "localhost".
/// Other names are not resolved: they count as reachable from elsewhere.
bool is_loopback_host(std::string_view host);

/// Whether the page and /api/summary are served on a listener bound to a
/// loopback address (`loopback`) or not.
bool page_served(const PageAccess& access, bool loopback);

/// The one-line answer (without newline) of a listener that does not serve the
/// page, naming the keys that would serve it.
std::string page_off_reason(const PageAccess& access);

/// A one-line warning when anyone who reaches `listen` (not loopback) may read
/// message texts: the page served without credentials and without
/// redact_texts. "" otherwise.
std::string page_exposure_warning(const PageAccess& access, std::string_view listen, bool loopback);

/// Whether a request's Authorization header value ("" when absent) carries
/// access's user and password (the Basic scheme). True when no user is set.
/// Compares in time independent of where the credentials differ.
bool page_authorized(const PageAccess& access, std::string_view authorization);

/// The WWW-Authenticate header value of a 401.
inline constexpr std::string_view kPageAuthChallenge = "Basic realm=\"neardup\", charset=\"UTF-8\"";

}  // namespace neardup::metrics
