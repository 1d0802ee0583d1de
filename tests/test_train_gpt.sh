#!/bin/sh
# test_train_gpt.sh -- runs examples/train_gpt end to end and checks what it
# promises:
#   - a short fixed-seed run on the default task (2-digit addition, 2 ranks,
#     stage 3) brings the loss below a threshold it reaches with margin, and
#     prints the sample, the accuracy and memory rows equal to the formula;
#   - --save-weights / --init-weights round-trip byte for byte;
#   - the atom-ordered data makes 1 rank with accumulation 2 at stage 0 equal
#     2 ranks at stage 3;
#   - text files and llm.c shards train; bad shards and bad flags fail naming
#     the file or flag (exit 1 and 2).
# Run by `make check' from the build directory; by hand: sh tests/test_train_gpt.sh
# from the top build directory.
# shellcheck source=SCRIPTDIR/lib.sh
. "${ZERO_TEST_SRCDIR:-$(dirname "$0")}/lib.sh"
train=$top_builddir/examples/train_gpt
require_built "$train"

# final NAME: the "final:" line
final() {
    grep '^final:' "$tmp/$1.out"
}

# field NAME KEY: the number after KEY in the final line ("loss", "val loss", ...)
field() {
    final "$1" | sed -n "s/.*[:,] $2 \([0-9.]*\).*/\1/p"
}

# -- the default task learns: 250 steps reach a loss well under what
#    unigram statistics give (about 1.0); measured 0.86 at 250 steps (the suites
#    that repeat this one walk the same path, validation and sampling included, for
#    20 steps)
learn_steps=250 val_every=100
small_sweep && learn_steps=20 val_every=10
run learn 2 "$train" --stage 3 --steps "$learn_steps" --val-every "$val_every" --sample 12 \
    --eval-problems 32 --save-weights "$tmp/w.safetensors" --memory-table
expect_ok learn
loss=$(field learn loss)
if [ "$learn_steps" = 250 ] && { [ -z "$loss" ] || ! awk -v l="$loss" 'BEGIN { exit !(l < 0.93) }'; }; then
    fail "learn: final loss '$loss' is not below 0.93"
    show learn
fi
echo "learn: $(final learn) (loss threshold 0.93)"
for want in 'val loss' 'sample (temperature 0.8, top-k 40, seed 1):' 'accuracy:' \
    'theory: stage 3'; do
    grep -qF "$want" "$tmp/learn.out" || fail "learn: no '$want' in the output"
done
if grep -q 'MISMATCH' "$tmp/learn.out"; then
    fail "learn: memory ledger differs from the formula"
    show learn
fi
# -- stage 3 with the head tied to wte: the replayed gather volume matches the
#    measured one with and without reuse (wte is fetched for the head too)
for reuse in 0 1000000000; do
    run "tied$reuse" 2 "$train" --stage 3 --persistence 0 --reuse-distance "$reuse" --steps 3 \
        --sample 0 --eval-problems 0
    expect_ok "tied$reuse" &&
        { grep -aEq '^sent elements per rank: measured ([0-9]+), theory \1 = .*  ok$' \
            "$tmp/tied$reuse.out" || fail "tied$reuse: sent elements differ from the theory"; }
done
# -- checkpoints: a 2-rank stage-3 run saved at step 30 of 60 and resumed on
#    1 rank at stage 1 (same micro-batch, accumulation 2) ends as the 2-rank run
ck="--steps 60 --sample 0 --eval-problems 0 --micro-batch 16"
# shellcheck disable=SC2086
run ckfull 2 "$train" --stage 3 $ck --save-checkpoint "$tmp/ck" --checkpoint-every 30
# shellcheck disable=SC2086
run ckresume 0 "$train" --stage 1 $ck --resume "$tmp/ck/step_000030"
if expect_ok ckfull && expect_ok ckresume; then
    [ -f "$tmp/ck/latest" ] && [ -d "$tmp/ck/step_000030" ] ||
        fail "checkpoints: no latest or step_000030 in the checkpoint directory"
    [ "$(final ckfull)" = "$(final ckresume)" ] ||
        fail "checkpoints: resumed run ends '$(final ckresume)', uninterrupted '$(final ckfull)'"
fi
# -- --config: a DeepSpeed file under the flags (bf16, batch 16 = 4 x 2 x 2, WarmupLR)
configs=$top_srcdir/examples/configs
run cfg 2 "$train" --config "$configs/bf16.json" --stage 1 --steps 3 --sample 0 --eval-problems 0
if expect_ok cfg; then
    for want in '| stage 1 | bf16 |' 'batch: 16 sequences of 12 tokens = micro-batch 4 x accumulation 2' \
        'WarmupLR from --config (warmup 5)' "config: $configs/bf16.json"; do
        grep -aqF "$want" "$tmp/cfg.out" || fail "cfg: no '$want' in the header"
    done
fi
run cfgbad 0 "$train" --config "$top_srcdir/tests/configs/misspelled.json"
[ "$rc" -eq 2 ] && grep -q 'stage3_prefetch_bucket_sise' "$tmp/cfgbad.err" ||
    fail "cfgbad: a misspelled key did not fail naming it (exit $rc)"
