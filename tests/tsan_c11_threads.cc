// Linked into every executable of a NEARDUP_TSAN build (top-level
// CMakeLists.txt), nowhere else.
//
// librdkafka (Debian's, not instrumented) makes its threads and locks with C11
// <threads.h>: thrd_create, mtx_lock, cnd_wait, call_once. glibc implements
// them by calling its pthread functions internally, past the interceptors of
// ThreadSanitizer (GCC 12's libtsan and clang 14's have none for <threads.h>):
//   - a thread made by thrd_create is unknown to TSan, and its first malloc
//     crashes (SEGV in SizeClassAllocator64LocalCache::Allocate, thread
//     "rdk:mock", every integration test);
//   - librdkafka's mutexes and condition variables are invisible, so a message
//     it fills on its thread and hands to ours through its locked queues looks
//     like a race in our code.
// These definitions take precedence over glibc's for librdkafka (the
// executable's symbols come first in the lookup) and make the same calls
// through the public pthread functions, which TSan intercepts. The types are
// glibc's pthread types under other names (glibc converts them the same way).
//
// Creating and destroying a mutex or condition variable is a plain write to
// librdkafka's memory for TSan; librdkafka publishes and retires its objects
// with atomics TSan cannot see (not instrumented), so those writes would show
// up as races with the next lock on another thread ("mtx_lock" against
// "mtx_init" on 'rdk:main', rd_kafka_new). They are made with the thread's
// memory accesses ignored; the lock and wait calls stay fully checked.

#include <pthread.h>
#include <threads.h>

#include <cerrno>
#include <cstdint>
#include <new>

extern "C" void __tsan_ignore_thread_begin();
extern "C" void __tsan_ignore_thread_end();

static_assert(sizeof(mtx_t) == sizeof(pthread_mutex_t));
static_assert(sizeof(cnd_t) == sizeof(pthread_cond_t));
static_assert(sizeof(thrd_t) == sizeof(pthread_t));

namespace {

int thrd_result(int error) {
  switch (error) {
    case 0:
      return thrd_success;
    case ENOMEM:
    case EAGAIN:
      return thrd_nomem;
    case ETIMEDOUT:
      return thrd_timedout;
    case EBUSY:
      return thrd_busy;
    default:
      return thrd_error;
  }
}

/// A scope in which TSan does not record this thread's memory accesses
/// (synchronization is still recorded).
struct IgnoreAccesses {
  IgnoreAccesses() { __tsan_ignore_thread_begin(); }
  ~IgnoreAccesses() { __tsan_ignore_thread_end(); }
};

pthread_mutex_t* native(mtx_t* mutex) { return reinterpret_cast<pthread_mutex_t*>(mutex); }
pthread_cond_t* native(cnd_t* cond) { return reinterpret_cast<pthread_cond_t*>(cond); }

struct Start {
  thrd_start_t func;
  void* arg;
};

void* run(void* start) {
  const Start s = *static_cast<Start*>(start);
  delete static_cast<Start*>(start);
  return reinterpret_cast<void*>(static_cast<std::intptr_t>(s.func(s.arg)));
}

}  // namespace

extern "C" {

int thrd_create(thrd_t* thread, thrd_start_t func, void* arg) {
  auto* start = new (std::nothrow) Start{func, arg};
  if (start == nullptr) return thrd_nomem;
  const int error = pthread_create(thread, nullptr, run, start);
  if (error != 0) delete start;
  return thrd_result(error);
}

int thrd_join(thrd_t thread, int* result) {
  void* value = nullptr;
  const int error = pthread_join(thread, &value);
  if (error == 0 && result != nullptr)
    *result = static_cast<int>(reinterpret_cast<std::intptr_t>(value));
  return thrd_result(error);
}

int thrd_detach(thrd_t thread) { return thrd_result(pthread_detach(thread)); }

int mtx_init(mtx_t* mutex, int type) {
  const IgnoreAccesses ignore;
  pthread_mutexattr_t attributes;
  pthread_mutexattr_init(&attributes);
  if (type & mtx_recursive) pthread_mutexattr_settype(&attributes, PTHREAD_MUTEX_RECURSIVE);
  const int error = pthread_mutex_init(native(mutex), &attributes);
  pthread_mutexattr_destroy(&attributes);
  return thrd_result(error);
}

int mtx_lock(mtx_t* mutex) { return thrd_result(pthread_mutex_lock(native(mutex))); }
int mtx_trylock(mtx_t* mutex) { return thrd_result(pthread_mutex_trylock(native(mutex))); }
int mtx_timedlock(mtx_t* __restrict mutex, const struct timespec* __restrict until) {
  return thrd_result(pthread_mutex_timedlock(native(mutex), until));
}
int mtx_unlock(mtx_t* mutex) { return thrd_result(pthread_mutex_unlock(native(mutex))); }
void mtx_destroy(mtx_t* mutex) {
  const IgnoreAccesses ignore;
  pthread_mutex_destroy(native(mutex));
}

int cnd_init(cnd_t* cond) {
  const IgnoreAccesses ignore;
  return thrd_result(pthread_cond_init(native(cond), nullptr));
}
int cnd_signal(cnd_t* cond) { return thrd_result(pthread_cond_signal(native(cond))); }
int cnd_broadcast(cnd_t* cond) { return thrd_result(pthread_cond_broadcast(native(cond))); }
int cnd_wait(cnd_t* cond, mtx_t* mutex) {
  return thrd_result(pthread_cond_wait(native(cond), native(mutex)));
}
int cnd_timedwait(cnd_t* __restrict cond, mtx_t* __restrict mutex,
                  const struct timespec* __restrict until) {
  return thrd_result(pthread_cond_timedwait(native(cond), native(mutex), until));
}
void cnd_destroy(cnd_t* cond) {
  const IgnoreAccesses ignore;
  pthread_cond_destroy(native(cond));
}

void call_once(once_flag* flag, void (*func)()) {
  pthread_once(reinterpret_cast<pthread_once_t*>(flag), func);
}

}  // extern "C"
