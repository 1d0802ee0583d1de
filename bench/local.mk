# bench/local.mk -- benchmarks (included by the top-level Makefile.am).
# Append only, e.g.:  noinst_PROGRAMS += %reldir%/bench_gather   bench_bench_gather_LDADD = libzero.la

# step time per stage on the toy model (issue: engine)
noinst_PROGRAMS += %reldir%/stages
bench_stages_SOURCES = %reldir%/stages.c %reldir%/rig.c %reldir%/rig.h
bench_stages_LDADD = libzero.la $(BLAS_LIBS) $(JANSSON_LIBS) -lm

# Bandwidth of the collectives, exact vs native vs memcpy: mpirun -np 2 bench/collectives
noinst_PROGRAMS += %reldir%/collectives
bench_collectives_SOURCES = %reldir%/collectives.c
bench_collectives_LDADD = libzero.la

# tokens/s of a ~10M-parameter GPT-2 per stage and its step-time shares: mpirun -np 2 bench/gpt
noinst_PROGRAMS += %reldir%/gpt
bench_gpt_SOURCES = %reldir%/gpt.c %reldir%/rig.c %reldir%/rig.h
bench_gpt_LDADD = libzero.la $(BLAS_LIBS) -lm

# tokens/s and MFU of GPT-2 124M per stage on a GPU (tests/gpu/run.sh):
# mpirun -np 1 bench/gpt_mfu --backend cuda --dtype bf16 --peak-tflops 989
noinst_PROGRAMS += %reldir%/gpt_mfu
bench_gpt_mfu_SOURCES = %reldir%/gpt_mfu.c %reldir%/rig.c %reldir%/rig.h
bench_gpt_mfu_LDADD = libzero.la $(BLAS_LIBS) -lm

# the host optimizer (ZeRO-Offload's CPU Adam) per instruction set: bench/host_optim [Melements]
noinst_PROGRAMS += %reldir%/host_optim
bench_host_optim_SOURCES = %reldir%/host_optim.c
bench_host_optim_LDADD = libzero.la

# exact mode's own GEMM (avx512, avx2) vs OpenBLAS sgemm, one thread, side by side: bench/gemm [rounds]
noinst_PROGRAMS += %reldir%/gemm
bench_gemm_SOURCES = %reldir%/gemm.c
bench_gemm_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/backends/cpu
bench_gemm_LDADD = libzero.la $(BLAS_LIBS)

# src/base/exact_math.h's error over all 2^32 floats per function: bench/math_ulp [--stride S]
noinst_PROGRAMS += %reldir%/math_ulp
bench_math_ulp_SOURCES = %reldir%/math_ulp.c tests/exact_math_ref.h
bench_math_ulp_LDADD = -lm
noinst_HEADERS += %reldir%/clock.h
EXTRA_DIST += %reldir%/exact_math_coeffs.py

# where a step's time goes, each part next to its bound on this machine (the roofline):
# mpirun -np 2 bench/roofline --stage S --precision fp32|bf16; bench/table.sh runs it
# for stages 0-3 in both precisions and prints the table
noinst_PROGRAMS += %reldir%/roofline
bench_roofline_SOURCES = %reldir%/roofline.c %reldir%/rig.c %reldir%/rig.h
bench_roofline_LDADD = libzero.la
EXTRA_DIST += %reldir%/table.sh

# ZeRO-Infinity: a model whose states exceed the host's memory trains at stage 3 with them
# on NVMe, under a memory cgroup, next to the disk's dd bandwidth (bench/nvme_infinity.sh)
noinst_PROGRAMS += %reldir%/nvme_infinity
bench_nvme_infinity_SOURCES = %reldir%/nvme_infinity.c
bench_nvme_infinity_LDADD = libzero.la
EXTRA_DIST += %reldir%/nvme_infinity.sh

# the elementwise kernels of one toy-MLP block at the roofline's shapes, each alone (what the
# roofline's elementwise row is made of): bench/elementwise [--rows 16] [--hidden 1024]
noinst_PROGRAMS += %reldir%/elementwise
bench_elementwise_SOURCES = %reldir%/elementwise.c
bench_elementwise_LDADD = libzero.la

# cpu_exact_vec.h's variants against exact_math.h on all 2^32 floats, and their speed:
# bench/exact_vec_bits [--stride S] [--time-only]
noinst_PROGRAMS += %reldir%/exact_vec_bits
bench_exact_vec_bits_SOURCES = %reldir%/exact_vec_bits.c
bench_exact_vec_bits_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/backends/cpu
bench_exact_vec_bits_LDADD = libzero.la

# encode tokens/s of src/text/ next to Hugging Face tokenizers (one thread), one run:
# bench/tokenize --tokenizer tests/fixtures/tokenizer/gpt2.json --text docs/[a-z]*.md --hf PYTHON
noinst_PROGRAMS += %reldir%/tokenize
bench_tokenize_SOURCES = %reldir%/tokenize.c
bench_tokenize_CPPFLAGS = $(AM_CPPFLAGS) -DBENCH_SRCDIR='"$(abs_top_srcdir)/bench"'
bench_tokenize_LDADD = libzero.la
EXTRA_DIST += %reldir%/tokenize_hf.py %reldir%/torch_gpt_step.py

# GPT-2 124M vs a SmolLM2-135M-shaped Llama at T = 256, fp32/bf16, stages 0 and 3:
# tokens/s, fraction of the measured fp32 GEMM peak, and their ratios (issue 26):
# mpirun -np N bench/llama_vs_gpt
noinst_PROGRAMS += %reldir%/llama_vs_gpt
bench_llama_vs_gpt_SOURCES = %reldir%/llama_vs_gpt.c %reldir%/rig.c %reldir%/rig.h
bench_llama_vs_gpt_LDADD = libzero.la $(BLAS_LIBS) -lm

# GPT-2's step in fp32, bf16 (fp32 chain) and bf16 under the bf16-product contract, side by
# side, exact mode: mpirun -np 2 bench/bf16_step [--block-size 64] [--batch 4] [--stage 0,3]
noinst_PROGRAMS += %reldir%/bf16_step
bench_bf16_step_SOURCES = %reldir%/bf16_step.c %reldir%/rig.c %reldir%/rig.h
bench_bf16_step_LDADD = libzero.la $(BLAS_LIBS) -lm
