// Shortest round-trip text of a float32, for JSON embedding arrays (internal to
// the server).
//
// Why not fmt: formatting embeddings is a large share of the noop server's CPU
// per request. The digits come from Dragonbox (Debian's libdragonbox-dev, the
// algorithm fmt itself uses); fmt's general float writer around them (sign,
// locale decimal point, digit grouping, padding, width) cost more than the
// digits. This writer only lays them out, a block of values at a time, faster
// than fmt (bench/server/float_text_bench, docs/benchmarks.md). The layout is exactly fmt's "{}", which
// float_text_test checks value for value against fmt:
//   - fixed notation when the decimal exponent of the first digit is in
//     [-4, 16): "0.0123", "12.5", "1234567" (no trailing ".0");
//   - otherwise "d[.ddd]e±XX" with at least two exponent digits: "1e-05",
//     "1.2345e+20", "1e-45";
//   - "0" and "-0" for zeros.
// The text parses back (strtof, JSON.parse then Float32Array) to the same float.
//
// Thread-safety: pure functions. Never blocks, never fails.
#pragma once

#include <cstddef>
#include <span>

namespace tokenbatch::server {

// The longest text WriteShortestFloat writes, in bytes: a negative value with
// sixteen integer digits in fixed notation, "-1234568000000000" (-1.234568e15).
inline constexpr std::size_t kMaxShortestFloatChars = 17;

// Writes the shortest decimal text of the finite float `value` that parses back
// to it, starting at `out`, and returns one past its last byte. `out` must have
// room for kMaxShortestFloatChars bytes: the writer lays digits out with
// fixed-size copies and may leave scratch bytes past the returned end (never
// past that room). No terminating NUL.
// Precondition: `value` is finite (the caller writes null for NaN and infinity;
// JSON has no text for them).
char* WriteShortestFloat(char* out, float value) noexcept;

// Room WriteJsonFloatArray needs for `count` values, in bytes.
constexpr std::size_t JsonFloatArrayRoom(std::size_t count) { return 2 + count * (kMaxShortestFloatChars + 1); }

// Writes `values` as a JSON array, "[0.5,-0.25,null]": each finite value as
// WriteShortestFloat writes it, NaN and infinity as null (JSON has no text for
// them). Returns one past the closing ']'. `out` must have room for
// JsonFloatArrayRoom(values.size()) bytes; bytes past the returned end may be
// scratch.
char* WriteJsonFloatArray(char* out, std::span<const float> values) noexcept;

}  // namespace tokenbatch::server
