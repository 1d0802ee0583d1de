# fuzz/local.mk -- libFuzzer harnesses for every reader and parser (included by
# the top-level Makefile.am). Not part of make check:
#
#     mkdir build-fuzz && cd build-fuzz
#     OMPI_CC=clang ../configure --enable-fuzzing --without-cuda --without-nccl
#     make -j fuzz-smoke                 # every target FUZZ_SECONDS (30) seconds,
#                                        # FUZZ_JOBS (1) of them at a time
#     make fuzz-tokens FUZZ_SECONDS=600  # one target for longer
#
# configure then builds the whole library with clang's coverage instrumentation,
# ASan and UBSan (UB is a crash); the harnesses add libFuzzer's main. Each
# target starts from its seeds in fuzz/corpus/NAME/ and keeps what it finds in
# fuzz-corpus/NAME/ of the build directory; a crash leaves its input in
# fuzz-artifacts/ and fails the make (fuzz/run-fuzzer.sh).
FUZZ_SECONDS = 30
FUZZ_TARGETS = config ckpt ckpt_load safetensors tokens args tokenizer encode hf
EXTRA_DIST += fuzz/corpus fuzz/config.dict fuzz/args.dict fuzz/run-fuzzer.sh fuzz/fuzz_util.h \
	fuzz/fuzz_config.c fuzz/fuzz_ckpt.c fuzz/fuzz_ckpt_load.c fuzz/fuzz_safetensors.c \
	fuzz/fuzz_tokens.c fuzz/fuzz_args.c fuzz/fuzz_tokenizer.c fuzz/fuzz_encode.c fuzz/fuzz_hf.c

if ENABLE_FUZZING
FUZZ_LDADD = libzero.la $(JANSSON_LIBS) -lm
noinst_PROGRAMS += fuzz/fuzz_config fuzz/fuzz_ckpt fuzz/fuzz_ckpt_load fuzz/fuzz_safetensors \
	fuzz/fuzz_tokens fuzz/fuzz_args fuzz/fuzz_tokenizer fuzz/fuzz_encode fuzz/fuzz_hf
# ds_config.json loader
fuzz_fuzz_config_SOURCES = fuzz/fuzz_config.c fuzz/fuzz_util.h
fuzz_fuzz_config_CFLAGS = $(AM_CFLAGS) $(FUZZ_CFLAGS)
fuzz_fuzz_config_LDFLAGS = $(AM_LDFLAGS) $(FUZZ_CFLAGS)
fuzz_fuzz_config_LDADD = $(FUZZ_LDADD)
# offline checkpoint readers: meta.json and a rank file (zero ckpt inspect / export)
fuzz_fuzz_ckpt_SOURCES = fuzz/fuzz_ckpt.c fuzz/fuzz_util.h
fuzz_fuzz_ckpt_CFLAGS = $(AM_CFLAGS) $(FUZZ_CFLAGS)
fuzz_fuzz_ckpt_LDFLAGS = $(AM_LDFLAGS) $(FUZZ_CFLAGS)
fuzz_fuzz_ckpt_LDADD = $(FUZZ_LDADD)
# the engine's load: latest, meta.json, several rank files
fuzz_fuzz_ckpt_load_SOURCES = fuzz/fuzz_ckpt_load.c fuzz/fuzz_util.h
fuzz_fuzz_ckpt_load_CFLAGS = $(AM_CFLAGS) $(FUZZ_CFLAGS)
fuzz_fuzz_ckpt_load_LDFLAGS = $(AM_LDFLAGS) $(FUZZ_CFLAGS)
fuzz_fuzz_ckpt_load_LDADD = $(FUZZ_LDADD)
# .safetensors (--init-weights, train_mlp --data)
fuzz_fuzz_safetensors_SOURCES = fuzz/fuzz_safetensors.c fuzz/fuzz_util.h
fuzz_fuzz_safetensors_CFLAGS = $(AM_CFLAGS) $(FUZZ_CFLAGS)
fuzz_fuzz_safetensors_LDFLAGS = $(AM_LDFLAGS) $(FUZZ_CFLAGS)
fuzz_fuzz_safetensors_LDADD = $(FUZZ_LDADD)
# token streams: text and llm.c .bin shards (train_gpt --data)
fuzz_fuzz_tokens_SOURCES = fuzz/fuzz_tokens.c fuzz/fuzz_util.h
fuzz_fuzz_tokens_CFLAGS = $(AM_CFLAGS) $(FUZZ_CFLAGS)
fuzz_fuzz_tokens_LDFLAGS = $(AM_LDFLAGS) $(FUZZ_CFLAGS)
fuzz_fuzz_tokens_LDADD = $(FUZZ_LDADD)
# train_mlp's and train_gpt's flag parsers
fuzz_fuzz_args_SOURCES = fuzz/fuzz_args.c fuzz/fuzz_util.h examples/mlp_args.c \
	examples/gpt_args.c src/program/flags.c src/program/flag_number.c src/program/program.c \
	src/program/program_signal.c src/program/checkpointing.c src/program/trajectory.c \
	src/program/sample_order.c src/program/example_agree.c
