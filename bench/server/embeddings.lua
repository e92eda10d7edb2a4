-- wrk script: POST /v1/embeddings with the body in the BODY environment variable
-- (default: one short text), and a latency-percentile summary line per run.
wrk.method = "POST"
wrk.path = "/v1/embeddings"
wrk.headers["Content-Type"] = "application/json"
wrk.body = os.getenv("BODY") or '{"input": "The quick brown fox jumps over the lazy dog", "model": "bench"}'

function done(summary, latency, requests)
  local non2xx = summary.errors.status
  io.write(string.format("RESULT requests_per_s=%.1f p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f max_ms=%.3f " ..
                         "requests=%d non2xx=%d socket_errors=%d\n",
                         summary.requests / (summary.duration / 1e6),
                         latency:percentile(50) / 1000, latency:percentile(90) / 1000,
                         latency:percentile(99) / 1000, latency.max / 1000,
                         summary.requests, non2xx,
                         summary.errors.connect + summary.errors.read + summary.errors.write +
                         summary.errors.timeout))
end