# --memory-table: one row per stage, each measured equal to its formula
for row in '0 .* 16Ψ .* ok$' '1 .* 8Ψ \+ 8Ψ/N .* ok$' '2 .* 4Ψ \+ 12Ψ/N .* ok$' \
    '3 .* 16Ψ/N .* ok$'; do
    grep -Eq "^ +$row" "$tmp/learn.out" || fail "learn: memory table has no row '$row'"
done

# ZeRO-Offload: each stage offloads what it can; device and host states both equal
# the theory (the host column: 0 at stage 0, 12Ψ/N + 2Ψ/N from stage 1, + 2Ψ/N at 3)
printf '{"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}, "offload_param": {"device": "cpu"}}}' >"$tmp/offload.json"
run offload 2 "$train" --config "$tmp/offload.json" --bf16 --steps 2 --sample 0 \
    --eval-problems 0 --memory-table
expect_ok offload
for row in '0 .* 16Ψ .* 0\.00  ok$' '1 .* 4Ψ \+ 12Ψ/N .* 0\.88  ok$' \
    '2 .* 2Ψ \+ 14Ψ/N .* 0\.88  ok$' '3 .* 16Ψ/N .* 1\.00  ok$'; do
    grep -Eq "^ +$row" "$tmp/offload.out" || fail "offload: memory table has no row '$row'"
done
grep -q '^host memory of offloaded states' "$tmp/offload.out" ||
    fail "offload: the run's memory table has no host block"

# ZeRO-Infinity: the same with the states in NVMe swap files; the nvme column (the third
# tier) equals the theory too: 12Ψ/N from stage 1, + 2Ψ/N of parameters at stage 3; the
# host holds no model state (the gradient streams through the swap buffers)
mkdir -p "$tmp/swap"
printf '{"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "nvme", "nvme_path": "%s"}, "offload_param": {"device": "nvme", "nvme_path": "%s", "max_in_cpu": 0}}}' \
    "$tmp/swap" "$tmp/swap" >"$tmp/nvme.json"
run nvme 2 "$train" --config "$tmp/nvme.json" --bf16 --steps 2 --sample 0 \
    --eval-problems 0 --memory-table
expect_ok nvme
for row in '0 .* 16Ψ .* 0\.00     0\.00  ok$' '1 .* 4Ψ \+ 12Ψ/N .* 0\.00     0\.75  ok$' \
    '2 .* 2Ψ \+ 14Ψ/N .* 0\.00     0\.75  ok$' '3 .* 16Ψ/N .* 0\.00     0\.88  ok$'; do
    grep -Eq "^ +$row" "$tmp/nvme.out" || fail "nvme: memory table has no row '$row'"
done
grep -q 'libzero: NVMe offload: .*libzero-optim-rank00000.swap' "$tmp/nvme.err" ||
    fail "nvme: the engine did not say how it reads and writes its swap files"
[ -z "$(ls -A "$tmp/swap")" ] || fail "nvme: swap files left in $tmp/swap"
# --quiet: not even the engine's line about its swap files
run nvme_quiet 2 "$train" --config "$tmp/nvme.json" --steps 1 --sample 0 --eval-problems 0 --quiet
expect_ok nvme_quiet
[ ! -s "$tmp/nvme_quiet.err" ] || fail "nvme: --quiet still wrote to stderr: $(cat "$tmp/nvme_quiet.err")"

# -- the file has Hugging Face GPT2Model's names, Conv1D weights stored [in, out]
header=$(head -c 8000 "$tmp/w.safetensors" | tr -d '\000')
for want in '"wte.weight":{"dtype":"F32","shape":[256,64]' '"wpe.weight"' \
    '"h.0.attn.c_attn.weight":{"dtype":"F32","shape":[64,192]' \
    '"h.1.mlp.c_fc.weight":{"dtype":"F32","shape":[64,256]' '"ln_f.bias"'; do
    echo "$header" | grep -qF "$want" || fail "weights: no '$want' in the safetensors header"
done

# -- weights round trip: load, no step, save the same bytes
run reload 2 "$train" --stage 1 --steps 0 --sample 0 --eval-problems 0 \
    --init-weights "$tmp/w.safetensors" --save-weights "$tmp/w2.safetensors"
expect_ok reload
cmp -s "$tmp/w.safetensors" "$tmp/w2.safetensors" ||
    fail "reload: --init-weights then --save-weights changed the file"

# -- a file as Hugging Face's GPT2LMHeadModel writes it: "transformer."
#    prefixes, the causal-mask buffers h.N.attn.bias, and the tied lm_head
if command -v python3 >/dev/null 2>&1; then
    python3 - "$tmp/w.safetensors" "$tmp/hf.safetensors" <<'PY'
