"""The official `openai` Python client against `tokenbatch serve` (noop backend).

A client no one here wrote, so the server's OpenAI shapes are checked by the
library users actually call: embeddings.create with a string (the client asks for
base64 by default and decodes it), an array as floats, explicit base64, token ids,
`dimensions`, a wrong API key (AuthenticationError) and an empty string (an API
error, 422); then SIGTERM, which must end the server with exit code 0.

Usage: build/venv/bin/python tests/python/openai_embeddings.py /path/to/tokenbatch
(CTest runs it as server_openai_python_client; scripts/setup_python.sh installs
the pinned client into build/venv.)
"""

import array
import base64
import math
import os
import sys

import openai
from tokenizers import Tokenizer

from serving import Serving

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
# The server's default tokenizer, which the test server uses too.
QWEN3 = os.path.join(ROOT, "data", "tokenizers", "qwen3", "tokenizer.json")
HIDDEN = 32


def as_float32(values):
    return list(array.array("f", values))


def expect_api_error(status, error_type, call):
    try:
        call()
    except error_type as e:
        assert e.status_code == status, f"status {e.status_code}, want {status}"
        return e
    raise AssertionError(f"expected {error_type.__name__} ({status})")


def check(port):
    client = openai.OpenAI(api_key="test-key", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0)

    # A string; the client asks for base64 by default and decodes it to floats.
    one = client.embeddings.create(model="tokenbatch-noop", input="hello world")
    assert one.object == "list"
    assert one.model == "tokenbatch-noop"
    assert len(one.data) == 1 and one.data[0].index == 0
    assert len(one.data[0].embedding) == HIDDEN
    assert one.usage.prompt_tokens == 2, one.usage  # Qwen3: "hello", " world"
    norm = math.sqrt(sum(v * v for v in one.data[0].embedding))
    assert abs(norm - 1) < 1e-5, f"norm {norm}"

    # An array, explicitly as floats.
    texts = ["first input", "a second, longer input text", "third"]
    many = client.embeddings.create(model="x", input=texts, encoding_format="float")
    assert [d.index for d in many.data] == [0, 1, 2]
    assert many.model == "tokenbatch-noop", many.model  # the served name, whatever the request said
    assert many.data[0].embedding != many.data[1].embedding

    # Explicit base64 comes back as the base64 string; it decodes to the float answer.
    # JSON carries each float32 in its shortest form, so compare as float32.
    b64 = client.embeddings.create(model="x", input=texts, encoding_format="base64")
    assert isinstance(b64.data[1].embedding, str)
    decoded = list(array.array("f", base64.b64decode(b64.data[1].embedding)))
    assert decoded == as_float32(many.data[1].embedding)

    # Token ids (one list, and a list of lists) give the same vector as the text
    # they encode, and count as many prompt tokens as there are ids.
    ids = Tokenizer.from_file(QWEN3).encode("hello world", add_special_tokens=True).ids
    by_ids = client.embeddings.create(model="x", input=ids, encoding_format="float")
    assert by_ids.usage.prompt_tokens == len(ids)
    assert as_float32(by_ids.data[0].embedding) == as_float32(one.data[0].embedding)
    batch_ids = client.embeddings.create(model="x", input=[ids, ids[:1]], encoding_format="float")
    assert len(batch_ids.data) == 2 and batch_ids.usage.prompt_tokens == len(ids) + 1
    assert batch_ids.data[0].embedding == by_ids.data[0].embedding

    # Dimensions.
    dims = client.embeddings.create(model="x", input="hello", dimensions=8, encoding_format="float")
    assert len(dims.data[0].embedding) == 8
    norm8 = math.sqrt(sum(v * v for v in dims.data[0].embedding))
    assert abs(norm8 - 1) < 1e-5, f"truncated then normalised: norm {norm8}"

    # An empty string is the client's error, surfaced by the client as an API error.
    e = expect_api_error(422, openai.UnprocessableEntityError,
                         lambda: client.embeddings.create(model="x", input=["fine", ""]))
    assert "empty string" in str(e), str(e)

    # A wrong key gives the client's AuthenticationError (401).
    bad = openai.OpenAI(api_key="wrong", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0)
    expect_api_error(401, openai.AuthenticationError, lambda: bad.embeddings.create(model="x", input="hello"))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: openai_embeddings.py /path/to/tokenbatch")
    with Serving(sys.argv[1], ["--backend", "noop", "--noop-hidden", str(HIDDEN), "--api-key", "test-key",
                               "--served-model-name", "tokenbatch-noop", "--tokenizer", QWEN3]) as port:
        check(port)
    print("openai client test passed")


if __name__ == "__main__":
    main()
