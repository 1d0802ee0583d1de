#!/bin/sh
# zero tokenize: text files to shards with a tokenizer.json of tests/fixtures/tokenizer/
# and back: the shards decode to exactly the files' text with the boundary token before
# each file; a vocabulary over 65,536 writes the 32-bit variant; bad input is refused.
. "${ZERO_TEST_SRCDIR:-$(dirname "$0")}/lib.sh"

zero="$top_builddir/src/cli/zero"
fixtures="$top_srcdir/tests/fixtures/tokenizer"
require_built "$zero"

# the header field K (0 magic, 1 version, 2 tokens) of a shard, as a decimal number
header_field() {
    od -An -t d4 -j $(($2 * 4)) -N 4 "$1" | tr -d ' '
}

printf 'The first document: text, numbers 12345 and emoji \360\237\230\200.\n' >"$tmp/a.txt"
cat "$top_srcdir/docs/README.md" >"$tmp/b.txt"

run gpt2 0 "$zero" tokenize --tokenizer "$fixtures/gpt2.json" --eot "$tmp/a.txt" "$tmp/b.txt" \
    --out "$tmp/gpt2"
if expect_ok gpt2; then
    expect_text gpt2 err "[1/2] $tmp/a.txt:"
    expect_text gpt2 err "MB/s"
    [ "$(header_field "$tmp/gpt2/train.bin" 0)" = 20240520 ] || fail "train.bin is not an llm.c shard"
    [ "$(header_field "$tmp/gpt2/val.bin" 0)" = 20240520 ] || fail "val.bin is not an llm.c shard"
    train=$(header_field "$tmp/gpt2/train.bin" 2)
    val=$(header_field "$tmp/gpt2/val.bin" 2)
    # the default split: the last tenth of the tokens for validation
    [ "$val" -eq $(((train + val) / 10)) ] || fail "val.bin holds $val of $((train + val)) tokens"
    run dec_train 0 "$zero" tokenize --tokenizer "$fixtures/gpt2.json" --decode "$tmp/gpt2/train.bin"
    expect_ok dec_train
    run dec_val 0 "$zero" tokenize --tokenizer "$fixtures/gpt2.json" --decode "$tmp/gpt2/val.bin"
    expect_ok dec_val
    { printf '<|endoftext|>'; cat "$tmp/a.txt"; printf '<|endoftext|>'; cat "$tmp/b.txt"; } \
        >"$tmp/want.txt"
    cat "$tmp/dec_train.out" "$tmp/dec_val.out" >"$tmp/got.txt"
    cmp -s "$tmp/want.txt" "$tmp/got.txt" || fail "decoded shards differ from <|endoftext|> + the files"
fi

# no validation part, no boundary tokens: one shard of exactly the text
run noval 0 "$zero" tokenize --tokenizer "$fixtures/llama3.json" --val-fraction 0 "$tmp/a.txt" \
    --out "$tmp/noval"
if expect_ok noval; then
    [ ! -e "$tmp/noval/val.bin" ] || fail "--val-fraction 0 wrote val.bin"
    run dec_noval 0 "$zero" tokenize --tokenizer "$fixtures/llama3.json" --decode "$tmp/noval/train.bin"
    expect_ok dec_noval && { cmp -s "$tmp/a.txt" "$tmp/dec_noval.out" || fail "llama3 round trip differs"; }
fi

# a vocabulary over 65,536 (one added token with id 70000): the 32-bit variant
sed 's/"added_tokens":\[/"added_tokens":[{"id":70000,"content":"<|wide|>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true},/' \
    "$fixtures/gpt2.json" >"$tmp/wide.json"
printf 'narrow <|wide|> text' >"$tmp/w.txt"
run wide 0 "$zero" tokenize --tokenizer "$tmp/wide.json" --val-fraction 0 "$tmp/w.txt" --out "$tmp/wide"
if expect_ok wide; then
    expect_text wide out "32-bit token shard"
    [ "$(header_field "$tmp/wide/train.bin" 0)" = 20261202 ] || fail "wide shard's magic is not 20261202"
    n=$(header_field "$tmp/wide/train.bin" 2)
    [ "$(wc -c <"$tmp/wide/train.bin")" -eq $((1024 + 4 * n)) ] || fail "wide shard is not 4 bytes a token"
    od -An -t d4 -j 1024 "$tmp/wide/train.bin" | grep -qw 70000 || fail "token 70000 is not in the shard"
    run dec_wide 0 "$zero" tokenize --tokenizer "$tmp/wide.json" --decode "$tmp/wide/train.bin"
    expect_ok dec_wide && { cmp -s "$tmp/w.txt" "$tmp/dec_wide.out" || fail "wide round trip differs"; }
fi

# bad input: each refused with a message naming the file or the JSON path
run missing 0 "$zero" tokenize --tokenizer "$tmp/none.json" "$tmp/a.txt" --out "$tmp/o"
expect_error missing 1 "none.json: cannot open"
sed 's/"type":"ByteLevel","add_prefix_space"/"type":"Whitespace","add_prefix_space"/' \
    "$fixtures/gpt2.json" >"$tmp/bad.json"
run badcomp 0 "$zero" tokenize --tokenizer "$tmp/bad.json" "$tmp/a.txt" --out "$tmp/o"
expect_error badcomp 1 'bad.json: pre_tokenizer: pre-tokenizer "Whitespace" is not supported'
run nofile 0 "$zero" tokenize --tokenizer "$fixtures/gpt2.json" "$tmp/nope.txt" --out "$tmp/o"
expect_error nofile 1 "nope.txt: cannot open"
run badfrac 0 "$zero" tokenize --tokenizer "$fixtures/gpt2.json" --val-fraction 2 "$tmp/a.txt" --out "$tmp/o"
expect_error badfrac 2 "val-fraction 2: expected a number in \[0, 1)"
run noout 0 "$zero" tokenize --tokenizer "$fixtures/gpt2.json" "$tmp/a.txt"
expect_error noout 2 "out DIR are required"
sed 's/"content":"<|endoftext|>"/"content":"<|sep|>"/' "$fixtures/gpt2.json" >"$tmp/noeot.json"
run noeot 0 "$zero" tokenize --tokenizer "$tmp/noeot.json" --eot "$tmp/a.txt" --out "$tmp/o"
expect_error noeot 1 "has no document boundary token"
printf 'x' >"$tmp/tiny.txt"
run tiny 0 "$zero" tokenize --tokenizer "$fixtures/gpt2.json" "$tmp/tiny.txt" --out "$tmp/o"
expect_error tiny 1 "too few to split"
run badshard 0 "$zero" tokenize --tokenizer "$fixtures/gpt2.json" --decode "$tmp/a.txt"
expect_error badshard 1 "a.txt: .*shorter than the 1024-byte"

finish "zero tokenize: shards decode to the files, 32-bit variant over 65,536, bad input refused"
