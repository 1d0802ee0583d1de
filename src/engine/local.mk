# src/engine/local.mk -- the ZeRO engine: model states, stages, reduction, optimizer step, offload.
libzero_la_SOURCES += \
	%reldir%/engine.c \
	%reldir%/stage.c \
	%reldir%/engine_forward.c \
	%reldir%/engine_backward.c \
	%reldir%/unit_compute.c \
	%reldir%/engine_util.c \
	%reldir%/engine_states.c \
	%reldir%/init_rng.c \
	%reldir%/stage3.c \
	%reldir%/hpz.c \
	%reldir%/mics.c \
	%reldir%/qwz.c \
	%reldir%/qgz.c \
	%reldir%/grad_reduce.c \
	%reldir%/grad_counter.c \
	%reldir%/atom_order.c \
	%reldir%/optimizer.c \
	%reldir%/optimizer_args.c \
	%reldir%/placement.c \
	%reldir%/gathered.c \
	%reldir%/loss_scaler.c \
	%reldir%/lr_schedule.c \
	%reldir%/memory_plan.c \
	%reldir%/memory_peaks.c \
	%reldir%/memory_limit.c \
	%reldir%/device_step.c \
	%reldir%/env_agree.c
# ZeRO-Offload (the update on the host) and ZeRO-Infinity (states swapped to NVMe)
libzero_la_SOURCES += %reldir%/offload.c %reldir%/nvme_swap.c
# the engine's side of checkpoints (the format is src/checkpoint's) and the paper's numbers
# for this engine, next to the ledger (both read the engine's state)
libzero_la_SOURCES += %reldir%/engine_checkpoint.c %reldir%/engine_theory.c
noinst_HEADERS += %reldir%/offload.h %reldir%/nvme_swap.h %reldir%/env_agree.h
noinst_HEADERS += %reldir%/atom_order.h %reldir%/engine_internal.h %reldir%/stage.h \
	%reldir%/placement.h %reldir%/optimizer_args.h %reldir%/stage3.h %reldir%/hpz.h %reldir%/mics.h %reldir%/qwz.h %reldir%/qgz.h \
	%reldir%/grad_reduce.h %reldir%/grad_counter.h %reldir%/gathered.h %reldir%/unit_compute.h \
	%reldir%/engine_forward.h %reldir%/engine_states.h %reldir%/init_rng.h %reldir%/memory_plan.h %reldir%/memory_peaks.h \
	%reldir%/optimizer.h %reldir%/memory_limit.h %reldir%/device_step.h
zeroinclude_HEADERS += include/zero/engine.h include/zero/zero.h include/zero/events.h \
	include/zero/loss_scaler.h include/zero/config.h
