#!/usr/bin/env python3
"""Hugging Face tokenizers' side of bench/tokenize: the bytes of TEXT (decoded as UTF-8
with errors="replace") encoded single-threaded ROUNDS times as one string, then as its
paragraphs (split at blank lines, one encode each), printing
"hf one tokens N best_s S" and "hf paragraphs tokens N best_s S" on stdout.
Run by bench/tokenize --hf PYTHON, never by CI.
"""
import os
import sys
import time

os.environ["RAYON_RS_NUM_CPUS"] = "1"  # one thread: before tokenizers starts its pool
os.environ["RAYON_NUM_THREADS"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"

from tokenizers import Tokenizer  # noqa: E402


def main():
    tok_path, text_path, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    tok = Tokenizer.from_file(tok_path)
    with open(text_path, "rb") as f:
        text = f.read().decode("utf-8", "replace")
    for mode, docs in (("one", [text]), ("paragraphs", text.split("\n\n"))):
        best, n = float("inf"), 0
        for _ in range(rounds):
            t = time.perf_counter()
            n = sum(len(tok.encode(d, add_special_tokens=False).ids) for d in docs)
            best = min(best, time.perf_counter() - t)
        print("hf %s tokens %d best_s %.6f" % (mode, n, best), flush=True)


if __name__ == "__main__":
    main()
