// Compressing test data with zlib, to feed the server's Content-Encoding
// decoding (src/api/content_coding.h). Test-only.
#pragma once

#include <zlib.h>

#include <stdexcept>
#include <string>

namespace tokenbatch::testing {

// `data` deflated at the best compression with zlib's windowBits convention:
// 16 + MAX_WBITS for gzip, MAX_WBITS for the zlib format, -MAX_WBITS for raw
// deflate. Throws std::runtime_error if zlib fails (it does not on valid input).
inline std::string ZlibCompress(const std::string& data, int window_bits) {
  z_stream zs{};
  if (deflateInit2(&zs, Z_BEST_COMPRESSION, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("deflateInit2 failed");
  }
  std::string out(deflateBound(&zs, data.size()) + 32, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  const int ret = deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  if (ret != Z_STREAM_END) throw std::runtime_error("deflate did not finish");
  return out;
}

// `data` as a gzip member (Content-Encoding: gzip).
inline std::string Gzip(const std::string& data) { return ZlibCompress(data, 16 + MAX_WBITS); }

}  // namespace tokenbatch::testing
