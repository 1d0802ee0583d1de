# docs/local.mk -- documentation (included by the top-level Makefile.am).
# Append only, e.g.:  EXTRA_DIST += %reldir%/stages.md

# the course (docs/README.md is its index); tests/test_docs_commands.sh runs its commands
EXTRA_DIST += %reldir%/README.md %reldir%/design.md %reldir%/quickstart.md %reldir%/memory.md \
	%reldir%/stages.md %reldir%/exactness.md %reldir%/trace.md \
	%reldir%/configuration.md %reldir%/training.md %reldir%/gpu.md %reldir%/performance.md \
	%reldir%/verify-your-run.md %reldir%/multi-node.md %reldir%/faults.md %reldir%/tools/ds_reference.py \
	%reldir%/images/estimate.svg %reldir%/images/memory.svg %reldir%/images/trace.png \
	%reldir%/tools/trace_to_svg.py %reldir%/tools/adam_grouping.py %reldir%/llama.md
# Hugging Face model directories in and out (train_gpt --hf-model / --save-hf)
EXTRA_DIST += %reldir%/hf-models.md
