#!/usr/bin/env python3
"""A trivial HTTP/1.1 keep-alive server to measure load_client.py's own ceiling.

Answers every POST at once with the same OpenAI-shaped embeddings reply (one
vector of --dims floats, the size of all-MiniLM-L6-v2's), so the client parses a
body as large as a real server's. It does no other work: the requests/s the
client reaches against it bound what the client can measure on this machine
(both share its cores, so the bound is conservative).
Usage, from the repository root:
  build/peers-venv/bin/python bench/peers/trivial_server.py --port 18790 &
  build/peers-venv/bin/python -m bench.peers.load_client WORKLOAD.jsonl \\
      --url http://127.0.0.1:18790/v1/embeddings --connections 4 --duration 5
"""
import argparse
import asyncio
import json


def make_reply(dims):
    vec = [round(0.001 * (i % 97) - 0.05, 6) for i in range(dims)]
    body = json.dumps({"object": "list", "model": "trivial",
                       "data": [{"object": "embedding", "index": 0, "embedding": vec}],
                       "usage": {"prompt_tokens": 0, "total_tokens": 0}}).encode()
    head = (f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()
    return head + body


async def serve(port, reply):
    async def handle(reader, writer):
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lower = head.lower()
                i = lower.find(b"\r\ncontent-length:")
                if i >= 0:
                    j = lower.find(b"\r\n", i + 2)
                    await reader.readexactly(int(lower[i + 17:j]))
                writer.write(reply)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=1024)
    async with server:
        await server.serve_forever()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=18790)
    ap.add_argument("--dims", type=int, default=384)
    ap.add_argument("--no-uvloop", dest="uvloop", action="store_false")
    args = ap.parse_args()
    if args.uvloop:
        try:
            import uvloop
            uvloop.install()
        except ImportError:
            pass
    asyncio.run(serve(args.port, make_reply(args.dims)))


if __name__ == "__main__":
    main()
