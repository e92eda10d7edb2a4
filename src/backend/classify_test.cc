#include "backend/classify.h"

#include <string>

#include <gtest/gtest.h>

#include "tokenbatch/core/errors.h"

namespace tokenbatch::backend {
namespace {

TEST(ClassifyTest, AllocatorMessagesLookLikeOutOfMemory) {
  // The CPU allocator's message in libtorch 1.13 (alloc_cpu.cpp), as seen through
  // TorchScript, the CUDA caching allocator's, and std::bad_alloc's.
  EXPECT_TRUE(LooksLikeOutOfMemory(
      "[enforce fail at alloc_cpu.cpp:75] err == 0. DefaultCPUAllocator: can't allocate memory: "
      "you tried to allocate 17592186044416 bytes. Error code 12 (Cannot allocate memory)"));
  EXPECT_TRUE(LooksLikeOutOfMemory("DefaultCPUAllocator: not enough memory: you tried to allocate"));
  EXPECT_TRUE(LooksLikeOutOfMemory("CUDA out of memory. Tried to allocate 2.00 GiB"));
  EXPECT_TRUE(LooksLikeOutOfMemory("std::bad_alloc"));
}

TEST(ClassifyTest, OtherMessagesDoNot) {
  EXPECT_FALSE(LooksLikeOutOfMemory("index out of range in self"));
  EXPECT_FALSE(LooksLikeOutOfMemory("The following operation failed in the TorchScript "
                                    "interpreter. RuntimeError: synthetic failure for tests"));
  EXPECT_FALSE(LooksLikeOutOfMemory(""));
}

TEST(ClassifyTest, KindFollowsTypeOrMessage) {
  absl::Status by_message = ClassifyFailure("forward of batch [2, 3]", "CUDA out of memory", false);
  EXPECT_EQ(GetErrorKind(by_message), ErrorKind::kOutOfMemory);
  EXPECT_EQ(std::string(by_message.message()), "forward of batch [2, 3]: CUDA out of memory");

  absl::Status by_type = ClassifyFailure("ctx", "weird allocator text", true);
  EXPECT_EQ(GetErrorKind(by_type), ErrorKind::kOutOfMemory);

  absl::Status other = ClassifyFailure("ctx", "index out of range in self", false);
  EXPECT_EQ(GetErrorKind(other), ErrorKind::kBackend);
  EXPECT_EQ(std::string(other.message()), "ctx: index out of range in self");
}

TEST(ClassifyTest, LongMessagesAreCut) {
  const std::string huge(10000, 'x');
  absl::Status s = ClassifyFailure("c", huge, false);
  EXPECT_EQ(s.message().size(), 3 + 4000 + 6);  // "c: " + 4000 chars + " [...]"
  EXPECT_EQ(std::string(s.message().substr(s.message().size() - 6)), " [...]");
}

}  // namespace
}  // namespace tokenbatch::backend