import json, struct, sys
src, dst = sys.argv[1], sys.argv[2]
raw = open(src, 'rb').read()
n = struct.unpack('<Q', raw[:8])[0]
header = json.loads(raw[8:8 + n])
data = raw[8 + n:]
out, blobs, at = {}, [], 0
def put(name, dtype, shape, blob):
    global at
    out[name] = {'dtype': dtype, 'shape': shape, 'data_offsets': [at, at + len(blob)]}
    blobs.append(blob)
    at += len(blob)
for name, d in header.items():
    if name == '__metadata__':
        continue
    b, e = d['data_offsets']
    put('transformer.' + name, d['dtype'], d['shape'], data[b:e])
    if name.endswith('.attn.c_attn.weight'):
        put('transformer.' + name[:-len('c_attn.weight')] + 'bias', 'F32', [1, 1, 2, 2],
            struct.pack('<4f', 1, 0, 1, 1))
    if name == 'wte.weight':
        put('lm_head.weight', d['dtype'], d['shape'], data[b:e])
text = json.dumps(out, separators=(',', ':')).encode()
text += b' ' * (-len(text) % 8)
open(dst, 'wb').write(struct.pack('<Q', len(text)) + text + b''.join(blobs))
PY
    run hf 2 "$train" --stage 3 --steps 0 --sample 0 --eval-problems 0 \
        --init-weights "$tmp/hf.safetensors" --save-weights "$tmp/w3.safetensors"
    expect_ok hf && { cmp -s "$tmp/w.safetensors" "$tmp/w3.safetensors" ||
        fail "hf: a GPT2LMHeadModel-style file did not load the same weights"; }
fi

# -- 1 rank accumulating 2 micro-batches at stage 0 = 2 ranks at stage 3
common="--steps 15 --sample 0 --eval-problems 0 --val-every 0 --batch 8 --micro-batch 4"
# shellcheck disable=SC2086 # $common is a list of words
run one 0 "$train" --stage 0 $common
expect_ok one
# shellcheck disable=SC2086
run two 2 "$train" --stage 3 $common
expect_ok two
if [ -z "$(final one)" ] || [ "$(final one)" != "$(final two)" ]; then
    fail "1 rank (stage 0, accumulation 2) and 2 ranks (stage 3) differ:" \
        "'$(final one)' vs '$(final two)'"
fi

# -- a text file, byte-level tokens, with a validation split
i=0
: >"$tmp/book.txt"
while [ $i -lt 40 ]; do
    echo "the quick brown fox jumps over the lazy dog, line $i." >>"$tmp/book.txt"
    i=$((i + 1))
done
run text 0 "$train" --data "$tmp/book.txt" --block-size 16 --steps 30 --batch 8 --sample 20 \
    --prompt "the " --val-every 0
expect_ok text
first=$(sed -n 's/^step    1\/30 | loss \([0-9.]*\).*/\1/p' "$tmp/text.out")
last=$(field text loss)
if [ -z "$first" ] || [ -z "$last" ] ||
    ! awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a - 1) }'; then
    fail "text: loss did not fall by 1 ($first -> $last)"
    show text
fi
grep -qF 'book.txt: ' "$tmp/text.out" || fail "text: the data line does not name the file"

# -- an llm.c shard: magic 20240520 (0x0134d888), version 1, 600 uint16 tokens
shard() { # shard FILE MAGIC_BYTES: 600 tokens 0..59 repeating
    {
        printf "$2"
        printf '\001\000\000\000\130\002\000\000'
        head -c 1012 /dev/zero
        i=0
        while [ $i -lt 600 ]; do
            printf "\\$(printf '%03o' $((i % 60)))\\000"
            i=$((i + 1))
        done
    } >"$1"
}
shard "$tmp/tokens.bin" '\210\330\064\001'
run shard 0 "$train" --data "$tmp/tokens.bin" --vocab-size 64 --block-size 8 --steps 5 --batch 4 \
    --sample 5 --val-every 0
expect_ok shard
grep -q '^final: step 5, loss' "$tmp/shard.out" || fail "shard: no final line"
shard "$tmp/bad.bin" '\211\330\064\001'
run badmagic 0 "$train" --data "$tmp/bad.bin" --vocab-size 64
expect_error badmagic 1 "bad\.bin: not an llm\.c token shard: magic 20240521"
run range 0 "$train" --data "$tmp/tokens.bin" --vocab-size 50
expect_error range 1 "tokens\.bin: token 50 is 50, outside the vocabulary of 50"

# -- bad flags
run heads 0 "$train" --n-embd 64 --n-head 5
expect_error heads 2 "--n-head must divide --n-embd"
run stage 0 "$train" --stage 4
expect_error stage 2 "--stage: '4' is not an integer in \[0, 3\]"

# -- integer flags take every form their config keys take: "2e0" steps are 2
run sci 0 "$train" --steps 2e0 --prefetch 5e5 --val-every 0 --sample 0 --eval-problems 0
expect_ok sci && { grep -q '^final: step 2,' "$tmp/sci.out" || fail "--steps 2e0 did not run 2 steps"; }
run frac 0 "$train" --prefetch 5.5
expect_error frac 2 "--prefetch: '5.5' is not an integer"

finish "test_train_gpt: all checks passed"
