// Content-Encoding of request bodies, decoded with zlib (see content_coding.h).
#include "api/content_coding.h"

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace tokenbatch::server {
namespace {

enum class Coding { kGzip, kDeflate };

// More codings than this on one body is refused (415): each one costs a pass of
// up to `limit` bytes, and no client stacks more than two.
constexpr std::size_t kMaxCodings = 4;
// Inflated in steps of this many bytes, so the limit is checked as output grows.
constexpr std::size_t kStepBytes = 64 * 1024;

std::variant<std::vector<Coding>, ApiError> ParseCodings(std::string_view header) {
  std::vector<Coding> out;
  for (const absl::string_view part : absl::StrSplit(absl::string_view(header.data(), header.size()), ',')) {
    const std::string name = absl::AsciiStrToLower(absl::StripAsciiWhitespace(part));
    if (name.empty() || name == "identity") continue;  // empty list elements are allowed (RFC 9110 section 5.6.1)
    if (name == "gzip" || name == "x-gzip") {
      out.push_back(Coding::kGzip);
    } else if (name == "deflate") {
      out.push_back(Coding::kDeflate);
    } else {
      return ApiError{415, absl::StrCat("Content-Encoding \"", name.substr(0, 40),
                                        "\" is not supported; send the body uncompressed or as one of: ",
                                        std::string(kAcceptedContentCodings))};
    }
    if (out.size() > kMaxCodings) {
      return ApiError{415, absl::StrCat("Content-Encoding lists more than ", kMaxCodings, " codings")};
    }
  }
  return out;
}

// Whether `in` starts with a zlib header (RFC 1950 section 2.2): compression
// method 8 (deflate), a window of at most 32 KiB, and the check bits.
bool HasZlibHeader(std::string_view in) {
  if (in.size() < 2) return false;
  const auto cmf = static_cast<unsigned char>(in[0]);
  const auto flg = static_cast<unsigned char>(in[1]);
  return (cmf & 0x0F) == 8 && (cmf >> 4) <= 7 && (cmf * 256 + flg) % 31 == 0;
}

// Owns a z_stream set up for inflating; inflateEnd on destruction.
class Inflater {
 public:
  explicit Inflater(int window_bits) { ok_ = inflateInit2(&zs_, window_bits) == Z_OK; }
  ~Inflater() {
    if (ok_) inflateEnd(&zs_);
  }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
  [[nodiscard]] bool ok() const { return ok_; }
  z_stream* stream() { return &zs_; }

 private:
  z_stream zs_{};
  bool ok_ = false;
};

// `in` inflated. window_bits: 16 + 15 for gzip, 15 for zlib, -15 for raw deflate
// (zlib's inflateInit2 convention).
std::variant<std::string, ApiError> Inflate(std::string_view in, int window_bits, std::size_t limit,
                                            const char* coding) {
  auto invalid = [&](const std::string& why) {
    return ApiError{400, absl::StrCat("request body is not valid ", coding, " data (Content-Encoding: ", coding,
                                      "): ", why)};
  };
  Inflater inflater(window_bits);
  if (!inflater.ok()) return ApiError{500, "zlib could not start inflating the request body"};
  z_stream* zs = inflater.stream();
  const bool gzip = window_bits > 15;
  std::string out;
  std::vector<unsigned char> step(kStepBytes);
  std::size_t fed = 0;  // bytes of `in` handed to zlib so far
  for (;;) {
    if (zs->avail_in == 0 && fed < in.size()) {
      const std::size_t n = std::min<std::size_t>(in.size() - fed, UINT_MAX);
      zs->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data() + fed));
      zs->avail_in = static_cast<uInt>(n);
      fed += n;
    }
    zs->next_out = step.data();
    zs->avail_out = static_cast<uInt>(step.size());
    const int ret = inflate(zs, Z_NO_FLUSH);
    const std::size_t produced = step.size() - zs->avail_out;
    if (produced > limit - out.size()) {
      return ApiError{413, absl::StrCat("request body larger than the payload limit of ", limit,
                                        " bytes once decoded (Content-Encoding: ", coding, ")")};
    }
    out.append(reinterpret_cast<const char*>(step.data()), produced);
    if (ret == Z_STREAM_END) {
      const std::size_t left = in.size() - fed + zs->avail_in;
      if (left == 0) return out;
      // gzip bodies may hold several members, decoded one after another.
      if (!gzip) return invalid(absl::StrCat(left, " bytes after the end of the compressed data"));
      if (inflateReset(zs) != Z_OK) return invalid("zlib could not start the next gzip member");
      continue;
    }
    if (ret == Z_BUF_ERROR && zs->avail_in == 0 && fed == in.size()) {
      return invalid(in.empty() ? "the body is empty" : "the compressed data ends early (truncated)");
    }
    if (ret == Z_NEED_DICT) return invalid("it needs a preset dictionary, which HTTP bodies cannot name");
    if (ret == Z_MEM_ERROR) return ApiError{500, "zlib ran out of memory inflating the request body"};
    if (ret != Z_OK && ret != Z_BUF_ERROR) return invalid(zs->msg != nullptr ? zs->msg : "corrupt data");
  }
}

}  // namespace

std::variant<std::string, ApiError> DecodeContentEncoding(std::string_view content_encoding, std::string body,
                                                          std::size_t limit) {
  auto codings = ParseCodings(content_encoding);
  if (auto* e = std::get_if<ApiError>(&codings)) return *e;
  const auto& list = std::get<std::vector<Coding>>(codings);
  // Undone from the last applied.
  for (auto it = list.rbegin(); it != list.rend(); ++it) {
    auto decoded = *it == Coding::kGzip ? Inflate(body, 16 + MAX_WBITS, limit, "gzip")
                                        : Inflate(body, HasZlibHeader(body) ? MAX_WBITS : -MAX_WBITS, limit,
                                                  "deflate");
    if (auto* e = std::get_if<ApiError>(&decoded)) return *e;
    body = std::move(std::get<std::string>(decoded));
  }
  return body;
}

}  // namespace tokenbatch::server
