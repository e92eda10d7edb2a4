// Shortest float32 text: Dragonbox's digits in fmt's "{}" layout (see the header).
#include "api/float_text.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "dragonbox/dragonbox.h"

namespace tokenbatch::server {
namespace {

// "00" "01" ... "99": two digits per table read.
constexpr char kDigitPairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

// Decimal digits of v (at most 9 for a float32 significand): a sum of
// comparisons, no loop of divisions (that loop was most of this file's time).
int CountDigits(std::uint32_t v) {
  return 1 + (v >= 10) + (v >= 100) + (v >= 1000) + (v >= 10000) + (v >= 100000) + (v >= 1000000) +
         (v >= 10000000) + (v >= 100000000);
}

constexpr std::uint32_t kPow10[10] = {1,      10,      100,      1000,      10000,
                                      100000, 1000000, 10000000, 100000000, 1000000000};

// The eight decimal digits of `v` (< 10^8, leading zeros included) as eight
// ASCII bytes in one little-endian word, first digit in the lowest byte: split
// into 4-, 2- and 1-digit lanes with multiply-shift division (x / 100 is
// x * 10486 >> 20 for x < 10^4; x / 10 is x * 103 >> 10 for x < 100), all lanes
// at once. One 8-byte store then writes them; building them with byte stores
// and reading them back as a word stalled store-to-load forwarding.
std::uint64_t EightDigits(std::uint32_t v) {
  static_assert(std::endian::native == std::endian::little, "the first digit must be the lowest byte");
  const std::uint64_t quads = (v / 10000) | (static_cast<std::uint64_t>(v % 10000) << 32);
  const std::uint64_t hundreds = ((quads * 10486) >> 20) & 0x0000007F0000007Full;
  const std::uint64_t pairs = hundreds | ((quads - hundreds * 100) << 16);
  const std::uint64_t tens = ((pairs * 103) >> 10) & 0x000F000F000F000Full;
  const std::uint64_t digits = tens | ((pairs - tens * 10) << 8);
  return digits + 0x3030303030303030ull;  // + '0' in every byte
}

// A finite float as sign, significand (up to 9 digits, no trailing zeros) and
// decimal exponent: value = ±significand × 10^exponent. Zero has significand 0.
struct Decimal {
  std::uint32_t significand;
  int exponent;
  bool negative;
};

inline Decimal ToDecimal(float value) {
  Decimal d{0, 0, std::signbit(value)};
  if (value != 0.0f) {
    namespace policy = jkj::dragonbox::policy;
    const auto decimal =
        jkj::dragonbox::to_decimal(value, policy::sign::ignore, policy::trailing_zero::remove);
    d.significand = decimal.significand;
    d.exponent = decimal.exponent;
  }
  return d;
}

// Layout with fixed-size stores: the common case of an embedding component,
// |value| in [1e-4, 1), is "0.000..." and the digits right-aligned to the
// text's end; the other cases first left-align the significand as nine digits
// ("1234" -> "123400000": a first digit and a word of eight, EightDigits).
// Bytes written past the returned end are overwritten by what follows or left
// beyond it. Every write stays within kMaxShortestFloatChars of `out` (a byte
// for the sign, which a positive value then overwrites, and at most 16 more).
inline char* WriteDecimal(char* out, Decimal decimal) {
  *out = '-';
  out += decimal.negative;  // no branch: embedding signs are coin flips
  if (decimal.significand == 0) {
    *out++ = '0';
    return out;
  }
  const int digits = CountDigits(decimal.significand);  // 1..9
  const int exponent10 = decimal.exponent + digits - 1;  // of the first digit

  if (exponent10 < 0 && exponent10 >= -4) {
    // 1234e-6 -> 0.001234, the common case (|value| in [1e-4, 1)). The text
    // ends 2 - exponent bytes in, whatever the digit count: "0." and zeros,
    // then the low eight digits (with their leading zeros) right-aligned to
    // that end, and a ninth digit before them if there is one. When the text is
    // shorter than 10 bytes, the eight digits' word loses the leading zeros that
    // would cover "0." and is stored right after it.
    const int length = 2 - decimal.exponent;  // 3..14
    const std::uint64_t low8 = EightDigits(decimal.significand % 100000000);
    std::memcpy(out, "0.00000000000000", 16);
    const int cut = length < 10 ? 10 - length : 0;  // leading zero bytes to drop
    const std::uint64_t word = low8 >> (8 * cut);
    std::memcpy(out + (length < 10 ? 2 : length - 8), &word, 8);
    if (digits == 9) out[length - 9] = static_cast<char>('0' + decimal.significand / 100000000);
    return out + length;
  }
  const std::uint32_t aligned = decimal.significand * kPow10[9 - digits];
  const char first = static_cast<char>('0' + aligned / 100000000);
  const std::uint64_t rest = EightDigits(aligned % 100000000);
  char nine[17] = {};  // the nine digits, then zeros so that 8-byte reads past them stay inside
  nine[0] = first;
  std::memcpy(nine + 1, &rest, 8);
  if (exponent10 >= 0 && exponent10 < 16) {
    if (exponent10 + 1 < digits) {
      // 1234e-2 -> 12.34: the integer digits, '.', the rest (at most 10 bytes,
      // laid out in a scratch buffer, copied out as 10).
      char text[24];
      std::memcpy(text, nine, 9);
      std::memcpy(text + exponent10 + 2, nine + exponent10 + 1, 8);
      text[exponent10 + 1] = '.';
      std::memcpy(out, text, 10);
      return out + digits + 1;
    }
    // 1234e2 -> 123400, up to 16 integer digits.
    std::memcpy(out, nine, 9);
    std::memset(out + 9, '0', 7);
    return out + exponent10 + 1;
  }
  // d[.ddd]e±XX
  *out++ = nine[0];
  if (digits > 1) {
    *out = '.';
    std::memcpy(out + 1, nine + 1, 8);
    out += digits;
  }
  *out++ = 'e';
  *out++ = exponent10 < 0 ? '-' : '+';
  const int magnitude = exponent10 < 0 ? -exponent10 : exponent10;  // at most 45 for float32
  std::memcpy(out, kDigitPairs + 2 * magnitude, 2);
  return out + 2;
}

}  // namespace

char* WriteShortestFloat(char* out, float value) noexcept { return WriteDecimal(out, ToDecimal(value)); }

char* WriteJsonFloatArray(char* out, std::span<const float> values) noexcept {
  // In blocks: first every value's digits (independent of one another, so the
  // CPU overlaps their multiply chains), then the text, whose stores depend on
  // the previous value's length. One value at a time left each value's ~50-cycle
  // dependency chain exposed.
  constexpr std::size_t kBlock = 16;
  *out++ = '[';
  Decimal block[kBlock];
  for (std::size_t begin = 0; begin < values.size(); begin += kBlock) {
    const std::size_t n = std::min(kBlock, values.size() - begin);
    for (std::size_t i = 0; i < n; ++i) {
      const float v = values[begin + i];
      block[i] = std::isfinite(v) ? ToDecimal(v) : Decimal{0, 1, false};  // exponent 1 marks non-finite
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (begin + i) *out++ = ',';
      if (block[i].significand == 0 && block[i].exponent == 1) {
        std::memcpy(out, "null", 4);
        out += 4;
      } else {
        out = WriteDecimal(out, block[i]);
      }
    }
  }
  *out++ = ']';
  return out;
}

}  // namespace tokenbatch::server
