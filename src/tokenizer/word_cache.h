// A bounded, thread-safe cache of model results keyed by word bytes. Hugging Face
// keeps the same kind of cache in its BPE model (10,000 words): natural text reuses
// a small set of words, so most words skip the merge loop entirely.
//
// Sharded by hash, each shard behind its own reader-writer lock (readers share
// it), so concurrent Encode/Count calls on one Tokenizer rarely contend. When a
// shard is full new words are simply not cached (no eviction), as Hugging Face does.
//
// The lock is std::shared_mutex (pthread), not absl::Mutex: Debian's libabsl is
// not built with ThreadSanitizer, so TSan cannot see absl::Mutex's synchronisation
// and reports false races; pthread locks are intercepted by TSan.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include <shared_mutex>

#include "tokenizer/model.h"

namespace tokenbatch::tokenizer::internal {

// std::shared_mutex with clang thread-safety annotations.
class ABSL_LOCKABLE SharedMutex {
 public:
  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  void ReaderLock() ABSL_SHARED_LOCK_FUNCTION() { mu_.lock_shared(); }
  void ReaderUnlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock_shared(); }

 private:
  std::shared_mutex mu_;
};

class ABSL_SCOPED_LOCKABLE WriterLock {
 public:
  explicit WriterLock(SharedMutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_->Lock(); }
  ~WriterLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

 private:
  SharedMutex* mu_;
};

class ABSL_SCOPED_LOCKABLE ReaderLock {
 public:
  explicit ReaderLock(SharedMutex* mu) ABSL_SHARED_LOCK_FUNCTION(mu) : mu_(mu) { mu_->ReaderLock(); }
  ~ReaderLock() ABSL_UNLOCK_FUNCTION() { mu_->ReaderUnlock(); }
  ReaderLock(const ReaderLock&) = delete;
  ReaderLock& operator=(const ReaderLock&) = delete;

 private:
  SharedMutex* mu_;
};

class WordCache {
 public:
  // Words longer than this many bytes are never cached (rare, and costly keys).
  static constexpr size_t kMaxWordBytes = 128;
  static constexpr size_t kShards = 16;
  static constexpr size_t kEntriesPerShard = 4096;  // 65,536 words in all

  // Appends the cached ids/ends of `word` and returns true, or returns false.
  bool Lookup(std::string_view word, std::vector<uint32_t>& ids, std::vector<uint32_t>* ends) const;
  // The cached token count of `word`, or -1.
  int64_t LookupCount(std::string_view word) const;
  // Caches ids/ends (the ranges [ids_begin, ids.end()) of the given vectors).
  void Insert(std::string_view word, const uint32_t* ids, const uint32_t* ends, size_t n);

 private:
  struct Entry {
    std::vector<uint32_t> ids;
    std::vector<uint32_t> ends;
  };
  struct Shard {
    mutable SharedMutex mu;
    StringMap<Entry> map ABSL_GUARDED_BY(mu);
  };
  const Shard& ShardFor(std::string_view word, size_t& hash) const;

  std::array<Shard, kShards> shards_;
};

}  // namespace tokenbatch::tokenizer::internal
