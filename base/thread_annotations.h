#pragma once
// Clang's thread-safety analysis (-Wthread-safety, the clang-tsa preset and
// NEARDUP_THREAD_SAFETY): which mutex guards which member, which functions
// expect it held, checked at compile time. The macros expand to clang's
// attributes under clang and to nothing elsewhere (GCC has no such analysis).
// See https://clang.llvm.org/docs/ThreadSafetyAnalysis.html.
//
// libstdc++'s std::mutex carries no annotations, so the analysis cannot see it
// taken; guarded state uses `Mutex` and `MutexLock` below instead. Waiting on a
// std::condition_variable goes through MutexLock::wait, in a loop that tests
// the guarded condition in the locked scope itself (a predicate lambda would be
// analysed as a function of its own, without the lock):
//   MutexLock lock(mutex_);
//   while (job_ == nullptr) lock.wait(wake_);
//
// Lives in metrics/, the lowest library with shared state: metrics/ and
// stream/ use it; dedup/ has no threads and metrics/ must not include dedup/.

#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define NEARDUP_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define NEARDUP_THREAD_ANNOTATION(x)
#endif

/// A class that is a lock (`Mutex`).
#define CAPABILITY(name) NEARDUP_THREAD_ANNOTATION(capability(name))
/// An RAII class that holds a capability for its lifetime (`MutexLock`).
#define SCOPED_CAPABILITY NEARDUP_THREAD_ANNOTATION(scoped_lockable)
/// A data member read or written only with the given mutex held.
#define GUARDED_BY(m) NEARDUP_THREAD_ANNOTATION(guarded_by(m))
/// A pointer member whose pointee is read or written only with the mutex held.
#define PT_GUARDED_BY(m) NEARDUP_THREAD_ANNOTATION(pt_guarded_by(m))
/// A function the caller must call with the mutexes held.
#define REQUIRES(...) NEARDUP_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
/// A function the caller must not call with the mutexes held (it takes them).
#define EXCLUDES(...) NEARDUP_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
/// A function that returns with the mutexes held (taken inside).
#define ACQUIRE(...) NEARDUP_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
/// A function that returns with the mutexes released.
#define RELEASE(...) NEARDUP_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
/// A function that takes the mutex if it returns `result`.
#define TRY_ACQUIRE(...) NEARDUP_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
/// An escape hatch for a function the analysis cannot follow; say why where it is used.
#define NO_THREAD_SAFETY_ANALYSIS NEARDUP_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace neardup::base {

/// std::mutex that clang's analysis can see. Same cost, same rules.
class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() ACQUIRE() { mutex_.lock(); }
  void unlock() RELEASE() { mutex_.unlock(); }
  bool try_lock() TRY_ACQUIRE(true) { return mutex_.try_lock(); }

 private:
  friend class MutexLock;
  std::mutex mutex_;
};

/// Holds a Mutex for its scope (std::unique_lock underneath, so a
/// std::condition_variable can wait on it).
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mutex) ACQUIRE(mutex) : lock_(mutex.mutex_) {}
  ~MutexLock() RELEASE() {}
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  /// Releases the mutex while blocked on `cv` and holds it again on return
  /// (which may be spurious: wait in a loop on the condition).
  void wait(std::condition_variable& cv) { cv.wait(lock_); }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace neardup::base