fuzz_fuzz_args_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/examples
fuzz_fuzz_args_CFLAGS = $(AM_CFLAGS) $(FUZZ_CFLAGS)
fuzz_fuzz_args_LDFLAGS = $(AM_LDFLAGS) $(FUZZ_CFLAGS)
fuzz_fuzz_args_LDADD = $(FUZZ_LDADD)

# the tokenizer.json reader (src/text/), then a few encodes of what it loaded
fuzz_fuzz_tokenizer_SOURCES = fuzz/fuzz_tokenizer.c fuzz/fuzz_util.h
fuzz_fuzz_tokenizer_CFLAGS = $(AM_CFLAGS) $(FUZZ_CFLAGS)
fuzz_fuzz_tokenizer_LDFLAGS = $(AM_LDFLAGS) $(FUZZ_CFLAGS)
fuzz_fuzz_tokenizer_LDADD = $(FUZZ_LDADD)
# encode and decode of any bytes with the tokenizers of tests/fixtures/tokenizer/
fuzz_fuzz_encode_SOURCES = fuzz/fuzz_encode.c fuzz/fuzz_util.h
fuzz_fuzz_encode_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_FIXTURES='"$(abs_top_srcdir)/tests/fixtures/tokenizer"'
fuzz_fuzz_encode_CFLAGS = $(AM_CFLAGS) $(FUZZ_CFLAGS)
fuzz_fuzz_encode_LDFLAGS = $(AM_LDFLAGS) $(FUZZ_CFLAGS)
fuzz_fuzz_encode_LDADD = $(FUZZ_LDADD)
# a Hugging Face model directory's config.json and model.safetensors.index.json
fuzz_fuzz_hf_SOURCES = fuzz/fuzz_hf.c fuzz/fuzz_util.h
fuzz_fuzz_hf_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src/io
fuzz_fuzz_hf_CFLAGS = $(AM_CFLAGS) $(FUZZ_CFLAGS)
fuzz_fuzz_hf_LDFLAGS = $(AM_LDFLAGS) $(FUZZ_CFLAGS)
fuzz_fuzz_hf_LDADD = $(FUZZ_LDADD)

FUZZ_RUN = FUZZ_SECONDS='$(FUZZ_SECONDS)' LSAN_OPTIONS='suppressions=$(abs_top_srcdir)/tests/lsan.supp' \
	$(SHELL) $(srcdir)/fuzz/run-fuzzer.sh $(srcdir)/fuzz
fuzz-smoke: $(FUZZ_TARGETS:%=fuzz/fuzz_%$(EXEEXT))
	$(FUZZ_RUN) $(FUZZ_TARGETS)
fuzz-config: fuzz/fuzz_config$(EXEEXT)
	$(FUZZ_RUN) config
fuzz-ckpt: fuzz/fuzz_ckpt$(EXEEXT)
	$(FUZZ_RUN) ckpt
fuzz-ckpt-load: fuzz/fuzz_ckpt_load$(EXEEXT)
	$(FUZZ_RUN) ckpt_load
fuzz-safetensors: fuzz/fuzz_safetensors$(EXEEXT)
	$(FUZZ_RUN) safetensors
fuzz-tokens: fuzz/fuzz_tokens$(EXEEXT)
	$(FUZZ_RUN) tokens
fuzz-args: fuzz/fuzz_args$(EXEEXT)
	$(FUZZ_RUN) args
fuzz-tokenizer: fuzz/fuzz_tokenizer$(EXEEXT)
	$(FUZZ_RUN) tokenizer
fuzz-encode: fuzz/fuzz_encode$(EXEEXT)
	$(FUZZ_RUN) encode
fuzz-hf: fuzz/fuzz_hf$(EXEEXT)
	$(FUZZ_RUN) hf
else
fuzz-smoke fuzz-config fuzz-ckpt fuzz-ckpt-load fuzz-safetensors fuzz-tokens fuzz-args \
fuzz-tokenizer fuzz-encode fuzz-hf:
	@echo "make $@: this build has no fuzzers. Build them in a directory of their own:" >&2
	@echo "  apt-get install clang   (libFuzzer: libclang-rt-14-dev comes with it)" >&2
	@echo "  OMPI_CC=clang ../configure --enable-fuzzing --without-cuda --without-nccl" >&2
	@echo "  (or ./quickstart.sh fuzz, which does both and runs make fuzz-smoke)" >&2
	@exit 1
endif
.PHONY: fuzz-smoke fuzz-config fuzz-ckpt fuzz-ckpt-load fuzz-safetensors fuzz-tokens fuzz-args \
	fuzz-tokenizer fuzz-encode fuzz-hf
clean-local: clean-local-fuzz
clean-local-fuzz:
	-rm -rf fuzz-corpus fuzz-artifacts
.PHONY: clean-local-fuzz
