"""Tokenizer corpus, golden and SentencePiece generators (python -m scripts.tokenizer.generate_build_goldens)."""
