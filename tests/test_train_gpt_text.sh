#!/bin/sh
# train_gpt speaks text with a model's tokenizer.json: --data text is encoded on the fly
# into exactly the tokens `zero tokenize` writes (same losses, same sample), --prompt is
# encoded, the sample is printed as text, 2 ranks see what 1 rank sees, a 32-bit shard
# (vocabulary over 65,536) trains, and a bad tokenizer is refused naming its JSON path.
. "${ZERO_TEST_SRCDIR:-$(dirname "$0")}/lib.sh"

train="$top_builddir/examples/train_gpt"
zero="$top_builddir/src/cli/zero"
fixtures="$top_srcdir/tests/fixtures/tokenizer"
require_built "$train" "$zero"

cat "$top_srcdir/docs/README.md" "$top_srcdir/docs/quickstart.md" >"$tmp/corpus.txt"
tiny="--n-layer 1 --n-head 2 --n-embd 32 --block-size 16 --batch 4 --steps 3 --sample 12"

# text encoded on the fly
# shellcheck disable=SC2086 # $tiny is a list of flags
run fly 0 "$train" $tiny --tokenizer "$fixtures/gpt2.json" --data "$tmp/corpus.txt" \
    --prompt "The engine"
if expect_ok fly; then
    expect_text fly out "vocab 3000"
    expect_text fly out "tokenizer: $fixtures/gpt2.json (3000 tokens)"
    # the sample: the line after "sample (", text starting with the prompt, not ids
    sed -n '/^sample (/{n;p;}' "$tmp/fly.out" >"$tmp/fly.sample"
    grep -q '^The engine' "$tmp/fly.sample" || fail "the sample does not start with the prompt's text"
    ! grep -qE '^[0-9]+( [0-9]+)+$' "$tmp/fly.sample" || fail "the sample is printed as ids"
fi

# the same tokens from zero tokenize: the same run, losses and sample alike
run shard 0 "$zero" tokenize --tokenizer "$fixtures/gpt2.json" --val-fraction 0 "$tmp/corpus.txt" \
    --out "$tmp/shards"
expect_ok shard
# shellcheck disable=SC2086
run fromshard 0 "$train" $tiny --tokenizer "$fixtures/gpt2.json" --data "$tmp/shards/train.bin" \
    --prompt "The engine"
if expect_ok fromshard && expect_ok fly; then
    grep -E '^(step|sample|final)' "$tmp/fly.out" | sed 's/|[^|]*tok\/s.*//' >"$tmp/a"
    grep -E '^(step|sample|final)' "$tmp/fromshard.out" | sed 's/|[^|]*tok\/s.*//' >"$tmp/b"
    cmp -s "$tmp/a" "$tmp/b" || fail "text encoded on the fly trains unlike its zero tokenize shard"
    sed -n '/^sample (/{n;p;}' "$tmp/fromshard.out" | cmp -s - "$tmp/fly.sample" ||
        fail "the samples differ"
fi

# two ranks: the same sample as one
# shellcheck disable=SC2086
run two 2 "$train" $tiny --tokenizer "$fixtures/gpt2.json" --data "$tmp/corpus.txt" \
    --prompt "The engine"
if expect_ok two && [ -s "$tmp/fly.sample" ]; then
    sed -n '/^sample (/{n;p;}' "$tmp/two.out" | cmp -s - "$tmp/fly.sample" ||
        fail "2 ranks sample other text than 1 rank"
fi

# a SentencePiece-style tokenizer (byte fallback) and no prompt: the sample starts at </s>
# shellcheck disable=SC2086
run llama2 0 "$train" $tiny --tokenizer "$fixtures/llama2.json" --data "$tmp/corpus.txt"
expect_ok llama2 && expect_text llama2 out "vocab 3256"

# a 32-bit shard (an added token with id 70000) trains with --vocab-size from the tokenizer
sed 's/"added_tokens":\[/"added_tokens":[{"id":70000,"content":"<|wide|>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true},/' \
    "$fixtures/gpt2.json" >"$tmp/wide.json"
run wideshard 0 "$zero" tokenize --tokenizer "$tmp/wide.json" --eot "$tmp/corpus.txt" --out "$tmp/wide"
expect_ok wideshard
# shellcheck disable=SC2086
run wide 0 "$train" $tiny --n-embd 16 --tokenizer "$tmp/wide.json" --data "$tmp/wide/train.bin" \
    --val-data "$tmp/wide/val.bin"
expect_ok wide && expect_text wide out "vocab 70001"

# bad tokenizers: named with the JSON path, before any training
sed 's/"type":"ByteLevel","add_prefix_space"/"type":"Punctuation","add_prefix_space"/' \
    "$fixtures/gpt2.json" >"$tmp/bad.json"
# shellcheck disable=SC2086
run bad 0 "$train" $tiny --tokenizer "$tmp/bad.json" --data "$tmp/corpus.txt"
expect_error bad 1 'bad.json: pre_tokenizer: pre-tokenizer "Punctuation" is not supported'
# shellcheck disable=SC2086
run none 0 "$train" $tiny --tokenizer "$tmp/none.json" --data "$tmp/corpus.txt"
expect_error none 1 "none.json: cannot open"

finish "train_gpt: text in with --tokenizer (= zero tokenize's shards), text samples out, 32-bit shards"
