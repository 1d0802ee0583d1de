# src/local.mk -- the core library, one folder per layer (included by the top-level Makefile.am).
# Each folder's local.mk appends its sources to libzero_la_SOURCES; docs/design.md draws the layers.
#   base/        status codes, sizes, dtypes and conversions, the fixed-order tree, exact math,
#                the host's threads and Adam: everything a backend may use
#   engine/      the ZeRO engine: stage table, forward/backward, reduction, stage-3 lifecycle, step,
#                ZeRO-Offload (host optimizer) and ZeRO-Infinity (NVMe swapping)
#   nn/          the model container and the built-in layers (MLP, GPT-2)
#   data/        token files, the addition task, deterministic synthetic batches
#   text/        the model's own tokenizer (tokenizer.json): encode and decode text
#   config/      ds_config.json: key table, loader, "auto", validation, printer
#   checkpoint/  sharded checkpoints: format, metadata, files, reading, offline export
#   io/          safetensors, asynchronous file I/O (io_uring or threads)
#   observe/     ledger, comm counters, trace, estimator and theory formulas, charts
#   program/     the program driver the trainers and the zero tool link (libprogram.la, not
#                libzero: it starts the job and exchanges over it, zero/job.h)
#   cli/         the zero command-line tool
include %reldir%/base/local.mk
include %reldir%/engine/local.mk
include %reldir%/nn/local.mk
include %reldir%/data/local.mk
include %reldir%/text/local.mk
include %reldir%/config/local.mk
include %reldir%/checkpoint/local.mk
include %reldir%/io/local.mk
include %reldir%/observe/local.mk
include %reldir%/program/local.mk
include %reldir%/cli/local.mk
