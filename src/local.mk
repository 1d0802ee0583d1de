# src/local.mk -- core library sources (included by the top-level Makefile.am).
# Append only, e.g.:  libzero_la_SOURCES += %reldir%/engine.c   noinst_HEADERS += %reldir%/engine_internal.h

# core utilities: status codes, dtypes and conversions, ledger, comm counters, backend registry
libzero_la_SOURCES += \
	%reldir%/error.c \
	%reldir%/size.c \
	%reldir%/file_replace.c \
	%reldir%/dtype.c \
	%reldir%/ledger.c \
	%reldir%/comm_stats.c \
	%reldir%/registry.c
zeroinclude_HEADERS += \
	include/zero/error.h \
	include/zero/size.h \
	include/zero/dtype.h \
	include/zero/ledger.h \
	include/zero/comm_stats.h \
	include/zero/backend.h

noinst_HEADERS += %reldir%/file_replace.h

# config and schedules
libzero_la_SOURCES += %reldir%/config.c %reldir%/lr_schedule.c
zeroinclude_HEADERS += include/zero/config.h

# engine: layout, model states, stages, reduction, optimizer step
libzero_la_SOURCES += \
	%reldir%/layout.c \
	%reldir%/engine.c \
	%reldir%/engine_forward.c \
	%reldir%/engine_backward.c \
	%reldir%/unit_compute.c \
	%reldir%/engine_util.c \
	%reldir%/engine_states.c \
	%reldir%/init_rng.c \
	%reldir%/stage3.c \
	%reldir%/grad_reduce.c \
	%reldir%/grad_counter.c \
	%reldir%/optimizer.c \
	%reldir%/gathered.c \
	%reldir%/theory.c \
	%reldir%/loss_scaler.c \
	%reldir%/optim_consts.c \
	%reldir%/host_optim.c \
	%reldir%/host_parallel.c \
	%reldir%/offload.c \
	%reldir%/memory_plan.c \
	%reldir%/memory_limit.c \
	%reldir%/aio.c \
	%reldir%/nvme_swap.c
noinst_HEADERS += %reldir%/aio.h %reldir%/nvme_swap.h
noinst_HEADERS += %reldir%/engine_internal.h %reldir%/memory_limit.h %reldir%/optim_consts.h %reldir%/host_optim.h \
	%reldir%/host_parallel.h \
	%reldir%/dtype_convert.h %reldir%/exact_math.h
zeroinclude_HEADERS += include/zero/layout.h include/zero/engine.h include/zero/zero.h \
	include/zero/events.h include/zero/loss_scaler.h

# deterministic synthetic data
libzero_la_SOURCES += %reldir%/synthetic.c
zeroinclude_HEADERS += include/zero/synthetic.h

# safetensors
libzero_la_SOURCES += \
	%reldir%/safetensors.c \
	%reldir%/safetensors_read.c \
	%reldir%/safetensors_write.c
noinst_HEADERS += %reldir%/safetensors_internal.h
zeroinclude_HEADERS += include/zero/safetensors.h

# ds_config.json: DeepSpeed's configuration files, validated (key table, loader, printer)
libzero_la_SOURCES += \
	%reldir%/config_keys.c \
	%reldir%/config_unsupported.c \
	%reldir%/config_json.c \
	%reldir%/config_print.c \
	%reldir%/config_auto.c \
	%reldir%/config_validate.c \
	%reldir%/trace_steps.c
noinst_HEADERS += %reldir%/config_keys.h
zeroinclude_HEADERS += include/zero/config_json.h

# observability: estimator formulas, Chrome trace writer, SVG charts
libzero_la_SOURCES += %reldir%/estimate.c %reldir%/trace.c %reldir%/svg_chart.c
zeroinclude_HEADERS += include/zero/estimate.h include/zero/trace.h include/zero/svg_chart.h

# checkpoints: sharded save / load on any world size, offline inspect and export
libzero_la_SOURCES += \
	%reldir%/crc32c.c \
	%reldir%/checkpoint_format.c \
	%reldir%/checkpoint_meta.c \
	%reldir%/checkpoint_fs.c \
	%reldir%/checkpoint_read.c \
	%reldir%/checkpoint_offline.c \
	%reldir%/checkpoint_engine.c
noinst_HEADERS += %reldir%/crc32c.h %reldir%/checkpoint_internal.h
zeroinclude_HEADERS += include/zero/checkpoint.h
