// WordCache; see word_cache.h.
#include "tokenizer/word_cache.h"


namespace tokenbatch::tokenizer::internal {

const WordCache::Shard& WordCache::ShardFor(std::string_view word, size_t& hash) const {
  hash = StringViewHash{}(word);
  return shards_[(hash >> 7) % kShards];
}

bool WordCache::Lookup(std::string_view word, std::vector<uint32_t>& ids, std::vector<uint32_t>* ends) const {
  if (word.size() > kMaxWordBytes) return false;
  size_t hash = 0;
  const Shard& shard = ShardFor(word, hash);
  ReaderLock lock(&shard.mu);
  auto it = shard.map.find(word);
  if (it == shard.map.end()) return false;
  ids.insert(ids.end(), it->second.ids.begin(), it->second.ids.end());
  if (ends != nullptr) ends->insert(ends->end(), it->second.ends.begin(), it->second.ends.end());
  return true;
}

int64_t WordCache::LookupCount(std::string_view word) const {
  if (word.size() > kMaxWordBytes) return -1;
  size_t hash = 0;
  const Shard& shard = ShardFor(word, hash);
  ReaderLock lock(&shard.mu);
  auto it = shard.map.find(word);
  return it == shard.map.end() ? -1 : static_cast<int64_t>(it->second.ids.size());
}

void WordCache::Insert(std::string_view word, const uint32_t* ids, const uint32_t* ends, size_t n) {
  if (word.size() > kMaxWordBytes) return;
  size_t hash = 0;
  Shard& shard = const_cast<Shard&>(ShardFor(word, hash));
  WriterLock lock(&shard.mu);
  if (shard.map.size() >= kEntriesPerShard) return;
  shard.map.try_emplace(std::string(word), Entry{std::vector<uint32_t>(ids, ids + n), std::vector<uint32_t>(ends, ends + n)});
}

}  // namespace tokenbatch::tokenizer::internal
